#include "sampler/feature_store.hpp"
#include "datasets/stopwatch.hpp"

#include <algorithm>
#include <bit>
#include <chrono>
#include <cstring>
#include <limits>
#include <type_traits>
#include <stdexcept>

#include <unistd.h>

#include "datasets/feature_dtype.hpp"
#include "sampler/typed_features.hpp"
#include "datasets/memory_limit.hpp"
#include "sampler/sampler.hpp"

namespace shardgnn {

namespace {

// Prefetches every cache line of a row of `bytes` bytes (a source row of a gather).
void prefetch_row(const void* row, std::size_t bytes) {
  const char* p = static_cast<const char*>(row);
  for (std::size_t off = 0; off < bytes; off += 64) __builtin_prefetch(p + off, 0, 0);
}
// Prefetch distance of the random-row gathers, in rows: about 8 KB of rows in flight (20 rows of
// 100 floats), since a fixed small count of rows left too few misses in flight for short rows.
std::size_t rows_ahead(std::size_t row_bytes) { return std::clamp<std::size_t>(8192 / std::max<std::size_t>(row_bytes, 1), 4, 32); }

// Copies `count` rows of `row_bytes` bytes, row k from source(k) to target(k) (by `copy`, memcpy
// unless given). The sources are random reads: the one a few copies ahead is prefetched (all its
// cache lines), so its misses overlap the current copy instead of stalling it.
template <class Source, class Target, class Copy>
void copy_rows(std::size_t count, std::size_t row_bytes, Source source, Target target, Copy copy) {
  const std::size_t lead = rows_ahead(row_bytes);
  for (std::size_t k = 0; k < std::min(lead, count); ++k) prefetch_row(source(k), row_bytes);
  for (std::size_t k = 0; k < count; ++k) {
    if (k + lead < count) prefetch_row(source(k + lead), row_bytes);
    copy(target(k), source(k));
  }
}
template <class Source, class Target>
void copy_rows(std::size_t count, std::size_t row_bytes, Source source, Target target) {
  copy_rows(count, row_bytes, source, target, [row_bytes](void* to, const void* from) { std::memcpy(to, from, row_bytes); });
}

// Groups the remote nodes by owner with a counting sort (each owner's keep their order): the ids
// to send, in the order owners answer, and each one's position in `nodes`. per_owner[r] counts
// those owned by rank r.
void group_by_owner(std::span<const NodeId> nodes, std::span<const FeatureStore::RemoteAt> remote, std::span<const std::int64_t> per_owner,
                    std::vector<NodeId>& ids, std::vector<std::int64_t>& slot_of) {
  std::vector<std::int64_t> fill(per_owner.size(), 0);
  for (std::size_t r = 1; r < fill.size(); ++r) fill[r] = fill[r - 1] + per_owner[r - 1];
  ids.resize(remote.size());
  slot_of.resize(remote.size());
  for (const FeatureStore::RemoteAt& x : remote) {
    const auto at = static_cast<std::size_t>(fill[static_cast<std::size_t>(x.owner)]++);
    ids[at] = nodes[x.pos];
    slot_of[at] = static_cast<std::int64_t>(x.pos);
  }
}

// Copies `count` stored feature rows of `F` values into float32 rows, widening 2-byte values.
template <class Source, class Target>
void copy_feature_rows(std::size_t count, FeatureDtype stored, std::size_t F, Source source, Target target) {
  if (stored == FeatureDtype::kFloat32) return copy_rows(count, F * sizeof(float), source, target);
  copy_rows(count, F * feature_value_bytes(stored), source, target, [stored, F](float* to, const void* from) { widen_values(stored, from, F, to); });
}
}  // namespace

FeatureStore::FeatureStore(const ShardView& shards, const comm::Communicator& comm)
    : shards_(shards), shard_(shards.own()), comm_(comm), dim_(shard_.feature_dim), label_sets_(shard_.multilabel ? LabelSets(shard_) : LabelSets()) {}

void FeatureStore::fetch_remote(std::span<const NodeId> remote, std::span<const std::int64_t> counts, float* dst, std::span<const std::int64_t> dst_rows,
                                std::uint16_t* dst16) {
  const int P = comm_.size();
  const auto F = static_cast<std::size_t>(dim_);
  // `remote` arrives grouped by owner from the caller, so it is already the send buffer.
  auto t0 = Clock::now();
  auto asked = comm_.alltoallv<NodeId>(remote, counts);
  const double ids_s = since(t0);
  counters_.id_exchange_s += ids_s;
  counters_.exchange_s += ids_s;
  // The reply's float counts each way, known here already (F floats per row asked): no count
  // exchange for the rows.
  std::vector<std::int64_t> row_counts(asked.counts.size()), expect(static_cast<std::size_t>(P));
  for (std::size_t r = 0; r < row_counts.size(); ++r) row_counts[r] = asked.counts[r] * dim_;
  for (int r = 0; r < P; ++r) expect[r] = counts[r] * dim_;
  if (observer_.rows_exchanged) observer_.rows_exchanged(row_counts, expect);
  counters_.bytes_sent += static_cast<std::int64_t>(remote.size() * sizeof(NodeId));
  counters_.bytes_received += static_cast<std::int64_t>(asked.data.size() * sizeof(NodeId));
  if (F == 0) return;  // no feature columns (every rank alike): no rows to move
  if (dst16 && shard_.feature_dtype == FeatureDtype::kFloat32) throw std::logic_error("FeatureStore::fetch_remote: 2-byte rows asked of a float32 shard");
  if (wire_16_) exchange_rows(asked.data, row_counts, expect, dst, dst_rows, send_half_, recv_half_, dst16);
  else exchange_rows(asked.data, row_counts, expect, dst, dst_rows, send_rows_, recv_rows_, nullptr);
}

template <class Wire>
void FeatureStore::exchange_rows(std::span<const NodeId> asked, std::span<const std::int64_t> send_counts, std::span<const std::int64_t> recv_counts,
                                 float* dst, std::span<const std::int64_t> dst_rows, std::vector<Wire>& send, std::vector<Wire>& recv,
                                 std::uint16_t* dst16) {
  const auto F = static_cast<std::size_t>(dim_);
  const std::size_t row_bytes = shard_.feature_row_bytes();
  const NodeId first_id = shard_.book.begin(shard_.part);
  // A row as it travels, and back: float32 as it is, bfloat16 rounded from float32, or the
  // stored 2-byte values as they are (widened by the asker).
  const FeatureDtype stored = shard_.feature_dtype;
  const bool as_stored = std::is_same_v<Wire, float> || stored != FeatureDtype::kFloat32;
  const FeatureDtype travels = as_stored ? stored : FeatureDtype::kBFloat16;
  const auto pack = [&](void* to, const void* from) {
    if (as_stored) std::memcpy(to, from, row_bytes);
    else std::transform(static_cast<const float*>(from), static_cast<const float*>(from) + F, static_cast<std::uint16_t*>(to), to_bfloat16);
  };
  const auto unpack = [&](float* to, const Wire* from) { widen_values(travels, from, F, to); };
  // Staging buffers are kept between fetches: fresh ones cost a page fault and a zero-fill per
  // 4 KiB every batch, more than the copy itself.
  send.resize(asked.size() * F);
  recv.resize(dst_rows.size() * F);
  // The owner's gather of the rows asked of it, the row exchange, and the asker's placing of the
  // received rows in the batch.
  auto t = Clock::now();
  copy_rows(asked.size(), row_bytes, [&](std::size_t i) { return shard_.feature_row(asked[i] - first_id); },
            [&](std::size_t i) { return send.data() + i * F; }, pack);
  counters_.gather_s += since(t);
  t = Clock::now();
  comm_.alltoallv_into<Wire>(send, send_counts, recv_counts, recv);
  const double rows_s = since(t);
  t = Clock::now();
  if constexpr (std::is_same_v<Wire, std::uint16_t>) {
    if (dst16) {  // stored 2-byte rows travel as they are (as_stored): kept so
      for (std::size_t k = 0; k < dst_rows.size(); ++k) std::copy_n(recv.data() + k * F, F, dst16 + static_cast<std::size_t>(dst_rows[k]) * F);
    }
  }
  if (!dst16)
    for (std::size_t k = 0; k < dst_rows.size(); ++k) unpack(dst + static_cast<std::size_t>(dst_rows[k]) * F, recv.data() + k * F);
  counters_.scatter_s += since(t);
  counters_.row_exchange_s += rows_s;
  counters_.exchange_s += rows_s;
  counters_.bytes_sent += static_cast<std::int64_t>(send.size() * sizeof(Wire));
  counters_.bytes_received += static_cast<std::int64_t>(recv.size() * sizeof(Wire));
}

void FeatureStore::fetch(std::span<const NodeId> nodes, FeatureRows& out) {
  if (nodes.size() > std::numeric_limits<std::uint32_t>::max()) throw std::length_error("FeatureStore::fetch: 2^32 rows or more in one batch");
  out.resize(nodes.size() * static_cast<std::size_t>(dim_), boost::container::default_init);  // every row is written below: no zero-fill
  const std::size_t owned = gather_own(nodes, out.data());
  sort_others(nodes, nodes.size() - owned, out.data());
  if (shards_.reads_node_local()) gather_node_local(nodes, out.data());  // on every rank alike (so an observer's calls line up)
  if (observer_.before_exchange) observer_.before_exchange();
  if (shards_.exchange()) {
    const auto t0 = Clock::now();
    std::vector<NodeId> misses;
    std::vector<std::int64_t> slot_of;
    group_by_owner(nodes, miss_, per_owner_, misses, slot_of);
    fetch_remote(misses, per_owner_, out.data(), slot_of);
    counters_.remote_s += since(t0);
  } else if (!miss_.empty()) {
    throw std::logic_error("FeatureStore::fetch: a row owned off this node, but no rank exchanges rows");
  }
  counters_.local_rows += static_cast<std::int64_t>(owned);
  counters_.remote_rows += static_cast<std::int64_t>(nodes.size() - owned - node_local_.size());
}

std::size_t FeatureStore::gather_own(std::span<const NodeId> nodes, float* out) {
  const auto t0 = Clock::now();
  const NodeId first = shard_.book.begin(shard_.part), count = shard_.book.size(shard_.part);
  // The owned positions are listed first, without branches: owned and other rows interleave at
  // random, so a test per row in the copy loop mispredicted about every other row. The other
  // positions are listed in the same pass, for sort_others.
  local_at_.resize(nodes.size());
  other_at_.resize(nodes.size());
  std::size_t owned = 0;
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    local_at_[owned] = static_cast<std::uint32_t>(i);
    other_at_[i - owned] = static_cast<std::uint32_t>(i);
    owned += static_cast<std::size_t>(static_cast<std::uint64_t>(nodes[i] - first) < static_cast<std::uint64_t>(count));
  }
  const auto F = static_cast<std::size_t>(dim_);
  copy_feature_rows(owned, shard_.feature_dtype, F, [&](std::size_t j) { return shard_.feature_row(nodes[local_at_[j]] - first); },
                    [&](std::size_t j) { return out + local_at_[j] * F; });
  counters_.local_gather_s += since(t0);
  return owned;
}

