// What training reports: classification metrics from a confusion matrix (summed across ranks),
// the per-epoch record written as JSON lines, and rank 0's progress display. No torch here.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "comm/communicator.hpp"

namespace shardgnn {

struct ClassMetrics {
  std::int64_t count = 0;  // labelled examples evaluated
  double accuracy = 0;
  double macro_f1 = 0;  // mean F1 over the classes present in the truth or the predictions (as scikit-learn)
};

struct SplitMetrics {
  ClassMetrics val, test;
};

// counts[truth * C + pred]
class Confusion {
 public:
  explicit Confusion(std::int64_t classes) : classes_(classes), counts_(static_cast<std::size_t>(classes * classes), 0) {}
  Confusion(std::int64_t classes, std::vector<std::int64_t> counts) : classes_(classes), counts_(std::move(counts)) {}
  // Labels outside [0, C) (unlabelled nodes) are skipped.
  void add(std::int64_t truth, std::int64_t pred) {
    if (truth >= 0 && truth < classes_ && pred >= 0 && pred < classes_) ++counts_[static_cast<std::size_t>(truth * classes_ + pred)];
  }
  // Collective: sums the matrices of all ranks.
  void allreduce(const comm::Communicator& comm) { comm.allreduce_inplace(std::span<std::int64_t>(counts_), comm::Op::kSum); }
  ClassMetrics metrics() const;
  std::int64_t classes() const noexcept { return classes_; }
  const std::vector<std::int64_t>& counts() const noexcept { return counts_; }

 private:
  std::int64_t classes_;
  std::vector<std::int64_t> counts_;
};

// One rank's share of an epoch's training (evaluation excluded): what the rebalancer measures.
struct RankEpoch {
  int rank = 0;
  std::int64_t seeds = 0, steps = 0, sampled_edges = 0;
  std::int64_t remote_sampled_rows = 0;  // frontier nodes sampled for us by their owners
  std::int64_t node_local_sampled_rows = 0;  // frontier nodes of same-node ranks, sampled here from their shards
  std::int64_t remote_rows = 0, cache_hits = 0;  // input feature rows owned on other nodes, and those the cache served
  std::int64_t node_local_rows = 0;              // input feature rows owned by another rank on this node, read from its shard
  double bytes_sent = 0, bytes_received = 0;
  double sample_s = 0, fetch_s = 0;  // the producer's work (the prefetch thread's, when there is one)
  double batch_wait_s = 0;           // the training loop waiting for its next batch
  double compute_s = 0;              // forward, backward, optimiser (and a simulated slowdown)
  double allreduce_s = 0;            // in the gradient all-reduce: mostly waiting for slower ranks
  double busy_s = 0;                 // own work: compute + sampling and fetching outside collectives (no waiting)
  double slowdown = 1;               // --simulate-slowdown factor on this rank
  double eval_s = 0, train_s = 0;    // this rank's evaluation time and training wall time (the epoch's mean / max)
};

struct EpochRecord {
  int epoch = 0;
  double lr = 0;
  double loss = 0;        // mean training loss over the epoch's examples, all ranks
  double train_acc = 0;   // on the training batches as trained (dropout on)
  bool evaluated = false;
  ClassMetrics val, test;
  double epoch_s = 0;      // wall time of the epoch (training + evaluation), slowest rank
  double sample_wait_s = 0, compute_s = 0, allreduce_s = 0, eval_s = 0;  // mean over ranks
  double bytes_sent = 0, bytes_received = 0;  // sampler + feature exchanges, all ranks
  std::int64_t steps = 0;
  double train_s = 0;       // wall time of the training steps (no evaluation), slowest rank
  std::vector<RankEpoch> ranks;  // every rank, in rank order
  double imbalance = 0;     // max over ranks of busy_s / mean busy_s (1 = perfectly balanced)
  std::string rebalance;    // the policy that assigned this epoch's seeds ("" = none)
  std::vector<std::int64_t> plan_load;  // seeds each rank was assigned
  std::int64_t moved = 0;   // seeds trained by a rank other than their owner
};

// One JSON object per line, flushed after each epoch (a crash loses at most the epoch in flight).
class MetricsLog {
 public:
  MetricsLog() = default;
  // "" = disabled. append: keep what is there (a resumed run).
  MetricsLog(const std::string& path, bool append);
  ~MetricsLog();
  MetricsLog(const MetricsLog&) = delete;
  MetricsLog& operator=(const MetricsLog&) = delete;
  void write(const EpochRecord& r);

 private:
  std::string path_;
  std::FILE* f_ = nullptr;
};

// Rank 0's progress: on a terminal one line redrawn in place (batches/s, loss, ETA); otherwise
// a plain line every `interval` seconds, so batch logs stay readable.
class Progress {
 public:
  Progress(bool enabled, std::FILE* out = stdout, double interval_s = 10.0);
  void start_epoch(int epoch, int epochs, std::int64_t steps);
  void step(std::int64_t done, double loss);
  void end_epoch(const EpochRecord& r);
  void message(const std::string& line);

 private:
  using Clock = std::chrono::steady_clock;
  bool enabled_, tty_;
  std::FILE* out_;
  double interval_s_;
  int epoch_ = 0, epochs_ = 0;
  std::int64_t steps_ = 0;
  Clock::time_point start_, last_;
  bool drawn_ = false;
};

}  // namespace shardgnn
