// Quality metrics of a partitioning, as free functions (mt-KaHyPar style): edge cut,
// communication volume, halo (replication) factor, per-shard sizes and their imbalance, and the
// per-shard label distributions with their entropy and KL divergence from the global one: the
// heterogeneity the rebalancer later corrects. When the dataset has a training split, also each
// shard's expected sampling cost under the cost model of partition/cost.hpp.
#pragma once

#include <algorithm>
#include <bit>
#include <boost/json.hpp>
#include <cstdint>
#include <span>
#include <vector>

#include "datasets/dataset.hpp"
#include "partition/book.hpp"
#include "partition/config.hpp"

namespace shardgnn {

struct ShardMetrics {
  std::int64_t nodes = 0, edges = 0;  // owned nodes; directed entries of their rows
  std::int64_t train = 0, val = 0, test = 0;
  std::int64_t halo = 0;              // distinct remote nodes the shard's edges reach
  std::int64_t cut_entries = 0;       // entries of its rows that point to another shard
  std::vector<std::int64_t> label_counts;  // per class, over labelled owned nodes
  double label_entropy = 0;           // bits
  double label_kl = 0;                // KL(shard || global), bits
  std::int64_t cost = 0;              // sum of its training nodes' cost weights (node_cost_weights under the final assignment)
};

struct Imbalance {
  double max = 0, mean = 0;
  double ratio() const { return mean > 0 ? max / mean : 0; }  // max / mean; 1 = perfect
};

struct PartitionMetrics {
  int parts = 0;
  std::int64_t edge_cut = 0;       // distinct undirected pairs {u, v}, u != v, across shards (with relation ids, one per relation joining them)
  std::int64_t comm_volume = 0;    // sum over nodes of the number of other shards among its neighbours
  double halo_factor = 1;          // (owned + halo nodes over all shards) / nodes
  double global_label_entropy = 0; // bits
  double mean_label_entropy = 0;   // node-weighted mean over shards
  double max_label_kl = 0;
  Imbalance nodes, edges, train, val, test;
  // Expected cost (partition/cost.hpp), present when the dataset has a training split (and in
  // partition.json files written since the cost model; older ones read back with has_cost false).
  bool has_cost = false;
  Imbalance cost;
  std::vector<int> cost_fanouts;
  double cost_remote_weight = 0;
  std::vector<ShardMetrics> shards;
};

// What a walk over one shard's rows finds: entries pointing to other shards, the cut pairs it
// counts (each pair is counted by exactly one shard), the other shards its nodes' neighbours lie
// in (summed: the communication volume) and its halo. compute_metrics walks the rows for it; the
// shard writer fills it in the pass over the rows it makes anyway.
struct ShardTally {
  std::int64_t cut_entries = 0, edge_cut = 0, comm_volume = 0, halo = 0;
  // On a graph recorded symmetric and free of repeated entries, every cut pair is two cut
  // entries, one in each end's shard: edge_cut is then left 0 and the total is half the cut
  // entries of all shards.
  bool pairs_from_entries = false;
};

// Tallies shard k's rows: begin_row(u), then entry(v, owner of v) for each entry of u's dataset
// row in its order, then end_row(); or, where the caller has counted the row's entries per part,
// counted_row (when counts_rows()). The halo is the caller's to count. On a graph recorded
// symmetric with K <= 64 the per-entry path is branch-free (the other shards form a bit mask,
// every count adds a flag: for a random partition most entries are cut, so branches on it miss).
// Cut pairs: on a graph recorded symmetric without repeated entries, from the cut entries
// (ShardTally::pairs_from_entries); on one with repeats, each from its smaller end, once; on one
// not known symmetric, from its smaller end, or from its larger end when the smaller end's row
// does not list it. Otherwise it keeps a list of the row's other shards. On a graph with relation
// ids each entry is an edge of its own (a multigraph: the same pair under two relations is two
// edges), and a row's neighbours are sorted only within each relation's run.
class RowTally {
 public:
  RowTally(const Dataset& ds, PartId k, int parts)
      : graph_(ds.graph), relations_(ds.schema.relation_ids() ? &ds.edge_relations : nullptr), symmetric_(ds.cleaning.symmetric),
        mask_(ds.cleaning.symmetric && parts <= 64), k_(k) {
    tally.pairs_from_entries = ds.cleaning.symmetric && ds.cleaning.no_duplicates;
  }

