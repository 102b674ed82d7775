// Node-local reads (SamplerConfig::node_local): which other ranks' shards a rank maps and reads
// directly, shared by the sampler (their CSR) and the feature store (their features).
#pragma once

#include <algorithm>
#include <exception>
#include <iostream>
#include <string>
#include <vector>

#include "comm/communicator.hpp"
#include "partition/shards.hpp"

namespace shardgnn {

// Collective on `comm`. For each rank: 1 when it shares this rank's entry of `node_of_rank` and
// `load(info, r)` mapped its shard's arrays into mapped[r]. Empty on every rank unless, on every
// rank, the shard is part `rank` of a partitioned dataset of comm.size() parts (parts and ranks
// are then the same numbers) and node_of_rank has an entry per rank. An optimisation only: a
// shard that cannot be mapped here (another view of the file system, say) is left to the
// exchange, with a warning on stderr. Each owner checked its own files' checksums at start-up.
template <class T, class Load>
std::vector<char> map_node_mates(const Shard& shard, const comm::Communicator& comm, const std::vector<int>& node_of_rank, std::vector<T>& mapped, Load load) {
  const auto P = static_cast<std::size_t>(comm.size());
  mapped.clear();
  if (!comm.all(!shard.dir.empty() && shard.book.parts() == comm.size() && shard.part == comm.rank() && node_of_rank.size() == P)) return {};
  std::vector<char> near(P, 0);
  mapped.resize(P);
  auto warn = [&](const std::string& what) {
    std::cerr << "shardgnn: warning: rank " << comm.rank() << ": " << what << "; those rows go over MPI\n";
  };
  try {
    const PartitionInfo info = load_partition_info(shard.dir);
    for (std::size_t r = 0; r < P; ++r) {
      if (static_cast<PartId>(r) == shard.part || node_of_rank[r] != node_of_rank[static_cast<std::size_t>(comm.rank())]) continue;
      try {
        mapped[r] = load(info, static_cast<PartId>(r));
        near[r] = 1;
      } catch (const std::exception& e) {
        warn("cannot map the shard of rank " + std::to_string(r) + " on this node (" + e.what() + ")");
      }
    }
  } catch (const std::exception& e) {
    warn(std::string("cannot read the shards of the ranks on this node (") + e.what() + ")");
  }
  return near;
}

// The node-mates a sampler or feature store reads directly: their mapped shard arrays (T per
// rank), which ranks those are, and whether the exchange is still needed, which every rank
// decides alike. Default: nothing mapped, exchange on.
template <class T>
struct NodeMates {
  std::vector<T> shards;  // per rank: its arrays, for the ranks marked in `mapped`
  std::vector<char> mapped;  // per rank: read directly; empty unless mapping was tried (on every rank alike)
  bool exchange = true;      // false only when every rank reads every other rank's shard

  bool tried() const noexcept { return !mapped.empty(); }
  bool near(PartId r) const noexcept { return !mapped.empty() && mapped[static_cast<std::size_t>(r)] != 0; }
  int peers() const noexcept { return static_cast<int>(std::count(mapped.begin(), mapped.end(), 1)); }
  // Collective on `comm`: maps with map_node_mates and decides `exchange`.
  template <class Load>
  void map(const Shard& shard, const comm::Communicator& comm, const std::vector<int>& node_of_rank, Load load) {
    mapped = map_node_mates(shard, comm, node_of_rank, shards, load);
    exchange = mapped.empty() || !comm.all(peers() == comm.size() - 1);
  }
};

}  // namespace shardgnn
