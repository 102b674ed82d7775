#include "sampler/feature_store.hpp"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <limits>
#include <stdexcept>

#include <unistd.h>

#include "datasets/memory_limit.hpp"
#include "sampler/sampler.hpp"

namespace shardgnn {

namespace {
using Clock = std::chrono::steady_clock;
double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// Prefetches every cache line of a row of `bytes` bytes (a source row of a gather).
void prefetch_row(const void* row, std::size_t bytes) {
  const char* p = static_cast<const char*>(row);
  for (std::size_t off = 0; off < bytes; off += 64) __builtin_prefetch(p + off, 0, 0);
}
// Prefetch distance of the random-row gathers, in rows: about 8 KB of rows in flight (20 rows of
// 100 floats). 6 rows, whatever their size, left the local gather at 75-80% of a plain memcpy
// gather of random rows on R-MAT scale 19 (400-byte rows); 12-24 rows gave 80-99%.
std::size_t rows_ahead(std::size_t row_bytes) { return std::clamp<std::size_t>(8192 / std::max<std::size_t>(row_bytes, 1), 4, 32); }

// A node owned elsewhere: its position in the caller's list and its owner.
struct RemoteAt {
  std::size_t pos;
  PartId owner;
};

// Groups the remote nodes by owner with a counting sort (each owner's keep their order): the ids
// to send, in the order owners answer, and each one's position in `nodes`. per_owner[r] counts
// those owned by rank r.
void group_by_owner(std::span<const NodeId> nodes, std::span<const RemoteAt> remote, std::span<const std::int64_t> per_owner,
                    std::vector<NodeId>& ids, std::vector<std::int64_t>& slot_of) {
  std::vector<std::int64_t> fill(per_owner.size(), 0);
  for (std::size_t r = 1; r < fill.size(); ++r) fill[r] = fill[r - 1] + per_owner[r - 1];
  ids.resize(remote.size());
  slot_of.resize(remote.size());
  for (const RemoteAt& x : remote) {
    const auto at = static_cast<std::size_t>(fill[static_cast<std::size_t>(x.owner)]++);
    ids[at] = nodes[x.pos];
    slot_of[at] = static_cast<std::int64_t>(x.pos);
  }
}
}  // namespace

FeatureStore::FeatureStore(const Shard& shard, const comm::Communicator& comm) : shard_(shard), comm_(comm), dim_(shard.feature_dim) {}

void FeatureStore::fetch_remote(std::span<const NodeId> remote, std::span<const std::int64_t> counts, float* dst, std::span<const std::int64_t> dst_rows) {
  const int P = comm_.size();
  const NodeId first_id = shard_.book.begin(shard_.part);
  const auto F = static_cast<std::size_t>(dim_);
  // `remote` arrives grouped by owner from the caller, so it is already the send buffer.
  auto t0 = Clock::now();
  auto asked = comm_.alltoallv<NodeId>(remote, counts);
  const double ids_s = since(t0);
  counters_.id_exchange_s += ids_s;
  counters_.exchange_s += ids_s;
  // Staging buffers are kept between fetches: fresh ones cost a page fault and a zero-fill per
  // 4 KiB every batch, more than the copy itself.
  send_rows_.resize(asked.data.size() * F);
  recv_rows_.resize(remote.size() * F);
  const float* features = shard_.features.data();
  const std::size_t row_bytes = F * sizeof(float);
  const std::size_t lead = rows_ahead(row_bytes);
  // The owner's gather of rows [first, first + count) of what was asked of it (chunks of one
  // peer's rows are gathered between other peers' chunks: prefetched from their own start).
  auto gather = [&](std::int64_t first, std::int64_t count) {
    const auto t = Clock::now();
    const auto begin = static_cast<std::size_t>(first), end = static_cast<std::size_t>(first + count);
    auto source = [&](std::size_t i) { return features + (asked.data[i] - first_id) * dim_; };
    for (std::size_t i = begin; i < std::min(end, begin + lead); ++i) prefetch_row(source(i), row_bytes);
    for (std::size_t i = begin; i < end; ++i) {
      if (i + lead < end) prefetch_row(source(i + lead), row_bytes);
      std::memcpy(send_rows_.data() + i * F, source(i), row_bytes);
    }
    counters_.gather_s += since(t);
  };
  // The asker's placing of received rows [first, first + count) in the batch.
  auto scatter = [&](std::int64_t first, std::int64_t count) {
    const auto t = Clock::now();
    for (auto k = static_cast<std::size_t>(first); k < static_cast<std::size_t>(first + count); ++k)
      std::memcpy(dst + static_cast<std::size_t>(dst_rows[k]) * F, recv_rows_.data() + k * F, row_bytes);
    counters_.scatter_s += since(t);
  };
  // The reply's float counts each way, known here already (F floats per row asked): no count
  // exchange for the rows.
  std::vector<std::int64_t> row_counts(asked.counts.size()), expect(static_cast<std::size_t>(P));
  for (std::size_t r = 0; r < row_counts.size(); ++r) row_counts[r] = asked.counts[r] * dim_;
  for (int r = 0; r < P; ++r) expect[r] = counts[r] * dim_;
  if (record_) reply_log_.push_back({row_counts, expect});  // for the benchmark's raw replay
  t0 = Clock::now();
  const double busy_before = counters_.gather_s + counters_.scatter_s;
  if (F == 0) {
    // No feature columns (every rank alike): no rows to move.
  } else {
    // One all-to-all of every row.
    gather(0, static_cast<std::int64_t>(asked.data.size()));
    comm_.alltoallv_into<float>(send_rows_, row_counts, expect, recv_rows_);
    scatter(0, static_cast<std::int64_t>(remote.size()));
  }
  // The rest of the span is the transfer and the waiting for it.
  const double rows_s = since(t0) - (counters_.gather_s + counters_.scatter_s - busy_before);
  counters_.row_exchange_s += rows_s;
  counters_.exchange_s += rows_s;
  counters_.bytes_sent += static_cast<std::int64_t>(remote.size() * sizeof(NodeId) + send_rows_.size() * sizeof(float));
  counters_.bytes_received += static_cast<std::int64_t>(asked.data.size() * sizeof(NodeId) + recv_rows_.size() * sizeof(float));
}

void FeatureStore::fetch(std::span<const NodeId> nodes, FeatureRows& out) {
  const PartitionBook& book = shard_.book;
  const PartId me = shard_.part;
  const NodeId first = book.begin(me), count = book.size(me);
  const int P = comm_.size();
  const auto F = static_cast<std::size_t>(dim_);
  out.resize(nodes.size() * F, boost::container::default_init);  // every row is written below: no zero-fill
  auto t0 = Clock::now();
  // Pass 1, the local gather: rows this rank owns, straight from the mapped file. The rows are
  // random reads: the source row a few copies ahead is prefetched (all its cache lines), so its
  // misses overlap the current copy instead of stalling it.
  // The owned positions are listed first, without branches: owned and other rows interleave at
  // random, so a test per row in the copy loop mispredicted about every other row.
  const float* local = shard_.features.data();
  const std::size_t row_bytes = F * sizeof(float);
  const std::size_t lead = rows_ahead(row_bytes);
  if (nodes.size() > std::numeric_limits<std::uint32_t>::max()) throw std::length_error("FeatureStore::fetch: 2^32 rows or more in one batch");
  // The other positions are listed in the same pass, for pass 2.
  local_at_.resize(nodes.size());
  other_at_.resize(nodes.size());
  std::size_t owned = 0;
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    local_at_[owned] = static_cast<std::uint32_t>(i);
    other_at_[i - owned] = static_cast<std::uint32_t>(i);
    owned += static_cast<std::size_t>(static_cast<std::uint64_t>(nodes[i] - first) < static_cast<std::uint64_t>(count));
  }
  const std::size_t others = nodes.size() - owned;
  for (std::size_t j = 0; j < std::min(lead, owned); ++j) prefetch_row(local + (nodes[local_at_[j]] - first) * dim_, row_bytes);
  for (std::size_t j = 0; j < owned; ++j) {
    if (j + lead < owned) prefetch_row(local + (nodes[local_at_[j + lead]] - first) * dim_, row_bytes);
    const std::size_t i = local_at_[j];
    std::memcpy(out.data() + i * F, local + (nodes[i] - first) * dim_, row_bytes);
  }
  const auto local_rows = static_cast<std::int64_t>(owned);
  counters_.local_gather_s += since(t0);
  // Pass 2: remote rows from the cache, those of same-node ranks from their mapped shards, the
  // misses from their owners in one exchange.
  t0 = Clock::now();
  std::vector<RemoteAt> miss, nearby;
  std::vector<std::int64_t> per_owner(static_cast<std::size_t>(P), 0);
  std::vector<std::pair<std::size_t, std::int64_t>> hits;  // (position in nodes, cache row)
  const std::int32_t* dense = dense_slot_.empty() ? nullptr : dense_slot_.data();
  for (std::size_t j = 0; j < others; ++j) {
    if (dense && j + 16 < others) __builtin_prefetch(dense + nodes[other_at_[j + 16]]);
    const std::size_t i = other_at_[j];
    const NodeId v = nodes[i];
    std::int64_t row = -1;
    if (dense) {
      row = dense[v];
    } else if (cached_ > 0) {
      if (auto it = slot_.find(v); it != slot_.end()) row = it->second;
    }
    if (row >= 0) {
      hits.emplace_back(i, row);
    } else {
      const PartId owner = book.owner(v);
      if (mates_.near(owner)) {
        nearby.push_back({i, owner});
      } else {
        miss.push_back({i, owner});
        ++per_owner[owner];
      }
    }
  }
  for (std::size_t k = 0; k < hits.size(); ++k) {  // cache rows are random reads too
    if (k + lead < hits.size()) prefetch_row(cache_.data() + hits[k + lead].second * dim_, row_bytes);
    std::memcpy(out.data() + hits[k].first * F, cache_.data() + hits[k].second * dim_, row_bytes);
  }
  counters_.cache_hits += static_cast<std::int64_t>(hits.size());
  counters_.cache_s += since(t0);
  if (mates_.tried()) {  // on every rank alike (so the benchmark's log lines up)
    // Same-node rows: a gather like the local one, from the owner's mapped shard.
    t0 = Clock::now();
    auto source = [&](const RemoteAt& x) {
      return mates_.shards[static_cast<std::size_t>(x.owner)].features.data() + (nodes[x.pos] - book.begin(x.owner)) * dim_;
    };
    for (std::size_t k = 0; k < nearby.size(); ++k) {
      if (k + lead < nearby.size()) prefetch_row(source(nearby[k + lead]), row_bytes);
      std::memcpy(out.data() + nearby[k].pos * F, source(nearby[k]), row_bytes);
    }
    if (record_) {
      ReplyCounts log{{}, std::vector<std::int64_t>(static_cast<std::size_t>(P), 0), true};
      for (const RemoteAt& x : nearby) log.received[static_cast<std::size_t>(x.owner)] += dim_;
      reply_log_.push_back(std::move(log));
    }
    counters_.node_local_rows += static_cast<std::int64_t>(nearby.size());
    counters_.node_local_s += since(t0);
  }
  if (probe_skew_) {
    t0 = Clock::now();
    comm_.barrier();
    counters_.skew_s += since(t0);
  }
  if (mates_.exchange) {
    t0 = Clock::now();
    std::vector<NodeId> misses;
    std::vector<std::int64_t> slot_of;
    group_by_owner(nodes, miss, per_owner, misses, slot_of);
    fetch_remote(misses, per_owner, out.data(), slot_of);
    counters_.remote_s += since(t0);
  } else if (!miss.empty()) {
    throw std::logic_error("FeatureStore::fetch: a row owned off this node, but no rank exchanges rows");
  }
  counters_.local_rows += local_rows;
  counters_.remote_rows += static_cast<std::int64_t>(nodes.size() - nearby.size()) - local_rows;
}

