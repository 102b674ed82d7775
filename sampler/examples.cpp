#include "sampler/examples.hpp"

#include <algorithm>
#include <stdexcept>
#include <type_traits>

#include "datasets/error.hpp"
#include "datasets/random.hpp"

namespace shardgnn {

// Each donor keeps the first plan.load seeds of its shuffled list and sends the rest, with their
// labels, to its receivers (outgoing_ranges); every rank's schedule is its kept seeds plus those
// received, shuffled again, labels carried.
void NodeExamples::apply_plan(DistSampler& sampler, std::int64_t epoch, const SeedPlan& plan) {
  const comm::Communicator& comm = sampler.comm();
  const Shard& shard = sampler.shard();
  const int rank = comm.rank(), P = comm.size();
  if (plan.load.size() != static_cast<std::size_t>(P)) throw std::invalid_argument("NodeExamples::apply_plan: the plan is for another rank count");
  std::vector<NodeId> own = sampler.shuffled_seeds(epoch);
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
    throw std::logic_error("NodeExamples::apply_plan: received " + std::to_string(mine.size()) + " seeds, the plan says " +
                           std::to_string(plan.load[static_cast<std::size_t>(rank)]));
  keyed_shuffle<SeedLabel>(mine, sampler.config().seed, epoch, 0x5eed8000ULL + static_cast<std::uint64_t>(rank));
  std::vector<NodeId> seeds(mine.size());
  std::vector<std::int64_t> labels(mine.size());
  for (std::size_t i = 0; i < mine.size(); ++i) {
    seeds[i] = mine[i].seed;
    labels[i] = mine[i].label;
  }
  sampler.set_schedule(epoch, std::move(seeds), std::move(labels), plan.batch[static_cast<std::size_t>(rank)], plan.steps);
}

std::int64_t EdgeExamples::steps(const DistSampler& sampler, std::int64_t epoch) const {
  // Each rank's own edges make its own count of batches: every rank runs the most.
  return sampler.comm().allreduce<std::int64_t>(schedule_.steps(epoch), comm::Op::kMax);
}

Prefetcher::Produce EdgeExamples::producer(DistSampler& sampler, FeatureStore& features, std::int64_t epoch) const {
  return [&sampler, &features, this, epoch, rank = sampler.comm().rank()](std::int64_t step) {
    return produce_pair_batch(sampler, features, schedule_.batch(epoch, step, rank), epoch, step, exclude_);
  };
}

// A link batch's training edges: its pairs with target 1 (LinkSchedule's layout).
std::int64_t EdgeExamples::count(const MiniBatch& mb) const {
  std::int64_t n = 0;
  const std::vector<std::int64_t>& rows = std::get<PairTargets>(mb.targets).rows;
  for (std::size_t i = 2; i < rows.size(); i += 3) n += rows[i] == 1;
  return n;
}

// Edges move as seeds do: a donor's last edges in the epoch's order go to its receivers.
void EdgeExamples::apply_plan(DistSampler& sampler, std::int64_t epoch, const SeedPlan& plan) {
  const comm::Communicator& comm = sampler.comm();
  const int rank = comm.rank();
  using Edge = LinkSchedule::Edge;
  static_assert(std::is_trivially_copyable_v<Edge>, "exchanged as bytes");
  std::vector<Edge> own = schedule_.shuffled(epoch, rank);
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
    throw std::logic_error("EdgeExamples::apply_plan: " + std::to_string(own.size()) + " edges, the plan says " + std::to_string(plan.load[static_cast<std::size_t>(rank)]));
  keyed_shuffle<Edge>(own, sampler.config().seed, epoch, 0x5eed8000ULL + static_cast<std::uint64_t>(rank));
  schedule_.install(epoch, std::move(own), plan.batch[static_cast<std::size_t>(rank)], plan.steps);
}

void EdgeExamples::check(SeedSampling sampling, int personalize_epochs, bool typed_graph) const {
  if (sampling != SeedSampling::kShard || personalize_epochs > 0)
    throw InputError("--task link trains edges: --seed-sampling class-balanced or global and --personalize are node tasks' options");
  if (typed_graph) throw InputError("--task link trains untyped graphs");
}

}  // namespace shardgnn
