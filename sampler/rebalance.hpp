// Runtime rebalancing of training work across ranks. A data-parallel step lasts as long as its
// slowest rank, so between epochs a policy turns each rank's measured cost into a new share of the
// training seeds: overloaded ranks hand seeds to underloaded ones (which then sample those seeds'
// first hop remotely, at a cost the plan counts), and each rank's batch is sized to its share so
// that every rank runs the same number of steps. The planning functions here are pure (no MPI):
// every rank computes the same plan from the same allgathered measurements.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "datasets/graph.hpp"

namespace shardgnn {

enum class RebalancePolicy {
  kNone,   // every rank trains its own seeds; a rank that runs out runs empty steps
  kSeeds,  // equal seed counts per rank (ignores speed)
  kCost,   // seed counts inversely proportional to each rank's measured cost per seed
};
RebalancePolicy parse_rebalance_policy(const std::string& name);  // none, seeds, cost
std::string rebalance_policy_name(RebalancePolicy p);

// Where each rank's training seeds come from.
enum class SeedSampling {
  kShard,          // its own shard's training nodes (DistDGL's node_split)
  kClassBalanced,  // draws from all ranks' training nodes, inversely to class frequency
  kGlobal,         // a slice of one permutation of all ranks' training nodes: each once an epoch,
                   // every global batch a uniform draw, as at one rank
};
SeedSampling parse_seed_sampling(const std::string& name);  // shard, class-balanced, global
std::string seed_sampling_name(SeedSampling s);

// One move of seeds: `count` of rank `from`'s own seeds are trained by rank `to` this epoch.
struct SeedTransfer {
  int from = 0, to = 0;
  std::int64_t count = 0;
  bool operator==(const SeedTransfer&) const = default;
};

struct SeedPlan {
  std::vector<std::int64_t> load;  // seeds each rank trains (own kept + received); sums to the total
  std::vector<SeedTransfer> transfers;  // ordered by (from, to)
  std::int64_t steps = 0;          // steps every rank runs
  std::vector<std::int64_t> batch; // per-rank batch size: ceil(load / steps) (0 when load is 0)
  std::int64_t moved() const;
};

// The plan for one epoch.
//  own:            each rank's own training seeds
//  cost_per_seed:  measured seconds of work per seed on each rank (busy time / seeds of the last
//                  epoch). Empty, or any entry <= 0 or not finite, means "not measured": every
//                  rank is then assumed equally fast.
//  remote_factor:  the cost of a seed a rank receives relative to one of its own (>= 1): its
//                  first hop is sampled by its owner and its features come over the network.
//  batch_size:     the nominal per-rank batch; steps = ceil(total / (ranks * batch_size)) under a
//                  rebalancing policy, max over ranks of ceil(own / batch_size) under kNone.
// Under kCost the loads equalise the predicted time of every rank, cost * (kept + factor * received),
// found by bisection on that time and rounded by largest remainder so they sum to the total.
// Deterministic: the same inputs give the same plan on every rank.
SeedPlan plan_seeds(RebalancePolicy policy, std::span<const std::int64_t> own, std::span<const double> cost_per_seed, double remote_factor,
                    std::int64_t batch_size);

// The work of a rank that owns `own` seeds and trains `load`, in units of one own seed: kept +
// remote_factor * received (the model plan_seeds equalises, and the trainer divides measured
// time by to get a cost per seed).
inline double seed_units(std::int64_t own, std::int64_t load, double remote_factor) {
  const auto kept = static_cast<double>(own < load ? own : load);
  const auto received = static_cast<double>(load > own ? load - own : 0);
  return kept + remote_factor * received;
}

// Which seeds move: the donor's shuffled seed list gives its last `count` seeds (its first
// `load` stay). This function returns, for rank `rank`, the index ranges into its own shuffled
// list that go to each receiver, as (to, begin, end) triples, in transfer order.
struct OutgoingRange {
  int to = 0;
  std::int64_t begin = 0, end = 0;
};
std::vector<OutgoingRange> outgoing_ranges(const SeedPlan& plan, int rank, std::int64_t own_count);

// Class-balanced seed sampling (Deshmukh et al. 2023): draws from the global training set (the
// same on every rank), each node with probability inversely proportional to its class's
// frequency: a class uniformly among those present, then a node uniformly within it. With
// replacement, so every rank's draws follow the same distribution whatever its shard holds.
class ClassBalancedPool {
 public:
  // `ids` and `labels` in the same order; nodes with a negative label are left out.
  ClassBalancedPool(std::span<const NodeId> ids, std::span<const std::int64_t> labels);
  // `count` draws from the stream keyed by (seed, epoch, rank); with `labels`, each draw's label
  // too (the ids are the same either way).
  std::vector<NodeId> draw(std::int64_t count, std::uint64_t seed, std::int64_t epoch, int rank,
                           std::vector<std::int64_t>* labels = nullptr) const;
  std::int64_t size() const noexcept { return size_; }
  std::int64_t classes_present() const noexcept { return static_cast<std::int64_t>(members_.size()); }

 private:
  std::vector<std::vector<NodeId>> members_;  // per present class, ids sorted
  std::vector<std::int64_t> class_of_;        // the label of each of members_
  std::int64_t size_ = 0;
};

}  // namespace shardgnn