void FeatureStore::populate_rows(const std::vector<int>& node) const {
  // The gathers read rows at random: each first touch of a page of a mapped shard was a page
  // fault inside a batch (the local gather of R-MAT scale 19 on 2 ranks measured 63-65% of the
  // memcpy limit over 2 epochs, 78-87% with the pages mapped here). Only while the features of
  // all the shards of this node's ranks take at most half the node's memory (the page cache holds
  // each once, however many ranks map it): mapping them in must not evict what training needs.
  // Every rank of a node computes the same total (and, in one job, sees the same limit), so they
  // all populate or none does.
  double node_bytes = 0;
  for (PartId r = 0; r < shard_.book.parts(); ++r)
    if (static_cast<std::size_t>(r) < node.size() && node[static_cast<std::size_t>(r)] == node[static_cast<std::size_t>(comm_.rank())])
      node_bytes += static_cast<double>(shard_.book.size(r)) * static_cast<double>(dim_) * sizeof(float);
  // The node's memory as this process may use it: a SLURM job or a container limits it below the
  // machine's (its cgroup's limit; page cache counts against it).
  const std::uint64_t usable = usable_memory_bytes();
  if (usable == 0 || node_bytes > static_cast<double>(usable) / 2) return;
  shard_.features.populate_pages();
  for (const PartRows& rows : mates_.shards) rows.features.populate_pages();
}

