// Descriptive statistics of a dataset (`shardgnn data info`).
#pragma once

#include <cstdint>
#include <string>

#include "datasets/dataset.hpp"

namespace shardgnn {

struct DatasetStats {
  std::int64_t nodes = 0;
  std::int64_t directed_edges = 0;     // CSR entries
  std::int64_t undirected_edges = 0;   // distinct unordered pairs {u, v} with u != v (self-loops counted apart)
  std::int64_t feature_dim = 0;
  std::int64_t num_classes = 0;
  std::int64_t labelled = 0;           // nodes with a class (multi-label: with at least one label)
  bool multilabel = false;
  std::int64_t label_entries = 0;      // multi-label: labels set over all nodes
  std::int64_t train = 0, val = 0, test = 0;
  std::int64_t min_degree = 0, max_degree = 0;
  double mean_degree = 0, median_degree = 0;
  std::int64_t isolated_nodes = 0;     // no in- or out-edges
  std::int64_t self_loops = 0;
  std::int64_t duplicate_entries = 0;
  std::int64_t unmatched_entries = 0;  // (u, v) without (v, u)
  bool symmetric = false;
};

// Rows must be sorted (a dataset's invariant).
DatasetStats compute_stats(const Dataset& ds);

}  // namespace shardgnn