  // Whether counted_row may stand for a row's entry() calls.
  bool counts_rows() const noexcept { return tally.pairs_from_entries; }
  // A whole row of `degree` entries, of which count_by_part[p] are owned by part p (all parts,
  // in order). Precondition: counts_rows(); no begin_row/end_row around it.
  void counted_row(std::span<const std::int64_t> count_by_part, std::size_t degree) noexcept {
    tally.cut_entries += static_cast<std::int64_t>(degree) - count_by_part[static_cast<std::size_t>(k_)];
    std::int64_t others = 0;
    for (std::size_t p = 0; p < count_by_part.size(); ++p) others += static_cast<std::int64_t>(count_by_part[p] > 0);
    tally.comm_volume += others - static_cast<std::int64_t>(count_by_part[static_cast<std::size_t>(k_)] > 0);
  }

  void begin_row(NodeId u) noexcept {
    u_ = u;
    prev_ = -1;
    seen_ = 0;
    seen_parts_.clear();
  }
  void entry(NodeId v, PartId pv) {
    const NodeId prev = prev_;
    prev_ = v;
    if (mask_) {
      const std::uint64_t cut = pv != k_;
      tally.cut_entries += static_cast<std::int64_t>(cut);
      seen_ |= cut << pv;
      if (!tally.pairs_from_entries)
        tally.edge_cut += static_cast<std::int64_t>(cut & static_cast<std::uint64_t>(u_ < v) & static_cast<std::uint64_t>(v != prev || relations_ != nullptr));
      return;
    }
    if (pv == k_) return;
    tally.cut_entries += 1;
    if (std::find(seen_parts_.begin(), seen_parts_.end(), pv) == seen_parts_.end()) seen_parts_.push_back(pv);
    if (tally.pairs_from_entries || (v == prev && relations_ == nullptr)) return;  // a repeated entry: its pair is counted once
    if (u_ < v) {
      tally.edge_cut += 1;
    } else if (!symmetric_) {
      if (!has_entry(v, u_)) tally.edge_cut += 1;
    }
  }
  void end_row() noexcept { tally.comm_volume += mask_ ? std::popcount(seen_) : static_cast<std::int64_t>(seen_parts_.size()); }

  ShardTally tally;

 private:
  // Whether row v lists u: a binary search per relation run where rows have relation ids.
  bool has_entry(NodeId v, NodeId u) const {
    if (relations_ == nullptr) return graph_.has_edge(v, u);
    const EdgeId end = graph_.indptr()[v + 1];
    return graph_.visit([&](const auto& g) {
      const auto* ids = g.indices().data();
      return relations_->visit([&](auto rel) {
        for (EdgeId e = graph_.indptr()[v]; e < end;) {
          const EdgeId run_end = std::upper_bound(rel.begin() + e, rel.begin() + end, rel[static_cast<std::size_t>(e)]) - rel.begin();
          if (std::binary_search(ids + e, ids + run_end, u)) return true;
          e = run_end;
        }
        return false;
      });
    });
  }

  const CsrGraph& graph_;
  const IntArray* relations_;  // the dataset's relation ids, when it has them
  bool symmetric_, mask_;
  PartId k_;
  NodeId u_ = -1, prev_ = -1;
  std::uint64_t seen_ = 0;
  std::vector<PartId> seen_parts_;
};

// The metrics from each shard's tally (tallies[k] for part k): sizes, splits, labels, halo
// factor, imbalances and the cost model are counted here from the assignment.
PartitionMetrics metrics_from_tallies(const Dataset& ds, std::span<const PartId> assignment, const PartitionConfig& cfg,
                                      std::span<const ShardTally> tallies);

// The cost metrics use cfg's cost model (cost_fanouts, cost_remote_weight) and the remote fetches
// under `assignment` itself, so every method is measured the same way.
PartitionMetrics compute_metrics(const Dataset& ds, std::span<const PartId> assignment, const PartitionConfig& cfg);
// The same with cfg.parts = parts and the default cost model.
PartitionMetrics compute_metrics(const Dataset& ds, std::span<const PartId> assignment, int parts);

// partition.json's "metrics" object. Reading throws InputError without the file ("key 'edge_cut':
// ..."), for the file's reader to add it; files from before the cost model read back with has_cost false.
boost::json::object metrics_to_json(const PartitionMetrics& m);
void tag_invoke(boost::json::value_from_tag, boost::json::value& v, const PartitionMetrics& m);
PartitionMetrics tag_invoke(boost::json::value_to_tag<PartitionMetrics>, const boost::json::value& v);

// Entropy (bits) of a count vector, and KL(p || q) in bits (q smoothed so it is never zero).
double entropy_bits(std::span<const std::int64_t> counts);
double kl_bits(std::span<const std::int64_t> p, std::span<const std::int64_t> q);

}  // namespace shardgnn