void FeatureStore::read_node_local_shards(const std::vector<int>& node) { mates_.map(shard_, comm_, node, load_part_rows); }

template <class Value>
void FeatureStore::fetch_values(std::span<const NodeId> nodes, std::vector<std::int64_t>& out, Value value) {
  const PartitionBook& book = shard_.book;
  const NodeId first = book.begin(shard_.part), count = book.size(shard_.part);
  const int P = comm_.size();
  out.assign(nodes.size(), 0);
  std::vector<std::int64_t> per_owner(static_cast<std::size_t>(P), 0);
  std::vector<RemoteAt> remote;
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    if (nodes[i] >= first && nodes[i] < first + count) {
      out[i] = value(shard_.part, nodes[i] - first);
    } else if (const PartId owner = book.owner(nodes[i]); mates_.near(owner)) {
      out[i] = value(owner, nodes[i] - book.begin(owner));
    } else {
      remote.push_back({i, owner});
      ++per_owner[owner];
    }
  }
  if (!mates_.exchange) {  // every rank reads every other's shard: nothing is asked of anyone
    if (!remote.empty()) throw std::logic_error("FeatureStore: a value owned off this node, but no rank exchanges");
    return;
  }
  std::vector<NodeId> ask;
  std::vector<std::int64_t> slot_of;
  group_by_owner(nodes, remote, per_owner, ask, slot_of);
  auto asked = comm_.alltoallv<NodeId>(ask, per_owner);
  std::vector<std::int64_t> values(asked.data.size());
  for (std::size_t i = 0; i < values.size(); ++i) values[i] = value(shard_.part, asked.data[i] - first);
  auto got = comm_.alltoallv_known<std::int64_t>(values, asked.counts, per_owner);
  for (std::size_t k = 0; k < ask.size(); ++k) out[static_cast<std::size_t>(slot_of[k])] = got.data[k];
  ++counters_.value_fetches;
  counters_.bytes_sent += static_cast<std::int64_t>((ask.size() + values.size()) * sizeof(std::int64_t));
  counters_.bytes_received += static_cast<std::int64_t>((asked.data.size() + got.data.size()) * sizeof(std::int64_t));
}

