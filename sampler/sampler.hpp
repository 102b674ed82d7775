// The distributed neighbour sampler (one instance per rank, SPMD): seed scheduling, multi-hop
// sampling where frontier nodes owned by other ranks are sampled by their owners in one batched
// exchange per hop, and the serial reference it is tested against.
#pragma once

#include <boost/unordered/unordered_flat_map.hpp>
#include <climits>
#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "comm/communicator.hpp"
#include "datasets/dataset.hpp"
#include "partition/node_types.hpp"
#include "partition/shards.hpp"
#include "sampler/config.hpp"
#include "sampler/minibatch.hpp"
#include "sampler/shard_view.hpp"

namespace shardgnn {

// Each relation's fanout at each hop (SamplerConfig::relation_fanouts, or fanouts[hop] for all);
// InputError when the configuration does not fit the schema.
std::vector<std::vector<int>> relation_fanouts_of(const SamplerConfig& config, const GraphSchema& schema);

// Per-rank work counters, kept for the rebalancer (and printed by the benchmark).
struct SamplerCounters {
  std::int64_t batches = 0, seeds = 0, sampled_edges = 0;
  std::int64_t local_rows_sampled = 0, remote_rows_sampled = 0;  // nodes whose neighbours were drawn here / by an owner for us
  std::int64_t node_local_rows_sampled = 0;                     // nodes owned by a node-local rank, drawn here from its shard
  std::int64_t rows_served = 0;                                 // rows this rank sampled for others
  std::int64_t bytes_sent = 0, bytes_received = 0;
  double sample_s = 0, exchange_s = 0;
};
// Field by field: an epoch's counts are the counters at its end less those at its start.
SamplerCounters operator-(const SamplerCounters& a, const SamplerCounters& b);

// This rank's seeds for one epoch, shuffled with a stream keyed by (seed, epoch, rank) and cut
// into batches. Pure, so tests and the serial reference reproduce it.
std::vector<std::vector<NodeId>> epoch_batches(std::span<const NodeId> seeds, int batch_size, std::uint64_t seed, std::int64_t epoch, int rank);

// Positions of the nodes of one batch: a dense table over a contiguous id range (the rank's own
// nodes) and a hash map for the rest. Internal to the samplers; here so DistSampler can keep its
// dense table between batches.
// One 64-bit slot per node of the range: the batch's stamp (high half) and the node's position
// (low half), so a lookup touches one cache line.
struct DenseRange {
  NodeId first = 0, count = 0;
  std::vector<std::uint64_t>* slots = nullptr;
  std::uint32_t current = 0;
};
class Compactor;  // numbers the nodes of a batch (sampler.cpp)

class DistSampler {
 public:
  // `shards` and `comm` must outlive the sampler; comm's collectives are this sampler's alone
  // (give it a dup()). Frontier rows of parts `shards` reads are drawn here from their shards,
  // the others by their owners through one exchange per hop (skipped when no rank needs it).
  DistSampler(const ShardView& shards, const comm::Communicator& comm, SamplerConfig config);

  // Collective. The number of steps every rank runs this epoch. By default: the largest batch
  // count over ranks, so uneven shards never leave a rank waiting in a collective another rank
  // skips; a rank that runs out of seeds runs empty steps (every seed once per epoch, so the
  // sample-weighted gradient stays unbiased). With a schedule installed for the epoch (below),
  // its step count.
  std::int64_t steps_in_epoch(std::int64_t epoch) const;
  // This rank's seeds at `step` of `epoch` (empty once its seeds are used up).
  std::vector<NodeId> seeds_for(std::int64_t epoch, std::int64_t step) const;
  // This rank's own training seeds in the epoch's shuffled order (keyed by seed, epoch, rank).
  std::vector<NodeId> shuffled_seeds(std::int64_t epoch) const;

  // Installs this rank's schedule for `epoch`: `seeds` (any global ids, owned here or not; the
  // config's remote_seeds must then be on) cut in order into `steps` batches of `batch` seeds
  // (the last ones may be short or empty). Not collective, but every rank must install one with
  // the same `steps` (what plan_seeds guarantees). A later epoch's schedule replaces it.
  void set_schedule(std::int64_t epoch, std::vector<NodeId> seeds, std::int64_t batch, std::int64_t steps);
  // The same with each seed's label (aligned with `seeds`): batches of this schedule then take
  // their labels from it instead of fetching them from the owners, a collective per batch. Every
  // rank installs its schedule for an epoch with labels or every rank without.
  void set_schedule(std::int64_t epoch, std::vector<NodeId> seeds, std::vector<std::int64_t> labels, std::int64_t batch, std::int64_t steps);
  // The labels of this rank's seeds at `step` of `epoch`, when its installed schedule carries
  // them (false otherwise: they must be fetched).
  bool schedule_labels(std::int64_t epoch, std::int64_t step, std::vector<std::int64_t>& out) const;

  // Collective. An evaluation schedule: `seeds` (global ids owned by this rank, e.g. the
  // validation set) cut in their given order into batches of config().batch_size, then padded
  // with empty batches up to the largest batch count over ranks, so every rank runs as many
  // sample() calls (sample() takes empty seed lists). No shuffle and no wrap-around: each seed is
  // in exactly one batch.
  std::vector<std::vector<NodeId>> eval_batches(std::span<const NodeId> seeds) const;

