#include "trainer/op_profile.hpp"

#include <ATen/Parallel.h>
#include <torch/csrc/autograd/profiler_legacy.h>
#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <bit>
#include <chrono>
#include <cstring>
#include <map>
#include <numeric>
#include <random>
#include <set>
#include <sstream>

#include "model/gemm.hpp"

namespace shardgnn {

namespace {

namespace prof = torch::autograd::profiler;
using Clock = std::chrono::steady_clock;
using Shapes = std::vector<std::vector<std::int64_t>>;

// Element size the byte counts assume: the profile is of float32 training (the trainer refuses it
// otherwise; int64 indices are undercounted).
constexpr double kElem = 4;

double numel(const std::vector<std::int64_t>& s) {
  return std::accumulate(s.begin(), s.end(), 1.0, [](double a, std::int64_t b) { return a * static_cast<double>(b); });
}
double tensor_bytes(const std::vector<std::int64_t>& s) { return s.empty() ? 0 : kElem * numel(s); }
// Bytes of one row of a tensor of shape s (all dimensions after the first).
double row_bytes(const std::vector<std::int64_t>& s) { return s.size() < 2 ? kElem : kElem * numel({s.begin() + 1, s.end()}); }

// A gather's rate depends on its row width and on whether its table fits in the caches: the limit
// is taken from a memcpy gather of the same width from a table of the same size (rounded to a power
// of two, between 1 MiB and 256 MiB: larger tables miss the caches alike).
struct GatherKey {
  std::int64_t width = 0;
  int table_log2 = 0;
  auto operator<=>(const GatherKey&) const = default;
};
GatherKey gather_key(double width, double table) {
  const auto t = static_cast<std::uint64_t>(std::clamp(table, 1.0 * (1 << 20), 1.0 * (1 << 28)));
  return {static_cast<std::int64_t>(width), static_cast<int>(std::bit_width(t - 1))};
}

// What one op invocation costs, in the units its bound is measured in.
struct Work {
  OpBound bound = OpBound::kNone;
  double flops = 0, bytes = 0;
  GatherKey key;
};

bool is_stream_op(const std::string& op) {
  static const std::set<std::string> ops = {
      "add", "add_", "sub", "sub_", "mul", "mul_", "div", "div_", "relu", "relu_", "threshold_backward", "addcmul_", "addcdiv_", "sqrt", "sqrt_",
      "copy_", "clamp_min", "reciprocal", "rsqrt", "neg", "exp", "elu", "elu_backward", "leaky_relu", "leaky_relu_backward", "maximum", "masked_fill_",
      "ge", "eq", "logical_and", "lerp_", "_log_softmax", "_log_softmax_backward_data", "sum", "mean", "where"};
  return ops.count(op) > 0;
}

Work work_of(const std::string& name, const Shapes& s) {
  Work w;
  if (name == kSgemmOpName && s.size() == 3) {
    // |A| |B| |C| = (MK)(KN)(MN) = (MNK)^2, whichever operands were transposed.
    w.bound = OpBound::kGemm;
    w.flops = 2.0 * std::sqrt(numel(s[0]) * numel(s[1]) * numel(s[2]));
    return w;
  }
  if (name.rfind("aten::", 0) != 0) return w;
  const std::string op = name.substr(6);
  auto at = [&](std::size_t i) -> const std::vector<std::int64_t>& {
    static const std::vector<std::int64_t> none;
    return i < s.size() ? s[i] : none;
  };
  if ((op == "mm" && at(0).size() == 2 && at(1).size() == 2) || (op == "addmm" && at(1).size() == 2 && at(2).size() == 2)) {
    const auto& a = op == "mm" ? at(0) : at(1);
    const auto& b = op == "mm" ? at(1) : at(2);
    w.bound = OpBound::kGemm;
    w.flops = 2.0 * static_cast<double>(a[0]) * static_cast<double>(a[1]) * static_cast<double>(b[1]);
  } else if (op == "index_select" && !at(0).empty()) {
    w.bound = OpBound::kGather;
    w.bytes = numel(at(2)) * row_bytes(at(0));
    w.key = gather_key(row_bytes(at(0)), tensor_bytes(at(0)));
  } else if ((op == "_embedding_bag" || op == "_embedding_bag_forward_only") && at(0).size() == 2) {
    w.bound = OpBound::kGather;
    w.bytes = numel(at(1)) * row_bytes(at(0));
    w.key = gather_key(row_bytes(at(0)), tensor_bytes(at(0)));
  } else if ((op == "index_add_" || op == "index_add") && !at(0).empty() && !at(3).empty()) {
    // A scatter-add of the source rows into the table: taken at the gather rate.
    w.bound = OpBound::kGather;
    w.bytes = tensor_bytes(at(3));
    w.key = gather_key(row_bytes(at(0)), tensor_bytes(at(0)));
  } else if (op == "_embedding_bag_dense_backward" && at(0).size() == 2) {
    // Sums the output gradient's rows (grad [bags, D]) into each index's row: a gather from grad.
    w.bound = OpBound::kGather;
    w.bytes = numel(at(1)) * row_bytes(at(0));
    w.key = gather_key(row_bytes(at(0)), tensor_bytes(at(0)));
  } else if (op == "zero_" || op == "fill_") {
    w.bound = OpBound::kFill;
    w.bytes = tensor_bytes(at(0));
  } else if (is_stream_op(op)) {
    // Reads every tensor argument, writes one result as large as the largest.
    double sum = 0, largest = 0;
    for (const auto& shape : s) {
      sum += tensor_bytes(shape);
      largest = std::max(largest, tensor_bytes(shape));
    }
    w.bound = OpBound::kStream;
    w.bytes = sum + (op == "sum" || op == "mean" ? 0 : largest);
  }
  return w;
}

template <class F>
double best_seconds(int repeats, F&& f) {
  double best = 1e300;
  for (int i = 0; i < repeats; ++i) {
    const auto t0 = Clock::now();
    f();
    best = std::min(best, std::chrono::duration<double>(Clock::now() - t0).count());
  }
  return best;
}

double gemm_rate() {
  torch::NoGradGuard no_grad;
  const std::int64_t n = 2048;
  const torch::Tensor a = torch::rand({n, n}), b = torch::rand({n, n});
  // Through the layers' own path (oneDNN or torch).
  torch::Tensor c = linear_map(a, b);
  return 2.0 * n * n * n / best_seconds(3, [&] { c = linear_map(a, b); });
}

double stream_rate() {
  torch::NoGradGuard no_grad;
  const std::int64_t n = std::int64_t{32} << 20;  // 128 MiB of float, well past the caches
  const torch::Tensor src = torch::ones({n});
  torch::Tensor dst = torch::empty({n});
  dst.copy_(src);
  return 2.0 * kElem * static_cast<double>(n) / best_seconds(3, [&] { dst.copy_(src); });
}

double fill_rate() {
  torch::NoGradGuard no_grad;
  torch::Tensor t = torch::empty({std::int64_t{32} << 20});
  t.zero_();
  return kElem * static_cast<double>(t.numel()) / best_seconds(3, [&] { t.zero_(); });
}

double gather_rate(const GatherKey& k) {
  const auto width = static_cast<std::size_t>(std::max<std::int64_t>(k.width, 1));
  const std::size_t table_bytes = std::size_t{1} << k.table_log2;
  const std::size_t rows = std::max<std::size_t>(1, table_bytes / width);
  std::vector<char> table(rows * width, 1);
  // Enough rows for a few milliseconds, at most 64 MiB of them.
  const std::size_t n = std::max<std::size_t>(1024, (std::size_t{64} << 20) / width);
  std::vector<std::int64_t> idx(n);
  std::mt19937_64 rng(k.table_log2 * 1000003 + k.width);
  for (auto& i : idx) i = static_cast<std::int64_t>(rng() % rows);
  std::vector<char> out(n * width);
  const double s = best_seconds(3, [&] {
    at::parallel_for(0, static_cast<std::int64_t>(n), 1024, [&](std::int64_t a, std::int64_t b) {
      for (std::int64_t i = a; i < b; ++i)
        std::memcpy(out.data() + static_cast<std::size_t>(i) * width, table.data() + static_cast<std::size_t>(idx[static_cast<std::size_t>(i)]) * width, width);
    });
  });
  return static_cast<double>(n * width) / s;
}

}  // namespace

std::string op_bound_name(OpBound b) {
  switch (b) {
    case OpBound::kGemm: return "sgemm";
    case OpBound::kGather: return "gather";
    case OpBound::kStream: return "stream";
    case OpBound::kFill: return "fill";
    case OpBound::kNone: break;
  }
  return "-";
}

double OpProfile::seconds() const {
  double s = 0;
  for (const OpCost& o : ops) s += o.seconds;
  return s;
}

double OpProfile::limit_s() const {
  double s = 0;
  for (const OpCost& o : ops) s += o.limit_s;
  return s;
}

struct OpRecorder::Totals {
  struct Op {
    std::int64_t calls = 0;
    double seconds = 0, flops = 0, stream_bytes = 0, fill_bytes = 0;
    std::map<GatherKey, double> gather_bytes;
  };
  std::map<std::string, Op> ops;
};

OpRecorder::OpRecorder() : t_(std::make_unique<Totals>()) {}

OpRecorder::~OpRecorder() {
  if (on_) prof::disableProfilerLegacy();
}

void OpRecorder::start() {
  if (on_) return;
  prof::enableProfilerLegacy(torch::profiler::impl::ProfilerConfig(torch::profiler::impl::ProfilerState::CPU, /*report_input_shapes=*/true));
  on_ = true;
}

void OpRecorder::stop() {
  if (!on_) return;
  on_ = false;
  const prof::thread_event_lists lists = prof::disableProfilerLegacy();
  struct Frame {
    const prof::LegacyEvent* push;
    double child_us = 0;
    Work work;
    std::map<OpBound, double> claimed;  // work descendants already account for, by bound
  };
  for (const auto& events : lists) {
    std::vector<Frame> stack;
    for (const prof::LegacyEvent& e : events) {
      if (e.kind() == prof::EventKind::PushRange) {
        stack.push_back({&e, 0, work_of(e.name(), e.shapes()), {}});
      } else if (e.kind() == prof::EventKind::PopRange && !stack.empty()) {
        Frame f = std::move(stack.back());
        stack.pop_back();
        const double elapsed = f.push->cpuElapsedUs(e);
        Totals::Op& op = t_->ops[f.push->name()];
        ++op.calls;
        op.seconds += (elapsed - f.child_us) * 1e-6;
        // The innermost op carries the work: a wrapper whose callees already did most of its kind
        // of work (aten::embedding_bag calling _embedding_bag, relu calling clamp_min) adds none.
        const double amount = f.work.bound == OpBound::kGemm ? f.work.flops : f.work.bytes;
        const bool mine = f.work.bound != OpBound::kNone && f.claimed[f.work.bound] < 0.5 * amount;
        if (mine) {
          switch (f.work.bound) {
            case OpBound::kGemm: op.flops += amount; break;
            case OpBound::kStream: op.stream_bytes += amount; break;
            case OpBound::kFill: op.fill_bytes += amount; break;
            case OpBound::kGather: op.gather_bytes[f.work.key] += amount; break;
            case OpBound::kNone: break;
          }
        }
        if (!stack.empty()) {
          Frame& parent = stack.back();
          parent.child_us += elapsed;
          for (const auto& [b, a] : f.claimed) parent.claimed[b] += a;
          if (mine) parent.claimed[f.work.bound] += amount;
        }
      }
    }
  }
}

OpProfile OpRecorder::profile(std::int64_t steps) const {
  OpProfile p;
  p.steps = steps;
  p.threads = at::get_num_threads();
  p.gemm_flops_per_s = gemm_rate();
  p.stream_bytes_per_s = stream_rate();
  p.fill_bytes_per_s = fill_rate();
  std::map<GatherKey, double> gather_rates;
  for (const auto& [name, op] : t_->ops) {
    OpCost c;
    c.name = name;
    c.calls = op.calls;
    c.seconds = op.seconds;
    c.flops = op.flops;
    if (op.flops > 0) c.limit_s += op.flops / p.gemm_flops_per_s;
    if (op.stream_bytes > 0) c.limit_s += op.stream_bytes / p.stream_bytes_per_s;
    if (op.fill_bytes > 0) c.limit_s += op.fill_bytes / p.fill_bytes_per_s;
    c.bytes += op.stream_bytes + op.fill_bytes;
    for (const auto& [key, bytes] : op.gather_bytes) {
      auto it = gather_rates.find(key);
      if (it == gather_rates.end()) it = gather_rates.emplace(key, gather_rate(key)).first;
      c.limit_s += bytes / it->second;
      c.bytes += bytes;
    }
    c.bound = op.flops > 0 ? OpBound::kGemm : !op.gather_bytes.empty() ? OpBound::kGather : op.stream_bytes > 0 ? OpBound::kStream : op.fill_bytes > 0 ? OpBound::kFill : OpBound::kNone;
    p.ops.push_back(std::move(c));
  }
  std::sort(p.ops.begin(), p.ops.end(), [](const OpCost& a, const OpCost& b) { return a.seconds > b.seconds; });
  return p;
}

std::string format_op_profile(const OpProfile& p) {
  std::ostringstream out;
  char line[256];
  const double per = p.steps > 0 ? 1.0 / static_cast<double>(p.steps) : 0;
  std::snprintf(line, sizeof line,
                "op profile of %lld training steps (rank 0, %d thread%s); limits at this machine's sgemm %.0f GFLOP/s, streaming copy %.1f GB/s\n"
                "(bytes read and written), fill %.1f GB/s, and a memcpy gather of random rows of the same width from a table of the same size\n",
                static_cast<long long>(p.steps), p.threads, p.threads == 1 ? "" : "s", p.gemm_flops_per_s * 1e-9, p.stream_bytes_per_s * 1e-9,
                p.fill_bytes_per_s * 1e-9);
  out << line;
  std::snprintf(line, sizeof line, "%-36s %7s %10s %10s %8s %7s  %s\n", "op", "calls", "ms/step", "limit ms", "x limit", "share", "bound");
  out << line;
  const double total = p.seconds();
  double other_s = 0, other_limit = 0;
  std::int64_t other_calls = 0;
  for (const OpCost& o : p.ops) {
    // Ops too small to matter are summed in one row.
    if (o.seconds < 0.01 * total) {
      other_s += o.seconds;
      other_limit += o.limit_s;
      other_calls += o.calls;
      continue;
    }
    char ratio[16] = "-";
    if (o.limit_s > 0) std::snprintf(ratio, sizeof ratio, "%.2f", o.seconds / o.limit_s);
    std::snprintf(line, sizeof line, "%-36s %7.1f %10.3f %10.3f %8s %6.1f%%  %s\n", o.name.c_str(), static_cast<double>(o.calls) * per,
                  1e3 * o.seconds * per, 1e3 * o.limit_s * per, ratio, 100 * o.seconds / total, op_bound_name(o.bound).c_str());
    out << line;
  }
  std::snprintf(line, sizeof line, "%-36s %7.1f %10.3f %10.3f %8s %6.1f%%\n", "(ops under 1% each)", static_cast<double>(other_calls) * per,
                1e3 * other_s * per, 1e3 * other_limit * per, "", total > 0 ? 100 * other_s / total : 0.0);
  out << line;
  std::snprintf(line, sizeof line, "%-36s %7s %10.3f %10.3f %8.2f\n", "all ops", "", 1e3 * total * per, 1e3 * p.limit_s() * per,
                p.limit_s() > 0 ? total / p.limit_s() : 0.0);
  out << line;
  if (p.step_s > 0) {
    // The trainer's own clock also counts what runs between ops (tensor views of the batch,
    // the autograd engine, reading the loss).
    std::snprintf(line, sizeof line, "%-36s %7s %10.3f %10.3f %8.2f\n", "the step (trainer's clock)", "", 1e3 * p.step_s * per, 1e3 * p.limit_s() * per,
                  p.limit_s() > 0 ? p.step_s / p.limit_s() : 0.0);
    out << line;
  }
  return out.str();
}

}  // namespace shardgnn
