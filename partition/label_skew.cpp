// Label-skewed partitions for benchmarking what heterogeneous shards do to training (Deshmukh et
// al. 2023, "Entropy Aware Training for Fast and Accurate Distributed GNN"): every node's place in
// the order (label, a seeded hash of its id), unlabelled nodes last, cut into `parts` runs of
// equal size. With K parts
// and C classes a shard holds about max(1, C / K) classes, the extreme of the skew that METIS
// partitions of graphs whose communities follow labels show in part.
#include <algorithm>
#include <numeric>

#include "datasets/random.hpp"
#include "partition/methods.hpp"

namespace shardgnn {

namespace {
constexpr std::uint64_t kLabelOrderStream = 0x4c41424c;  // "LABL": a derive_seed stream of its own
}  // namespace

std::vector<PartId> LabelPartitioner::run(const Dataset& ds, const PartitionConfig& cfg) const {
  const NodeId n = ds.num_nodes();
  std::vector<NodeId> order(static_cast<std::size_t>(n));
  std::iota(order.begin(), order.end(), NodeId{0});
  // Unlabelled (-1) nodes sort last, so they fill the last runs rather than lead the first. Inside
  // a class the order is a hash, not the id: splits are often id ranges (Planetoid's training
  // nodes come first), and a class cut between two shards must leave each shard its share of
  // every split.
  const std::uint64_t salt = derive_seed(cfg.seed, kLabelOrderStream);
  std::vector<std::pair<std::int64_t, std::uint64_t>> key(static_cast<std::size_t>(n));  // each node's hashed once, not per comparison
  for (NodeId v = 0; v < n; ++v) {
    // A multi-label node sorts by its lowest label.
    std::int64_t l = ds.num_classes;
    for_each_label(ds, v, [&](std::int64_t c) { l = std::min(l, c); });
    key[static_cast<std::size_t>(v)] = {l, derive_seed(salt, static_cast<std::uint64_t>(v))};
  }
  std::sort(order.begin(), order.end(), [&](NodeId a, NodeId b) { return key[static_cast<std::size_t>(a)] < key[static_cast<std::size_t>(b)]; });
  std::vector<PartId> part(static_cast<std::size_t>(n));
  for (NodeId i = 0; i < n; ++i) part[static_cast<std::size_t>(order[static_cast<std::size_t>(i)])] = static_cast<PartId>(i * cfg.parts / n);
  return part;
}

}  // namespace shardgnn
