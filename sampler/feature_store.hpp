// Input features for a batch: local rows straight from the shard's mapped file, remote rows from a
// per-rank cache or from their owners in one batched exchange per batch. The cache has a size
// limit and a policy: by degree (the remote rows this shard's edges reference most) or by
// presampling (SALIENT++'s VIP idea: sample some batches ahead, cache the rows fetched most).
#pragma once

#include <boost/unordered/unordered_flat_map.hpp>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "comm/communicator.hpp"
#include "partition/shards.hpp"
#include "sampler/config.hpp"
#include "sampler/label_sets.hpp"
#include "sampler/minibatch.hpp"
#include "sampler/shard_view.hpp"

namespace shardgnn {

class DistSampler;
class TypedFeatureStore;

struct FeatureCounters {
  // remote_rows: rows owned by ranks on other nodes (or by any other rank with node-local reads
  // off), served by the cache or the exchange; node_local_rows: rows owned by a node-local rank,
  // read from its mapped shard.
  std::int64_t local_rows = 0, remote_rows = 0, cache_hits = 0, node_local_rows = 0;
  std::int64_t bytes_sent = 0, bytes_received = 0;
  std::int64_t value_fetches = 0;  // fetch_labels / fetch_degrees calls that asked owners (a request and a reply exchange each)
  double local_gather_s = 0, cache_s = 0, remote_s = 0, exchange_s = 0;  // remote_s: misses only (grouping, exchange, scatter)
  double node_local_s = 0;  // reading the node-local rows
  // The parts of remote_s: the id exchange (counts, then ids), the owner's gather of the rows asked
  // of it, the row exchange, and the scatter of the received rows to their places in the batch.
  // exchange_s = id_exchange_s + row_exchange_s.
  double id_exchange_s = 0, gather_s = 0, row_exchange_s = 0, scatter_s = 0;
  double hit_rate() const { return remote_rows > 0 ? static_cast<double>(cache_hits) / static_cast<double>(remote_rows) : 0.0; }
};
// Field by field: an epoch's counts are the counters at its end less those at its start.
FeatureCounters operator-(const FeatureCounters& a, const FeatureCounters& b);
FeatureCounters operator+(const FeatureCounters& a, const FeatureCounters& b);

class FeatureStore {
 public:
  // `shards` and `comm` must outlive the store. Rows of parts `shards` reads are read here from
  // their shards, the others come from the cache or their owners (one exchange per fetch, skipped
  // when no rank needs it).
  FeatureStore(const ShardView& shards, const comm::Communicator& comm);
  ~FeatureStore();
  FeatureStore(const FeatureStore&) = delete;
  FeatureStore& operator=(const FeatureStore&) = delete;

  // Collective: the setup before the first fetch. Also takes config.wire_dtype for every later fetch.
  // - Maps the pages of the feature rows read here in up front, where memory allows, so that no
  //   batch takes page faults (populate_rows).
  // - Fills the cache per `config` (policy and size) with rows owned on other nodes; kPresample
  //   draws config.presample_batches batches with `sampler` (epoch -1, so training epochs are
  //   untouched; pass the same sampler, or none, on every rank).
  // - A typed graph's shard (Shard::schema): builds the TypedFeatureStore that fetches its rows per
  //   node type (typed()), with its caches per `config`.
  void build_cache(const SamplerConfig& config, DistSampler* sampler);
  // A typed graph's per-type rows (after build_cache); null for an untyped graph.
  TypedFeatureStore* typed() const noexcept { return typed_.get(); }

  // Collective: every rank calls it once per step. Writes the rows of `nodes` (global ids),
  // row-major, into `out` (resized to nodes.size() x feature_dim). Rows that came over the wire
  // (from the exchange or the cache) are rounded to the wire's type.
  void fetch(std::span<const NodeId> nodes, FeatureRows& out);

  // Collective likewise: the full-graph degree of each of `nodes` (those of shards read here read
  // here, the others asked of their owners in one exchange, skipped when no rank needs it).
  void fetch_degrees(std::span<const NodeId> nodes, std::vector<std::int64_t>& out);
  // Collective likewise, read the same way: the label of each of `nodes` (-1 when unlabelled), for
  // seeds a rank trains but does not own (runtime rebalancing, class-balanced or global seed sampling).
  void fetch_labels(std::span<const NodeId> nodes, std::vector<std::int64_t>& out);

  // A multi-label shard's targets: the label sets of `nodes` (any rank's), LabelSets::words()
  // int64 words a node, read from the mapped shards (no exchange).
  bool multilabel() const noexcept { return !label_sets_.empty(); }
  void fetch_label_sets(std::span<const NodeId> nodes, std::vector<std::int64_t>& out) const { label_sets_.fetch(nodes, out); }

