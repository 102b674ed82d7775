// Quality metrics of a partitioning, as free functions (mt-KaHyPar style): edge cut,
// communication volume, halo (replication) factor, per-shard sizes and their imbalance, and the
// per-shard label distributions with their entropy and KL divergence from the global one: the
// heterogeneity the rebalancer later corrects.
#pragma once

#include <boost/json.hpp>
#include <cstdint>
#include <span>
#include <vector>

#include "datasets/dataset.hpp"
#include "partition/book.hpp"

namespace shardgnn {

struct ShardMetrics {
  std::int64_t nodes = 0, edges = 0;  // owned nodes; directed entries of their rows
  std::int64_t train = 0, val = 0, test = 0;
  std::int64_t halo = 0;              // distinct remote nodes the shard's edges reach
  std::int64_t cut_entries = 0;       // entries of its rows that point to another shard
  std::vector<std::int64_t> label_counts;  // per class, over labelled owned nodes
  double label_entropy = 0;           // bits
  double label_kl = 0;                // KL(shard || global), bits
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
  std::vector<ShardMetrics> shards;
};

PartitionMetrics compute_metrics(const Dataset& ds, std::span<const PartId> assignment, int parts);

boost::json::object metrics_to_json(const PartitionMetrics& m);
PartitionMetrics metrics_from_json(const boost::json::object& o, const std::string& file);

// Entropy (bits) of a count vector, and KL(p || q) in bits (q smoothed so it is never zero).
double entropy_bits(std::span<const std::int64_t> counts);
double kl_bits(std::span<const std::int64_t> p, std::span<const std::int64_t> q);

}  // namespace shardgnn
