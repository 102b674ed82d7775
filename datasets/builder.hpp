// Builds a CSR graph from an edge list (COO), optionally symmetrising it and dropping self-loops
// and duplicate edges, and reports how many entries each option changed.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "datasets/graph.hpp"

namespace shardgnn {

struct EdgeList {
  std::int64_t num_nodes = 0;
  std::vector<NodeId> src;
  std::vector<NodeId> dst;
  std::vector<std::int64_t> weight;  // optional, one per edge (METIS edge weights)
  // Optional, one per edge: its relation id. Rows then come out ordered by (relation, neighbour),
  // a duplicate is the same (relation, neighbour), and symmetrising gives the reverse of an entry
  // of relation r the relation reverse_relation[r] (one per relation).
  std::vector<std::int32_t> relation;
  std::vector<std::int32_t> reverse_relation;
};

struct CleanOptions {
  bool symmetrize = false;       // add the missing reverse of every edge (multiplicities matched)
  bool drop_self_loops = false;  // remove (u, u)
  bool drop_duplicates = false;  // keep one copy of each (u, v); weights of the first copy kept
};

// What cleaning changed, counted in directed entries.
struct CleanReport {
  std::int64_t input_entries = 0;
  std::int64_t reverse_added = 0;
  std::int64_t self_loops_dropped = 0;
  std::int64_t duplicates_dropped = 0;
  std::int64_t output_entries = 0;
  // Properties of the output, established while building (every (u, v) has its (v, u); no
  // (u, u); no repeated (u, v)). A dataset saved before these were recorded reads them as false,
  // i.e. unknown, and consumers check for themselves.
  bool symmetric = false;
  bool no_self_loops = false;
  bool no_duplicates = false;
  bool operator==(const CleanReport&) const = default;
};

struct BuiltGraph {
  CsrGraph graph;
  std::vector<std::int64_t> weights;  // aligned with graph.indices() when the input had weights
  std::vector<std::int32_t> relations;  // aligned with graph.indices() when the input had relations
  CleanReport report;
};

// Consumes `edges` (its memory is released as the CSR is built). Ids must already be in
// [0, num_nodes) (readers check this and report the position). Rows come out sorted (by relation
// first, when the edges have relations).
BuiltGraph build_csr(EdgeList&& edges, const CleanOptions& options);

// What build_csr takes for `edges` edges: the edges (16 bytes each) and their staged entries
// (24 bytes each, two per edge when symmetrising).
inline double in_memory_build_bytes(double edges, const CleanOptions& clean) { return 16 * edges + 24 * edges * (clean.symmetrize ? 2 : 1); }

// True when every (u, v), u != v, has its (v, u). Rows must be sorted.
bool is_symmetric(const CsrGraph& g);

// Receives the next edges of a stream, src[i] -> dst[i].
using EdgeSink = std::function<void(std::span<const NodeId> src, std::span<const NodeId> dst)>;

// build_csr of the edges `produce` hands to its sink (in pieces), gathered in memory first;
// `expected_edges` reserves for them. The in-memory twin of build_csr_external.
BuiltGraph build_csr_streamed(std::int64_t num_nodes, std::int64_t expected_edges, const std::function<void(const EdgeSink&)>& produce,
                              const CleanOptions& options);

// build_csr (unweighted) for graphs whose entries do not fit in memory. `produce` hands every edge
// to the sink, in pieces; each entry (and, when symmetrising, its reverse) goes to the bucket file
// of its row's node range in `scratch`; then each bucket is read back, sorted and resolved row by
// row as build_csr does. `expected_edges` (what `produce` will hand over) sizes the buckets so
// that one bucket's entries take about `memory_bytes`; the row pointers (8 bytes a node) come on
// top. Buckets split the ids into equal ranges, so ids should be spread (R-MAT's are permuted).
// Writes scratch/indptr.npy and scratch/indices.npy (the bucket files are removed); the graph
// and report are build_csr's. I/O failures are InputErrors naming the file.
struct ExternalCsr {
  std::string indptr_path, indices_path;
  CleanReport report;
};
// The graph of a build_csr_external, its arrays views of the two mapped files.
CsrGraph map_csr(const ExternalCsr& built);
ExternalCsr build_csr_external(std::int64_t num_nodes, std::int64_t expected_edges, const std::function<void(const EdgeSink&)>& produce,
                               const CleanOptions& options, const std::string& scratch, std::uint64_t memory_bytes);

}  // namespace shardgnn