  std::int64_t feature_dim() const noexcept { return dim_; }
  std::int64_t cached_rows() const noexcept { return cached_; }
  // Whether SamplerConfig::cache_memory_share held the cache below the size cache_fraction asked.
  bool cache_capped() const noexcept { return capped_; }
  // What a feature value travels as (after build_cache): the stored 2-byte type when the shards
  // have one, else --wire-dtype's; and its bytes.
  std::string wire_name() const;
  std::size_t wire_value_bytes() const noexcept { return wire_16_ ? 2 : 4; }
  // The store's counters, with every node type's of a typed graph.
  FeatureCounters counters() const;
  // Hooks a benchmark installs (none by default), called on every rank alike.
  struct Observer {
    // Per fetch while node-local shards are read: the floats read from each rank's shard.
    std::function<void(std::span<const std::int64_t> floats)> node_local_read;
    // Per fetch, before rows are asked of their owners: may enter a collective on the store's communicator.
    std::function<void()> before_exchange;
    // Per row exchange: the floats sent to and received from each rank.
    std::function<void(std::span<const std::int64_t> sent, std::span<const std::int64_t> received)> rows_exchanged;
  };
  void observe(Observer observer) { observer_ = std::move(observer); }
  const ShardView& shards() const noexcept { return shards_; }

  // A node read elsewhere: its position in the caller's list and its owner.
  struct RemoteAt {
    std::size_t pos;
    PartId owner;
  };

 private:
  // Collective: the rows of `remote` (global ids owned elsewhere, grouped by owner, counts[r] of
  // them owned by rank r) from their owners, row k written to row dst_rows[k] of `dst`.
  // With `dst16` (2-byte shards only) the rows land there as stored instead, not widened.
  void fetch_remote(std::span<const NodeId> remote, std::span<const std::int64_t> counts, float* dst, std::span<const std::int64_t> dst_rows,
                    std::uint16_t* dst16 = nullptr);
  // fetch_remote's row exchange, rows travelling as `Wire` (float, or bfloat16 bits): the rows of
  // `asked` (owned here) go out, the received ones land as floats in rows dst_rows of `dst`.
  template <class Wire>
  void exchange_rows(std::span<const NodeId> asked, std::span<const std::int64_t> send_counts, std::span<const std::int64_t> recv_counts, float* dst,
                     std::span<const std::int64_t> dst_rows, std::vector<Wire>& send, std::vector<Wire>& recv, std::uint16_t* dst16);
  void fill_cache(std::vector<NodeId> chosen, std::uint64_t dense_index_bytes);
  // The steps of fetch(): the owned rows' gather (returns their count); the sorting of the others
  // into cache hits (copied), node-local rows and misses; the node-local rows' gather.
  std::size_t gather_own(std::span<const NodeId> nodes, float* out);
  void sort_others(std::span<const NodeId> nodes, std::size_t others, float* out);
  void gather_node_local(std::span<const NodeId> nodes, float* out);
  // Maps the pages of the shards this rank reads rows from (its own, the node-local ones) into
  // the process up front, within a memory budget; part of build_cache.
  void populate_rows() const;
  // Collective: one int64 per node, read here by `value(shard, row in that shard)` for the nodes
  // of shards read here, else asked of the owner.
  template <class Value>
  void fetch_values(std::span<const NodeId> nodes, std::vector<std::int64_t>& out, Value value);

  const ShardView& shards_;
  const Shard& shard_;
  const comm::Communicator& comm_;
  std::int64_t dim_;
  LabelSets label_sets_;
  // Cached global id -> row in cache_: dense_slot_ (-1: not cached) over all nodes when
  // SamplerConfig::dense_index_bytes allows, else slot_.
  std::vector<std::int32_t> dense_slot_;
  boost::unordered_flat_map<NodeId, std::int64_t> slot_;
  std::int64_t cached_ = 0;
  bool capped_ = false;
  // The cached rows as the shards store them: float32 rows, or 2-byte ones (half the memory for
  // the same rows), widened as hits are copied into a batch.
  std::vector<float> cache_;
  std::vector<std::uint16_t> cache16_;
  WireDtype wire_ = WireDtype::kFloat32;      // set by build_cache
  bool wire_16_ = false;                      // rows travel in 2 bytes a value (wire_ bf16 or 2-byte shards)
  std::vector<float> send_rows_, recv_rows_;  // staging for remote rows, kept between fetches
  std::vector<std::uint16_t> send_half_, recv_half_;  // the same for bfloat16 rows
  // A fetch's positions, kept between fetches: owned and other rows, cache hits (with their cache
  // row), node-local rows and misses (with per_owner_ counting the misses by owner).
  std::vector<std::uint32_t> local_at_, other_at_;
  std::vector<std::pair<std::size_t, std::int64_t>> hits_;
  std::vector<RemoteAt> node_local_, miss_;
  std::vector<std::int64_t> per_owner_;
  FeatureCounters counters_;
  Observer observer_;
  std::unique_ptr<TypedFeatureStore> typed_;
};

}  // namespace shardgnn