void FeatureStore::fetch_degrees(std::span<const NodeId> nodes, std::vector<std::int64_t>& out) {
  fetch_values(nodes, out, [&](PartId part, NodeId row) {
    if (part == shard_.part) return shard_.graph.degree(row);
    const Array<EdgeId>& indptr = mates_.shards[static_cast<std::size_t>(part)].indptr;
    return static_cast<std::int64_t>(indptr[static_cast<std::size_t>(row) + 1] - indptr[static_cast<std::size_t>(row)]);
  });
}

void FeatureStore::fetch_labels(std::span<const NodeId> nodes, std::vector<std::int64_t>& out) {
  fetch_values(nodes, out, [&](PartId part, NodeId row) {
    const Array<std::int64_t>& labels = part == shard_.part ? shard_.labels : mates_.shards[static_cast<std::size_t>(part)].labels;
    return labels.empty() ? std::int64_t{-1} : labels[static_cast<std::size_t>(row)];
  });
}

void FeatureStore::fill_cache(std::vector<NodeId> chosen, std::uint64_t dense_index_bytes) {
  // Owners answer in request order when requests are grouped by owner: sort by global id (which
  // groups them, the book being ranges) and fetch once.
  std::sort(chosen.begin(), chosen.end());
  cache_.assign(chosen.size() * static_cast<std::size_t>(dim_), 0.0f);
  std::vector<std::int64_t> rows(chosen.size()), counts(static_cast<std::size_t>(comm_.size()), 0);
  for (std::size_t i = 0; i < rows.size(); ++i) rows[i] = static_cast<std::int64_t>(i);
  for (NodeId v : chosen) ++counts[shard_.book.owner(v)];
  fetch_remote(chosen, counts, cache_.data(), rows);
  // The staging buffers held a whole cache's rows: give them back rather than keep a copy.
  std::vector<float>().swap(send_rows_);
  std::vector<float>().swap(recv_rows_);
  // Cache rows by global id: a dense table over all nodes when it fits dense_index_bytes (a hash
  // lookup per remote input node was a cache miss the prefetcher cannot see), else a hash map.
  slot_.clear();
  dense_slot_.clear();
  cached_ = static_cast<std::int64_t>(chosen.size());
  const auto n = static_cast<std::uint64_t>(shard_.book.num_nodes());
  if (chosen.empty()) {
    // No index: fetch() skips the lookups.
  } else if (n * sizeof(std::int32_t) <= dense_index_bytes && chosen.size() < (1ULL << 31)) {
    dense_slot_.assign(n, -1);
    for (std::size_t i = 0; i < chosen.size(); ++i) dense_slot_[static_cast<std::size_t>(chosen[i])] = static_cast<std::int32_t>(i);
  } else {
    slot_.reserve(chosen.size());
    for (std::size_t i = 0; i < chosen.size(); ++i) slot_.emplace(chosen[i], static_cast<std::int64_t>(i));
  }
}

