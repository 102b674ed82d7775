// Link prediction's training batches (train --task link): a batch is a set of training edges with
// negatives drawn for each, whose endpoints are the seeds the distributed sampler expands. Pure
// functions of the shard and the keys, so a resumed run draws the same batches and the serial
// reference reproduces them; no torch, no MPI.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "partition/shards.hpp"
#include "sampler/minibatch.hpp"

namespace shardgnn {

struct PairBatch {
  std::vector<NodeId> seeds;         // the batch's distinct endpoints (global ids), positives' first
  // Per example, 3 entries: the positions in `seeds` of its two endpoints and its target (1: a
  // training edge, 0: a negative). What MiniBatch::targets carries for the task (PairTargets).
  std::vector<std::int64_t> pairs;
  std::vector<NodeId> positives;     // the batch's training edges (u, v) as global ids, flattened
};

class LinkSchedule {
 public:
  // This rank's training edges: the entries (u, v) of its shard's rows with u < v (global ids),
  // repeated entries once, so that every undirected edge of the training graph is one rank's.
  LinkSchedule(const Shard& shard, int batch, int negatives, std::uint64_t seed);

  struct Edge {
    NodeId u, v;
  };
  std::int64_t edges() const noexcept { return static_cast<std::int64_t>(src_.size()); }
  int batch_size() const noexcept { return batch_; }
  // This rank's steps in `epoch`: an installed schedule's, else its own edges' batches (the last
  // may be short).
  std::int64_t steps(std::int64_t epoch) const noexcept {
    return installed_epoch_ == epoch ? installed_steps_ : (edges() + batch_ - 1) / batch_;
  }
  // This rank's own edges in `epoch`'s order.
  std::vector<Edge> shuffled(std::int64_t epoch, int rank) const;
  // The edges this rank trains in `epoch` instead of its own (rebalanced, SeedScheduler), cut in
  // order into `steps` batches of `batch`.
  void install(std::int64_t epoch, std::vector<Edge> edges, std::int64_t batch, std::int64_t steps);
  // Step `step` of `epoch` (empty once this rank's edges are used up): the edges in the epoch's
  // order (a shuffle keyed by seed, epoch and rank), each with `negatives` corrupted destinations
  // (u, w), w uniform over every node, from a stream keyed by (seed, epoch, u, v): an edge's
  // negatives depend neither on its batch nor on the rank that trains it. Not thread-safe (it
  // keeps the epoch's order); the producer thread alone calls it.
  PairBatch batch(std::int64_t epoch, std::int64_t step, int rank) const;

 private:
  std::vector<NodeId> src_, dst_;
  int batch_, negatives_;
  std::uint64_t seed_;
  NodeId num_nodes_;
  mutable std::int64_t order_epoch_ = -2;  // none yet
  mutable std::vector<std::int64_t> order_;
  std::int64_t installed_epoch_ = -2, installed_batch_ = 0, installed_steps_ = 0;
  std::vector<Edge> installed_;
};

// Removes from the batch's blocks every sampled edge joining the two ends of a positive, in
// either direction (DGL's exclude="reverse_id"), so that message passing never sees the edges
// the batch is scored on. `positives`: (u, v) global ids, flattened.
void exclude_positives(MiniBatch& mb, std::span<const NodeId> positives);

}  // namespace shardgnn