void FeatureStore::sort_others(std::span<const NodeId> nodes, std::size_t others, float* out) {
  const auto t0 = Clock::now();
  const PartitionBook& book = shard_.book;
  const auto F = static_cast<std::size_t>(dim_);
  miss_.clear();
  node_local_.clear();
  per_owner_.assign(static_cast<std::size_t>(comm_.size()), 0);
  hits_.clear();
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
      hits_.emplace_back(i, row);
    } else if (const PartId owner = book.owner(v); shards_.readable(owner) != nullptr) {
      node_local_.push_back({i, owner});
    } else {
      miss_.push_back({i, owner});
      ++per_owner_[static_cast<std::size_t>(owner)];
    }
  }
  if (cache16_.empty())
    copy_rows(hits_.size(), F * sizeof(float), [&](std::size_t k) { return cache_.data() + hits_[k].second * dim_; },
              [&](std::size_t k) { return out + hits_[k].first * F; });
  else
    copy_feature_rows(hits_.size(), shard_.feature_dtype, F, [&](std::size_t k) { return cache16_.data() + hits_[k].second * dim_; },
                      [&](std::size_t k) { return out + hits_[k].first * F; });
  counters_.cache_hits += static_cast<std::int64_t>(hits_.size());
  counters_.cache_s += since(t0);
}

