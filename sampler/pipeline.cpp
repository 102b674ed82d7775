#include "sampler/pipeline.hpp"

#include <chrono>

#include "comm/communicator.hpp"
#include "sampler/huge_pages.hpp"
#include "sampler/typed_features.hpp"

namespace shardgnn {

namespace {
// `produce` (else produce_batch), and the seconds of it that were own work (not inside collectives).
MiniBatch timed_produce(DistSampler& sampler, FeatureStore& features, std::int64_t epoch, std::int64_t step, const Prefetcher::Produce& produce,
                        double& work_s) {
  const auto t0 = std::chrono::steady_clock::now();
  const double c0 = comm::collective_seconds();
  MiniBatch mb = produce ? produce(step) : produce_batch(sampler, features, epoch, step);
  work_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() - (comm::collective_seconds() - c0);
  return mb;
}

// The sampled blocks and the input features (and degrees), labels left to the caller.
MiniBatch sample_with_features(DistSampler& sampler, FeatureStore& features, std::span<const NodeId> seeds, std::int64_t epoch, std::int64_t step) {
  MiniBatch mb = sampler.sample(seeds, epoch, step);
  mb.feature_dim = features.feature_dim();
  // A typed graph's rows are per type; the store's own matrix has no columns.
  if (TypedFeatureStore* typed = features.typed()) typed->fetch(mb);
  else features.fetch(mb.input_nodes(), mb.features);
  if (sampler.config().with_degrees) features.fetch_degrees(mb.input_nodes(), mb.degrees);
  return mb;
}
}  // namespace

MiniBatch produce_batch(DistSampler& sampler, FeatureStore& features, std::int64_t epoch, std::int64_t step) {
  const std::vector<NodeId> seeds = sampler.seeds_for(epoch, step);
  std::vector<std::int64_t> labels;
  // A schedule carrying its seeds' labels (every rank's, or none's) needs no label fetch; label
  // sets are read where they are needed.
  if (features.multilabel() || !sampler.schedule_labels(epoch, step, labels)) return produce_batch(sampler, features, seeds, epoch, step);
  MiniBatch mb = sample_with_features(sampler, features, seeds, epoch, step);
  mb.targets = ClassTargets{std::move(labels)};
  return mb;
}

MiniBatch produce_pair_batch(DistSampler& sampler, FeatureStore& features, PairBatch pairs, std::int64_t epoch, std::int64_t step,
                             bool exclude) {
  MiniBatch mb = sample_with_features(sampler, features, pairs.seeds, epoch, step);
  if (exclude) exclude_positives(mb, pairs.positives);
  mb.targets = PairTargets{std::move(pairs.pairs)};
  return mb;
}

MiniBatch produce_batch(DistSampler& sampler, FeatureStore& features, std::span<const NodeId> seeds, std::int64_t epoch, std::int64_t step) {
  MiniBatch mb = sample_with_features(sampler, features, seeds, epoch, step);
  // Every rank alike (the partition is multi-label or not): no rank skips a collective another enters.
  if (features.multilabel()) {
    LabelSetTargets sets;
    features.fetch_label_sets(seeds, sets.words);
    mb.targets = std::move(sets);
    return mb;
  }
  ClassTargets y;
  if (sampler.config().remote_seeds) {
    features.fetch_labels(seeds, y.classes);
  } else {
    const Shard& shard = sampler.shard();
    const NodeId first = shard.book.begin(shard.part);
    y.classes.resize(seeds.size(), -1);
    if (!shard.labels.empty())
      for (std::size_t i = 0; i < seeds.size(); ++i) y.classes[i] = shard.labels[seeds[i] - first];
  }
  mb.targets = std::move(y);
  return mb;
}

Prefetcher::Prefetcher(DistSampler& sampler, FeatureStore& features, std::int64_t epoch, std::int64_t steps, int depth, std::int64_t first_step,
                       Stage stage, Produce produce)
    : sampler_(sampler), features_(features), stage_(std::move(stage)), produce_(std::move(produce)), epoch_(epoch), steps_(steps), next_step_(first_step), depth_(static_cast<std::size_t>(depth)), limit_(steps) {
  huge_buffer_pool_keep_at_least(depth_ + 2);  // the batches in flight, released together at the end
  if (depth_ > 0) thread_ = std::thread([this, first_step] { run(first_step); });
}

Prefetcher::~Prefetcher() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  // The producer finishes the batch it is in (a collective the other ranks also finish) and stops.
  if (thread_.joinable()) thread_.join();
}

MiniBatch Prefetcher::produce(std::int64_t step, double& work) {
  MiniBatch mb = timed_produce(sampler_, features_, epoch_, step, produce_, work);
  if (stage_) {
    const auto t0 = std::chrono::steady_clock::now();
    stage_(mb);
    work += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }
  return mb;
}

void Prefetcher::run(std::int64_t first_step) {
  try {
    for (std::int64_t step = first_step; step < steps_; ++step) {
      {
        std::unique_lock lock(mu_);
        cv_.wait(lock, [&] { return stop_ || step >= limit_ || queue_.size() < depth_; });
        if (stop_ || step >= limit_) break;
      }
      double work = 0;
      MiniBatch mb = produce(step, work);
      {
        std::lock_guard lock(mu_);
        work_s_ += work;
        queue_.push_back(std::move(mb));
        ++produced_;
      }
      cv_.notify_all();
    }
  } catch (...) {
    std::lock_guard lock(mu_);
    error_ = std::current_exception();
  }
  {
    std::lock_guard lock(mu_);
    done_ = true;
  }
  cv_.notify_all();
}

void Prefetcher::stop_early() {
  if (!thread_.joinable()) return;  // no thread: nothing was produced ahead
  {
    std::unique_lock lock(mu_);
    limit_ = std::min(steps_, next_step_ + static_cast<std::int64_t>(depth_));
    while (!done_) {
      queue_.clear();
      cv_.notify_all();
      cv_.wait(lock, [&] { return done_ || !queue_.empty(); });
    }
    queue_.clear();
  }
  thread_.join();
  if (error_) std::rethrow_exception(error_);
}

void Prefetcher::pause() {
  if (!thread_.joinable()) return;
  {
    std::unique_lock lock(mu_);
    limit_ = std::min(steps_, next_step_ + static_cast<std::int64_t>(depth_));
    cv_.notify_all();
    cv_.wait(lock, [&] { return done_; });
  }
  thread_.join();
  if (error_) std::rethrow_exception(error_);
}

void Prefetcher::resume() {
  if (depth_ == 0 || thread_.joinable()) return;
  std::int64_t first = 0;
  {
    std::lock_guard lock(mu_);
    first = next_step_ + static_cast<std::int64_t>(queue_.size());
    limit_ = steps_;
    done_ = false;
  }
  thread_ = std::thread([this, first] { run(first); });
}

std::optional<MiniBatch> Prefetcher::next() {
  if (next_step_ >= steps_) return std::nullopt;
  if (depth_ == 0) {
    double work = 0;
    MiniBatch mb = produce(next_step_++, work);
    work_s_ += work;
    return mb;
  }
  std::unique_lock lock(mu_);
  cv_.wait(lock, [&] { return !queue_.empty() || error_; });
  if (queue_.empty() && error_) std::rethrow_exception(error_);
  MiniBatch mb = std::move(queue_.front());
  queue_.pop_front();
  ++next_step_;
  lock.unlock();
  cv_.notify_all();
  return mb;
}

double Prefetcher::work_seconds() {
  std::lock_guard lock(mu_);
  return work_s_;
}

}  // namespace shardgnn
