// The one graph type: compressed sparse rows with 64-bit offsets and global ids stored 32 bits
// wide where every id fits (a graph loaded from disk) or 64 bits (one built in memory, or one with
// more than 2^31 - 1 nodes).
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>
#include <span>
#include <utility>

#include "datasets/array.hpp"

namespace shardgnn {

using NodeId = std::int64_t;
using EdgeId = std::int64_t;

// Whether ids in [0, num_nodes) are written as int32 (half the bytes of the largest array of a
// dataset or shard) or int64.
inline bool ids_fit_int32(std::int64_t num_nodes) noexcept { return num_nodes <= std::int64_t{std::numeric_limits<std::int32_t>::max()} + 1; }

// A CSR's arrays at one id width: what CsrGraph::visit hands to code that walks the graph, so the
// walk is compiled once per width instead of testing the width per element.
template <class Idx>
struct CsrView {
  using Id = Idx;
  std::span<const EdgeId> indptr_;
  std::span<const Idx> indices_;
  NodeId num_nodes() const noexcept { return indptr_.empty() ? 0 : static_cast<NodeId>(indptr_.size() - 1); }
  EdgeId num_edges() const noexcept { return static_cast<EdgeId>(indices_.size()); }
  EdgeId degree(NodeId u) const noexcept { return indptr_[static_cast<std::size_t>(u + 1)] - indptr_[static_cast<std::size_t>(u)]; }
  std::span<const Idx> neighbors(NodeId u) const noexcept {
    return indices_.subspan(static_cast<std::size_t>(indptr_[static_cast<std::size_t>(u)]), static_cast<std::size_t>(degree(u)));
  }
  std::span<const EdgeId> indptr() const noexcept { return indptr_; }
  std::span<const Idx> indices() const noexcept { return indices_; }
};

// Directed adjacency in CSR form: the out-neighbours of u are indices[indptr[u] .. indptr[u+1]).
// Invariants (checked by validate_dataset): indptr has num_nodes+1 non-decreasing entries starting
// at 0 and ending at num_edges; every index is in [0, num_nodes); each row is sorted ascending.
// An undirected graph stores both directions of every edge. The ids are held at one of two widths
// (narrow_ids()); code that reads them goes through visit().
class CsrGraph {
 public:
  CsrGraph() = default;
  CsrGraph(Array<EdgeId> indptr, Array<NodeId> indices) : indptr_(std::move(indptr)), indices_(std::move(indices)) {}
  CsrGraph(Array<EdgeId> indptr, Array<std::int32_t> indices) : indptr_(std::move(indptr)), indices32_(std::move(indices)), narrow_(true) {}

  NodeId num_nodes() const noexcept { return indptr_.empty() ? 0 : static_cast<NodeId>(indptr_.size() - 1); }
  EdgeId num_edges() const noexcept { return static_cast<EdgeId>(narrow_ ? indices32_.size() : indices_.size()); }
  EdgeId degree(NodeId u) const noexcept { return indptr_[static_cast<std::size_t>(u + 1)] - indptr_[static_cast<std::size_t>(u)]; }
  const Array<EdgeId>& indptr() const noexcept { return indptr_; }
  // True when the ids are int32.
  bool narrow_ids() const noexcept { return narrow_; }
  // Calls f(CsrView<std::int32_t>) or f(CsrView<std::int64_t>), whichever the ids are held as.
  template <class F>
  decltype(auto) visit(F&& f) const {
    if (narrow_) return std::forward<F>(f)(CsrView<std::int32_t>{indptr_.span(), indices32_.span()});
    return std::forward<F>(f)(CsrView<std::int64_t>{indptr_.span(), indices_.span()});
  }
  // Whether v is among u's neighbours (a binary search of its sorted row).
  bool has_edge(NodeId u, NodeId v) const noexcept {
    return visit([&](const auto& g) {
      const auto row = g.neighbors(u);
      return std::binary_search(row.begin(), row.end(), v);
    });
  }
  // Array::release_pages and advise_random for the ids.
  void release_index_pages() const noexcept { narrow_ ? indices32_.release_pages() : indices_.release_pages(); }
  void advise_random_indices() const noexcept { narrow_ ? indices32_.advise_random() : indices_.advise_random(); }
  const Array<NodeId>& wide_indices() const noexcept { return indices_; }
  const Array<std::int32_t>& narrow_indices() const noexcept { return indices32_; }

 private:
  Array<EdgeId> indptr_;
  Array<NodeId> indices_;
  Array<std::int32_t> indices32_;
  bool narrow_ = false;
};

}  // namespace shardgnn