void FeatureStore::gather_node_local(std::span<const NodeId> nodes, float* out) {
  const auto t0 = Clock::now();
  const PartitionBook& book = shard_.book;
  const auto F = static_cast<std::size_t>(dim_);
  copy_feature_rows(
      node_local_.size(), shard_.feature_dtype, F,
      [&](std::size_t k) {
        const RemoteAt& x = node_local_[k];
        return shards_.readable(x.owner)->feature_row(nodes[x.pos] - book.begin(x.owner));
      },
      [&](std::size_t k) { return out + node_local_[k].pos * F; });
  if (observer_.node_local_read) {
    std::vector<std::int64_t> floats(static_cast<std::size_t>(comm_.size()), 0);
    for (const RemoteAt& x : node_local_) floats[static_cast<std::size_t>(x.owner)] += dim_;
    observer_.node_local_read(floats);
  }
  counters_.node_local_rows += static_cast<std::int64_t>(node_local_.size());
  counters_.node_local_s += since(t0);
}

void FeatureStore::populate_rows() const {
  // The gathers read rows at random: each first touch of a page of a mapped shard was a page
  // fault inside a batch, which held the local gather well below the memcpy limit. Only while the features of
  // all the shards of this node's ranks take at most half the node's memory (the page cache holds
  // each once, however many ranks map it): mapping them in must not evict what training needs.
  // Every rank of a node computes the same total (and, in one job, sees the same limit), so they
  // all populate or none does.
  const std::vector<int>& node = shards_.node_of_rank();
  double node_bytes = 0;
  for (PartId r = 0; r < shard_.book.parts(); ++r)
    if (r == shard_.part || (static_cast<std::size_t>(r) < node.size() && node[static_cast<std::size_t>(r)] == node[static_cast<std::size_t>(comm_.rank())]))
      node_bytes += static_cast<double>(shard_.book.size(r)) * static_cast<double>(shard_.feature_row_bytes());
  // The node's memory as this process may use it: a SLURM job or a container limits it below the
  // machine's (its cgroup's limit; page cache counts against it).
  const std::uint64_t usable = usable_memory_bytes();
  const bool populate = usable > 0 && node_bytes <= static_cast<double>(usable) / 2;
  // Else the rows stay on disk until read, one by one at random: a missing page is read alone.
  for (PartId r = 0; r < shard_.book.parts(); ++r)
    if (const Shard* s = shards_.readable(r)) {
      if (populate) s->features.populate_pages(), s->features16.populate_pages();
      else s->features.advise_random(), s->features16.advise_random();
    }
}

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
      out[i] = value(shard_, nodes[i] - first);
    } else if (const PartId owner = book.owner(nodes[i]); const Shard* s = shards_.readable(owner)) {
      out[i] = value(*s, nodes[i] - book.begin(owner));
    } else {
      remote.push_back({i, owner});
      ++per_owner[owner];
    }
  }
  if (!shards_.exchange()) {  // every rank reads every other's shard: nothing is asked of anyone
    if (!remote.empty()) throw std::logic_error("FeatureStore: a value owned off this node, but no rank exchanges");
    return;
  }
  std::vector<NodeId> ask;
  std::vector<std::int64_t> slot_of;
  group_by_owner(nodes, remote, per_owner, ask, slot_of);
  auto asked = comm_.alltoallv<NodeId>(ask, per_owner);
  std::vector<std::int64_t> values(asked.data.size());
  for (std::size_t i = 0; i < values.size(); ++i) values[i] = value(shard_, asked.data[i] - first);
  auto got = comm_.alltoallv_known<std::int64_t>(values, asked.counts, per_owner);
  for (std::size_t k = 0; k < ask.size(); ++k) out[static_cast<std::size_t>(slot_of[k])] = got.data[k];
  ++counters_.value_fetches;
  counters_.bytes_sent += static_cast<std::int64_t>((ask.size() + values.size()) * sizeof(std::int64_t));
  counters_.bytes_received += static_cast<std::int64_t>((asked.data.size() + got.data.size()) * sizeof(std::int64_t));
}