  // Collective: every rank calls it once per step, in the same order. Samples the multi-hop
  // neighbourhood of `seeds` (global ids owned by this rank) and returns the blocks and layer
  // node lists; features and labels are left to the FeatureStore.
  MiniBatch sample(std::span<const NodeId> seeds, std::int64_t epoch, std::int64_t step);

  // Hooks a benchmark installs (none by default), called on every rank alike.
  struct Observer {
    std::function<void()> before_batch;  // at the start of each sample(), before its timers: may enter a collective on comm()
  };
  void observe(Observer observer) { observer_ = std::move(observer); }

  const SamplerConfig& config() const noexcept { return config_; }
  const SamplerCounters& counters() const noexcept { return counters_; }
  SamplerCounters& counters() noexcept { return counters_; }
  const Shard& shard() const noexcept { return shard_; }
  const ShardView& shards() const noexcept { return shards_; }
  const comm::Communicator& comm() const noexcept { return comm_; }

 private:
  // The frontier rows of one hop drawn here from one readable part's shard: its local rows, in
  // frontier order, and what was drawn, with an indptr over it.
  struct Drawn {
    std::vector<NodeId> rows, picked;
    std::vector<std::int64_t> ends;
    std::vector<std::int32_t> relations;  // each pick's, on a graph with relation ids
  };
  // One hop's routing of the frontier: each node's owner, the rows of readable parts (drawn_),
  // and the requests for the other owners, grouped by owner.
  void route_frontier(std::span<const NodeId> frontier);
  // Draws the rows the other ranks asked of this one and lays out the reply: to each asker the
  // neighbour count of each of its nodes, in request order, then their neighbours, then (on a
  // graph with relation ids) each neighbour's relation.
  void serve_requests(const comm::AlltoallvResult<NodeId>& incoming, int hop, std::uint64_t key);
  // Draws the rows of the readable parts from their shards, exactly as their owners would.
  void draw_readable(int hop, std::uint64_t key);
  // Draws `rows` (local ids of shard `s`) at `hop`: the hop's fanout, or on a typed graph each
  // relation's (sample_typed_rows_of; with relation ids sample_relation_rows_of, each pick's
  // relation into `relations`).
  void draw_rows(const Shard& s, std::span<const NodeId> rows, int hop, std::uint64_t key, std::vector<NodeId>& out, std::vector<std::int64_t>& ends,
                 std::vector<std::int32_t>& relations);
  // The hop's block, in frontier order: rows drawn here from drawn_, the others from `answers`.
  Block assemble_block(std::size_t n, const comm::AlltoallvResult<NodeId>& answers, Compactor& compactor);
  // The hop's exchange of `send` (requests or replies), timed; nothing when no rank exchanges.
  comm::AlltoallvResult<NodeId> exchange(std::span<const NodeId> send, std::span<const std::int64_t> counts);

  const ShardView& shards_;
  const Shard& shard_;
  const comm::Communicator& comm_;
  SamplerConfig config_;
  // A typed graph's node types and, per hop, each relation's fanout; untyped otherwise.
  NodeTypeIndex types_;
  std::vector<std::vector<int>> relation_fanouts_;
  std::vector<std::vector<std::int64_t>> groups_;
  std::vector<NodeId> train_;  // this rank's training seeds
  SamplerCounters counters_;
  Observer observer_;
  // Per node (every node when config_.dense_index_bytes allows, else the owned ones): its position in the
  // current batch's node list, valid when its stamp is the batch's. The others go through
  // remote_pos_.
  std::vector<std::uint64_t> local_slots_;
  std::uint32_t stamp_ = 0;
  boost::unordered_flat_map<NodeId, std::int64_t> remote_pos_;  // positions of the batch's nodes owned elsewhere
  // Per-hop buffers, kept between batches so their pages stay mapped (this rank's own picked rows
  // are handed to the block when every row of a hop is owned here, and grow anew).
  std::vector<PartId> owner_;       // per frontier node
  std::vector<Drawn> drawn_;        // per part, used for the readable ones
  std::vector<NodeId> requests_, serve_rows_, served_, reply_;
  std::vector<std::int32_t> served_relations_;
  bool relation_ids_ = false;  // the graph stores a relation per edge: replies carry them
  std::vector<std::int64_t> send_counts_, reply_counts_, served_ends_, scratch_;
  mutable std::int64_t batches_epoch_ = INT64_MIN;  // none yet (-1 is a real epoch: presampling)
  mutable std::vector<std::vector<NodeId>> batches_;  // epoch_batches of batches_epoch_, computed on first use
  struct Schedule {
    std::int64_t epoch = INT64_MIN, batch = 0, steps = 0;
    std::vector<NodeId> seeds;
    bool with_labels = false;
    std::vector<std::int64_t> labels;  // aligned with seeds, when with_labels
  } schedule_;  // an installed schedule (set_schedule, called by SeedScheduler)
};

// The serial reference: the same sampling on the unpartitioned dataset (ids are the dataset's),
// with the same keyed random streams. One rank's DistSampler reproduces it exactly. A typed
// dataset is sampled per relation, as DistSampler samples a typed partition.
MiniBatch reference_sample(const Dataset& ds, const SamplerConfig& config, std::span<const NodeId> seeds, std::int64_t epoch, std::int64_t step);

}  // namespace shardgnn
