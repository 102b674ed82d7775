// Multilevel partitioning for graphs METIS cannot take whole. Size-constrained label propagation
// (Meyerhenke, Sanders and Schulz, "Parallel graph partitioning for complex networks", IPDPS 2015)
// clusters the graph, each cluster becomes one node (its members' balance weights summed, parallel
// edges merged with their weights summed), and so on level by level until the graph is small;
// METIS's multi-constraint k-way partitions the coarsest graph; the assignment is projected back
// level by level, each level refined by label propagation that moves a node to the neighbouring
// part it is most connected to when that part has room. Memory: the dataset's graph is only read
// (it may be a file mapping); each level keeps a few n-long arrays and its coarse graph, which
// label propagation shrinks several-fold per level on the graphs tried.
#include <algorithm>
#include <cstdio>
#include <cmath>
#include <limits>
#include <numeric>
#include <stdexcept>

#include "datasets/error.hpp"
#include "datasets/random.hpp"
#include "partition/cost.hpp"
#include "partition/methods.hpp"
#include "partition/metis_kway.hpp"

namespace shardgnn {

namespace {

// Coarsening stops at this many nodes per part (METIS then coarsens further its own way), or when
// a level no longer shrinks the graph by a tenth.
constexpr std::int64_t kCoarseNodesPerPart = 4096;
constexpr int kMaxLevels = 24;
// A cluster may weigh at most 1/kClusterShare of a part's allowed weight in every constraint, so
// that the coarsest graph keeps enough nodes for METIS to balance.
constexpr double kClusterShare = 16;
constexpr int kCoarsenPasses = 3, kRefinePasses = 3;
// Coarsening passes stop early once fewer than n / kSettledShare nodes moved in one.
constexpr std::int64_t kSettledShare = 100;

// A graph read by the passes: CSR, per-edge weights (empty: all 1) and ncon weights per node.
// The dataset's graph has 64-bit neighbour ids and weights; coarse graphs 32-bit ones, half the
// memory of the largest coarse graph, the first.
template <class Id, class Weight>
struct GraphView {
  std::span<const std::int64_t> indptr;
  std::span<const Id> indices;
  std::span<const Weight> edge_w;
  std::span<const std::int64_t> node_w;
  int ncon = 1;
  std::int64_t n() const { return static_cast<std::int64_t>(indptr.size()) - 1; }
  std::int64_t weight(std::int64_t e) const { return edge_w.empty() ? 1 : static_cast<std::int64_t>(edge_w[static_cast<std::size_t>(e)]); }
};
using FineView = GraphView<std::int64_t, std::int64_t>;
using CoarseView = GraphView<std::int32_t, std::int32_t>;

// A coarse level: its own arrays, and the map from the level above's nodes to its nodes.
struct Level {
  std::vector<std::int64_t> indptr;
  std::vector<std::int32_t> indices, edge_w;  // summed weights are capped at the int32 maximum: they are only cut costs
  std::vector<std::int64_t> node_w, map;
  CoarseView view(int ncon) const { return {indptr, indices, edge_w, node_w, ncon}; }
};

bool fits(std::span<const std::int64_t> load, std::span<const std::int64_t> add, std::span<const std::int64_t> limit) {
  for (std::size_t c = 0; c < limit.size(); ++c)
    if (add[c] > 0 && load[c] + add[c] > limit[c]) return false;
  return true;
}

// Sums v's edge weights by the group (cluster or part) of each neighbour into conn[group],
// listing each group touched once.
template <class View>
void connections(const View& g, std::int64_t v, const std::vector<std::int64_t>& group, std::vector<std::int64_t>& conn, std::vector<std::int64_t>& touched) {
  const auto vs = static_cast<std::size_t>(v);
  for (std::int64_t e = g.indptr[vs]; e < g.indptr[vs + 1]; ++e) {
    const std::int64_t u = g.indices[static_cast<std::size_t>(e)];
    if (u == v) continue;
    const auto x = static_cast<std::size_t>(group[static_cast<std::size_t>(u)]);
    if (conn[x] == 0) touched.push_back(static_cast<std::int64_t>(x));
    conn[x] += g.weight(e);
  }
}

// Moves a node of weights `wv` from group `from` to group `to` in a [groups x ncon] weight table.
void move_weight(std::vector<std::int64_t>& table, std::span<const std::int64_t> wv, std::int64_t from, std::int64_t to) {
  const std::size_t nc = wv.size();
  for (std::size_t c = 0; c < nc; ++c) {
    table[static_cast<std::size_t>(from) * nc + c] -= wv[c];
    table[static_cast<std::size_t>(to) * nc + c] += wv[c];
  }
}

// The nodes in a seeded random order: label propagation visits them so.
std::vector<std::int64_t> visit_order(std::int64_t n, std::uint64_t seed) {
  std::vector<std::int64_t> order(static_cast<std::size_t>(n));
  std::iota(order.begin(), order.end(), 0);
  Rng rng(seed);
  seeded_shuffle(std::span<std::int64_t>(order), rng);
  return order;
}

// Size-constrained label propagation: every node starts in its own cluster and joins the
// neighbouring cluster it is most strongly connected to, while that cluster stays within `limit`
// in every constraint. Returns each node's cluster label (a node id).
template <class View>
std::vector<std::int64_t> cluster(const View& g, std::span<const std::int64_t> limit, std::uint64_t seed) {
  const std::int64_t n = g.n();
  const auto nc = static_cast<std::size_t>(g.ncon);
  std::vector<std::int64_t> label(static_cast<std::size_t>(n)), weight(g.node_w.begin(), g.node_w.end()), conn(static_cast<std::size_t>(n), 0);
  std::iota(label.begin(), label.end(), 0);
  std::vector<std::int64_t> touched;
  const std::vector<std::int64_t> order = visit_order(n, seed);
  for (int pass = 0; pass < kCoarsenPasses; ++pass) {
    std::int64_t moved = 0;
    for (const std::int64_t v : order) {
      const auto vs = static_cast<std::size_t>(v);
      connections(g, v, label, conn, touched);
      const std::int64_t cur = label[vs];
      const std::span<const std::int64_t> wv = g.node_w.subspan(vs * nc, nc);
      std::int64_t best = cur, best_conn = conn[static_cast<std::size_t>(cur)];
      for (const std::int64_t l : touched) {
        const auto ls = static_cast<std::size_t>(l);
        if (l != cur && conn[ls] > best_conn && fits(std::span<const std::int64_t>(weight).subspan(ls * nc, nc), wv, limit)) {
          best = l;
          best_conn = conn[ls];
        }
      }
      for (const std::int64_t l : touched) conn[static_cast<std::size_t>(l)] = 0;
      touched.clear();
      if (best == cur) continue;
      move_weight(weight, wv, cur, best);
      label[vs] = best;
      ++moved;
    }
    if (moved * kSettledShare < n) break;  // the clusters have settled
  }
  // Nodes without neighbours join no cluster: packed into clusters up to the limit, in node order,
  // they stop filling every coarser graph with singletons (R-MAT leaves many nodes isolated).
  std::int64_t bin = -1;
  for (std::int64_t v = 0; v < n; ++v) {
    const auto vs = static_cast<std::size_t>(v);
    if (g.indptr[vs + 1] != g.indptr[vs]) continue;
    const std::span<const std::int64_t> wv = g.node_w.subspan(vs * nc, nc);
    if (bin < 0 || !fits(std::span<const std::int64_t>(weight).subspan(static_cast<std::size_t>(bin) * nc, nc), wv, limit)) {
      bin = v;  // a new cluster, labelled by its first node
      continue;
    }
    move_weight(weight, wv, v, bin);
    label[vs] = bin;
  }
  return label;
}

// Each cluster as one node: summed node weights, edges between clusters merged (weights summed),
// edges inside a cluster dropped. Coarse ids follow the clusters' first members in node order. Two
// passes over the edges (count, then fill) size the coarse arrays exactly.
template <class View>
Level contract(const View& g, std::vector<std::int64_t> label) {
  const std::int64_t n = g.n();
  const auto nc = static_cast<std::size_t>(g.ncon);
  Level c;
  c.map.assign(static_cast<std::size_t>(n), -1);
  std::int64_t m = 0;
  {
    std::vector<std::int64_t> id(static_cast<std::size_t>(n), -1);
    for (std::int64_t v = 0; v < n; ++v) {
      auto& slot = id[static_cast<std::size_t>(label[static_cast<std::size_t>(v)])];
      if (slot < 0) slot = m++;
      c.map[static_cast<std::size_t>(v)] = slot;
    }
  }
  label = {};
  if (m > std::numeric_limits<std::int32_t>::max()) throw std::length_error("metis-ml: a coarse graph beyond 32-bit node ids");
  // The members of each coarse node, by counting sort.
  std::vector<std::int64_t> start(static_cast<std::size_t>(m) + 1, 0), members(static_cast<std::size_t>(n));
  for (const std::int64_t x : c.map) ++start[static_cast<std::size_t>(x) + 1];
  std::partial_sum(start.begin(), start.end(), start.begin());
  {
    std::vector<std::int64_t> next(start.begin(), start.end() - 1);
    for (std::int64_t v = 0; v < n; ++v) members[static_cast<std::size_t>(next[static_cast<std::size_t>(c.map[static_cast<std::size_t>(v)])]++)] = v;
  }
  c.node_w.assign(static_cast<std::size_t>(m) * nc, 0);
  c.indptr.assign(static_cast<std::size_t>(m) + 1, 0);
  std::vector<std::int64_t> acc(static_cast<std::size_t>(m), 0), touched;
  // Sums coarse node x's edges to other coarse nodes into acc, listing them in touched.
  auto gather = [&](std::int64_t x) {
    for (std::int64_t i = start[static_cast<std::size_t>(x)]; i < start[static_cast<std::size_t>(x) + 1]; ++i) {
      const auto v = static_cast<std::size_t>(members[static_cast<std::size_t>(i)]);
      for (std::int64_t e = g.indptr[v]; e < g.indptr[v + 1]; ++e) {
        const std::int64_t y = c.map[static_cast<std::size_t>(g.indices[static_cast<std::size_t>(e)])];
        if (y == x) continue;
        if (acc[static_cast<std::size_t>(y)] == 0) touched.push_back(y);
        acc[static_cast<std::size_t>(y)] += g.weight(e);
      }
    }
  };
  for (std::int64_t x = 0; x < m; ++x) {
    gather(x);
    c.indptr[static_cast<std::size_t>(x) + 1] = c.indptr[static_cast<std::size_t>(x)] + static_cast<std::int64_t>(touched.size());
    for (const std::int64_t y : touched) acc[static_cast<std::size_t>(y)] = 0;
    touched.clear();
  }
  c.indices.resize(static_cast<std::size_t>(c.indptr.back()));
  c.edge_w.resize(c.indices.size());
  constexpr std::int64_t kMaxWeight = std::numeric_limits<std::int32_t>::max();
  for (std::int64_t x = 0; x < m; ++x) {
    gather(x);
    auto out = static_cast<std::size_t>(c.indptr[static_cast<std::size_t>(x)]);
    for (const std::int64_t y : touched) {
      c.indices[out] = static_cast<std::int32_t>(y);
      c.edge_w[out++] = static_cast<std::int32_t>(std::min(acc[static_cast<std::size_t>(y)], kMaxWeight));
      acc[static_cast<std::size_t>(y)] = 0;
    }
    touched.clear();
    for (std::int64_t i = start[static_cast<std::size_t>(x)]; i < start[static_cast<std::size_t>(x) + 1]; ++i)
      for (std::size_t k = 0; k < nc; ++k)
        c.node_w[static_cast<std::size_t>(x) * nc + k] += g.node_w[static_cast<std::size_t>(members[static_cast<std::size_t>(i)]) * nc + k];
  }
  return c;
}

// Label propagation over parts: a node moves to the adjacent part it is most connected to when
// that beats its own part's connection and the part stays within `limit`; a node of a part over
// its limit moves to the best adjacent part with room (or, with none adjacent, the lightest part
// with room) whatever the cut says.
template <class View>
void refine(const View& g, std::vector<std::int64_t>& part, int k, std::span<const std::int64_t> limit, std::uint64_t seed) {
  const std::int64_t n = g.n();
  const auto nc = static_cast<std::size_t>(g.ncon);
  std::vector<std::int64_t> load(static_cast<std::size_t>(k) * nc, 0), conn(static_cast<std::size_t>(k), 0), touched;
  for (std::int64_t v = 0; v < n; ++v)
    for (std::size_t c = 0; c < nc; ++c) load[static_cast<std::size_t>(part[static_cast<std::size_t>(v)]) * nc + c] += g.node_w[static_cast<std::size_t>(v) * nc + c];
  auto load_of = [&](std::int64_t p) { return std::span<const std::int64_t>(load).subspan(static_cast<std::size_t>(p) * nc, nc); };
  auto over = [&](std::int64_t p) {
    for (std::size_t c = 0; c < nc; ++c)
      if (load[static_cast<std::size_t>(p) * nc + c] > limit[c]) return true;
    return false;
  };
  const std::vector<std::int64_t> order = visit_order(n, seed);
  for (int pass = 0; pass < kRefinePasses; ++pass) {
    std::int64_t moved = 0;
    for (const std::int64_t v : order) {
      const auto vs = static_cast<std::size_t>(v);
      const std::int64_t cur = part[vs];
      connections(g, v, part, conn, touched);
      const std::span<const std::int64_t> wv = g.node_w.subspan(vs * nc, nc);
      const bool must = over(cur);
      std::int64_t best = cur, best_conn = must ? std::numeric_limits<std::int64_t>::min() : conn[static_cast<std::size_t>(cur)];
      for (const std::int64_t p : touched)
        if (p != cur && conn[static_cast<std::size_t>(p)] > best_conn && fits(load_of(p), wv, limit)) {
          best = p;
          best_conn = conn[static_cast<std::size_t>(p)];
        }
      for (const std::int64_t p : touched) conn[static_cast<std::size_t>(p)] = 0;
      touched.clear();
      if (must && best == cur) {
        std::int64_t lightest = -1;
        for (std::int64_t p = 0; p < k; ++p)
          if (p != cur && fits(load_of(p), wv, limit) && (lightest < 0 || load[static_cast<std::size_t>(p) * nc] < load[static_cast<std::size_t>(lightest) * nc])) lightest = p;
        if (lightest >= 0) best = lightest;
      }
      if (best == cur) continue;
      move_weight(load, wv, cur, best);
      part[vs] = best;
      ++moved;
    }
    if (moved == 0) break;
  }
}

}  // namespace

std::vector<PartId> MetisMlPartitioner::run(const Dataset& ds, const PartitionConfig& cfg) const {
  const int k = cfg.parts;
  // Balance weights, one row per node, as METIS's vertex weights (plain node balance: all 1).
  const bool by_cost = std::find(cfg.balance.begin(), cfg.balance.end(), BalanceKey::kCost) != cfg.balance.end();
  std::vector<std::int64_t> cost;
  if (by_cost) cost = node_cost_weights(ds, cfg.cost_fanouts, cfg.cost_remote_weight);
  int ncon = 1;
  std::vector<std::int64_t> node_w = balance_weights(ds, cfg.balance, &ncon, cost);
  cost = {};
  std::vector<std::int64_t> edge_w;
  if (cfg.edge_weights == EdgeWeighting::kEntropy) edge_w = entropy_edge_weights(ds);
  else if (!ds.edge_weights.empty()) edge_w.assign(ds.edge_weights.begin(), ds.edge_weights.end());
  // Coarse graphs of a simple graph are simple: clean the input once if it is not.
  std::optional<BuiltGraph> cleaned = simple_copy_if_needed(ds, edge_w);
  const CsrGraph& graph = cleaned ? cleaned->graph : ds.graph;
  if (cleaned) edge_w = std::move(cleaned->weights);

  const auto nc = static_cast<std::size_t>(ncon);
  // A part's allowed weight per constraint, and a cluster's.
  std::vector<std::int64_t> part_limit(nc), cluster_limit(nc);
  {
    std::vector<double> total(nc, 0);
    std::vector<std::int64_t> heaviest(nc, 0);
    for (std::size_t i = 0; i < node_w.size(); ++i) {
      total[i % nc] += static_cast<double>(node_w[i]);
      heaviest[i % nc] = std::max(heaviest[i % nc], node_w[i]);
    }
    for (std::size_t c = 0; c < nc; ++c) {
      const double allowed = (1.0 + cfg.imbalance) * total[c] / k;
      part_limit[c] = std::max(heaviest[c], static_cast<std::int64_t>(std::floor(allowed)));
      cluster_limit[c] = std::max(heaviest[c], static_cast<std::int64_t>(allowed / kClusterShare));
    }
  }

  const FineView finest{graph.indptr().span(), graph.indices().span(), edge_w, node_w, ncon};
  std::vector<Level> levels;
  const std::int64_t target = std::max<std::int64_t>(cfg.coarse_nodes > 0 ? cfg.coarse_nodes : kCoarseNodesPerPart * k, 2 * k);
  // One more level from `g`, unless it is small enough or would hardly shrink.
  auto coarsen = [&](const auto& g, int l) {
    if (g.n() <= target) return false;
    Level next = contract(g, cluster(g, cluster_limit, derive_seed(cfg.seed, 0xc0a75e00ULL + static_cast<std::uint64_t>(l))));
    const auto coarse_n = static_cast<std::int64_t>(next.indptr.size()) - 1;
    if (coarse_n * 10 > g.n() * 9) return false;  // shrank by less than a tenth
    levels.push_back(std::move(next));
    return true;
  };
  for (int l = 0; l < kMaxLevels; ++l) {
    const bool more = levels.empty() ? coarsen(finest, l) : coarsen(levels.back().view(ncon), l);
    if (!more) break;
  }
  // What the levels did, for the log: nodes and adjacency entries of each graph.
  std::string sizes = std::to_string(finest.n()) + " nodes / " + std::to_string(finest.indices.size()) + " entries";
  for (const Level& lv : levels) sizes += " -> " + std::to_string(lv.indptr.size() - 1) + " / " + std::to_string(lv.indices.size());
  std::fprintf(stderr, "metis-ml: %s; METIS partitions the coarsest\n", sizes.c_str());

  // METIS on the coarsest graph.
  const auto idx_max = static_cast<std::int64_t>(std::numeric_limits<idx_t>::max());
  auto metis_on = [&](const auto& top) {
    if (top.n() > idx_max || static_cast<std::int64_t>(top.indices.size()) > idx_max)
      throw InputError("dataset '" + ds.name + "': its coarsest graph (" + std::to_string(top.n()) + " nodes, " + std::to_string(top.indices.size()) +
                       " adjacency entries) still exceeds METIS's index range; use --method fennel, ldg or random");
    std::vector<idx_t> xadj(top.indptr.begin(), top.indptr.end()), adjncy(top.indices.begin(), top.indices.end()), adjwgt;
    if (!top.edge_w.empty()) {
      adjwgt.resize(top.indices.size());
      // Summed weights are capped within METIS's own sums' headroom: they are only cut costs.
      for (std::size_t e = 0; e < adjwgt.size(); ++e) adjwgt[e] = static_cast<idx_t>(std::min(top.weight(static_cast<std::int64_t>(e)), idx_max / 64));
    }
    const std::vector<idx_t> p = metis_kway(xadj, adjncy, adjwgt, top.node_w, ncon, cfg, ds.name);
    return std::vector<std::int64_t>(p.begin(), p.end());
  };
  std::vector<std::int64_t> part = levels.empty() ? metis_on(finest) : metis_on(levels.back().view(ncon));

  // Back down, refining each level.
  for (std::size_t l = levels.size(); l-- > 0;) {
    std::vector<std::int64_t> finer(levels[l].map.size());
    for (std::size_t v = 0; v < finer.size(); ++v) finer[v] = part[static_cast<std::size_t>(levels[l].map[v])];
    part = std::move(finer);
    levels[l] = {};  // its memory goes back before the next level's refinement
    const std::uint64_t seed = derive_seed(cfg.seed, 0x7ef10e00ULL + l);
    if (l == 0) refine(finest, part, k, part_limit, seed);
    else refine(levels[l - 1].view(ncon), part, k, part_limit, seed);
  }
  return std::vector<PartId>(part.begin(), part.end());
}

}  // namespace shardgnn
