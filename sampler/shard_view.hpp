// The shards a rank reads directly: its own and, with node-local reads on, those of its
// node-local ranks (the other ranks on its node), mapped (the node's page cache holds each file
// once). Built once at start-up and shared by the DistSampler and the FeatureStore, so both see
// every part alike: readable here, or asked of its owner.
#pragma once

#include <functional>
#include <vector>

#include "comm/communicator.hpp"
#include "partition/shards.hpp"

namespace shardgnn {

class ShardView {
 public:
  // How a node-local rank's shard is mapped (tests substitute one that fails).
  using Load = std::function<Shard(const PartitionInfo&, PartId)>;

  // `own` alone, every other part asked of its owner; not collective. `own` must outlive the view.
  explicit ShardView(const Shard& own);
  // Collective on `comm`: with `node_local` (SamplerConfig::node_local), `own` plus the shards of
  // the node-local ranks (Communicator::node_ids), else `own` alone.
  ShardView(const Shard& own, const comm::Communicator& comm, bool node_local);
  // Collective on `comm`: the same for a given layout, node_of_rank[r] being rank r's node (tests
  // pass pairs of ranks, say). Mapping needs, on every rank, part `rank` of a partitioned dataset
  // of comm.size() parts as written, not merged (parts and ranks are then the same numbers), and
  // loaded with its PartitionInfo (Shard::info, through which the other parts are found); else
  // nothing is mapped. An optimisation only: a shard that cannot be mapped here (another view of
  // the file system, say) is left to its owner, with a warning on stderr. Each owner checked its
  // files at start-up.
  ShardView(const Shard& own, const comm::Communicator& comm, std::vector<int> node_of_rank, bool node_local = true, const Load& load = load_shard_rows);

  // The sampler and the store keep references to it: neither copied nor moved.
  ShardView(ShardView&&) = delete;
  ShardView& operator=(ShardView&&) = delete;
  ShardView(const ShardView&) = delete;
  ShardView& operator=(const ShardView&) = delete;

  const Shard& own() const noexcept { return *own_; }
  // The shard of `part` when it is read here (this rank's own or a node-local rank's), else
  // nullptr: its rows are asked of its owner.
  const Shard* readable(PartId part) const noexcept { return readable_[static_cast<std::size_t>(part)]; }
  // Whether node-local shards were mapped (some may have failed); the same on every rank.
  bool reads_node_local() const noexcept { return reads_node_local_; }
  // How many other ranks' shards are read here.
  int node_local_peers() const noexcept { return peers_; }
  // Whether any rank asks an owner for rows: false only when every rank reads every shard, which
  // every rank agrees on (the exchanges are then skipped).
  bool exchange() const noexcept { return exchange_; }
  // For each rank, the id of its node; empty for a view of `own` alone.
  const std::vector<int>& node_of_rank() const noexcept { return node_of_rank_; }

 private:
  const Shard* own_;
  std::vector<Shard> node_local_;         // per part: the mapped shards of node-local ranks, empty for the others
  std::vector<const Shard*> readable_;    // per part: own_, a node_local_ entry, or nullptr
  std::vector<int> node_of_rank_;
  int peers_ = 0;
  bool reads_node_local_ = false, exchange_ = true;
};

}  // namespace shardgnn
