// Synthetic graphs of any size, seeded and reproducible on every platform:
//  - R-MAT (Chakrabarti, Zhan, Faloutsos 2004) with the Graph500 parameters a=0.57, b=c=0.19,
//    d=0.05 and Graph500's random vertex relabelling; structure only, no features.
//  - a stochastic block model with class-dependent Gaussian features: a learnable node
//    classification task of any size, with generated train/val/test splits.
#pragma once

#include <cstdint>
#include <string>

#include "datasets/builder.hpp"
#include "datasets/dataset.hpp"

namespace shardgnn {

struct RmatOptions {
  int scale = 16;               // 2^scale nodes
  int edge_factor = 16;         // edge_factor * 2^scale generated edges
  double a = 0.57, b = 0.19, c = 0.19;  // d = 1 - a - b - c
  bool permute = true;          // Graph500 random relabelling of vertices
  std::uint64_t seed = 1;
};

// The raw generated edges (directed, may hold duplicates and self-loops, as Graph500 generates them).
EdgeList generate_rmat_edges(const RmatOptions& options);
// The same edges in the same order, handed to `sink` in pieces of at most `chunk` edges.
void generate_rmat_stream(const RmatOptions& options, std::size_t chunk, const EdgeSink& sink);
// The dataset name and source line generate_rmat gives.
std::string rmat_name(const RmatOptions& options);
std::string rmat_source(const RmatOptions& options);
Dataset generate_rmat(const RmatOptions& options, const CleanOptions& clean);

struct SbmOptions {
  std::int64_t num_nodes = 10000;
  int num_classes = 10;
  double avg_degree = 20.0;     // expected undirected degree
  double homophily = 0.8;       // expected fraction of edges inside a class
  int feature_dim = 64;
  double class_separation = 1.0;  // std-dev of class means around 0
  double feature_noise = 1.0;     // std-dev of per-node noise around the class mean
  double train_fraction = 0.6;
  double val_fraction = 0.2;      // the rest is test
  // > 0: a multi-label task over this many labels instead of one class per node. Each block has a
  // profile of labels_per_node labels; a node has each of its block's with probability 0.9 and
  // any other with 0.01. The features show the block only through noise and the neighbours
  // (mostly of the node's block) show it again, so a GNN reads the labels better than the features
  // alone do (docs/results/multilabel.md: 0.91 against 0.42 micro-F1 at 100k nodes, 24 labels,
  // class_separation 0.25).
  int multilabel = 0;
  int labels_per_node = 3;
  std::uint64_t seed = 1;
  // How the features are kept: 2-byte types are narrowed row by row as they are drawn (the same
  // bits as narrowing the float32 matrix), so no float32 copy of them is built.
  FeatureDtype feature_dtype = FeatureDtype::kFloat32;
};

// Symmetric, without self-loops or duplicates; classes exactly balanced (sizes differ by at most 1).
Dataset generate_sbm(const SbmOptions& options);
// The same dataset with its graph built through bucket files in `scratch` within about `memory`
// bytes (see build_csr_external); the graph's arrays are views of files there.
Dataset generate_sbm_bounded(const SbmOptions& options, const std::string& scratch, std::uint64_t memory);

// Gives a structure-only dataset (an R-MAT graph, say) node data for sampler and training
// benchmarks: standard-normal features (kept as `feature_dtype`, as SbmOptions keeps them),
// uniformly random labels in [0, classes) and a random train/val/test split of the given
// fractions. Seeded. The labels carry no signal.
void add_random_node_data(Dataset& ds, int feature_dim, int num_classes, double train_fraction, double val_fraction, std::uint64_t seed,
                          FeatureDtype feature_dtype = FeatureDtype::kFloat32);

// Writes the edges as a tab-separated text edge list ("u\tv\n"), atomically.
void write_edge_list(const std::string& path, const EdgeList& edges);

}  // namespace shardgnn
