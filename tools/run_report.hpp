// `shardgnn report`: a per-rank view of a training run from its metrics file (JSON lines, one
// epoch per line, written by `shardgnn train --metrics`), for diagnosing load imbalance. Reading
// and checking the file, the summary (per-rank totals, per-epoch imbalance) and its renderings
// (terminal table, self-contained SVG, JSON). No torch, no MPI: the main binary links this.
#pragma once

#include <boost/json.hpp>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "trainer/records.hpp"

namespace shardgnn {

// An epoch's seed assignment, for the summary (EpochRecord's rebalance, plan_load, moved).
struct Rebalance {
  std::string policy;
  std::vector<double> seeds;  // per-rank seed counts after rebalancing
  double moved = 0;
};

// One metrics line: the record as `train --metrics` wrote it (trainer/records.hpp) and where.
struct RunEpoch : EpochRecord {
  std::int64_t line = 0;  // 1-based line in the file
};

struct RunMetrics {
  std::string file;               // the metrics file read
  std::string dir;                // the run folder (the file's folder)
  std::vector<RunEpoch> epochs;   // in epoch order; a repeated epoch (a resumed run) keeps its last line
  std::int64_t superseded = 0;    // lines replaced by a later line of the same epoch
  std::optional<ResultRecord> result;  // the run's outcome (its last "result" line), once it finished
};

// Reads `path`: a run folder holding metrics.jsonl, or a metrics file. Throws InputError
// ("<file>: line N: <what was expected>") for a missing path, an empty file, a line that is not a
// JSON object or lacks a required field, or per-rank data that does not cover ranks 0..K-1.
RunMetrics load_run_metrics(const std::string& path);
// The same for text already in memory (`file` names it in errors).
RunMetrics parse_run_metrics(const std::string& text, const std::string& file);

struct RankSummary {
  int rank = 0;
  std::int64_t epochs = 0;  // epochs with per-rank data
  double seeds_per_epoch = 0, steps = 0, sampled_edges = 0, remote_sampled_rows = 0, remote_rows = 0, cache_hits = 0;
  double node_local_rows = 0, node_local_sampled_rows = 0;
  double bytes_moved = 0;  // sent + received
  double sample_s = 0, fetch_s = 0, batch_wait_s = 0, compute_s = 0, allreduce_s = 0, busy_s = 0;  // totals
  double busy_per_epoch_s = 0, busy_per_step_s = 0;
  std::int64_t slowest_epochs = 0;  // epochs in which this rank had the largest busy time
  double slowdown = 1;              // the largest recorded
};

struct EpochImbalance {
  std::int64_t epoch = 0;
  bool has_ranks = false;
  double max_busy_s = 0, mean_busy_s = 0, ratio = 0;  // ratio = max / mean (1 = balanced)
  int slowest_rank = -1;
  double max_allreduce_s = 0;
  double epoch_s = 0, loss = 0;
  double sample_wait_s = 0, compute_s = 0, allreduce_s = 0, eval_s = 0;  // the line's means over ranks
  std::optional<double> val_acc, test_acc;
  std::optional<Rebalance> rebalance;
};

struct RunSummary {
  std::string file, dir;
  std::int64_t epochs = 0, epochs_with_ranks = 0, superseded = 0;
  int ranks = 0;  // K; 0 when no line has per-rank data
  double total_epoch_s = 0;
  std::vector<RankSummary> per_rank;
  std::vector<EpochImbalance> per_epoch;
  double mean_ratio = 0, worst_ratio = 0;  // over the epochs with per-rank data
  std::int64_t worst_epoch = -1;
  // Accuracy: best validation (and the test accuracy at that epoch), and the last evaluated epoch.
  std::optional<double> best_val, test_at_best_val, best_test, last_val, last_test;
  std::int64_t best_val_epoch = -1, best_test_epoch = -1, last_eval_epoch = -1;
};

RunSummary summarize_run(const RunMetrics& run);

std::string render_run_table(const RunSummary& s);
std::string render_run_svg(const RunSummary& s, const RunMetrics& run);
boost::json::value run_summary_json(const RunSummary& s);

}  // namespace shardgnn
