#include "sampler/seed_scheduler.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>
#include <type_traits>

#include "datasets/random.hpp"

namespace shardgnn {

SeedScheduler::SeedScheduler(DistSampler& sampler, Options options) : sampler_(sampler), options_(options) {
  const Shard& shard = sampler_.shard();
  const comm::Communicator& comm = sampler_.comm();
  own_seeds_ = comm.allgather(options_.links ? options_.links->edges() : static_cast<std::int64_t>(shard.train_idx.size()));
  if (options_.links && options_.sampling != SeedSampling::kShard)
    throw std::invalid_argument("SeedScheduler: " + seed_sampling_name(options_.sampling) + " seeds are nodes, not edges");
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
                                   options_.links ? options_.links->batch_size() : sampler_.config().batch_size);
  if (options_.sampling == SeedSampling::kClassBalanced) {
    std::vector<std::int64_t> labels;
    std::vector<NodeId> seeds = pool_->draw(plan.load[static_cast<std::size_t>(rank)], options_.seed, epoch, rank, &labels);
    sampler_.set_schedule(epoch, std::move(seeds), std::move(labels), plan.batch[static_cast<std::size_t>(rank)], plan.steps);
    a.policy = rebalance_policy_name(options_.policy) + "+class-balanced";
  } else if (options_.sampling == SeedSampling::kGlobal) {
    // One shuffle, the same on every rank (keyed by the run's seed and the epoch, not the rank):
    // rank k trains the k-th slice of it, so the ranks' seeds are disjoint and cover the set.
    std::vector<std::int64_t> order(global_ids_.size());
    std::iota(order.begin(), order.end(), std::int64_t{0});
    keyed_shuffle<std::int64_t>(order, options_.seed, epoch, 0x910ba100ULL);
    const std::int64_t start = std::accumulate(plan.load.begin(), plan.load.begin() + rank, std::int64_t{0});
    const std::int64_t count = plan.load[static_cast<std::size_t>(rank)];
    if (start + count > static_cast<std::int64_t>(order.size()))
      throw std::logic_error("SeedScheduler::assign: the plan's loads exceed the global training set");
    std::vector<NodeId> seeds;
    std::vector<std::int64_t> labels;
    for (std::int64_t i = start; i < start + count; ++i) {
      const auto at = static_cast<std::size_t>(order[static_cast<std::size_t>(i)]);
      seeds.push_back(global_ids_[at]);
      if (!global_labels_.empty()) labels.push_back(global_labels_[at]);
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

// Edges move as seeds do: a donor's last edges in the epoch's order go to its receivers.
void SeedScheduler::apply_link_plan(std::int64_t epoch, const SeedPlan& plan) {
  const comm::Communicator& comm = sampler_.comm();
  const int rank = comm.rank();
  using Edge = LinkSchedule::Edge;
  static_assert(std::is_trivially_copyable_v<Edge>, "exchanged as bytes");
  std::vector<Edge> own = options_.links->shuffled(epoch, rank);
  std::vector<std::int64_t> send_counts(static_cast<std::size_t>(comm.size()), 0);
  std::vector<Edge> send;
  for (const OutgoingRange& r : outgoing_ranges(plan, rank, static_cast<std::int64_t>(own.size()))) {
    send_counts[static_cast<std::size_t>(r.to)] += r.end - r.begin;
    send.insert(send.end(), own.begin() + r.begin, own.begin() + r.end);
  }
  auto got = comm.alltoallv<Edge>(send, send_counts);
  own.resize(static_cast<std::size_t>(std::min<std::int64_t>(plan.load[static_cast<std::size_t>(rank)], static_cast<std::int64_t>(own.size()))));
  own.insert(own.end(), got.data.begin(), got.data.end());
  if (static_cast<std::int64_t>(own.size()) != plan.load[static_cast<std::size_t>(rank)])
    throw std::logic_error("SeedScheduler::apply_link_plan: " + std::to_string(own.size()) + " edges, the plan says " + std::to_string(plan.load[static_cast<std::size_t>(rank)]));
  keyed_shuffle<Edge>(own, sampler_.config().seed, epoch, 0x5eed8000ULL + static_cast<std::uint64_t>(rank));
  options_.links->install(epoch, std::move(own), plan.batch[static_cast<std::size_t>(rank)], plan.steps);
}

void SeedScheduler::apply_plan(std::int64_t epoch, const SeedPlan& plan) {
  if (options_.links) return apply_link_plan(epoch, plan);
  const comm::Communicator& comm = sampler_.comm();
  const Shard& shard = sampler_.shard();
  const int rank = comm.rank(), P = comm.size();
  if (plan.load.size() != static_cast<std::size_t>(P)) throw std::invalid_argument("SeedScheduler::apply_plan: the plan is for another rank count");
  std::vector<NodeId> own = sampler_.shuffled_seeds(epoch);
  const NodeId first = shard.book.begin(shard.part);
  // A seed travels with its label: the receiver has no other copy of it.
  struct SeedLabel {
    NodeId seed;
    std::int64_t label;
  };
  static_assert(std::is_trivially_copyable_v<SeedLabel>, "exchanged as bytes");
  auto with_label = [&](NodeId v) {
    return SeedLabel{v, shard.labels.empty() ? std::int64_t{-1} : shard.labels[static_cast<std::size_t>(v - first)]};
  };
  std::vector<std::int64_t> send_counts(static_cast<std::size_t>(P), 0);
  std::vector<SeedLabel> send;
  for (const OutgoingRange& r : outgoing_ranges(plan, rank, static_cast<std::int64_t>(own.size()))) {
    send_counts[static_cast<std::size_t>(r.to)] += r.end - r.begin;
    for (std::int64_t i = r.begin; i < r.end; ++i) send.push_back(with_label(own[static_cast<std::size_t>(i)]));  // ordered by receiver
  }
  auto got = comm.alltoallv<SeedLabel>(send, send_counts);
  own.resize(static_cast<std::size_t>(std::min<std::int64_t>(plan.load[static_cast<std::size_t>(rank)], static_cast<std::int64_t>(own.size()))));
  std::vector<SeedLabel> mine;
  mine.reserve(own.size() + got.data.size());
  for (NodeId v : own) mine.push_back(with_label(v));
  mine.insert(mine.end(), got.data.begin(), got.data.end());
  if (static_cast<std::int64_t>(mine.size()) != plan.load[static_cast<std::size_t>(rank)])
    throw std::logic_error("SeedScheduler::apply_plan: received " + std::to_string(mine.size()) + " seeds, the plan says " +
                           std::to_string(plan.load[static_cast<std::size_t>(rank)]));
  keyed_shuffle<SeedLabel>(mine, sampler_.config().seed, epoch, 0x5eed8000ULL + static_cast<std::uint64_t>(rank));
  std::vector<NodeId> seeds(mine.size());
  std::vector<std::int64_t> labels(mine.size());
  for (std::size_t i = 0; i < mine.size(); ++i) {
    seeds[i] = mine[i].seed;
    labels[i] = mine[i].label;
  }
  sampler_.set_schedule(epoch, std::move(seeds), std::move(labels), plan.batch[static_cast<std::size_t>(rank)], plan.steps);
}

}  // namespace shardgnn
