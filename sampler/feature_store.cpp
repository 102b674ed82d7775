#include "sampler/feature_store.hpp"

#include <algorithm>
#include <chrono>
#include <cstring>

#include "sampler/sampler.hpp"

namespace shardgnn {

namespace {
using Clock = std::chrono::steady_clock;
double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }
}  // namespace

FeatureStore::FeatureStore(const Shard& shard, const comm::Communicator& comm) : shard_(shard), comm_(comm), dim_(shard.feature_dim) {}

std::vector<float> FeatureStore::fetch_remote(std::span<const NodeId> remote) {
  const PartitionBook& book = shard_.book;
  const int P = comm_.size();
  const NodeId first = book.begin(shard_.part);
  std::vector<std::int64_t> counts(static_cast<std::size_t>(P), 0);
  for (NodeId v : remote) ++counts[book.owner(v)];
  // `remote` arrives grouped by owner from the caller, so it is already the send buffer.
  auto t0 = Clock::now();
  auto asked = comm_.alltoallv<NodeId>(remote, counts);
  counters_.exchange_s += since(t0);
  std::vector<float> rows(asked.data.size() * static_cast<std::size_t>(dim_));
  for (std::size_t i = 0; i < asked.data.size(); ++i)
    std::memcpy(rows.data() + i * dim_, shard_.features.data() + (asked.data[i] - first) * dim_, static_cast<std::size_t>(dim_) * sizeof(float));
  std::vector<std::int64_t> row_counts(asked.counts.size());
  for (std::size_t r = 0; r < row_counts.size(); ++r) row_counts[r] = asked.counts[r] * dim_;
  if (record_) reply_log_.push_back(row_counts);
  t0 = Clock::now();
  auto got = comm_.alltoallv<float>(rows, row_counts);
  counters_.exchange_s += since(t0);
  counters_.bytes_sent += static_cast<std::int64_t>(remote.size() * sizeof(NodeId) + rows.size() * sizeof(float));
  counters_.bytes_received += static_cast<std::int64_t>(asked.data.size() * sizeof(NodeId) + got.data.size() * sizeof(float));
  return std::move(got.data);
}

void FeatureStore::fetch(std::span<const NodeId> nodes, std::vector<float>& out) {
  const PartitionBook& book = shard_.book;
  const PartId me = shard_.part;
  const NodeId first = book.begin(me);
  const int P = comm_.size();
  const auto F = static_cast<std::size_t>(dim_);
  out.resize(nodes.size() * F);
  auto t0 = Clock::now();
  // Local rows and cache hits now; misses grouped by owner for one exchange.
  std::vector<std::vector<std::size_t>> miss_pos(static_cast<std::size_t>(P));
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    const NodeId v = nodes[i];
    const PartId owner = book.owner(v);
    if (owner == me) {
      std::memcpy(out.data() + i * F, shard_.features.data() + (v - first) * dim_, F * sizeof(float));
      ++counters_.local_rows;
      continue;
    }
    ++counters_.remote_rows;
    if (auto it = slot_.find(v); it != slot_.end()) {
      std::memcpy(out.data() + i * F, cache_.data() + it->second * dim_, F * sizeof(float));
      ++counters_.cache_hits;
      continue;
    }
    miss_pos[owner].push_back(i);
  }
  counters_.local_gather_s += since(t0);
  t0 = Clock::now();
  std::vector<NodeId> misses;
  for (const auto& list : miss_pos)
    for (std::size_t i : list) misses.push_back(nodes[i]);
  std::vector<float> rows = fetch_remote(misses);
  std::size_t k = 0;
  for (const auto& list : miss_pos)
    for (std::size_t i : list) std::memcpy(out.data() + i * F, rows.data() + (k++) * F, F * sizeof(float));
  counters_.remote_s += since(t0);
}

void FeatureStore::fill_cache(std::vector<NodeId> chosen) {
  // Owners answer in request order when requests are grouped by owner: sort by global id (which
  // groups them, the book being ranges) and fetch once.
  std::sort(chosen.begin(), chosen.end());
  cache_ = fetch_remote(chosen);
  slot_.clear();
  slot_.reserve(chosen.size());
  for (std::size_t i = 0; i < chosen.size(); ++i) slot_.emplace(chosen[i], static_cast<std::int64_t>(i));
}

void FeatureStore::build_cache(const SamplerConfig& config, DistSampler* sampler) {
  std::vector<NodeId> chosen;
  if (config.cache_policy != CachePolicy::kNone && dim_ > 0) {
    const std::size_t row_bytes = static_cast<std::size_t>(dim_) * sizeof(float);
    std::size_t capacity = config.cache_fraction > 0 ? static_cast<std::size_t>(config.cache_fraction * static_cast<double>(shard_.halo_nodes.size()))
                                                     : static_cast<std::size_t>(config.cache_mb * 1e6 / static_cast<double>(row_bytes));
    capacity = std::min(capacity, shard_.halo_nodes.size());
    // Score every halo node, then keep the `capacity` best (ties: smaller id, for determinism).
    boost::unordered_flat_map<NodeId, std::int64_t> score;
    if (config.cache_policy == CachePolicy::kDegree) {
      for (NodeId v : shard_.graph.indices().span())
        if (shard_.book.owner(v) != shard_.part) ++score[v];
    } else if (sampler != nullptr) {
      // Presample with the training sampler's configuration on a reserved epoch (-1).
      const std::int64_t steps = std::min<std::int64_t>(config.presample_batches, sampler->steps_in_epoch(-1));
      for (std::int64_t s = 0; s < steps; ++s) {
        const auto seeds = sampler->seeds_for(-1, s);
        const MiniBatch mb = sampler->sample(seeds, -1, s);
        for (NodeId v : mb.input_nodes())
          if (shard_.book.owner(v) != shard_.part) ++score[v];
      }
      sampler->counters() = SamplerCounters{};  // presampling is setup, not training work
    }
    std::vector<std::pair<std::int64_t, NodeId>> ranked;
    ranked.reserve(score.size());
    for (const auto& [v, c] : score) ranked.emplace_back(-c, v);
    const std::size_t keep = std::min(capacity, ranked.size());
    std::partial_sort(ranked.begin(), ranked.begin() + static_cast<std::ptrdiff_t>(keep), ranked.end());
    for (std::size_t i = 0; i < keep; ++i) chosen.push_back(ranked[i].second);
  }
  fill_cache(std::move(chosen));  // collective even when empty: every rank serves the others
  counters_ = FeatureCounters{};
}

}  // namespace shardgnn
