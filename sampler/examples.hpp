// What a training example is: one interface, one implementation per kind, each paired with its
// task (trainer/task.hpp), as DGL GraphBolt's ItemSet and ItemSampler with link prediction's
// negatives as a stage of its own (LinkSchedule):
//   NodeExamples  the shard's training nodes (a node with a class or a label set): the sampler's
//                 own seed schedule, moved between ranks with their labels by a rebalancing plan;
//   EdgeExamples  the shard's training edges, each with its corrupted destinations (link
//                 prediction): batches of pairs whose positives are cut from their blocks.
// The training loop, the scheduler and the scoring ask the examples what runs; nothing else asks
// which task it is. Each kind refuses the options it cannot take.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "sampler/link_batches.hpp"
#include "sampler/pipeline.hpp"
#include "sampler/rebalance.hpp"
#include "sampler/sampler.hpp"

namespace shardgnn {

class Examples {
 public:
  virtual ~Examples() = default;
  // "training nodes", "training edges": in messages.
  virtual std::string name() const = 0;
  // This rank's own examples, before any rebalancing.
  virtual std::int64_t own() const = 0;
  virtual int batch_size() const = 0;
  // Collective over the sampler's communicator: the steps every rank runs in `epoch`.
  virtual std::int64_t steps(const DistSampler& sampler, std::int64_t epoch) const = 0;
  // How the pipeline makes step `step` of `epoch` (empty: the sampler's own schedule of seeds).
  virtual Prefetcher::Produce producer(DistSampler& sampler, FeatureStore& features, std::int64_t epoch) const = 0;
  // The examples a produced batch trains: its seeds, or its positive pairs.
  virtual std::int64_t count(const MiniBatch& mb) const = 0;
  // Collective: installs `plan` for `epoch`, examples moving from donors to receivers (their
  // labels with them) and shuffled again on each rank.
  virtual void apply_plan(DistSampler& sampler, std::int64_t epoch, const SeedPlan& plan) = 0;
  // Refuses, as an InputError naming the option, what this kind cannot take.
  virtual void check(SeedSampling sampling, int personalize_epochs, bool typed_graph) const = 0;
  // Whether validation and the final scores read whole neighbourhoods whatever --eval says (a
  // link model's AUC and ranking over held-out edges do).
  virtual bool scores_whole_neighbourhoods() const = 0;
};

// The shard's labelled training nodes, `batch` seeds a step.
class NodeExamples final : public Examples {
 public:
  NodeExamples(const Shard& shard, int batch) : shard_(shard), batch_(batch) {}
  std::string name() const override { return "training nodes"; }
  std::int64_t own() const override { return static_cast<std::int64_t>(shard_.train_idx.size()); }
  int batch_size() const override { return batch_; }
  std::int64_t steps(const DistSampler& sampler, std::int64_t epoch) const override { return sampler.steps_in_epoch(epoch); }
  Prefetcher::Produce producer(DistSampler&, FeatureStore&, std::int64_t) const override { return {}; }
  std::int64_t count(const MiniBatch& mb) const override { return static_cast<std::int64_t>(mb.seeds().size()); }
  void apply_plan(DistSampler& sampler, std::int64_t epoch, const SeedPlan& plan) override;
  void check(SeedSampling, int, bool) const override {}
  bool scores_whole_neighbourhoods() const override { return false; }

 private:
  const Shard& shard_;
  int batch_;
};

// The shard's training edges (LinkSchedule), `negatives` corrupted destinations each; `exclude`:
// a batch's positives are cut from its blocks (LinkConfig::exclude_positives).
class EdgeExamples final : public Examples {
 public:
  EdgeExamples(const Shard& shard, int batch, int negatives, std::uint64_t seed, bool exclude)
      : schedule_(shard, batch, negatives, seed), exclude_(exclude) {}
  std::string name() const override { return "training edges"; }
  std::int64_t own() const override { return schedule_.edges(); }
  int batch_size() const override { return schedule_.batch_size(); }
  std::int64_t steps(const DistSampler& sampler, std::int64_t epoch) const override;
  Prefetcher::Produce producer(DistSampler& sampler, FeatureStore& features, std::int64_t epoch) const override;
  std::int64_t count(const MiniBatch& mb) const override;
  void apply_plan(DistSampler& sampler, std::int64_t epoch, const SeedPlan& plan) override;
  void check(SeedSampling sampling, int personalize_epochs, bool typed_graph) const override;
  bool scores_whole_neighbourhoods() const override { return true; }
  const LinkSchedule& schedule() const noexcept { return schedule_; }

 private:
  LinkSchedule schedule_;
  bool exclude_;
};

}  // namespace shardgnn
