// The node type of any global id of a typed graph, partitioned or not: its part by the range
// partition book, then its type by the part's type runs (each part holds its nodes of each type as
// one run, in type order: PartEntry::type_nodes). Two binary searches, no per-node array.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "datasets/schema.hpp"
#include "partition/book.hpp"

namespace shardgnn {

struct Shard;

class NodeTypeIndex {
 public:
  NodeTypeIndex() = default;
  // type_nodes[k][t]: part k's nodes of type t (they sum to the part's size).
  NodeTypeIndex(const PartitionBook& book, const std::vector<std::vector<std::int64_t>>& type_nodes);
  // A shard's graph: every part's runs from its PartitionInfo, or, for a shard of a whole dataset
  // (shard_from_dataset: one part), its own. Untyped (typed() false) for a graph of one node type.
  static NodeTypeIndex of(const Shard& s);

  bool typed() const noexcept { return types_ > 0; }
  int num_types() const noexcept { return types_; }
  int operator()(NodeId v) const noexcept { return locate(v).second; }
  // v's part and type.
  std::pair<PartId, int> locate(NodeId v) const noexcept;
  // The first global id of part k's run of type t.
  NodeId run_begin(PartId k, int t) const noexcept {
    return t == 0 ? book_.begin(k) : ends_[static_cast<std::size_t>(k) * static_cast<std::size_t>(types_) + static_cast<std::size_t>(t) - 1];
  }
  NodeId run_size(PartId k, int t) const noexcept {
    return ends_[static_cast<std::size_t>(k) * static_cast<std::size_t>(types_) + static_cast<std::size_t>(t)] - run_begin(k, t);
  }
  const PartitionBook& book() const noexcept { return book_; }

 private:
  PartitionBook book_;
  int types_ = 0;
  std::vector<NodeId> ends_;  // part k's type t ends (exclusive, a global id) at ends_[k * types_ + t]
};

}  // namespace shardgnn
