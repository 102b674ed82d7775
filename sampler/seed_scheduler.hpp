// The runtime rebalancer as one object: which seeds each rank trains each epoch. Once per epoch
// the trainer asks it to assign the epoch's seeds (a plan from sampler/rebalance.hpp, carried out
// by moving seeds between ranks, class-balanced draws or slices of a global shuffle) and then
// tells it what each rank's work cost, which the next plan uses. The seeds are installed as the
// sampler's schedule (DistSampler::set_schedule).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "sampler/examples.hpp"
#include "sampler/rebalance.hpp"
#include "sampler/sampler.hpp"

namespace shardgnn {

class SeedScheduler {
 public:
  struct Options {
    RebalancePolicy policy = RebalancePolicy::kNone;
    SeedSampling sampling = SeedSampling::kShard;
    double remote_seed_factor = 1.2;  // cost of a received seed relative to an own one (>= 1)
    std::uint64_t seed = 0;           // the class-balanced draws' and the global shuffle's stream
    // What a seed is: the shard's training nodes when left out, else these examples (the
    // training edges of link prediction), which a plan moves. Must outlive the scheduler.
    Examples* examples = nullptr;
  };
  // What assign() installed, for the epoch's record.
  struct Assignment {
    std::string policy;               // "" when every rank simply trains its own seeds
    std::vector<std::int64_t> load;   // seeds each rank was assigned
    std::int64_t moved = 0;           // seeds trained by a rank other than their owner
  };
  // One rank's measured share of an epoch.
  struct RankWork {
    std::int64_t seeds = 0;  // seeds it trained
    double busy_s = 0;       // its own work on them (no waiting)
  };

  // Collective over the sampler's communicator: gathers every rank's own training-seed count and,
  // unless the sampling is kShard, the global training set with its labels. `sampler` must outlive
  // this.
  SeedScheduler(DistSampler& sampler, Options options);

  // Collective: installs this epoch's seeds in the sampler when a policy assigns them (nothing
  // when every rank trains its own seeds: the sampler's default schedule).
  Assignment assign(std::int64_t epoch);
  // Smoothed cost per seed from the epoch's per-rank work and the loads assign() gave (the same
  // on every rank, from allgathered records).
  void update_costs(std::span<const RankWork> ranks, std::span<const std::int64_t> load);
  // Collective: installs `plan` for `epoch` (Examples::apply_plan).
  void apply_plan(std::int64_t epoch, const SeedPlan& plan) { examples_->apply_plan(sampler_, epoch, plan); }

  // Nodes the draws or the global shuffle take seeds from (labelled training nodes; 0 for kShard).
  std::int64_t pool_size() const noexcept { return pool_ ? pool_->size() : static_cast<std::int64_t>(global_ids_.size()); }

 private:
  DistSampler& sampler_;
  Options options_;
  std::unique_ptr<Examples> own_examples_;  // the training nodes, when Options names no examples
  Examples* examples_;

  std::vector<std::int64_t> own_seeds_;  // every rank's own training-seed (link: edge) count
  std::vector<double> cost_per_seed_;    // every rank's smoothed measured cost per seed (0: not measured)
  std::unique_ptr<ClassBalancedPool> pool_;
  // kGlobal: every rank's training nodes in rank order, with their labels (empty for multi-label
  // datasets, whose seeds' label rows the sampler fetches from their owners).
  std::vector<NodeId> global_ids_;
  std::vector<std::int64_t> global_labels_;
};

}  // namespace shardgnn
