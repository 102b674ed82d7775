// The distributed neighbour sampler (one instance per rank, SPMD): seed scheduling, multi-hop
// sampling where frontier nodes owned by other ranks are sampled by their owners in one batched
// exchange per hop, and the serial reference it is tested against.
#pragma once

#include <boost/unordered/unordered_flat_map.hpp>
#include <climits>
#include <cstdint>
#include <span>
#include <vector>

#include "comm/communicator.hpp"
#include "datasets/dataset.hpp"
#include "partition/shards.hpp"
#include "sampler/config.hpp"
#include "sampler/minibatch.hpp"
#include "sampler/node_local.hpp"
#include "sampler/rebalance.hpp"

namespace shardgnn {

// Per-rank work counters, kept for the rebalancer (and printed by the benchmark).
struct SamplerCounters {
  std::int64_t batches = 0, seeds = 0, sampled_edges = 0;
  std::int64_t local_rows_sampled = 0, remote_rows_sampled = 0;  // nodes whose neighbours were drawn here / by an owner for us
  std::int64_t node_local_rows_sampled = 0;                     // nodes owned by a rank on this node, drawn here from its shard
  std::int64_t rows_served = 0;                                 // rows this rank sampled for others
  std::int64_t bytes_sent = 0, bytes_received = 0;
  double sample_s = 0, exchange_s = 0;
  double skew_s = 0;  // with the skew probe on: time waiting for the slowest rank before each batch
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

class DistSampler {
 public:
  // `comm` must outlive the sampler; its collectives are this sampler's alone (give it a dup()).
  DistSampler(const Shard& shard, const comm::Communicator& comm, SamplerConfig config);

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

  // Collective: the rows of frontier nodes owned by a rank sharing this rank's entry of
  // `node_of_rank` (one per rank) are drawn here from that rank's shard files (its CSR and ids,
  // mapped; the node's page cache holds them once) instead of by the owner through the hop's
  // exchange. The draw is keyed by the node, so the blocks are the same either way. When every
  // rank reads every other's shard, the hop exchanges are skipped (all ranks agree). Shards that
  // cannot be mapped stay with the exchange. FeatureStore::build_cache calls it with the job's
  // node layout when SamplerConfig::node_local is on.
  void read_node_local_shards(const std::vector<int>& node_of_rank);
  int node_local_peers() const noexcept { return mates_.peers(); }
  bool exchanges_rows() const noexcept { return mates_.exchange; }

  // Benchmarks only: a timed barrier at the start of each batch, so that waiting for a rank
  // still busy with its previous batch (its feature fetch, say) is counted as skew, not as the
  // first hop's exchange. Collective when on; every rank must set it alike. Training never does.
  void probe_skew(bool on) { probe_skew_ = on; }

  const SamplerConfig& config() const noexcept { return config_; }
  const SamplerCounters& counters() const noexcept { return counters_; }
  SamplerCounters& counters() noexcept { return counters_; }
  const Shard& shard() const noexcept { return shard_; }
  const comm::Communicator& comm() const noexcept { return comm_; }

 private:
  const Shard& shard_;
  const comm::Communicator& comm_;
  SamplerConfig config_;
  std::vector<NodeId> train_;  // this rank's training seeds
  SamplerCounters counters_;
  bool probe_skew_ = false;
  // Per node (every node when config_.dense_index_bytes allows, else the owned ones): its position in the
  // current batch's node list, valid when its stamp is the batch's. The others go through
  // remote_pos_.
  std::vector<std::uint64_t> local_slots_;
  std::uint32_t stamp_ = 0;
  boost::unordered_flat_map<NodeId, std::int64_t> remote_pos_;  // positions of the batch's nodes owned elsewhere
  // Per-hop buffers, kept between batches so their pages stay mapped (picked_ is handed to the
  // block when every row of a hop is owned here, and grows anew).
  std::vector<NodeId> local_rows_, serve_rows_, picked_, reply_;
  // Same-node shards (their CSR and ids) and, per rank, per-hop buffers for their rows: the rows
  // asked of each, what was drawn, an indptr over it.
  NodeMates<PartGraph> mates_;
  std::vector<std::vector<NodeId>> near_rows_, near_picked_;
  std::vector<std::vector<std::int64_t>> near_ends_;
  std::vector<std::int64_t> ends_, scratch_;  // ends_: an indptr over picked_
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
// with the same keyed random streams. One rank's DistSampler reproduces it exactly.
MiniBatch reference_sample(const Dataset& ds, const SamplerConfig& config, std::span<const NodeId> seeds, std::int64_t epoch, std::int64_t step);

}  // namespace shardgnn
