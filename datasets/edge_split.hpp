// Link prediction's edge split (`shardgnn data split-edges`): a symmetric graph's undirected edges
// divided into training, validation and test edges, the held-out ones removed from the graph in
// both directions, each held-out split with as many non-edges (for AUC and AP, the protocol of
// Kipf and Welling's graph auto-encoders) and, on request, a fixed set of non-neighbour
// destinations per positive (for MRR and Hits@K, as OGB's ogbl datasets give them).
//
// Drawn splits are exact and keyed: every undirected edge {u, v} gets a 64-bit hash of (seed, u,
// v), and the edges of lowest hash are the validation edges, the next the test edges, so the
// split depends only on the seed and the graph. The selection runs in three passes over the CSR
// holding a histogram of the hashes' top bits and the few edges of the two boundary buckets, and
// the training graph is written through files: memory is the offsets (8 bytes a node), the
// held-out pairs and the histogram, at any graph size data convert handles.
#pragma once

#include <cstdint>
#include <string>

#include "datasets/dataset.hpp"

namespace shardgnn {

struct EdgeSplitOptions {
  double val = 0.05, test = 0.10;   // fractions of the undirected edges held out (drawn splits)
  std::uint64_t seed = 0;
  std::int64_t eval_negatives = 0;  // destinations per positive for MRR/Hits@K; 0: none
  // Pre-split held-out edges: text files of pairs ("u v" lines, the input's original ids when the
  // dataset keeps node_ids.npy), each pair an edge of the graph. Both set, or neither (drawn).
  std::string val_file, test_file;
};

struct EdgeSplitReport {
  std::int64_t undirected_edges = 0;  // candidate edges {u, v}, u != v, each counted once
  std::int64_t val = 0, test = 0;
  std::int64_t train_entries = 0;     // directed entries left in the graph (self-loops included)
};

// The dataset with its graph reduced to the training edges and the held-out arrays set
// (Dataset::edge_split); every other array is a view of `ds`'s (which must outlive it), the graph
// a view of indptr.npy and indices.npy written in `scratch` (which must outlive it too). The
// graph must be symmetric and not already split; otherwise, and for bad pair files, InputError.
Dataset split_edges(const Dataset& ds, const EdgeSplitOptions& options, const std::string& scratch, EdgeSplitReport& report);

}  // namespace shardgnn
