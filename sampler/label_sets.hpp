// The label sets of a multi-label partition's nodes, for the targets of batches whose seeds any
// rank may own (class-balanced or rebalanced seeds): every part's label_bits.npy is mapped
// read-only (the partitioned folder is on a filesystem every rank sees, as checkpoints need), so
// a seed's set is read where it is needed instead of asked of its owner. The sets take C/8 bytes
// a node: 9 MB for Yelp's 717k nodes and 100 labels.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "datasets/array.hpp"
#include "partition/shards.hpp"

namespace shardgnn {

class LabelSets {
 public:
  LabelSets() = default;  // a single-label shard: none
  // A multi-label shard of a partition (its PartitionInfo), or a dataset folder's one shard.
  explicit LabelSets(const Shard& shard);

  bool empty() const noexcept { return words_ == 0; }
  // int64 words a node's set takes: label c is bit c % 64 of word c / 64.
  std::int64_t words() const noexcept { return words_; }
  // The sets of `nodes` (global ids), words() per node, into `out`.
  void fetch(std::span<const NodeId> nodes, std::vector<std::int64_t>& out) const;

 private:
  std::vector<NodeId> first_;              // each part's first id, then the node count
  std::vector<Array<std::uint8_t>> bits_;  // each part's label_bits rows
  std::int64_t row_bytes_ = 0, words_ = 0;
};

}  // namespace shardgnn
