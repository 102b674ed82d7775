// Input features for a batch: local rows straight from the shard's mapped file, remote rows from a
// per-rank cache or from their owners in one batched exchange per batch. The cache has a size
// limit and a policy: by degree (the remote rows this shard's edges reference most) or by
// presampling (SALIENT++'s VIP idea: sample some batches ahead, cache the rows fetched most).
#pragma once

#include <boost/unordered/unordered_flat_map.hpp>
#include <cstdint>
#include <span>
#include <vector>

#include "comm/communicator.hpp"
#include "partition/shards.hpp"
#include "sampler/config.hpp"
#include "sampler/minibatch.hpp"
#include "sampler/node_local.hpp"

namespace shardgnn {

class DistSampler;

struct FeatureCounters {
  // remote_rows: rows owned by ranks on other nodes (or by any other rank with node-local reads
  // off), served by the cache or the exchange; node_local_rows: rows owned by another rank on this
  // node, read from its mapped shard.
  std::int64_t local_rows = 0, remote_rows = 0, cache_hits = 0, node_local_rows = 0;
  std::int64_t bytes_sent = 0, bytes_received = 0;
  std::int64_t value_fetches = 0;  // fetch_labels / fetch_degrees calls that asked owners (a request and a reply exchange each)
  double local_gather_s = 0, cache_s = 0, remote_s = 0, exchange_s = 0;  // remote_s: misses only (grouping, exchange, scatter)
  double node_local_s = 0;  // reading the node-local rows
  // The parts of remote_s: the id exchange (counts, then ids), the owner's gather of the rows asked
  // of it, the row exchange, and the scatter of the received rows to their places in the batch.
  // exchange_s = id_exchange_s + row_exchange_s.
  double id_exchange_s = 0, gather_s = 0, row_exchange_s = 0, scatter_s = 0;
  double skew_s = 0;  // with the skew probe on: time waiting for the slowest rank before each remote fetch
  double hit_rate() const { return remote_rows > 0 ? static_cast<double>(cache_hits) / static_cast<double>(remote_rows) : 0.0; }
};
// Field by field: an epoch's counts are the counters at its end less those at its start.
FeatureCounters operator-(const FeatureCounters& a, const FeatureCounters& b);

class FeatureStore {
 public:
  FeatureStore(const Shard& shard, const comm::Communicator& comm);

  // Collective: the setup before the first fetch.
  // - Takes config.fetch_chunk_bytes for this and every later fetch.
  // - With config.node_local, maps the shards of the other ranks on this node (see
  //   SamplerConfig::node_local), for this store's rows and for `sampler`'s draws
  //   (DistSampler::read_node_local_shards; pass the same sampler, or none, on every rank).
  // - Maps the pages of the feature rows read here in up front, where memory allows, so that no
  //   batch takes page faults (populate_rows).
  // - Fills the cache per `config` (policy and size) with rows owned on other nodes; kPresample
  //   draws config.presample_batches batches with `sampler` (epoch -1, so training epochs are
  //   untouched).
  void build_cache(const SamplerConfig& config, DistSampler* sampler);
  // After build_cache: how many other ranks' shards are read directly, and whether fetch() still
  // enters the row exchange (false when every other rank's shard is read directly, which every
  // rank agrees on).
  int node_local_peers() const noexcept { return mates_.peers(); }
  // Collective: reads the rows of the ranks that share this rank's entry of `node_of_rank` (one
  // per rank) from their shard files. build_cache does it with the job's real node layout; tests
  // pass others (pairs of ranks, say) before a build_cache with node_local off.
  void read_node_local_shards(const std::vector<int>& node_of_rank);
  bool exchanges_rows() const noexcept { return mates_.exchange; }
  // After build_cache: for each rank, the id of the node it runs on (Communicator::node_ids).
  const std::vector<int>& node_of_rank() const noexcept { return node_of_rank_; }

