// The prefetch pipeline: a thread samples and fetches the next batches of an epoch while the
// current one is consumed, handing them over through a bounded queue. The thread uses the
// sampler's and feature store's communicator (a dup() of the trainer's), so its collectives
// never interleave with the consumer's. An exception in the thread is rethrown by next().
#pragma once

#include <condition_variable>
#include <deque>
#include <exception>
#include <functional>
#include <mutex>
#include <optional>
#include <thread>

#include "sampler/feature_store.hpp"
#include "sampler/link_batches.hpp"
#include "sampler/sampler.hpp"

namespace shardgnn {

// A complete batch: the sampler's blocks plus input features and seed labels.
MiniBatch produce_batch(DistSampler& sampler, FeatureStore& features, std::int64_t epoch, std::int64_t step);
// The same for given seeds (e.g. a batch of DistSampler::eval_batches); collective likewise.
MiniBatch produce_batch(DistSampler& sampler, FeatureStore& features, std::span<const NodeId> seeds, std::int64_t epoch, std::int64_t step);
// A link-prediction batch (LinkSchedule::batch): its endpoints sampled and fetched, its positives
// excluded from the blocks unless `exclude` is false, its pairs as the batch's labels. Collective
// likewise.
MiniBatch produce_pair_batch(DistSampler& sampler, FeatureStore& features, PairBatch pairs, std::int64_t epoch, std::int64_t step,
                             bool exclude = true);

class Prefetcher {
 public:
  // Run on each batch by the producer once it is complete (on the thread, when there is one):
  // the consumer's own preparation, overlapped with its work on the batches before.
  using Stage = std::function<void(MiniBatch&)>;
  // Makes step `step`'s batch instead of produce_batch (link prediction's pairs); collective alike.
  using Produce = std::function<MiniBatch(std::int64_t step)>;

  // Starts producing batches first_step .. steps - 1 of `epoch` (collective work: every rank must
  // run the same epoch with the same steps). depth 0 produces each batch in next() itself, no thread.
  Prefetcher(DistSampler& sampler, FeatureStore& features, std::int64_t epoch, std::int64_t steps, int depth, std::int64_t first_step = 0,
             Stage stage = {}, Produce produce = {});
  ~Prefetcher();
  Prefetcher(const Prefetcher&) = delete;
  Prefetcher& operator=(const Prefetcher&) = delete;

  // The next batch, or nullopt after the last step. Blocks while the thread catches up.
  std::optional<MiniBatch> next();
  // Ends the epoch after the batches handed out so far: the thread finishes every batch any rank's
  // thread may have begun (up to `depth` past the last handed out, the bound its queue keeps),
  // which are dropped, and stops. Collective: every rank calls it after the same number of next()
  // calls, so every rank's thread leaves the same sampling collectives behind it.
  void stop_early();
  // Stops the thread after the batches it may have begun (up to `depth` past the last handed out,
  // as stop_early), keeping them: the communicators are then free for other collectives (a
  // validation inside the epoch) until resume() starts the thread after them. Collective as
  // stop_early.
  void pause();
  void resume();
  // Time spent producing the batches handed out so far, less the producer's time inside
  // collectives (waiting for and exchanging with other ranks): this rank's own sampling work.
  double work_seconds();

 private:
  void run(std::int64_t first_step);
  MiniBatch produce(std::int64_t step, double& work);

  DistSampler& sampler_;
  FeatureStore& features_;
  Stage stage_;
  Produce produce_;
  std::int64_t epoch_, steps_, next_step_ = 0;
  std::size_t depth_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<MiniBatch> queue_;
  std::int64_t produced_ = 0;
  std::int64_t limit_;  // the thread produces batches below this step
  bool stop_ = false, done_ = false;
  std::exception_ptr error_;
  double work_s_ = 0;  // guarded by mu_
  std::thread thread_;
};

}  // namespace shardgnn