void FeatureStore::build_cache(const SamplerConfig& config, DistSampler* sampler) {
  // Every rank decides alike whether to map (the shard's folder is known on every rank or none).
  node_of_rank_ = comm_.node_ids();
  const std::vector<int>& node = node_of_rank_;
  if (comm_.all(config.node_local && comm_.size() > 1)) {  // the same on every rank; the rest is checked in map_node_mates
    if (sampler != nullptr) sampler->read_node_local_shards(node);  // collective: the sampler's communicator, every rank alike
    if (dim_ > 0) read_node_local_shards(node);
  }
  populate_rows(node);
  std::vector<NodeId> chosen;
  const bool on = config.cache_policy != CachePolicy::kNone && dim_ > 0;
  const std::size_t row_bytes = static_cast<std::size_t>(dim_) * sizeof(float);
  std::int64_t far_nodes = shard_.book.num_nodes() - shard_.book.size(shard_.part);
  for (PartId r = 0; r < shard_.book.parts(); ++r)
    if (mates_.near(r)) far_nodes -= shard_.book.size(r);
  const auto remote_rows = static_cast<std::size_t>(far_nodes);  // the rows a cache may hold
  std::size_t capacity = !on ? 0
                         : config.cache_fraction > 0 ? static_cast<std::size_t>(config.cache_fraction * static_cast<double>(remote_rows))
                                                     : static_cast<std::size_t>(config.cache_mb * 1e6 / static_cast<double>(row_bytes));
  // Score candidates, then keep the `capacity` best (ties: smaller id, for determinism).
  boost::unordered_flat_map<NodeId, std::int64_t> score;
  if (config.cache_policy == CachePolicy::kDegree) {
    // Candidates are the halo; a remote node is drawn in proportion to its degree (sampling
    // reaches it along any of its edges), so rank by the degree its owner reports, once. This is
    // a collective on every rank, cache or not, so the exchange always lines up.
    std::vector<NodeId> halo;  // sorted: grouped by owner; rows read from same-node shards need no cache
    std::vector<std::int64_t> counts(static_cast<std::size_t>(comm_.size()), 0);
    for (std::size_t i = 0; i < shard_.halo_nodes.size(); ++i)
      if (const PartId owner = shard_.halo_owner[i]; !mates_.near(owner)) {
        halo.push_back(shard_.halo_nodes[i]);
        ++counts[static_cast<std::size_t>(owner)];
      }
    auto asked = comm_.alltoallv<NodeId>(halo, counts);
    const NodeId first = shard_.book.begin(shard_.part);
    std::vector<std::int64_t> degrees(asked.data.size());
    for (std::size_t i = 0; i < degrees.size(); ++i) degrees[i] = shard_.graph.degree(asked.data[i] - first);
    auto got = comm_.alltoallv<std::int64_t>(degrees, asked.counts);
    if (on)
      for (std::size_t i = 0; i < halo.size(); ++i) score[halo[i]] = got.data[i];
  } else if (config.cache_policy == CachePolicy::kPresample && sampler != nullptr) {
    // SALIENT++'s VIP idea: presample with the training configuration on a reserved epoch (-1)
    // and rank remote rows by how often they were input nodes.
    const std::int64_t steps = std::min<std::int64_t>(config.presample_batches, sampler->steps_in_epoch(-1));
    for (std::int64_t s = 0; s < steps; ++s) {
      const auto seeds = sampler->seeds_for(-1, s);
      const MiniBatch mb = sampler->sample(seeds, -1, s);
      if (on)
        for (NodeId v : mb.input_nodes())
          if (const PartId owner = shard_.book.owner(v); owner != shard_.part && !mates_.near(owner)) ++score[v];
    }
    sampler->counters() = SamplerCounters{};  // presampling is setup, not training work
  }
  std::vector<std::pair<std::int64_t, NodeId>> ranked;
  ranked.reserve(score.size());
  for (const auto& [v, c] : score) ranked.emplace_back(-c, v);
  const std::size_t keep = std::min(capacity, ranked.size());
  std::partial_sort(ranked.begin(), ranked.begin() + static_cast<std::ptrdiff_t>(keep), ranked.end());
  for (std::size_t i = 0; i < keep; ++i) chosen.push_back(ranked[i].second);
  fill_cache(std::move(chosen), config.dense_index_bytes);  // collective even when empty: every rank serves the others
  counters_ = FeatureCounters{};
}

}  // namespace shardgnn
