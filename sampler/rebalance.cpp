#include "sampler/rebalance.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>

#include "datasets/error.hpp"
#include "datasets/names.hpp"
#include "datasets/random.hpp"

namespace shardgnn {

namespace {
constexpr EnumName<RebalancePolicy> kRebalancePolicies[] = {
    {RebalancePolicy::kNone, "none"}, {RebalancePolicy::kSeeds, "seeds"}, {RebalancePolicy::kCost, "cost"}};
constexpr EnumName<SeedSampling> kSeedSamplings[] = {
    {SeedSampling::kShard, "shard"}, {SeedSampling::kClassBalanced, "class-balanced"}, {SeedSampling::kGlobal, "global"}};
}  // namespace

RebalancePolicy parse_rebalance_policy(const std::string& name) { return parse_enum(kRebalancePolicies, name, "--rebalance policy"); }
std::string rebalance_policy_name(RebalancePolicy p) { return enum_name(kRebalancePolicies, p); }
SeedSampling parse_seed_sampling(const std::string& name) { return parse_enum(kSeedSamplings, name, "--seed-sampling"); }
std::string seed_sampling_name(SeedSampling s) { return enum_name(kSeedSamplings, s); }

std::int64_t SeedPlan::moved() const {
  std::int64_t n = 0;
  for (const SeedTransfer& t : transfers) n += t.count;
  return n;
}

namespace {

// Real-valued loads that equalise cost * (kept + factor * received) and sum to `total`.
std::vector<double> equal_time_loads(std::span<const std::int64_t> own, const std::vector<double>& cost, double factor, double total) {
  const std::size_t P = own.size();
  auto loads_at = [&](double t) {
    std::vector<double> x(P);
    for (std::size_t r = 0; r < P; ++r) {
      const double n = static_cast<double>(own[r]);
      x[r] = n * cost[r] >= t ? t / cost[r] : n + (t - n * cost[r]) / (cost[r] * factor);
    }
    return x;
  };
  auto sum = [](const std::vector<double>& x) { return std::accumulate(x.begin(), x.end(), 0.0); };
  // At t = max own*cost every rank keeps all it owns and more: the sum is >= total.
  double lo = 0, hi = 0;
  for (std::size_t r = 0; r < P; ++r) hi = std::max(hi, static_cast<double>(own[r]) * cost[r]);
  hi = std::max(hi, 1e-300);
  for (int it = 0; it < 200 && hi - lo > hi * 1e-15; ++it) {
    const double mid = 0.5 * (lo + hi);
    (sum(loads_at(mid)) < total ? lo : hi) = mid;
  }
  return loads_at(hi);
}

// Largest-remainder rounding of non-negative reals to integers summing to `total` (ties to the
// lower rank, so the result is deterministic).
std::vector<std::int64_t> round_to_total(const std::vector<double>& x, std::int64_t total) {
  const std::size_t P = x.size();
  std::vector<std::int64_t> out(P);
  std::int64_t sum = 0;
  for (std::size_t r = 0; r < P; ++r) {
    out[r] = static_cast<std::int64_t>(std::floor(std::max(0.0, x[r])));
    sum += out[r];
  }
  std::vector<std::size_t> order(P);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return x[a] - std::floor(x[a]) > x[b] - std::floor(x[b]); });
  for (std::size_t i = 0; sum < total; i = (i + 1) % P, ++sum) ++out[order[i]];
  for (std::size_t i = P; sum > total; ++i) {  // floors of rounding noise above the total
    std::size_t r = order[P - 1 - (i % P)];
    if (out[r] > 0) {
      --out[r];
      --sum;
    }
  }
  return out;
}

std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return b > 0 ? (a + b - 1) / b : 0; }

}  // namespace