  // Collective: every rank calls it once per step. Writes the rows of `nodes` (global ids),
  // row-major, into `out` (resized to nodes.size() x feature_dim).
  void fetch(std::span<const NodeId> nodes, FeatureRows& out);

  // Collective likewise: the full-graph degree of each of `nodes` (owned ones and those of
  // node-mates' shards read here, the others asked of their owners in one exchange, skipped when
  // no rank needs it).
  void fetch_degrees(std::span<const NodeId> nodes, std::vector<std::int64_t>& out);
  // Collective likewise, read the same way: the label of each of `nodes` (-1 when unlabelled), for
  // seeds a rank trains but does not own (runtime rebalancing, class-balanced seed sampling).
  void fetch_labels(std::span<const NodeId> nodes, std::vector<std::int64_t>& out);

  std::int64_t feature_dim() const noexcept { return dim_; }
  std::int64_t cached_rows() const noexcept { return cached_; }
  const FeatureCounters& counters() const noexcept { return counters_; }
  FeatureCounters& counters() noexcept { return counters_; }
  // For the benchmark's raw-MPI replay: when on, the per-rank float counts of every row reply
  // this rank sent and received are kept, one entry per fetch.
  // Node-local reads are logged as `received` only (floats read from each rank's shard); the
  // benchmark learns `sent` from the owners.
  struct ReplyCounts {
    std::vector<std::int64_t> sent, received;
    bool node_local = false;
  };
  void record_replies(bool on) { record_ = on; }
  // For the benchmark: when on, each fetch() enters a barrier (timed as skew_s) before its remote
  // exchange, so the fetch's own time is not mixed with waiting for a rank that sampled longer.
  // It costs a collective per step; training leaves it off.
  void probe_skew(bool on) { probe_skew_ = on; }
  const std::vector<ReplyCounts>& reply_log() const noexcept { return reply_log_; }

 private:
  // Collective: the rows of `remote` (global ids owned elsewhere, grouped by owner, counts[r] of
  // them owned by rank r) from their owners, row k written to row dst_rows[k] of `dst`.
  void fetch_remote(std::span<const NodeId> remote, std::span<const std::int64_t> counts, float* dst, std::span<const std::int64_t> dst_rows);
  void fill_cache(std::vector<NodeId> chosen, std::uint64_t dense_index_bytes);
  // Maps the pages of the shards this rank reads rows from (its own, its node-mates') into the
  // process up front, within a memory budget; part of build_cache.
  void populate_rows(const std::vector<int>& node_of_rank) const;
  // Collective: one int64 per node, read here by `value(part, row in that part)` for this rank's
  // nodes and its node-mates', else asked of the owner.
  template <class Value>
  void fetch_values(std::span<const NodeId> nodes, std::vector<std::int64_t>& out, Value value);

  const Shard& shard_;
  const comm::Communicator& comm_;
  std::int64_t dim_;
  // Cached global id -> row in cache_: dense_slot_ (-1: not cached) over all nodes when
  // SamplerConfig::dense_index_bytes allows, else slot_.
  std::vector<std::int32_t> dense_slot_;
  boost::unordered_flat_map<NodeId, std::int64_t> slot_;
  std::int64_t cached_ = 0;
  std::vector<float> cache_;
  std::vector<float> send_rows_, recv_rows_;  // staging for remote rows, kept between fetches
  std::vector<std::uint32_t> local_at_, other_at_;  // positions of a fetch's owned and other rows, kept between fetches
  NodeMates<PartRows> mates_;                 // node-mates' features, labels and indptr, read here
  std::vector<int> node_of_rank_;             // from build_cache
  FeatureCounters counters_;
  std::uint64_t chunk_bytes_ = SamplerConfig{}.fetch_chunk_bytes;  // SamplerConfig::fetch_chunk_bytes, from build_cache
  bool record_ = false, probe_skew_ = false;
  std::vector<ReplyCounts> reply_log_;
};

}  // namespace shardgnn
