// Where a training step's compute goes, op by op, against what this machine allows. torch's
// (legacy, thread-local) profiler records every aten op the training thread runs, forward,
// backward and optimiser, with its input shapes; each op's exclusive time is set beside a limit
// from its FLOPs or bytes at rates measured here and now: sgemm for matrix products, a memcpy
// gather of random rows (same row width, same table size) for gathers and scatters, a streaming
// copy for element-wise ops, a fill for zero_/fill_. Ops with no model of their cost keep their time and no limit, so
// they count against the step as a whole.
//
// No torch in this header (train.hpp includes it).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace shardgnn {

enum class OpBound { kNone, kGemm, kGather, kStream, kFill };
std::string op_bound_name(OpBound b);

struct OpCost {
  std::string name;         // the aten op, e.g. "aten::addmm"
  std::int64_t calls = 0;
  double seconds = 0;       // exclusive time (its child ops are theirs)
  double limit_s = 0;       // what its FLOPs or bytes take at the machine's rates (0: no model)
  double flops = 0, bytes = 0;
  OpBound bound = OpBound::kNone;
};

struct OpProfile {
  std::int64_t steps = 0;
  int threads = 0;
  double gemm_flops_per_s = 0;   // the sgemm rate the limits use
  double stream_bytes_per_s = 0; // the streaming copy rate (bytes read and written)
  double fill_bytes_per_s = 0;   // the rate of zero_/fill_ (bytes written)
  double step_s = 0;             // the steps' compute on the trainer's clock (set by the trainer; 0: not known)
  std::vector<OpCost> ops;       // by time, longest first
  double seconds() const;        // all ops' exclusive times
  double limit_s() const;        // all ops' limits
};

// Records the aten ops this thread runs between start() and stop() (nothing else is slowed).
class OpRecorder {
 public:
  OpRecorder();
  ~OpRecorder();
  OpRecorder(const OpRecorder&) = delete;
  OpRecorder& operator=(const OpRecorder&) = delete;
  void start();
  // Stops recording and adds what was recorded to the totals.
  void stop();
  // The totals over every start()/stop() so far, with limits measured now on this thread's
  // torch thread count (sgemm 2048^3, copy and fill of 128 MiB, gathers per row width and
  // table size up to 256 MiB). `steps` is what the totals cover.
  OpProfile profile(std::int64_t steps) const;

 private:
  struct Totals;
  std::unique_ptr<Totals> t_;
  bool on_ = false;
};

// The profile as a table: per op calls, time and limit per step, how far from its limit, and
// the sum of all ops against the sum of their limits.
std::string format_op_profile(const OpProfile& p);

}  // namespace shardgnn