SeedPlan plan_seeds(RebalancePolicy policy, std::span<const std::int64_t> own, std::span<const double> cost_per_seed, double remote_factor,
                    std::int64_t batch_size) {
  if (own.empty()) throw std::invalid_argument("plan_seeds: no ranks");
  if (batch_size < 1) throw std::invalid_argument("plan_seeds: batch size must be >= 1");
  if (!(remote_factor >= 1) || !std::isfinite(remote_factor)) throw std::invalid_argument("plan_seeds: remote factor must be >= 1");
  const std::size_t P = own.size();
  const std::int64_t total = std::accumulate(own.begin(), own.end(), std::int64_t{0});
  SeedPlan plan;
  if (policy == RebalancePolicy::kNone) {
    plan.load.assign(own.begin(), own.end());
    for (std::int64_t n : own) plan.steps = std::max(plan.steps, ceil_div(n, batch_size));
    plan.batch.assign(P, batch_size);
    return plan;
  }
  std::vector<double> cost(P, 1.0);
  double factor = 1.0;
  if (policy == RebalancePolicy::kCost) {
    factor = remote_factor;
    const bool measured = cost_per_seed.size() == P &&
                          std::all_of(cost_per_seed.begin(), cost_per_seed.end(), [](double c) { return c > 0 && std::isfinite(c); });
    if (measured) cost.assign(cost_per_seed.begin(), cost_per_seed.end());
  }
  plan.load = round_to_total(equal_time_loads(own, cost, factor, static_cast<double>(total)), total);
  // Donors give their excess to receivers, both in rank order.
  std::size_t to = 0;
  std::int64_t need_left = 0;
  auto next_receiver = [&] {
    while (to < P && plan.load[to] <= own[to]) ++to;
    need_left = to < P ? plan.load[to] - own[to] : 0;
  };
  next_receiver();
  for (std::size_t from = 0; from < P; ++from) {
    std::int64_t excess = own[from] - plan.load[from];
    while (excess > 0 && to < P) {
      const std::int64_t n = std::min(excess, need_left);
      plan.transfers.push_back({static_cast<int>(from), static_cast<int>(to), n});
      excess -= n;
      need_left -= n;
      if (need_left == 0) {
        ++to;
        next_receiver();
      }
    }
  }
  plan.steps = ceil_div(total, static_cast<std::int64_t>(P) * batch_size);
  plan.batch.resize(P);
  for (std::size_t r = 0; r < P; ++r) plan.batch[r] = ceil_div(plan.load[r], plan.steps);
  return plan;
}

std::vector<OutgoingRange> outgoing_ranges(const SeedPlan& plan, int rank, std::int64_t own_count) {
  std::vector<OutgoingRange> out;
  std::int64_t at = std::min(plan.load.at(static_cast<std::size_t>(rank)), own_count);
  for (const SeedTransfer& t : plan.transfers)
    if (t.from == rank) {
      out.push_back({t.to, at, at + t.count});
      at += t.count;
    }
  if (!out.empty() && at != own_count) throw std::logic_error("outgoing_ranges: the plan does not match rank " + std::to_string(rank) + "'s seed count");
  return out;
}

ClassBalancedPool::ClassBalancedPool(std::span<const NodeId> ids, std::span<const std::int64_t> labels) {
  if (ids.size() != labels.size()) throw std::invalid_argument("ClassBalancedPool: ids and labels differ in length");
  std::map<std::int64_t, std::vector<NodeId>> by_class;
  for (std::size_t i = 0; i < ids.size(); ++i)
    if (labels[i] >= 0) by_class[labels[i]].push_back(ids[i]);
  for (auto& [label, members] : by_class) {
    std::sort(members.begin(), members.end());
    size_ += static_cast<std::int64_t>(members.size());
    members_.push_back(std::move(members));
    class_of_.push_back(label);
  }
}

std::vector<NodeId> ClassBalancedPool::draw(std::int64_t count, std::uint64_t seed, std::int64_t epoch, int rank,
                                            std::vector<std::int64_t>* labels) const {
  std::vector<NodeId> out;
  if (labels) labels->clear();
  if (members_.empty() || count <= 0) return out;
  out.reserve(static_cast<std::size_t>(count));
  Rng rng(epoch_stream_seed(seed, epoch, 0xba1a0000ULL + static_cast<std::uint64_t>(rank)));
  boost::random::uniform_int_distribution<std::size_t> pick_class(0, members_.size() - 1);
  for (std::int64_t i = 0; i < count; ++i) {
    const std::size_t c = pick_class(rng);
    const auto& m = members_[c];
    boost::random::uniform_int_distribution<std::size_t> pick(0, m.size() - 1);
    out.push_back(m[pick(rng)]);
    if (labels) labels->push_back(class_of_[c]);
  }
  return out;
}

}  // namespace shardgnn