void FeatureStore::fetch_degrees(std::span<const NodeId> nodes, std::vector<std::int64_t>& out) {
  fetch_values(nodes, out, [](const Shard& s, NodeId row) { return s.graph.degree(row); });
}

void FeatureStore::fetch_labels(std::span<const NodeId> nodes, std::vector<std::int64_t>& out) {
  fetch_values(nodes, out, [](const Shard& s, NodeId row) { return s.labels.empty() ? std::int64_t{-1} : s.labels[static_cast<std::size_t>(row)]; });
}

void FeatureStore::fill_cache(std::vector<NodeId> chosen, std::uint64_t dense_index_bytes) {
  // Owners answer in request order when requests are grouped by owner: sort by global id (which
  // groups them, the book being ranges) and fetch once.
  std::sort(chosen.begin(), chosen.end());
  const bool stored16 = shard_.feature_dtype != FeatureDtype::kFloat32;
  cache_.assign(stored16 ? 0 : chosen.size() * static_cast<std::size_t>(dim_), 0.0f);
  cache16_.assign(stored16 ? chosen.size() * static_cast<std::size_t>(dim_) : 0, 0);
  std::vector<std::int64_t> rows(chosen.size()), counts(static_cast<std::size_t>(comm_.size()), 0);
  for (std::size_t i = 0; i < rows.size(); ++i) rows[i] = static_cast<std::int64_t>(i);
  for (NodeId v : chosen) ++counts[shard_.book.owner(v)];
  fetch_remote(chosen, counts, cache_.data(), rows, stored16 ? cache16_.data() : nullptr);
  // The staging buffers held a whole cache's rows: give them back rather than keep a copy.
  std::vector<float>().swap(send_rows_);
  std::vector<float>().swap(recv_rows_);
  std::vector<std::uint16_t>().swap(send_half_);
  std::vector<std::uint16_t>().swap(recv_half_);
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

std::string FeatureStore::wire_name() const {
  return shard_.feature_dtype != FeatureDtype::kFloat32 ? feature_dtype_name(shard_.feature_dtype) + " (as stored)" : wire_dtype_name(wire_);
}

FeatureStore::~FeatureStore() = default;

FeatureCounters FeatureStore::counters() const { return typed_ ? counters_ + typed_->counters() : counters_; }

void FeatureStore::build_cache(const SamplerConfig& config, DistSampler* sampler) {
  if (shard_.schema.typed()) typed_ = std::make_unique<TypedFeatureStore>(shard_, comm_, config);
  wire_ = config.wire_dtype;
  wire_16_ = wire_ == WireDtype::kBFloat16 || shard_.feature_dtype != FeatureDtype::kFloat32;
  populate_rows();
  std::vector<NodeId> chosen;
  const bool on = config.cache_policy != CachePolicy::kNone && dim_ > 0;
  const std::size_t row_bytes = shard_.feature_row_bytes();  // a cached row as stored
  std::int64_t far_nodes = shard_.book.num_nodes() - shard_.book.size(shard_.part);
  for (PartId r = 0; r < shard_.book.parts(); ++r)
    if (r != shard_.part && shards_.readable(r) != nullptr) far_nodes -= shard_.book.size(r);
  const auto remote_rows = static_cast<std::size_t>(far_nodes);  // the rows a cache may hold
  std::size_t capacity = !on ? 0
                         : config.cache_fraction > 0 ? static_cast<std::size_t>(config.cache_fraction * static_cast<double>(remote_rows))
                                                     : static_cast<std::size_t>(config.cache_mb * 1e6 / static_cast<double>(row_bytes));
  capped_ = false;
  if (const std::uint64_t usable = usable_memory_bytes(); on && config.cache_fraction > 0 && usable > 0) {  // 0: memory unknown, no cap
    const std::vector<int>& node = shards_.node_of_rank();
    const auto here = static_cast<std::size_t>(comm_.rank());
    const auto node_ranks = here < node.size() ? std::count(node.begin(), node.end(), node[here]) : 1;
    const double budget = config.cache_memory_share * static_cast<double>(usable) / static_cast<double>(std::max<std::ptrdiff_t>(node_ranks, 1));
    const auto most = static_cast<std::size_t>(budget / static_cast<double>(row_bytes));
    capped_ = capacity > most;
    capacity = std::min(capacity, most);
  }
  // Score candidates, then keep the `capacity` best (ties: smaller id, for determinism).
  boost::unordered_flat_map<NodeId, std::int64_t> score;
  if (config.cache_policy == CachePolicy::kDegree) {
    // Candidates are the halo; a remote node is drawn in proportion to its degree (sampling
    // reaches it along any of its edges), so rank by the degree its owner reports, once. This is
    // a collective on every rank, cache or not, so the exchange always lines up.
    std::vector<NodeId> halo;  // sorted: grouped by owner; rows read from node-local shards need no cache
    std::vector<std::int64_t> counts(static_cast<std::size_t>(comm_.size()), 0);
    for (std::size_t i = 0; i < shard_.halo_nodes.size(); ++i)
      if (const PartId owner = shard_.halo_owner[i]; shards_.readable(owner) == nullptr) {
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
          if (shards_.readable(shard_.book.owner(v)) == nullptr) ++score[v];
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
