// The one graph type: compressed sparse rows with 64-bit global ids and offsets.
#pragma once

#include <cstdint>
#include <span>

#include "datasets/array.hpp"

namespace shardgnn {

using NodeId = std::int64_t;
using EdgeId = std::int64_t;

// Directed adjacency in CSR form: the out-neighbours of u are indices[indptr[u] .. indptr[u+1]).
// Invariants (checked by validate_dataset): indptr has num_nodes+1 non-decreasing entries starting
// at 0 and ending at num_edges; every index is in [0, num_nodes); each row is sorted ascending.
// An undirected graph stores both directions of every edge.
class CsrGraph {
 public:
  CsrGraph() = default;
  CsrGraph(Array<EdgeId> indptr, Array<NodeId> indices) : indptr_(std::move(indptr)), indices_(std::move(indices)) {}

  NodeId num_nodes() const noexcept { return indptr_.empty() ? 0 : static_cast<NodeId>(indptr_.size() - 1); }
  EdgeId num_edges() const noexcept { return static_cast<EdgeId>(indices_.size()); }
  EdgeId degree(NodeId u) const noexcept { return indptr_[u + 1] - indptr_[u]; }
  std::span<const NodeId> neighbors(NodeId u) const noexcept {
    return indices_.subspan(static_cast<std::size_t>(indptr_[u]), static_cast<std::size_t>(degree(u)));
  }
  const Array<EdgeId>& indptr() const noexcept { return indptr_; }
  const Array<NodeId>& indices() const noexcept { return indices_; }

 private:
  Array<EdgeId> indptr_;
  Array<NodeId> indices_;
};

}  // namespace shardgnn
