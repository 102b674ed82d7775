#include "sampler/seed_scheduler.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>

#include "datasets/random.hpp"

namespace shardgnn {

SeedScheduler::SeedScheduler(DistSampler& sampler, Options options)
    : sampler_(sampler),
      options_(options),
      own_examples_(options.examples ? nullptr : std::make_unique<NodeExamples>(sampler.shard(), sampler.config().batch_size)),
      examples_(options.examples ? options.examples : own_examples_.get()) {
  const Shard& shard = sampler_.shard();
  const comm::Communicator& comm = sampler_.comm();
  own_seeds_ = comm.allgather(examples_->own());
  examples_->check(options_.sampling, 0, false);
  if (options_.sampling == SeedSampling::kShard) return;
  const NodeId first = shard.book.begin(shard.part);
  std::vector<NodeId> nodes(shard.train_idx.begin(), shard.train_idx.end());
  std::vector<std::int64_t> labels(shard.train_idx.size(), -1);
  if (shard.multilabel && options_.sampling == SeedSampling::kGlobal) {
    labels.clear();  // global seeds' label sets are fetched from their owners batch by batch
  } else if (shard.multilabel) {
    // A node with a set of labels joins the draw of each of them: a draw picks a label uniformly,
    // then one of the training nodes that have it.
    nodes.clear();
    labels.clear();
    const std::int64_t row = label_row_bytes(shard.num_classes);
    for (const NodeId v : shard.train_idx)
      for (std::int64_t c = 0; c < shard.num_classes; ++c)
        if (has_label(shard.label_bits.data() + (v - first) * row, c)) {
          nodes.push_back(v);
          labels.push_back(c);
        }
  } else if (!shard.labels.empty()) {
    for (std::size_t i = 0; i < labels.size(); ++i) labels[i] = shard.labels[static_cast<std::size_t>(shard.train_idx[i] - first)];
  }
  auto ids = comm.allgatherv<NodeId>(nodes);
  auto all_labels = comm.allgatherv<std::int64_t>(labels);
  if (options_.sampling == SeedSampling::kGlobal) {
    global_ids_ = std::move(ids.data);
    global_labels_ = std::move(all_labels.data);
    return;
  }
  pool_ = std::make_unique<ClassBalancedPool>(ids.data, all_labels.data);
}

SeedScheduler::Assignment SeedScheduler::assign(std::int64_t epoch) {
  Assignment a;
  if (options_.policy == RebalancePolicy::kNone && options_.sampling == SeedSampling::kShard) return a;
  const int P = sampler_.comm().size(), rank = sampler_.comm().rank();
  std::vector<std::int64_t> own = own_seeds_;
  if (options_.sampling != SeedSampling::kShard) {  // draws or slices, not moves: every rank's share starts even
    const std::int64_t total = std::accumulate(own.begin(), own.end(), std::int64_t{0});
    for (int k = 0; k < P; ++k) own[static_cast<std::size_t>(k)] = total / P + (k < total % P ? 1 : 0);
  }
  const SeedPlan plan = plan_seeds(options_.policy, own, cost_per_seed_, options_.remote_seed_factor,
                                   examples_->batch_size());
  if (options_.sampling == SeedSampling::kClassBalanced) {
    std::vector<std::int64_t> labels;
    std::vector<NodeId> seeds = pool_->draw(plan.load[static_cast<std::size_t>(rank)], options_.seed, epoch, rank, &labels);
    sampler_.set_schedule(epoch, std::move(seeds), std::move(labels), plan.batch[static_cast<std::size_t>(rank)], plan.steps);
    a.policy = rebalance_policy_name(options_.policy) + "+class-balanced";
  } else if (options_.sampling == SeedSampling::kGlobal) {
    // One shuffle, the same on every rank (keyed by the run's seed and the epoch, not the rank).
    // Each step takes the next block of it, each rank a consecutive slice of that block (its batch
    // of the step): the ranks' seeds are disjoint and cover the set, and a step's seeds are the
    // same set at any rank count whose batches add up alike (--batch divided by the ranks), so
    // that K ranks train on the batches one rank would.
    std::vector<std::int64_t> order(global_ids_.size());
    std::iota(order.begin(), order.end(), std::int64_t{0});
    keyed_shuffle<std::int64_t>(order, options_.seed, epoch, 0x910ba100ULL);
    std::vector<NodeId> seeds;
    std::vector<std::int64_t> labels;
    std::int64_t next = 0;
    for (std::int64_t k = 0; k < plan.steps; ++k)
      for (int r = 0; r < P; ++r) {
        const auto ri = static_cast<std::size_t>(r);
        const std::int64_t take = std::clamp<std::int64_t>(plan.load[ri] - k * plan.batch[ri], 0, plan.batch[ri]);
        if (next + take > static_cast<std::int64_t>(order.size()))
          throw std::logic_error("SeedScheduler::assign: the plan's loads exceed the global training set");
        for (std::int64_t i = next; r == rank && i < next + take; ++i) {
          const auto at = static_cast<std::size_t>(order[static_cast<std::size_t>(i)]);
          seeds.push_back(global_ids_[at]);
          if (!global_labels_.empty()) labels.push_back(global_labels_[at]);
        }
        next += take;
      }
    if (global_labels_.empty())
      sampler_.set_schedule(epoch, std::move(seeds), plan.batch[static_cast<std::size_t>(rank)], plan.steps);
    else
      sampler_.set_schedule(epoch, std::move(seeds), std::move(labels), plan.batch[static_cast<std::size_t>(rank)], plan.steps);
    a.policy = rebalance_policy_name(options_.policy) + "+global";
  } else {
    apply_plan(epoch, plan);
    a.policy = rebalance_policy_name(options_.policy);
    a.moved = plan.moved();
  }
  a.load = plan.load;
  return a;
}

// own work / (kept + factor * received), so that the plan's factor is not counted twice. A rank
// that trained nothing keeps its previous estimate. Quantised to 1/20 of the fastest rank's cost,
// so that timing noise alone does not reshuffle seeds every epoch.
void SeedScheduler::update_costs(std::span<const RankWork> ranks, std::span<const std::int64_t> load) {
  const std::size_t P = ranks.size();
  if (cost_per_seed_.size() != P) cost_per_seed_.assign(P, 0.0);
  std::vector<double> raw(P, 0.0);
  for (std::size_t k = 0; k < P; ++k) {
    double units = static_cast<double>(ranks[k].seeds);
    if (load.size() == P && options_.sampling == SeedSampling::kShard) units = seed_units(own_seeds_[k], load[k], options_.remote_seed_factor);
    if (units <= 0 || !(ranks[k].busy_s > 0)) continue;
    const double c = ranks[k].busy_s / units;
    raw[k] = cost_per_seed_[k] > 0 ? 0.5 * cost_per_seed_[k] + 0.5 * c : c;
  }
  double fastest = 0;
  for (double c : raw)
    if (c > 0 && (fastest == 0 || c < fastest)) fastest = c;
  for (std::size_t k = 0; k < P; ++k)
    if (raw[k] > 0) cost_per_seed_[k] = fastest * std::max(1.0, std::round(raw[k] / fastest * 20.0) / 20.0);
}

}  // namespace shardgnn
