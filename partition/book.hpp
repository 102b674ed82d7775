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
  // Precondition: 0 <= global < num_nodes().
  PartId owner(NodeId global) const noexcept {
    return static_cast<PartId>(std::upper_bound(offsets_.begin(), offsets_.end(), global) - offsets_.begin() - 1);
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
