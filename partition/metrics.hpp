// Quality metrics of a partitioning, as free functions (mt-KaHyPar style): edge cut,
// communication volume, halo (replication) factor, per-shard sizes and their imbalance, and the
// per-shard label distributions with their entropy and KL divergence from the global one: the
// heterogeneity the rebalancer later corrects. When the dataset has a training split, also each
// shard's expected sampling cost under the cost model of partition/cost.hpp.
#pragma once

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
  std::int64_t edge_cut = 0;       // distinct undirected pairs {u, v}, u != v, across shards
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

// The cost metrics use cfg's cost model (cost_fanouts, cost_remote_weight) and the remote fetches
// under `assignment` itself, so every method is measured the same way.
PartitionMetrics compute_metrics(const Dataset& ds, std::span<const PartId> assignment, const PartitionConfig& cfg);
// The same with cfg.parts = parts and the default cost model.
PartitionMetrics compute_metrics(const Dataset& ds, std::span<const PartId> assignment, int parts);

boost::json::object metrics_to_json(const PartitionMetrics& m);
PartitionMetrics metrics_from_json(const boost::json::object& o, const std::string& file);

// Entropy (bits) of a count vector, and KL(p || q) in bits (q smoothed so it is never zero).
double entropy_bits(std::span<const std::int64_t> counts);
double kl_bits(std::span<const std::int64_t> p, std::span<const std::int64_t> q);

}  // namespace shardgnn
