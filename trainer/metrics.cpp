#include "trainer/metrics.hpp"

#include <unistd.h>

#include <boost/json.hpp>
#include <cerrno>
#include <cmath>
#include <cstring>

#include "datasets/error.hpp"

namespace shardgnn {

ClassMetrics Confusion::metrics() const {
  ClassMetrics m;
  const auto C = static_cast<std::size_t>(classes_);
  std::int64_t correct = 0, total = 0;
  std::vector<std::int64_t> truth(C, 0), pred(C, 0);
  for (std::size_t t = 0; t < C; ++t)
    for (std::size_t p = 0; p < C; ++p) {
      const std::int64_t n = counts_[t * C + p];
      total += n;
      truth[t] += n;
      pred[p] += n;
      if (t == p) correct += n;
    }
  m.count = total;
  if (total == 0) return m;
  m.accuracy = static_cast<double>(correct) / static_cast<double>(total);
  double f1 = 0;
  int present = 0;
  for (std::size_t c = 0; c < C; ++c) {
    if (truth[c] == 0 && pred[c] == 0) continue;
    const auto tp = static_cast<double>(counts_[c * C + c]);
    f1 += 2 * tp / static_cast<double>(truth[c] + pred[c]);
    ++present;
  }
  m.macro_f1 = present > 0 ? f1 / present : 0;
  return m;
}

MetricsLog::MetricsLog(const std::string& path, bool append) : path_(path) {
  if (path.empty()) return;
  f_ = std::fopen(path.c_str(), append ? "a" : "w");
  if (!f_) throw InputError(path, "", std::string("cannot open the metrics file: ") + std::strerror(errno));
}

MetricsLog::~MetricsLog() {
  if (f_) std::fclose(f_);
}

void MetricsLog::write(const EpochRecord& r) { write_line(boost::json::value_from(r)); }
void MetricsLog::write(const ResultRecord& r) { write_line(boost::json::object{{"result", boost::json::value_from(r)}}); }

void MetricsLog::write_line(const boost::json::value& v) {
  if (!f_) return;
  const std::string line = boost::json::serialize(v) + "\n";
  if (std::fwrite(line.data(), 1, line.size(), f_) != line.size() || std::fflush(f_) != 0)
    throw std::runtime_error(path_ + ": cannot write the metrics file: " + std::strerror(errno));
}

Progress::Progress(bool enabled, std::FILE* out, double interval_s)
    : enabled_(enabled), tty_(enabled && ::isatty(::fileno(out)) != 0), out_(out), interval_s_(interval_s) {}

void Progress::start_epoch(int epoch, int epochs, std::int64_t steps) {
  epoch_ = epoch;
  epochs_ = epochs;
  steps_ = steps;
  start_ = last_ = Clock::now();
  drawn_ = false;
}

void Progress::step(std::int64_t done, const std::function<double()>& loss_of) {
  if (!enabled_) return;
  const auto now = Clock::now();
  const double since_last = std::chrono::duration<double>(now - last_).count();
  if (tty_ ? (since_last < 0.1 && done < steps_) : since_last < interval_s_) return;
  last_ = now;
  const double elapsed = std::chrono::duration<double>(now - start_).count();
  const double rate = elapsed > 0 ? static_cast<double>(done) / elapsed : 0;
  const double eta = rate > 0 ? static_cast<double>(steps_ - done) / rate : 0;
  const double loss = loss_of();
  if (tty_) {
    constexpr int kWidth = 24;
    const int filled = steps_ > 0 ? static_cast<int>(kWidth * done / steps_) : kWidth;
    std::string bar(static_cast<std::size_t>(filled), '#');
    bar.resize(kWidth, '.');
    std::fprintf(out_, "\r\033[Kepoch %d/%d [%s] %lld/%lld  %.1f batches/s  loss %.4f  ETA %.0fs", epoch_ + 1, epochs_, bar.c_str(),
                 static_cast<long long>(done), static_cast<long long>(steps_), rate, loss, eta);
    drawn_ = true;
  } else {
    std::fprintf(out_, "epoch %d/%d: %lld/%lld batches, %.1f batches/s, loss %.4f, ETA %.0fs\n", epoch_ + 1, epochs_, static_cast<long long>(done),
                 static_cast<long long>(steps_), rate, loss, eta);
  }
  std::fflush(out_);
}

void Progress::end_epoch(const EpochRecord& r) {
  if (!enabled_) return;
  if (drawn_) std::fprintf(out_, "\r\033[K");
  drawn_ = false;
  std::fprintf(out_, "epoch %d/%d  loss %.4f  train acc %.4f", r.epoch + 1, epochs_, r.loss, r.train_acc);
  // A multi-label run's validation is scored by micro-F1 (its accuracy counts label entries).
  if (r.evaluated && r.val.kind == ScoreKind::kLinks) std::fprintf(out_, "  val AUC %.4f", r.val.auc);
  else if (r.evaluated && r.val.kind == ScoreKind::kLabelSets) std::fprintf(out_, "  val micro-F1 %.4f", r.val.micro_f1);
  else if (r.evaluated) std::fprintf(out_, "  val acc %.4f", r.val.accuracy);
  if (r.tested && r.test.kind == ScoreKind::kLabelSets) std::fprintf(out_, "  test micro-F1 %.4f", r.test.micro_f1);
  else if (r.tested) std::fprintf(out_, "  test acc %.4f", r.test.accuracy);
  std::fprintf(out_, "  %.2fs (%.1f batches/s; wait %.2fs, compute %.2fs, allreduce %.2fs, eval %.2fs)\n", r.epoch_s,
               r.epoch_s > 0 ? static_cast<double>(r.steps) / (r.epoch_s - r.eval_s > 0 ? r.epoch_s - r.eval_s : r.epoch_s) : 0.0, r.sample_wait_s,
               r.compute_s, r.allreduce_s, r.eval_s);
  std::fflush(out_);
}

void Progress::clear_line() {
  if (!enabled_ || !drawn_) return;
  std::fprintf(out_, "\r\033[K");
  std::fflush(out_);
  drawn_ = false;
}

void Progress::message(const std::string& line) {
  if (!enabled_) return;
  if (drawn_) std::fprintf(out_, "\r\033[K");
  drawn_ = false;
  std::fprintf(out_, "%s\n", line.c_str());
  std::fflush(out_);
}

}  // namespace shardgnn
