// Node-local reads (SamplerConfig::node_local): which other ranks' shards a rank maps and reads
// directly, shared by the sampler (their CSR) and the feature store (their features).
#pragma once

#include <exception>
#include <vector>

#include "partition/shards.hpp"

namespace shardgnn {

// For each rank: 1 when it shares this rank's entry of `node_of_rank` and `load(info, r)` mapped
// its shard's arrays into mapped[r]. An optimisation only: a shard that cannot be mapped here
// (another view of the file system, say) is left to the exchange, so failures are not errors.
// Each owner checked its own files' checksums at start-up.
template <class T, class Load>
std::vector<char> map_node_mates(const Shard& shard, int rank, const std::vector<int>& node_of_rank, std::vector<T>& mapped, Load load) {
  const std::size_t P = node_of_rank.size();
  std::vector<char> near(P, 0);
  mapped.clear();
  mapped.resize(P);
  if (shard.dir.empty()) return near;
  try {
    const PartitionInfo info = load_partition_info(shard.dir);
    for (std::size_t r = 0; r < P; ++r) {
      if (static_cast<PartId>(r) == shard.part || node_of_rank[r] != node_of_rank[static_cast<std::size_t>(rank)]) continue;
      try {
        mapped[r] = load(info, static_cast<PartId>(r));
        near[r] = 1;
      } catch (const std::exception&) {
      }
    }
  } catch (const std::exception&) {
  }
  return near;
}

}  // namespace shardgnn
