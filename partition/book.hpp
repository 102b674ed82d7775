// The range partition book: after relabelling, part k owns the contiguous global ids
// [offsets[k], offsets[k+1]). Owner lookup is a binary search over K+1 offsets.
#pragma once

#include <algorithm>
#include <cstdint>
#include <span>
#include <vector>

#include "datasets/graph.hpp"

namespace shardgnn {

using PartId = std::int32_t;

class PartitionBook {
 public:
  PartitionBook() = default;
  explicit PartitionBook(std::vector<NodeId> offsets) : offsets_(std::move(offsets)) {}

  int parts() const noexcept { return static_cast<int>(offsets_.size()) - 1; }
  NodeId num_nodes() const noexcept { return offsets_.back(); }
  NodeId begin(PartId p) const noexcept { return offsets_[p]; }
  NodeId end(PartId p) const noexcept { return offsets_[p + 1]; }
  NodeId size(PartId p) const noexcept { return offsets_[p + 1] - offsets_[p]; }
  // Precondition: 0 <= global < num_nodes(). The last part whose first id is <= global (empty
  // parts share their offset with the next), found by a branch-free search of the K+1 offsets:
  // the samplers, the feature store and the shard writer look owners up per entry, in random
  // order (the shard writer had this search to itself before).
  PartId owner(NodeId global) const noexcept {
    const NodeId* base = offsets_.data();
    for (std::size_t n = offsets_.size(); n > 1;) {
      const std::size_t half = n / 2;
      base = base[half] <= global ? base + half : base;
      n -= half;
    }
    return static_cast<PartId>(base - offsets_.data());
  }
  NodeId to_local(NodeId global) const noexcept { return global - offsets_[owner(global)]; }
  const std::vector<NodeId>& offsets() const noexcept { return offsets_; }

 private:
  std::vector<NodeId> offsets_{0};
};

// Old (dataset) id <-> new (global, partition-ordered) id. Within a part, nodes keep their
// relative dataset order, so the relabelling is stable and reproducible.
struct Relabelling {
  PartitionBook book;
  std::vector<NodeId> new_of_old;
  std::vector<NodeId> old_of_new;
};

Relabelling relabel(std::span<const PartId> assignment, int parts);

}  // namespace shardgnn
