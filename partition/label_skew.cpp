// Label-skewed partitions for benchmarking what heterogeneous shards do to training (Deshmukh et
// al. 2023, "Entropy Aware Training for Fast and Accurate Distributed GNN"): every node's place in
// the order (label, id), unlabelled nodes last, cut into `parts` runs of equal size. With K parts
// and C classes a shard holds about max(1, C / K) classes, the extreme of the skew that METIS
// partitions of graphs whose communities follow labels show in part.
#include <algorithm>
#include <numeric>

#include "partition/methods.hpp"

namespace shardgnn {

std::vector<PartId> LabelPartitioner::run(const Dataset& ds, const PartitionConfig& cfg) const {
  const NodeId n = ds.num_nodes();
  std::vector<NodeId> order(static_cast<std::size_t>(n));
  std::iota(order.begin(), order.end(), NodeId{0});
  // Unlabelled (-1) nodes sort last, so they fill the last runs rather than lead the first.
  const auto key = [&ds](NodeId v) { const std::int64_t l = ds.labels[static_cast<std::size_t>(v)]; return l < 0 ? ds.num_classes : l; };
  std::stable_sort(order.begin(), order.end(), [&](NodeId a, NodeId b) { return key(a) < key(b); });
  std::vector<PartId> part(static_cast<std::size_t>(n));
  for (NodeId i = 0; i < n; ++i) part[static_cast<std::size_t>(order[static_cast<std::size_t>(i)])] = static_cast<PartId>(i * cfg.parts / n);
  return part;
}

}  // namespace shardgnn
