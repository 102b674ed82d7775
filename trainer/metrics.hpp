// What training reports: classification metrics from a confusion matrix (summed across ranks),
// the per-epoch records (trainer/records.hpp) written as JSON lines, and rank 0's progress
// display. No torch here.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "comm/communicator.hpp"
#include "trainer/records.hpp"

namespace shardgnn {

struct SplitMetrics {
  ClassMetrics val, test;
  std::vector<ClassMetrics> test_per_rank;  // each rank's own test nodes, in rank order (when scored)
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
  ClassMetrics metrics() const;
  std::int64_t classes() const noexcept { return classes_; }
  const std::vector<std::int64_t>& counts() const noexcept { return counts_; }

 private:
  std::int64_t classes_;
  std::vector<std::int64_t> counts_;
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
  // The run's outcome, as the file's last line.
  void write(const ResultRecord& r);

 private:
  void write_line(const boost::json::value& v);
  std::string path_;
  std::FILE* f_ = nullptr;
};

// Rank 0's progress: on a terminal one line redrawn in place (batches/s, loss, ETA); otherwise
// a plain line every `interval` seconds, so batch logs stay readable.
class Progress {
 public:
  Progress(bool enabled, std::FILE* out = stdout, double interval_s = 10.0);
  void start_epoch(int epoch, int epochs, std::int64_t steps);
  // `loss` is called only when the line is drawn (on a GPU, reading it waits for the device).
  void step(std::int64_t done, const std::function<double()>& loss);
  void end_epoch(const EpochRecord& r);
  void message(const std::string& line);
  // Ends a line redrawn in place, so that others may write below it.
  void clear_line();

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
