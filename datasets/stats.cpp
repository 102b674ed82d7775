#include "datasets/stats.hpp"

#include <algorithm>
#include <bit>
#include <vector>

namespace shardgnn {

DatasetStats compute_stats(const Dataset& ds) {
  const CsrGraph& g = ds.graph;
  DatasetStats s;
  s.nodes = g.num_nodes();
  s.directed_edges = g.num_edges();
  s.feature_dim = ds.feature_dim;
  s.num_classes = ds.num_classes;
  ds.labels.visit([&](auto labels) {
    for (const auto l : labels) s.labelled += l >= 0;
  });
  s.multilabel = ds.multilabel;
  if (ds.multilabel && ds.num_classes > 0) {
    const auto row = static_cast<std::size_t>(label_row_bytes(ds.num_classes));
    for (std::size_t v = 0; v * row < ds.label_bits.size(); ++v) {
      std::int64_t set = 0;
      for (std::size_t b = 0; b < row; ++b) set += std::popcount(ds.label_bits[v * row + b]);
      s.label_entries += set;
      s.labelled += set > 0;
    }
  }
  s.train = static_cast<std::int64_t>(ds.train_idx.size());
  s.val = static_cast<std::int64_t>(ds.val_idx.size());
  s.test = static_cast<std::int64_t>(ds.test_idx.size());
  if (s.nodes == 0) return s;

  std::vector<EdgeId> degrees(static_cast<std::size_t>(s.nodes));
  for (NodeId u = 0; u < s.nodes; ++u) degrees[static_cast<std::size_t>(u)] = g.degree(u);
  std::vector<std::uint8_t> touched(static_cast<std::size_t>(s.nodes), 0);
  // Rows ordered by relation first (relation ids) are searched as a copy sorted by neighbour, the
  // entries of several relations to one neighbour merged: they are not duplicates.
  CsrGraph by_neighbour;
  if (ds.schema.relation_ids()) {
    std::vector<EdgeId> indptr{0};
    std::vector<NodeId> indices;
    g.visit([&](const auto& view) {
      for (NodeId u = 0; u < s.nodes; ++u) {
        const auto nb = view.neighbors(u);
        const auto at = indices.size();
        indices.insert(indices.end(), nb.begin(), nb.end());
        std::sort(indices.begin() + static_cast<std::ptrdiff_t>(at), indices.end());
        indices.erase(std::unique(indices.begin() + static_cast<std::ptrdiff_t>(at), indices.end()), indices.end());
        indptr.push_back(static_cast<EdgeId>(indices.size()));
      }
    });
    by_neighbour = CsrGraph(Array<EdgeId>(std::move(indptr)), Array<NodeId>(std::move(indices)));
  }
  (ds.schema.relation_ids() ? by_neighbour : g).visit([&](const auto& view) {
  for (NodeId u = 0; u < s.nodes; ++u) {
    const auto nb = view.neighbors(u);
    if (!nb.empty()) touched[u] = 1;
    for (std::size_t i = 0; i < nb.size(); ++i) {
      const NodeId v = nb[i];
      touched[v] = 1;
      const bool dup = i > 0 && nb[i - 1] == v;  // rows are sorted
      s.duplicate_entries += dup;
      if (v == u) {
        s.self_loops += 1;
        continue;
      }
      const auto back = view.neighbors(v);
      const bool has_reverse = std::binary_search(back.begin(), back.end(), u);
      s.unmatched_entries += !has_reverse;
      // Each distinct unordered pair counted once: from its smaller end, or from the only end that has it.
      if (!dup && (u < v || !has_reverse)) s.undirected_edges += 1;
    }
  }
  });
  for (auto t : touched) s.isolated_nodes += t == 0;
  s.symmetric = s.unmatched_entries == 0;
  s.mean_degree = static_cast<double>(s.directed_edges) / static_cast<double>(s.nodes);
  auto [mn, mx] = std::minmax_element(degrees.begin(), degrees.end());
  s.min_degree = *mn;
  s.max_degree = *mx;
  const std::size_t mid = degrees.size() / 2;
  std::nth_element(degrees.begin(), degrees.begin() + static_cast<std::ptrdiff_t>(mid), degrees.end());
  const double upper = static_cast<double>(degrees[mid]);
  if (degrees.size() % 2 == 1) {
    s.median_degree = upper;
  } else {
    const double lower = static_cast<double>(*std::max_element(degrees.begin(), degrees.begin() + static_cast<std::ptrdiff_t>(mid)));
    s.median_degree = (lower + upper) / 2;
  }
  return s;
}

}  // namespace shardgnn
