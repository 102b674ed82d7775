#include "tools/run_report.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <system_error>

#include "datasets/error.hpp"
#include "datasets/fileio.hpp"
#include "partition/report.hpp"

namespace fs = std::filesystem;
namespace json = boost::json;

namespace shardgnn {

namespace {

using render::fmt;
using render::pad;
using render::xml_escape;

// ---------------------------------------------------------------------------------------------
// Formatting

// 1234567 -> "1.23M": counts in a narrow column.
std::string human(double v) {
  const char* units[] = {"", "k", "M", "G", "T"};
  int u = 0;
  while (std::fabs(v) >= 999.95 && u < 4) {
    v /= 1000;
    ++u;
  }
  if (u == 0) return fmt("%.0f", v);
  return fmt(std::fabs(v) >= 99.95 ? "%.0f" : std::fabs(v) >= 9.995 ? "%.1f" : "%.2f", v) + units[u];
}

std::string secs(double v) { return fmt(v >= 99.95 ? "%.0f" : v >= 9.995 ? "%.1f" : "%.2f", v); }
std::string ratio(double v) { return fmt("%.2f", v); }
std::string acc(double v) { return fmt("%.4f", v); }

}  // namespace

RunMetrics parse_run_metrics(const std::string& text, const std::string& file) {
  RunMetrics run;
  run.file = file;
  run.dir = fs::path(file).parent_path().string();
  if (run.dir.empty()) run.dir = ".";
  std::map<std::int64_t, RunEpoch> by_epoch;
  std::int64_t line_no = 0;
  std::size_t pos = 0;
  while (pos < text.size()) {
    std::size_t end = text.find('\n', pos);
    if (end == std::string::npos) end = text.size();
    std::string_view line(text.data() + pos, end - pos);
    pos = end + 1;
    ++line_no;
    if (line.find_first_not_of(" \t\r") == std::string_view::npos) continue;  // blank lines are allowed
    json::stream_parser p;
    boost::system::error_code ec;
    const std::size_t used = p.write(line.data(), line.size(), ec);
    if (!ec) p.finish(ec);
    if (ec)
      throw InputError(file, at_line_col(static_cast<std::uint64_t>(line_no), used + 1),
                       "invalid JSON (" + ec.message() + "), expected one JSON object per line (one epoch)");
    const json::value v = p.release();
    RunEpoch e;
    try {
      // The run's outcome: a later one (a resumed run finishing again) replaces it.
      if (const json::object* o = v.if_object(); o != nullptr && o->contains("result")) {
        run.result = json::value_to<ResultRecord>(o->at("result"));
        continue;
      }
      static_cast<EpochRecord&>(e) = json::value_to<EpochRecord>(v);
      run.result.reset();  // epochs after a result: a later run's, still going or stopped
    } catch (const InputError& bad) {  // the record names the key; the line is known here
      throw InputError(file, at_line(static_cast<std::uint64_t>(line_no)), bad.what());
    }
    e.line = line_no;
    auto [it, inserted] = by_epoch.try_emplace(e.epoch);
    if (!inserted) ++run.superseded;  // a resumed run re-logs the epochs after its checkpoint
    it->second = std::move(e);
  }
  if (by_epoch.empty()) throw InputError(file, at_line(1), "empty file, expected one JSON object per line (one per epoch)");
  for (auto& [epoch, e] : by_epoch) run.epochs.push_back(std::move(e));
  return run;
}

RunMetrics load_run_metrics(const std::string& path) {
  std::error_code ec;
  const fs::file_status st = fs::status(path, ec);
  if (ec || !fs::exists(st)) throw InputError(path, "", "no such file or folder, expected a run folder or its metrics.jsonl");
  std::string file = path;
  if (fs::is_directory(st)) {
    file = (fs::path(path) / "metrics.jsonl").string();
    if (!fs::exists(file, ec)) throw InputError(path, "", "no metrics.jsonl in this folder (written by 'shardgnn train --metrics FILE')");
  }
  const MappedFile m = map_file(file);
  RunMetrics run = parse_run_metrics(std::string(reinterpret_cast<const char*>(m.bytes.data()), m.bytes.size()), file);
  if (fs::is_directory(st)) run.dir = path;
  return run;
}

namespace {
// A rank's totals over the epochs so far (seeds_per_epoch a total until summarize_run divides it).
void add_epoch(RankSummary& t, const RankEpoch& r) {
  ++t.epochs;
  t.seeds_per_epoch += r.seeds;
  t.steps += r.steps;
  t.sampled_edges += r.sampled_edges;
  t.remote_sampled_rows += r.remote_sampled_rows;
  t.remote_rows += r.remote_rows;
  t.cache_hits += r.cache_hits;
  t.node_local_rows += r.node_local_rows;
  t.node_local_sampled_rows += r.node_local_sampled_rows;
  t.bytes_moved += r.bytes_sent + r.bytes_received;
  t.sample_s += r.sample_s;
  t.fetch_s += r.fetch_s;
  t.batch_wait_s += r.batch_wait_s;
  t.compute_s += r.compute_s;
  t.allreduce_s += r.allreduce_s;
  t.busy_s += r.busy_s;
  t.slowdown = std::max(t.slowdown, r.slowdown);
}
}  // namespace

RunSummary summarize_run(const RunMetrics& run) {
  RunSummary s;
  s.file = run.file;
  s.dir = run.dir;
  s.epochs = static_cast<std::int64_t>(run.epochs.size());
  s.superseded = run.superseded;
  // A run resumed on another rank count: the per-rank view is of the last count's epochs.
  for (const RunEpoch& e : run.epochs)
    if (!e.ranks.empty()) s.ranks = static_cast<int>(e.ranks.size());
  s.per_rank.resize(static_cast<std::size_t>(s.ranks));
  for (int k = 0; k < s.ranks; ++k) s.per_rank[static_cast<std::size_t>(k)].rank = k;
  double ratio_sum = 0;
  for (const RunEpoch& e : run.epochs) {
    s.total_epoch_s += e.epoch_s;
    EpochImbalance im;
    im.epoch = e.epoch;
    im.epoch_s = e.epoch_s;
    im.loss = e.loss;
    im.sample_wait_s = e.sample_wait_s;
    im.compute_s = e.compute_s;
    im.allreduce_s = e.allreduce_s;
    im.eval_s = e.eval_s;
    if (e.evaluated) im.val_acc = e.val.accuracy;
    if (e.tested) im.test_acc = e.test.accuracy;
    if (!e.rebalance.empty()) im.rebalance = Rebalance{e.rebalance, {e.plan_load.begin(), e.plan_load.end()}, static_cast<double>(e.moved)};
    if (!e.ranks.empty() && static_cast<int>(e.ranks.size()) == s.ranks) {
      im.has_ranks = true;
      ++s.epochs_with_ranks;
      double sum = 0;
      for (const RankEpoch& r : e.ranks) {
        add_epoch(s.per_rank[static_cast<std::size_t>(r.rank)], r);
        sum += r.busy_s;
        if (r.busy_s > im.max_busy_s || im.slowest_rank < 0) {
          im.max_busy_s = r.busy_s;
          im.slowest_rank = r.rank;
        }
        im.max_allreduce_s = std::max(im.max_allreduce_s, r.allreduce_s);
      }
      im.mean_busy_s = sum / static_cast<double>(e.ranks.size());
      im.ratio = im.mean_busy_s > 0 ? im.max_busy_s / im.mean_busy_s : 1.0;
      ++s.per_rank[static_cast<std::size_t>(im.slowest_rank)].slowest_epochs;
      ratio_sum += im.ratio;
      if (s.worst_epoch < 0 || im.ratio > s.worst_ratio) {
        s.worst_ratio = im.ratio;
        s.worst_epoch = e.epoch;
      }
    }
    s.per_epoch.push_back(im);
    if (e.evaluated) {
      if (!s.best_val || e.val.accuracy > *s.best_val) {
        s.best_val = e.val.accuracy;
        s.best_val_epoch = e.epoch;
        s.test_at_best_val = e.tested ? std::optional<double>(e.test.accuracy) : std::nullopt;
      }
      if (e.tested && (!s.best_test || e.test.accuracy > *s.best_test)) {
        s.best_test = e.test.accuracy;
        s.best_test_epoch = e.epoch;
      }
      s.last_val = e.val.accuracy;
      s.last_test = e.tested ? std::optional<double>(e.test.accuracy) : std::nullopt;
      s.last_eval_epoch = e.epoch;
    }
  }
  if (s.epochs_with_ranks > 0) s.mean_ratio = ratio_sum / static_cast<double>(s.epochs_with_ranks);
  for (RankSummary& t : s.per_rank) {
    if (t.epochs > 0) {
      t.seeds_per_epoch /= static_cast<double>(t.epochs);
      t.busy_per_epoch_s = t.busy_s / static_cast<double>(t.epochs);
    }
    t.busy_per_step_s = t.steps > 0 ? t.busy_s / t.steps : 0;
  }
  return s;
}

// ---------------------------------------------------------------------------------------------
// Terminal table

std::string render_run_table(const RunSummary& s) {
  std::string out;
  out += "run          " + s.dir + "  (" + s.file + ")\n";
  out += "epochs       " + std::to_string(s.epochs) + ", " + secs(s.total_epoch_s) + " s in all, " +
         secs(s.epochs > 0 ? s.total_epoch_s / static_cast<double>(s.epochs) : 0) + " s per epoch";
  if (s.superseded > 0) out += " (" + std::to_string(s.superseded) + " earlier lines of re-run epochs superseded)";
  out += "\n";
  std::string accuracy;
  if (s.best_val) {
    accuracy += "best val " + acc(*s.best_val) + " (epoch " + std::to_string(s.best_val_epoch);
    accuracy += s.test_at_best_val ? ", test there " + acc(*s.test_at_best_val) + ")" : ")";
  }
  if (s.best_test) accuracy += std::string(accuracy.empty() ? "" : "; ") + "best test " + acc(*s.best_test) + " (epoch " + std::to_string(s.best_test_epoch) + ")";
  if (s.last_eval_epoch >= 0) {
    accuracy += "; last (epoch " + std::to_string(s.last_eval_epoch) + ")";
    if (s.last_val) accuracy += " val " + acc(*s.last_val);
    if (s.last_test) accuracy += " test " + acc(*s.last_test);
  }
  out += "accuracy     " + (accuracy.empty() ? std::string("not evaluated") : accuracy) + "\n";
  if (s.ranks == 0) {
    out += "per-rank     absent: no line of this file has a \"ranks\" array (written by trainers that record per-rank\n"
           "             time and traffic); below is what the file has\n";
  } else {
    double idle = 0;
    for (const auto& e : s.per_epoch)
      if (e.has_ranks) idle += e.max_busy_s - e.mean_busy_s;
    out += "ranks        " + std::to_string(s.ranks) + (s.epochs_with_ranks < s.epochs ? " (per-rank data on " + std::to_string(s.epochs_with_ranks) + " of " +
                                                                                            std::to_string(s.epochs) + " epochs)"
                                                                                      : std::string()) +
           "\n";
    out += "imbalance    max/mean busy " + ratio(s.mean_ratio) + " on average, worst " + ratio(s.worst_ratio) + " (epoch " + std::to_string(s.worst_epoch) +
           "); balanced ranks would save up to " + secs(idle) + " s\n"
           "             (the sum over epochs of max - mean busy: the time the others spend waiting in the all-reduce)\n";
    out += "\n";
    const std::vector<std::pair<std::string, std::size_t>> cols = {
        {"rank", 5},       {"seeds/ep", 10},  {"steps", 8},     {"edges", 9},    {"remote rows", 12}, {"hit %", 7},    {"same-node rows", 15}, {"MB moved", 10},  {"sample s", 10},
        {"fetch s", 9},    {"wait s", 8},     {"compute s", 10}, {"allred s", 10}, {"busy s/ep", 11},  {"busy ms/step", 13}, {"slowest", 9}};
    for (const auto& [name, w] : cols) out += pad(name, w);
    out += "\n";
    for (const RankSummary& t : s.per_rank) {
      out += pad(std::to_string(t.rank), 5) + pad(fmt("%.0f", t.seeds_per_epoch), 10) + pad(fmt("%.0f", t.steps), 8) + pad(human(t.sampled_edges), 9) +
             pad(human(t.remote_rows), 12) + pad(t.remote_rows > 0 ? fmt("%.1f", 100 * t.cache_hits / t.remote_rows) : "-", 7) + pad(human(t.node_local_rows), 15) +
             pad(fmt("%.1f", t.bytes_moved / 1e6), 10) + pad(secs(t.sample_s), 10) + pad(secs(t.fetch_s), 9) + pad(secs(t.batch_wait_s), 8) +
             pad(secs(t.compute_s), 10) + pad(secs(t.allreduce_s), 10) + pad(fmt("%.3f", t.busy_per_epoch_s), 11) + pad(fmt("%.2f", 1e3 * t.busy_per_step_s), 13) +
             pad(std::to_string(t.slowest_epochs) + "/" + std::to_string(t.epochs), 9) + (t.slowdown != 1 ? "  (slowdown x" + fmt("%g", t.slowdown) + ")" : "") +
             "\n";
    }
    out += "(totals over the epochs except seeds/ep and busy; busy = own work (compute and sampling, no waiting); slowest = epochs with the largest busy time;\n"
           " remote rows = input rows owned on other nodes, from the cache or over MPI; same-node rows = read from the shards of ranks on this node)\n";
  }
  out += "\n";
  const std::vector<std::pair<std::string, std::size_t>> head = {{"epoch", 6}, {"epoch s", 9}, {"loss", 8}, {"val acc", 9}};
  // With per-rank data: the imbalance; without, the time split the line has (means over ranks).
  const std::vector<std::pair<std::string, std::size_t>> tail =
      s.ranks > 0 ? std::vector<std::pair<std::string, std::size_t>>{{"max busy s", 12}, {"mean busy s", 13}, {"max/mean", 10}, {"slowest", 9}, {"max allred s", 14}}
                  : std::vector<std::pair<std::string, std::size_t>>{{"sample wait s", 15}, {"compute s", 11}, {"allred s", 10}, {"eval s", 8}};
  for (const auto& [name, w] : head) out += pad(name, w);
  for (const auto& [name, w] : tail) out += pad(name, w);
  out += s.ranks > 0 ? "  rebalance\n" : "  (means over ranks)\n";
  for (const EpochImbalance& e : s.per_epoch) {
    out += pad(std::to_string(e.epoch), 6) + pad(secs(e.epoch_s), 9) + pad(fmt("%.4f", e.loss), 8) + pad(e.val_acc ? acc(*e.val_acc) : "-", 9);
    if (s.ranks == 0) {
      out += pad(secs(e.sample_wait_s), 15) + pad(secs(e.compute_s), 11) + pad(secs(e.allreduce_s), 10) + pad(secs(e.eval_s), 8) + "\n";
      continue;
    }
    if (e.has_ranks)
      out += pad(fmt("%.3f", e.max_busy_s), 12) + pad(fmt("%.3f", e.mean_busy_s), 13) + pad(ratio(e.ratio), 10) + pad(std::to_string(e.slowest_rank), 9) +
             pad(fmt("%.3f", e.max_allreduce_s), 14);
    else
      out += pad("-", 12) + pad("-", 13) + pad("-", 10) + pad("-", 9) + pad("-", 14);
    out += "  " + (e.rebalance ? e.rebalance->policy + ", moved " + fmt("%.0f", e.rebalance->moved) + " seeds" : std::string("-")) + "\n";
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// JSON

namespace {
// Whole numbers (counts, bytes) as JSON integers: 20, not 2E1.
json::value jnum(double v) {
  if (std::floor(v) == v && std::fabs(v) < 9007199254740992.0) return json::value(static_cast<std::int64_t>(v));
  return json::value(v);
}
}  // namespace

boost::json::value run_summary_json(const RunSummary& s) {
  auto opt = [](const std::optional<double>& v) { return v ? jnum(*v) : json::value(nullptr); };
  json::object o;
  o["file"] = s.file;
  o["dir"] = s.dir;
  o["epochs"] = s.epochs;
  o["epochs_with_ranks"] = s.epochs_with_ranks;
  o["superseded_lines"] = s.superseded;
  o["ranks"] = s.ranks;
  o["total_epoch_s"] = jnum(s.total_epoch_s);
  o["accuracy"] = json::object{{"best_val", opt(s.best_val)},
                               {"best_val_epoch", s.best_val ? json::value(s.best_val_epoch) : json::value(nullptr)},
                               {"test_at_best_val", opt(s.test_at_best_val)},
                               {"best_test", opt(s.best_test)},
                               {"best_test_epoch", s.best_test ? json::value(s.best_test_epoch) : json::value(nullptr)},
                               {"last_val", opt(s.last_val)},
                               {"last_test", opt(s.last_test)},
                               {"last_eval_epoch", s.last_eval_epoch >= 0 ? json::value(s.last_eval_epoch) : json::value(nullptr)}};
  if (s.ranks > 0)
    o["imbalance"] = json::object{{"mean_max_over_mean_busy", jnum(s.mean_ratio)}, {"worst_max_over_mean_busy", jnum(s.worst_ratio)}, {"worst_epoch", s.worst_epoch}};
  else
    o["imbalance"] = nullptr;
  json::array ranks;
  for (const RankSummary& t : s.per_rank)
    ranks.push_back(json::object{{"rank", t.rank},
                                 {"epochs", t.epochs},
                                 {"seeds_per_epoch", jnum(t.seeds_per_epoch)},
                                 {"steps", jnum(t.steps)},
                                 {"sampled_edges", jnum(t.sampled_edges)},
                                 {"remote_sampled_rows", jnum(t.remote_sampled_rows)},
                                 {"remote_rows", jnum(t.remote_rows)},
                                 {"cache_hits", jnum(t.cache_hits)},
                                 {"node_local_rows", jnum(t.node_local_rows)},
                                 {"node_local_sampled_rows", jnum(t.node_local_sampled_rows)},
                                 {"bytes_moved", jnum(t.bytes_moved)},
                                 {"time_s", {{"sample", jnum(t.sample_s)}, {"fetch", jnum(t.fetch_s)}, {"batch_wait", jnum(t.batch_wait_s)}, {"compute", jnum(t.compute_s)}, {"allreduce", jnum(t.allreduce_s)}}},
                                 {"busy_s", jnum(t.busy_s)},
                                 {"busy_per_epoch_s", jnum(t.busy_per_epoch_s)},
                                 {"busy_per_step_s", jnum(t.busy_per_step_s)},
                                 {"slowest_epochs", t.slowest_epochs},
                                 {"slowdown", jnum(t.slowdown)}});
  o["per_rank"] = std::move(ranks);
  json::array epochs;
  for (const EpochImbalance& e : s.per_epoch) {
    json::object x{{"epoch", e.epoch}, {"epoch_s", jnum(e.epoch_s)}, {"loss", jnum(e.loss)}, {"val_acc", opt(e.val_acc)}, {"test_acc", opt(e.test_acc)}};
    if (e.has_ranks) {
      x["max_busy_s"] = jnum(e.max_busy_s);
      x["mean_busy_s"] = jnum(e.mean_busy_s);
      x["max_over_mean_busy"] = jnum(e.ratio);
      x["slowest_rank"] = e.slowest_rank;
      x["max_allreduce_s"] = jnum(e.max_allreduce_s);
    }
    if (e.rebalance) {
      json::array seeds;
      for (double v : e.rebalance->seeds) seeds.push_back(jnum(v));
      x["rebalance"] = json::object{{"policy", e.rebalance->policy}, {"seeds", std::move(seeds)}, {"moved", jnum(e.rebalance->moved)}};
    }
    epochs.push_back(std::move(x));
  }
  o["per_epoch"] = std::move(epochs);
  return o;
}

// ---------------------------------------------------------------------------------------------
// SVG

namespace {

// Plot area of one panel: (x0, y0) its top-left corner, w x h, values ymin..ymax, n epoch slots.
struct Axes {
  double x0 = 0, y0 = 0, w = 0, h = 0, ymin = 0, ymax = 1;
  std::size_t n = 1;
  double x(std::size_t i) const { return x0 + (static_cast<double>(i) + 0.5) * w / static_cast<double>(std::max<std::size_t>(n, 1)); }
  double slot() const { return w / static_cast<double>(std::max<std::size_t>(n, 1)); }
  double y(double v) const { return y0 + h - (v - ymin) / (ymax - ymin) * h; }
};

// A round tick step (1, 2 or 5 x 10^k) giving about `ticks` intervals over `span`.
double nice_step(double span, int ticks = 4) {
  if (!(span > 0)) return 1;
  const double raw = span / ticks, mag = std::pow(10.0, std::floor(std::log10(raw))), norm = raw / mag;
  return (norm <= 1 ? 1 : norm <= 2 ? 2 : norm <= 5 ? 5 : 10) * mag;
}

// Sets ymax to a round value at or above `max_value` (and the step for ticks).
double round_up(double ymin, double max_value, double& step) {
  step = nice_step(max_value - ymin);
  return ymin + std::max(1.0, std::ceil((max_value - ymin) / step - 1e-9)) * step;
}

const char* tick_format(double step) { return step >= 1 ? "%.0f" : step >= 0.1 ? "%.1f" : step >= 0.01 ? "%.2f" : "%.3f"; }

std::string f1(double v) { return fmt("%.1f", v); }

void text(std::string& s, double x, double y, const std::string& t, const std::string& attrs = "") {
  s += "<text x=\"" + f1(x) + "\" y=\"" + f1(y) + "\"" + (attrs.empty() ? "" : " " + attrs) + ">" + xml_escape(t) + "</text>\n";
}

// Grid lines with y tick labels, the x axis with epoch labels (at most ~10), axis titles.
void draw_axes(std::string& s, const Axes& a, double step, const std::vector<std::int64_t>& epochs, const std::string& ylabel) {
  const char* f = tick_format(step);
  for (double v = a.ymin; v <= a.ymax + step * 1e-6; v += step) {
    const double y = a.y(v);
    s += "<line x1=\"" + f1(a.x0) + "\" y1=\"" + f1(y) + "\" x2=\"" + f1(a.x0 + a.w) + "\" y2=\"" + f1(y) + "\" stroke=\"#e0e0e0\"/>\n";
    text(s, a.x0 - 5, y + 4, fmt(f, v), "text-anchor=\"end\" font-size=\"10\"");
  }
  s += "<line x1=\"" + f1(a.x0) + "\" y1=\"" + f1(a.y0 + a.h) + "\" x2=\"" + f1(a.x0 + a.w) + "\" y2=\"" + f1(a.y0 + a.h) + "\" stroke=\"#444\"/>\n";
  s += "<line x1=\"" + f1(a.x0) + "\" y1=\"" + f1(a.y0) + "\" x2=\"" + f1(a.x0) + "\" y2=\"" + f1(a.y0 + a.h) + "\" stroke=\"#444\"/>\n";
  const std::size_t stride = std::max<std::size_t>(1, (epochs.size() + 9) / 10);
  for (std::size_t i = 0; i < epochs.size(); i += stride) text(s, a.x(i), a.y0 + a.h + 13, std::to_string(epochs[i]), "text-anchor=\"middle\" font-size=\"10\"");
  text(s, a.x0 + a.w / 2, a.y0 + a.h + 27, "epoch", "text-anchor=\"middle\" font-size=\"11\"");
  const double ly = a.y0 + a.h / 2;
  text(s, a.x0 - 38, ly, ylabel, "text-anchor=\"middle\" font-size=\"11\" transform=\"rotate(-90 " + f1(a.x0 - 38) + " " + f1(ly) + ")\"");
}

struct Series {
  std::string label, color;
};

void legend(std::string& s, double x, double y, const std::vector<Series>& items, bool lines) {
  for (const Series& it : items) {
    if (lines)
      s += "<line x1=\"" + f1(x) + "\" y1=\"" + f1(y - 4) + "\" x2=\"" + f1(x + 16) + "\" y2=\"" + f1(y - 4) + "\" stroke=\"" + it.color + "\" stroke-width=\"2.5\"/>\n";
    else
      s += "<rect x=\"" + f1(x) + "\" y=\"" + f1(y - 10) + "\" width=\"12\" height=\"12\" fill=\"" + it.color + "\"/>\n";
    text(s, x + (lines ? 21 : 17), y, it.label);
    x += (lines ? 21 : 17) + 7.0 * static_cast<double>(it.label.size()) + 18;
  }
}

// Stacked bars: values[i][c] is component c of epoch slot i (an empty row: no bar).
void stacked_bars(std::string& s, const Axes& a, const std::vector<std::vector<double>>& values, const std::vector<Series>& parts,
                  const std::vector<std::int64_t>& epochs) {
  const double bw = std::min(40.0, std::max(1.0, a.slot() * 0.7));
  for (std::size_t i = 0; i < values.size(); ++i) {
    double base = a.ymin;
    std::string tip = "epoch " + std::to_string(epochs[i]) + ":";
    for (std::size_t c = 0; c < values[i].size(); ++c) tip += std::string(c ? "," : "") + " " + parts[c].label + " " + fmt("%.3f", values[i][c]) + " s";
    for (std::size_t c = 0; c < values[i].size(); ++c) {
      const double v = values[i][c];
      if (v <= 0) continue;
      const double top = a.y(base + v), bottom = a.y(base);
      s += "<rect x=\"" + fmt("%.2f", a.x(i) - bw / 2) + "\" y=\"" + fmt("%.2f", top) + "\" width=\"" + fmt("%.2f", bw) + "\" height=\"" +
           fmt("%.2f", bottom - top) + "\" fill=\"" + parts[c].color + "\"><title>" + xml_escape(tip) + "</title></rect>\n";
      base += v;
    }
  }
}

// Lines with a dot per point; NaN = no point (that epoch has no per-rank data).
void lines(std::string& s, const Axes& a, const std::vector<std::vector<double>>& ys, const std::vector<Series>& series, const std::vector<std::int64_t>& epochs,
           const char* value_format) {
  for (std::size_t k = 0; k < ys.size(); ++k) {
    std::string points;
    for (std::size_t i = 0; i < ys[k].size(); ++i)
      if (std::isfinite(ys[k][i])) points += fmt("%.2f", a.x(i)) + "," + fmt("%.2f", a.y(ys[k][i])) + " ";
    s += "<polyline points=\"" + points + "\" fill=\"none\" stroke=\"" + series[k].color + "\" stroke-width=\"2\"/>\n";
    for (std::size_t i = 0; i < ys[k].size(); ++i)
      if (std::isfinite(ys[k][i]))
        s += "<circle cx=\"" + fmt("%.2f", a.x(i)) + "\" cy=\"" + fmt("%.2f", a.y(ys[k][i])) + "\" r=\"2.5\" fill=\"" + series[k].color + "\"><title>" +
             xml_escape("epoch " + std::to_string(epochs[i]) + ": " + series[k].label + " " + fmt(value_format, ys[k][i])) + "</title></circle>\n";
  }
}

// A dashed vertical line at each epoch whose line records a rebalance that moved seeds.
void rebalance_marks(std::string& s, const Axes& a, const RunSummary& sum) {
  for (std::size_t i = 0; i < sum.per_epoch.size(); ++i) {
    const auto& rb = sum.per_epoch[i].rebalance;
    if (!rb || rb->moved <= 0) continue;
    s += "<line x1=\"" + f1(a.x(i)) + "\" y1=\"" + f1(a.y0) + "\" x2=\"" + f1(a.x(i)) + "\" y2=\"" + f1(a.y0 + a.h) +
         "\" stroke=\"#888\" stroke-dasharray=\"4,3\"><title>" +
         xml_escape("epoch " + std::to_string(sum.per_epoch[i].epoch) + ": rebalance (" + rb->policy + ") moved " + fmt("%.0f", rb->moved) + " seeds") +
         "</title></line>\n";
  }
}

}  // namespace

std::string render_run_svg(const RunSummary& sum, const RunMetrics& run) {
  const std::size_t E = run.epochs.size();
  std::vector<std::int64_t> epochs;
  for (const RunEpoch& e : run.epochs) epochs.push_back(e.epoch);
  const int K = sum.ranks;
  const int cols = std::max(1, std::min(K, 4)), rows = K > 0 ? (K + cols - 1) / cols : 0;
  const double pw = 300, ph = 150, ml = 60, gap = 24, title_h = 26, below = 40, top = 96;
  const double cell_w = ml + pw + gap, cell_h = title_h + ph + below;
  const double width = std::max(cols, 2) * cell_w + 20;
  const double line_y0 = top + rows * cell_h + (K > 0 ? 36 : 0);
  const double height = line_y0 + cell_h + 24;
  std::string s;
  s += "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + fmt("%.0f", width) + "\" height=\"" + fmt("%.0f", height) +
       "\" font-family=\"sans-serif\" font-size=\"12\">\n";
  s += "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  text(s, 20, 24, "training run " + sum.dir + ": " + std::to_string(sum.epochs) + " epochs, " + (K > 0 ? std::to_string(K) + " ranks" : "no per-rank data"),
       "font-size=\"16\" font-weight=\"bold\"");
  std::string sub = secs(sum.total_epoch_s) + " s in all";
  if (K > 0) sub += "; max/mean busy " + ratio(sum.mean_ratio) + " on average, worst " + ratio(sum.worst_ratio) + " (epoch " + std::to_string(sum.worst_epoch) + ")";
  if (sum.best_val) sub += "; best val acc " + acc(*sum.best_val) + (sum.test_at_best_val ? ", test there " + acc(*sum.test_at_best_val) : "");
  text(s, 20, 44, sub);
  const std::vector<Series> parts = {{"batch wait", render::kColors[1]}, {"compute", render::kColors[0]}, {"all-reduce (waiting for slower ranks)", render::kColors[2]}};
  if (K > 0) {
    legend(s, 20, 72, parts, false);
    text(s, 20, top - 4, "time per epoch on each rank (s, common scale; busy = own work, no waiting)", "font-weight=\"bold\"");
    double ymax_data = 0;
    for (const RunEpoch& e : run.epochs)
      for (const RankEpoch& r : e.ranks) ymax_data = std::max(ymax_data, r.batch_wait_s + r.compute_s + r.allreduce_s);
    double step;
    const double ymax = round_up(0, ymax_data > 0 ? ymax_data : 1, step);
    for (int k = 0; k < K; ++k) {
      const double cx = 20 + (k % cols) * cell_w, cy = top + 10 + (k / cols) * cell_h;
      Axes a{cx + ml, cy + title_h, pw, ph, 0, ymax, std::max<std::size_t>(E, 1)};
      const RankSummary& t = sum.per_rank[static_cast<std::size_t>(k)];
      text(s, a.x0, cy + 14,
           "rank " + std::to_string(k) + ": busy " + fmt("%.3f", t.busy_per_epoch_s) + " s/epoch, slowest in " + std::to_string(t.slowest_epochs) + "/" +
               std::to_string(t.epochs),
           t.slowest_epochs > 0 ? "font-weight=\"bold\" fill=\"#c03030\"" : "font-weight=\"bold\"");
      draw_axes(s, a, step, epochs, "seconds");
      std::vector<std::vector<double>> v(E);
      for (std::size_t i = 0; i < E; ++i)
        for (const RankEpoch& r : run.epochs[i].ranks)
          if (r.rank == k && static_cast<int>(run.epochs[i].ranks.size()) == K) v[i] = {r.batch_wait_s, r.compute_s, r.allreduce_s};
      stacked_bars(s, a, v, parts, epochs);
    }
    // Max and mean busy per epoch, and their ratio.
    const double lw = (width - 20 - 2 * (ml + gap)) / 2;
    std::vector<double> mx(E, NAN), mean(E, NAN), rt(E, NAN);
    double top_busy = 0, top_ratio = 1;
    for (std::size_t i = 0; i < E; ++i) {
      const EpochImbalance& e = sum.per_epoch[i];
      if (!e.has_ranks) continue;
      mx[i] = e.max_busy_s;
      mean[i] = e.mean_busy_s;
      rt[i] = e.ratio;
      top_busy = std::max(top_busy, e.max_busy_s);
      top_ratio = std::max(top_ratio, e.ratio);
    }
    double step_b, step_r;
    const double ymax_b = round_up(0, top_busy > 0 ? top_busy : 1, step_b);
    const double ymax_r = round_up(1, std::max(top_ratio, 1.1), step_r);
    Axes busy{20 + ml, line_y0 + title_h, lw, ph, 0, ymax_b, std::max<std::size_t>(E, 1)};
    Axes imb{20 + ml + lw + gap + ml, line_y0 + title_h, lw, ph, 1, ymax_r, std::max<std::size_t>(E, 1)};
    text(s, busy.x0, line_y0 + 14, "busy time per epoch over ranks (s)", "font-weight=\"bold\"");
    text(s, imb.x0, line_y0 + 14, "imbalance: max / mean busy (1 = balanced)", "font-weight=\"bold\"");
    draw_axes(s, busy, step_b, epochs, "seconds");
    draw_axes(s, imb, step_r, epochs, "max / mean");
    rebalance_marks(s, busy, sum);
    rebalance_marks(s, imb, sum);
    const std::vector<Series> busy_series = {{"max busy", render::kColors[2]}, {"mean busy", render::kColors[0]}};
    lines(s, busy, {mx, mean}, busy_series, epochs, "%.3f s");
    lines(s, imb, {rt}, {{"max / mean busy", render::kColors[4]}}, epochs, "%.3f");
    std::vector<Series> line_legend = busy_series;
    line_legend.push_back({"max / mean busy", render::kColors[4]});
    legend(s, 20 + ml, height - 8, line_legend, true);
    bool any_rebalance = false;
    for (const auto& e : sum.per_epoch) any_rebalance |= e.rebalance && e.rebalance->moved > 0;
    if (any_rebalance)
      s += "<line x1=\"" + f1(width - 220) + "\" y1=\"" + f1(height - 12) + "\" x2=\"" + f1(width - 204) + "\" y2=\"" + f1(height - 12) +
           "\" stroke=\"#888\" stroke-dasharray=\"4,3\"/>\n" + "<text x=\"" + f1(width - 199) + "\" y=\"" + f1(height - 8) + "\">rebalance (seeds moved)</text>\n";
  } else {
    // No per-rank data: the mean split over ranks that older trainers record.
    text(s, 20, 64, "This metrics file has no per-rank data (\"ranks\"); shown: the time split per epoch, mean over ranks.");
    const std::vector<Series> split = {{"sample wait", render::kColors[1]}, {"compute", render::kColors[0]}, {"all-reduce", render::kColors[2]}, {"eval", render::kColors[3]}};
    legend(s, 20, 86, split, false);
    double ymax_data = 0;
    std::vector<std::vector<double>> v(E);
    for (std::size_t i = 0; i < E; ++i) {
      const RunEpoch& e = run.epochs[i];
      v[i] = {e.sample_wait_s, e.compute_s, e.allreduce_s, e.eval_s};
      ymax_data = std::max(ymax_data, e.sample_wait_s + e.compute_s + e.allreduce_s + e.eval_s);
    }
    double step;
    Axes a{20 + ml, line_y0 + title_h, width - 40 - ml, ph, 0, round_up(0, ymax_data > 0 ? ymax_data : 1, step), std::max<std::size_t>(E, 1)};
    text(s, a.x0, line_y0 + 14, "time per epoch, mean over ranks (s)", "font-weight=\"bold\"");
    draw_axes(s, a, step, epochs, "seconds");
    stacked_bars(s, a, v, split, epochs);
  }
  s += "</svg>\n";
  return s;
}

}  // namespace shardgnn
