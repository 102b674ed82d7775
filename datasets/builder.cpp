// COO -> CSR by a counting sort on the source, then a per-row sort that also resolves the
// cleaning options. Each entry carries a "reverse" flag in its low bit while rows are sorted so
// symmetrising can add exactly the reverse entries that are missing (multiplicities matched)
// without a second pass over the graph.
#include "datasets/builder.hpp"

#include <algorithm>
#include <cassert>
#include <numeric>

namespace shardgnn {

namespace {

struct RowEntry {
  std::int64_t key;     // neighbour << 1 | is_reverse
  std::int64_t weight;
  // Weight breaks ties so the kept copy of a duplicate is deterministic.
  bool operator<(const RowEntry& o) const { return key != o.key ? key < o.key : weight < o.weight; }
};

}  // namespace

bool is_symmetric(const CsrGraph& g) {
  for (NodeId u = 0; u < g.num_nodes(); ++u)
    for (NodeId v : g.neighbors(u)) {
      if (v == u) continue;
      const auto back = g.neighbors(v);
      if (!std::binary_search(back.begin(), back.end(), u)) return false;
    }
  return true;
}

BuiltGraph build_csr(EdgeList&& edges, const CleanOptions& opt) {
  const std::int64_t n = edges.num_nodes;
  const std::size_t m = edges.src.size();
  const bool weighted = !edges.weight.empty();
  assert(edges.dst.size() == m && (!weighted || edges.weight.size() == m));
  BuiltGraph out;
  CleanReport& rep = out.report;
  rep.input_entries = static_cast<std::int64_t>(m);

  // Pass 1: count entries per row (self-loops dropped here, reverses added here).
  std::vector<EdgeId> count(static_cast<std::size_t>(n) + 1, 0);
  for (std::size_t i = 0; i < m; ++i) {
    const NodeId u = edges.src[i], v = edges.dst[i];
    if (u == v) {
      if (opt.drop_self_loops) { ++rep.self_loops_dropped; continue; }
      ++count[u + 1];
      continue;  // a self-loop is its own reverse
    }
    ++count[u + 1];
    if (opt.symmetrize) ++count[v + 1];
  }
  std::partial_sum(count.begin(), count.end(), count.begin());
  const std::size_t staged = static_cast<std::size_t>(count[n]);

  // Pass 2: scatter.
  std::vector<RowEntry> entries(staged);
  {
    std::vector<EdgeId> pos(count.begin(), count.end() - 1);
    for (std::size_t i = 0; i < m; ++i) {
      const NodeId u = edges.src[i], v = edges.dst[i];
      const std::int64_t w = weighted ? edges.weight[i] : 0;
      if (u == v) {
        if (!opt.drop_self_loops) entries[pos[u]++] = {v << 1, w};
        continue;
      }
      entries[pos[u]++] = {v << 1, w};
      if (opt.symmetrize) entries[pos[v]++] = {(u << 1) | 1, w};
    }
  }
  // The input is no longer needed: give its memory back before the rows are compacted.
  edges = EdgeList{};

  // Pass 3: sort each row and resolve runs of equal neighbours, compacting in place.
  std::vector<EdgeId> indptr(static_cast<std::size_t>(n) + 1, 0);
  std::vector<NodeId> indices;
  indices.reserve(staged);
  std::vector<std::int64_t> weights;
  if (weighted) weights.reserve(staged);
  bool saw_self_loop = false, saw_duplicate = false;
  for (NodeId u = 0; u < n; ++u) {
    auto first = entries.begin() + count[u], last = entries.begin() + count[u + 1];
    std::sort(first, last);
    for (auto it = first; it != last;) {
      const std::int64_t nb = it->key >> 1;
      auto run_end = it;
      std::int64_t originals = 0, reverses = 0;
      while (run_end != last && (run_end->key >> 1) == nb) {
        (run_end->key & 1 ? reverses : originals) += 1;
        ++run_end;
      }
      std::int64_t keep;
      if (opt.drop_duplicates) {
        keep = 1;
        if (originals == 0) rep.reverse_added += 1;
        else rep.duplicates_dropped += originals - 1;
      } else {
        // (u,v) k times and (v,u) j times: symmetric means both k' = max(k, j).
        keep = std::max(originals, reverses);
        rep.reverse_added += std::max<std::int64_t>(0, reverses - originals);
      }
      saw_self_loop |= nb == u;
      saw_duplicate |= keep > 1;
      // Originals sort before reverses of the same neighbour, so `it` is the first original when one exists.
      for (std::int64_t k = 0; k < keep; ++k) {
        indices.push_back(nb);
        if (weighted) weights.push_back(it->weight);
      }
      it = run_end;
    }
    indptr[u + 1] = static_cast<EdgeId>(indices.size());
  }
  entries = {};
  indices.shrink_to_fit();
  rep.output_entries = static_cast<std::int64_t>(indices.size());
  rep.no_self_loops = !saw_self_loop;
  rep.no_duplicates = !saw_duplicate;
  out.graph = CsrGraph(Array<EdgeId>(std::move(indptr)), Array<NodeId>(std::move(indices)));
  // Symmetry is known when it was made; otherwise one check now (rows are sorted) spares every
  // later consumer (METIS needs it) from repeating it.
  rep.symmetric = opt.symmetrize || is_symmetric(out.graph);
  out.weights = std::move(weights);
  return out;
}

BuiltGraph rebuild_csr(const CsrGraph& g, const CleanOptions& options) {
  EdgeList el;
  el.num_nodes = g.num_nodes();
  el.src.resize(static_cast<std::size_t>(g.num_edges()));
  el.dst.assign(g.indices().begin(), g.indices().end());
  for (NodeId u = 0; u < g.num_nodes(); ++u)
    std::fill(el.src.begin() + g.indptr()[u], el.src.begin() + g.indptr()[u + 1], u);
  return build_csr(std::move(el), options);
}

}  // namespace shardgnn
