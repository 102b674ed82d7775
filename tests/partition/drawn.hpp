// Small hand-drawn datasets for the partition tests: an undirected graph from a list of pairs
// (both directions stored), optionally with labels and a training split.
#pragma once

#include <algorithm>
#include <utility>
#include <vector>

#include "datasets/builder.hpp"
#include "datasets/dataset.hpp"

namespace shardgnn::test {

// `clean` defaults to a simple graph (symmetrised, no self-loops, no duplicates).
inline Dataset drawn(std::int64_t n, const std::vector<std::pair<NodeId, NodeId>>& edges, std::vector<std::int64_t> labels = {},
                     std::vector<NodeId> train = {}, CleanOptions clean = {true, true, true}) {
  EdgeList el;
  el.num_nodes = n;
  for (auto [u, v] : edges) {
    el.src.push_back(u);
    el.dst.push_back(v);
  }
  Dataset ds;
  ds.name = "drawn";
  BuiltGraph b = build_csr(std::move(el), clean);
  ds.graph = std::move(b.graph);
  ds.cleaning = b.report;
  if (!labels.empty()) {
    ds.num_classes = *std::max_element(labels.begin(), labels.end()) + 1;
    ds.labels = Array<std::int64_t>(std::move(labels));
  }
  ds.train_idx = Array<NodeId>(std::move(train));
  return ds;
}

}  // namespace shardgnn::test
