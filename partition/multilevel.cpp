// Multilevel partitioning for graphs METIS cannot take whole. Size-constrained label propagation
// (Meyerhenke, Sanders and Schulz, "Parallel graph partitioning for complex networks", IPDPS 2015)
// clusters the graph, each cluster becomes one node (its members' balance weights summed, parallel
// edges merged with their weights summed), and so on level by level until the graph is small;
// METIS's multi-constraint k-way partitions the coarsest graph; the assignment is projected back
// level by level, each level refined by label propagation that moves a node to the neighbouring
// part it is most connected to when that part has room. On graphs of uniform degree (meshes) a
// cluster takes at most two nodes of a level, as a matching would. Memory: the dataset's graph is
// only read (it may be a file mapping); each level keeps a few n-long arrays and its coarse graph,
// which label propagation shrinks several-fold per level on the graphs tried.
//
// Over several ranks every level is split into contiguous node ranges, one per rank: a rank
// clusters its own range (a cluster never spans two ranges, so coarse ranges stay contiguous and
// clustering needs no exchange), learns the coarse ids of the neighbours it reaches in other ranges
// from their owners, and contracts its range. The coarsest graph is gathered on every rank, each
// runs METIS with its own seed and the lowest cut within the balance limits is kept. Refinement
// moves each rank's own nodes; within a pass a rank may fill 1/P of a part's remaining room, or
// must shed the share of a part's excess its own nodes there hold; the loads are summed and the
// moves exchanged after it. One rank is the serial
// algorithm exactly. Memory per rank: its range's rows and weights, plus a few arrays over all
// nodes of a level (every node's part, the coarse ids of the nodes its rows reach).
#include <algorithm>
#include <bit>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <cmath>
#include <limits>
#include <numeric>
#include <stdexcept>

#include "datasets/error.hpp"
#include "datasets/stopwatch.hpp"
#include "datasets/fileio.hpp"
#include "datasets/random.hpp"
#include "datasets/step_log.hpp"
#include "comm/communicator.hpp"
#include "partition/cost.hpp"
#include "partition/methods.hpp"
#include "partition/metis_kway.hpp"

namespace shardgnn {

using comm::Op;  // the parameters called `comm` hide the namespace in function bodies

namespace {

// Coarsening stops at this many nodes per part (METIS then coarsens further its own way), or when
// a level no longer shrinks the graph by a tenth.
constexpr std::int64_t kCoarseNodesPerPart = 4096;
constexpr int kMaxLevels = 24;
// A cluster may weigh at most 1/kClusterShare of a part's allowed weight in every constraint, so
// that the coarsest graph keeps enough nodes for METIS to balance.
constexpr double kClusterShare = 16;
constexpr int kCoarsenPasses = 3, kRefinePasses = 3;
// Refinement goes on for up to this many more passes while a part is over its limit.
constexpr int kBalancePasses = 8;
// Coarsening passes stop early once fewer than n / kSettledShare nodes moved in one.
constexpr std::int64_t kSettledShare = 100;
// A graph whose degrees are not skewed (degrees_skewed: a mesh, not a power-law graph) is
// coarsened at most kMeshMembers nodes per cluster and level: label propagation's large clusters
// have ragged borders there that refinement cannot mend, while on skewed graphs the cap would keep
// nearly every edge level after level.
constexpr std::int64_t kMeshMembers = 2;

// This rank's rows of a graph: CSR over its range of nodes (global ids first .. first + n()),
// neighbours as global ids, per-edge weights (empty: all 1) and ncon weights per row. `indptr`
// indexes `indices` directly, so a range of the dataset's mapped CSR is a view without a copy.
// The dataset's graph has 64-bit weights; coarse graphs 32-bit ids and weights, half the memory
// of the largest coarse graph, the first.
template <class Id, class Weight>
struct GraphView {
  std::int64_t first = 0;
  std::span<const std::int64_t> indptr;
  std::span<const Id> indices;
  std::span<const Weight> edge_w;
  std::span<const std::int64_t> node_w;
  int ncon = 1;
  std::int64_t n() const { return static_cast<std::int64_t>(indptr.size()) - 1; }
  bool owns(std::int64_t u) const { return u >= first && u - first < n(); }
  std::int64_t weight(std::int64_t e) const { return edge_w.empty() ? 1 : static_cast<std::int64_t>(edge_w[static_cast<std::size_t>(e)]); }
};
// The dataset's graph: its ids at their stored width (int32 or int64), 64-bit weights.
template <class Id>
using FineView = GraphView<Id, std::int64_t>;
using CoarseView = GraphView<std::int32_t, std::int32_t>;

// A coarse level: this rank's rows of it, every rank's first node (and the total, last), and the
// map from the finer level's rows here to this level's global ids.
struct Level {
  std::vector<std::int64_t> offsets;
  std::vector<std::int64_t> indptr;
  // Neighbours and summed edge weights (capped at the int32 maximum: they are only cut costs), in
  // spill files: the first coarse graph of a billion-edge graph would not fit beside the rest.
  MappedFile indices_file, edge_w_file;
  std::vector<std::int64_t> node_w;
  std::vector<std::int32_t> map;
  std::int64_t global_n() const { return offsets.back(); }
  static std::span<const std::int32_t> int32s(const MappedFile& f) {
    return {reinterpret_cast<const std::int32_t*>(f.bytes.data()), f.bytes.size() / sizeof(std::int32_t)};
  }
  std::span<const std::int32_t> indices() const { return int32s(indices_file); }
  CoarseView view(int ncon, int rank) const { return {offsets[static_cast<std::size_t>(rank)], indptr, indices(), int32s(edge_w_file), node_w, ncon}; }
};

bool fits(std::span<const std::int64_t> load, std::span<const std::int64_t> add, std::span<const std::int64_t> limit) {
  for (std::size_t c = 0; c < limit.size(); ++c)
    if (add[c] > 0 && load[c] + add[c] > limit[c]) return false;
  return true;
}

// Sums v's edge weights by the group (cluster or part) of each neighbour into conn[group],
// listing each group touched once. group_of(u) < 0 leaves u out.
template <class View, class GroupOf>
void connections(const View& g, std::int64_t v, GroupOf group_of, std::vector<std::int64_t>& conn, std::vector<std::int64_t>& touched) {
  const auto vs = static_cast<std::size_t>(v);
  const std::int64_t self = g.first + v;
  for (std::int64_t e = g.indptr[vs]; e < g.indptr[vs + 1]; ++e) {
    const std::int64_t u = g.indices[static_cast<std::size_t>(e)];
    if (u == self) continue;
    const std::int64_t x = group_of(u);
    if (x < 0) continue;
    if (conn[static_cast<std::size_t>(x)] == 0) touched.push_back(x);
    conn[static_cast<std::size_t>(x)] += g.weight(e);
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

// Label propagation visits the nodes in runs of kVisitRun consecutive ids, the runs in a seeded
// random order: random enough for the clusters, and a run's rows lie together in the (mapped)
// CSR, so a pass reads each page once even when the graph is larger than the page cache.
constexpr std::int64_t kVisitRun = 1024;

std::vector<std::int64_t> visit_order(std::int64_t n, std::uint64_t seed) {
  std::vector<std::int64_t> runs(static_cast<std::size_t>((n + kVisitRun - 1) / kVisitRun)), order;
  std::iota(runs.begin(), runs.end(), 0);
  Rng rng(seed);
  seeded_shuffle(std::span<std::int64_t>(runs), rng);
  order.reserve(static_cast<std::size_t>(n));
  for (const std::int64_t r : runs)
    for (std::int64_t v = r * kVisitRun; v < std::min(n, (r + 1) * kVisitRun); ++v) order.push_back(v);
  return order;
}

// Size-constrained label propagation over this rank's rows: every node starts in its own cluster
// and joins the neighbouring cluster (of this range) it is most strongly connected to, while that
// cluster stays within `limit` in every constraint and, if max_members > 0, has at most that
// many members. Returns each row's cluster label (a row).
template <class View>
std::vector<std::int64_t> cluster(const View& g, std::span<const std::int64_t> limit, std::int64_t max_members, std::uint64_t seed) {
  const std::int64_t n = g.n();
  const auto nc = static_cast<std::size_t>(g.ncon);
  std::vector<std::int64_t> label(static_cast<std::size_t>(n)), weight(g.node_w.begin(), g.node_w.end()), conn(static_cast<std::size_t>(n), 0);
  std::iota(label.begin(), label.end(), 0);
  std::vector<std::int64_t> members(max_members > 0 ? static_cast<std::size_t>(n) : 0, 1);
  const auto joins = [&](std::int64_t to, std::span<const std::int64_t> wv) {
    return (max_members == 0 || members[static_cast<std::size_t>(to)] < max_members) &&
           fits(std::span<const std::int64_t>(weight).subspan(static_cast<std::size_t>(to) * nc, nc), wv, limit);
  };
  const auto join = [&](std::int64_t v, std::int64_t from, std::int64_t to, std::span<const std::int64_t> wv) {
    move_weight(weight, wv, from, to);
    label[static_cast<std::size_t>(v)] = to;
    if (max_members > 0) {
      --members[static_cast<std::size_t>(from)];
      ++members[static_cast<std::size_t>(to)];
    }
  };
  std::vector<std::int64_t> touched;
  const auto label_of = [&](std::int64_t u) { return g.owns(u) ? label[static_cast<std::size_t>(u - g.first)] : -1; };
  const std::vector<std::int64_t> order = visit_order(n, seed);
  for (int pass = 0; pass < kCoarsenPasses; ++pass) {
    std::int64_t moved = 0;
    for (const std::int64_t v : order) {
      const auto vs = static_cast<std::size_t>(v);
      connections(g, v, label_of, conn, touched);
      const std::int64_t cur = label[vs];
      const std::span<const std::int64_t> wv = g.node_w.subspan(vs * nc, nc);
      std::int64_t best = cur, best_conn = conn[static_cast<std::size_t>(cur)];
      for (const std::int64_t l : touched) {
        const auto ls = static_cast<std::size_t>(l);
        if (l != cur && conn[ls] > best_conn && joins(l, wv)) {
          best = l;
          best_conn = conn[ls];
        }
      }
      for (const std::int64_t l : touched) conn[static_cast<std::size_t>(l)] = 0;
      touched.clear();
      if (best == cur) continue;
      join(v, cur, best, wv);
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
    if (bin < 0 || !joins(bin, wv)) {
      bin = v;  // a new cluster, labelled by its first node
      continue;
    }
    join(v, v, bin, wv);
  }
  return label;
}

// Every rank's first entry of a range split (sizes in rank order), and the total, last.
std::vector<std::int64_t> range_offsets(const comm::Communicator& comm, std::int64_t mine) {
  const std::vector<std::int64_t> each = comm.allgatherv<std::int64_t>(std::span<const std::int64_t>(&mine, 1)).data;
  std::vector<std::int64_t> offsets(each.size() + 1, 0);
  std::partial_sum(each.begin(), each.end(), offsets.begin() + 1);
  return offsets;
}

// Numbers this rank's clusters 0 .. m-1 in the order of their first members (node order), puts
// each row's number in `map` and returns m.
std::int64_t number_clusters(std::span<const std::int64_t> label, std::vector<std::int32_t>& map) {
  const auto n = static_cast<std::int64_t>(label.size());
  map.assign(static_cast<std::size_t>(n), -1);
  std::int64_t m = 0;
  std::vector<std::int64_t> id(static_cast<std::size_t>(n), -1);
  for (std::int64_t v = 0; v < n; ++v) {
    auto& slot = id[static_cast<std::size_t>(label[static_cast<std::size_t>(v)])];
    if (slot < 0) slot = m++;
    map[static_cast<std::size_t>(v)] = static_cast<std::int32_t>(std::min<std::int64_t>(slot, std::numeric_limits<std::int32_t>::max()));
  }
  return m;
}

// The coarse id of every node this rank's rows reach, by global id: its own rows' (`map`, numbered
// from `first`), then those of other ranges (`offsets`), asked of their owners (sorted, so grouped
// by owner). Empty on one rank, where the map is the whole lookup.
template <class View>
std::vector<std::int32_t> reached_coarse_ids(const View& g, std::span<const std::int32_t> map, std::int64_t first, std::span<const std::int64_t> offsets,
                                             const comm::Communicator& comm) {
  const std::int64_t n = g.n(), global_n = offsets.back();
  const int ranks = comm.size();
  std::vector<std::int32_t> coarse_of(ranks == 1 ? 0 : static_cast<std::size_t>(global_n), -1);
  if (ranks == 1) return coarse_of;
  for (std::int64_t v = 0; v < n; ++v) coarse_of[static_cast<std::size_t>(g.first + v)] = static_cast<std::int32_t>(first + map[static_cast<std::size_t>(v)]);
  std::vector<std::uint64_t> reached(static_cast<std::size_t>(global_n + 63) / 64, 0);
  for (std::int64_t e = g.indptr[0]; e < g.indptr[static_cast<std::size_t>(n)]; ++e) {
    const std::int64_t u = g.indices[static_cast<std::size_t>(e)];
    if (!g.owns(u)) reached[static_cast<std::size_t>(u) >> 6] |= std::uint64_t{1} << (u & 63);
  }
  std::vector<std::int64_t> ask, ask_counts(static_cast<std::size_t>(ranks), 0);
  for (std::size_t w = 0; w < reached.size(); ++w)
    for (std::uint64_t bits = reached[w]; bits != 0; bits &= bits - 1) {
      const auto u = static_cast<std::int64_t>(w * 64 + static_cast<std::size_t>(std::countr_zero(bits)));
      ask.push_back(u);
      const auto owner = std::upper_bound(offsets.begin(), offsets.end(), u) - offsets.begin() - 1;
      ++ask_counts[static_cast<std::size_t>(owner)];
    }
  reached = {};
  std::vector<std::int64_t> asked_counts;
  auto asked_by = comm.alltoallv<std::int64_t>(ask, ask_counts);
  asked_counts = std::move(asked_by.counts);
  const std::vector<std::int64_t> asked = std::move(asked_by.data);
  std::vector<std::int32_t> answer(asked.size());
  for (std::size_t i = 0; i < asked.size(); ++i) answer[i] = coarse_of[static_cast<std::size_t>(asked[i])];
  const std::vector<std::int32_t> got = comm.alltoallv<std::int32_t>(answer, asked_counts).data;
  for (std::size_t i = 0; i < ask.size(); ++i) coarse_of[static_cast<std::size_t>(ask[i])] = got[i];
  return coarse_of;
}

// The coarse rows of this range (`m` coarse nodes from global id `first`, `c.map` holding each
// fine row's): summed node weights into `c.node_w`, the merged edges into `c.indptr` and spill
// files in `scratch`. `coarse_id` maps a neighbour's global id to its coarse id.
template <class View, class CoarseId>
void write_coarse_rows(const View& g, Level& c, std::int64_t m, std::int64_t first, CoarseId coarse_id, const std::string& scratch,
                       const comm::Communicator& comm) {
  const std::int64_t n = g.n();
  const auto nc = static_cast<std::size_t>(g.ncon);
  // The members of each coarse node of this range, by counting sort.
  std::vector<std::int64_t> start(static_cast<std::size_t>(m) + 1, 0), members(static_cast<std::size_t>(n));
  for (const std::int32_t x : c.map) ++start[static_cast<std::size_t>(x - first) + 1];
  std::partial_sum(start.begin(), start.end(), start.begin());
  {
    std::vector<std::int64_t> next(start.begin(), start.end() - 1);
    for (std::int64_t v = 0; v < n; ++v) members[static_cast<std::size_t>(next[static_cast<std::size_t>(c.map[static_cast<std::size_t>(v)] - first)]++)] = v;
  }
  c.node_w.assign(static_cast<std::size_t>(m) * nc, 0);
  c.indptr.assign(static_cast<std::size_t>(m) + 1, 0);
  std::vector<std::int64_t> acc(static_cast<std::size_t>(c.global_n()), 0), touched;
  std::vector<std::int32_t> row_y, row_w;
  constexpr std::int64_t kMaxWeight = std::numeric_limits<std::int32_t>::max();
  // One pass in coarse node order, each coarse row written out as it is complete; no collective
  // inside, so a rank's failure (a full disk) becomes every rank's at the end.
  agree(comm, [&] {
    SpillFile ys(scratch), ws(scratch);
    for (std::int64_t x = 0; x < m; ++x) {
      for (std::int64_t i = start[static_cast<std::size_t>(x)]; i < start[static_cast<std::size_t>(x) + 1]; ++i) {
        const auto v = static_cast<std::size_t>(members[static_cast<std::size_t>(i)]);
        for (std::int64_t e = g.indptr[v]; e < g.indptr[v + 1]; ++e) {
          const std::int64_t y = coarse_id(g.indices[static_cast<std::size_t>(e)]);
          if (y == first + x) continue;
          if (acc[static_cast<std::size_t>(y)] == 0) touched.push_back(y);
          acc[static_cast<std::size_t>(y)] += g.weight(e);
        }
        for (std::size_t k = 0; k < nc; ++k) c.node_w[static_cast<std::size_t>(x) * nc + k] += g.node_w[v * nc + k];
      }
      for (const std::int64_t y : touched) {
        row_y.push_back(static_cast<std::int32_t>(y));
        row_w.push_back(static_cast<std::int32_t>(std::min(acc[static_cast<std::size_t>(y)], kMaxWeight)));
        acc[static_cast<std::size_t>(y)] = 0;
      }
      c.indptr[static_cast<std::size_t>(x) + 1] = c.indptr[static_cast<std::size_t>(x)] + static_cast<std::int64_t>(touched.size());
      touched.clear();
      ys.append(row_y.data(), row_y.size() * sizeof(std::int32_t));
      ws.append(row_w.data(), row_w.size() * sizeof(std::int32_t));
      row_y.clear();
      row_w.clear();
    }
    c.indices_file = ys.map();
    c.edge_w_file = ws.map();
  });
}

// Each cluster as one node: summed node weights, edges between clusters merged (weights summed),
// edges inside a cluster dropped. Coarse ids follow the ranks' ranges, and within a range the
// clusters' first members in node order. `offsets` are the ranges of g's level; the coarse ids of
// neighbours in other ranges come from their owners. The coarse edges go to spill files in
// `scratch`.
template <class View>
Level contract(const View& g, std::vector<std::int64_t> label, std::span<const std::int64_t> offsets, const std::string& scratch,
               const comm::Communicator& comm) {
  const int ranks = comm.size();
  Level c;
  const std::int64_t m = number_clusters(label, c.map);
  label = {};
  c.offsets = range_offsets(comm, m);
  const std::int64_t coarse_n = c.global_n(), first = c.offsets[static_cast<std::size_t>(comm.rank())];
  agree(comm, [&] {
    if (coarse_n > std::numeric_limits<std::int32_t>::max()) throw std::length_error("metis-ml: a coarse graph beyond 32-bit node ids");
  });
  const std::vector<std::int32_t> coarse_of = reached_coarse_ids(g, c.map, first, offsets, comm);
  for (auto& x : c.map) x = static_cast<std::int32_t>(first + x);
  // One process: the map is the lookup (its range is the whole graph).
  const auto coarse_id = [&](std::int64_t u) -> std::int64_t {
    return ranks == 1 ? c.map[static_cast<std::size_t>(u)] : coarse_of[static_cast<std::size_t>(u)];
  };
  write_coarse_rows(g, c, m, first, coarse_id, scratch, comm);
  return c;
}

std::int64_t floor_div(std::int64_t a, std::int64_t b) { return a / b - (a % b != 0 && (a < 0) != (b < 0)); }

// The part weights refinement keeps to: every part's weight over all ranks (load) and on this rank
// (mine), this pass's change here (delta), and how far this rank may go in a pass: its share of a
// part's room (share), or, for a part over its limit, its share of the excess to shed, in
// proportion to its own weight there. Tables are [parts x ncon].
struct PartBudget {
  std::span<const std::int64_t> limit;
  std::size_t nc;
  std::int64_t ranks;
  std::vector<std::int64_t> mine, load, delta, share;

  bool room(std::int64_t p, std::span<const std::int64_t> wv) const {
    for (std::size_t c = 0; c < nc; ++c) {
      const auto i = static_cast<std::size_t>(p) * nc + c;
      if (wv[c] > 0 && delta[i] + wv[c] > share[i]) return false;
    }
    return true;
  }
  // Whether part p is over this rank's bound in a constraint that a node of weights wv counts in
  // (moving a node that weighs nothing there would not help).
  bool over(std::int64_t p, std::span<const std::int64_t> wv) const {
    for (std::size_t c = 0; c < nc; ++c)
      if (wv[c] > 0 && delta[static_cast<std::size_t>(p) * nc + c] > share[static_cast<std::size_t>(p) * nc + c]) return true;
    return false;
  }
  // How much moving a node of weights wv from `from` to `to` changes the parts' summed excess over
  // their bounds, each constraint relative to its limit: below zero, the move mends balance.
  double excess_change(std::int64_t from, std::int64_t to, std::span<const std::int64_t> wv) const {
    double change = 0;
    for (std::size_t c = 0; c < nc; ++c) {
      if (wv[c] == 0) continue;
      const auto i = static_cast<std::size_t>(from) * nc + c, j = static_cast<std::size_t>(to) * nc + c;
      const auto excess = [&](std::size_t at, std::int64_t add) { return std::max<std::int64_t>(0, delta[at] + add - share[at]); };
      change += static_cast<double>(excess(i, -wv[c]) - excess(i, 0) + excess(j, wv[c]) - excess(j, 0)) / static_cast<double>(std::max<std::int64_t>(1, limit[c]));
    }
    return change;
  }
  void shares() {
    for (std::size_t i = 0; i < load.size(); ++i) {
      const std::int64_t excess = load[i] - limit[i % nc];
      if (excess <= 0) share[i] = floor_div(-excess, ranks);
      else share[i] = -static_cast<std::int64_t>(std::ceil(static_cast<double>(excess) * (static_cast<double>(mine[i]) / static_cast<double>(load[i]))));
    }
  }
  // Whether part p would still weigh less than part `cur` in the first constraint after a node of
  // weights wv moved from cur to p: a move that costs no cut then evens the parts out (and the
  // reverse move cannot follow), which also walks refinement off plateaus of equal cut.
  std::int64_t at(std::int64_t q) const { return load[static_cast<std::size_t>(q) * nc] + delta[static_cast<std::size_t>(q) * nc]; }
  bool lighter(std::int64_t p, std::int64_t cur, std::span<const std::int64_t> wv) const { return at(p) + wv[0] < at(cur); }
  bool balanced() const {
    for (std::size_t i = 0; i < load.size(); ++i)
      if (load[i] > limit[i % nc]) return false;
    return true;
  }
};

// The part node v of `g` (in part `cur`, of weights wv) moves to in this pass; `cur` where it
// stays. `conn` (one per part, all 0) and `touched` are scratch, left clear.
template <class View, class PartOf>
std::int64_t best_part(const View& g, std::int64_t v, std::int64_t cur, std::span<const std::int64_t> wv, int k, const PartBudget& b, PartOf part_of,
                       std::vector<std::int64_t>& conn, std::vector<std::int64_t>& touched) {
  connections(g, v, part_of, conn, touched);
  const bool must = b.over(cur, wv);
  std::int64_t best = cur, best_conn = must ? std::numeric_limits<std::int64_t>::min() : conn[static_cast<std::size_t>(cur)];
  for (const std::int64_t p : touched)
    if (p != cur && (conn[static_cast<std::size_t>(p)] > best_conn || (!must && best == cur && conn[static_cast<std::size_t>(p)] == best_conn && b.lighter(p, cur, wv))) &&
        b.room(p, wv)) {
      best = p;
      best_conn = conn[static_cast<std::size_t>(p)];
    }
  for (const std::int64_t p : touched) conn[static_cast<std::size_t>(p)] = 0;
  touched.clear();
  if (must && best == cur) {
    std::int64_t lightest = -1;
    for (std::int64_t p = 0; p < k; ++p)
      if (p != cur && b.room(p, wv) && (lightest < 0 || b.at(p) < b.at(lightest))) lightest = p;
    if (lightest >= 0) best = lightest;
  }
  if (must && best == cur) {
    // No part has room for the node in every constraint (several constraints pulling
    // different ways): the move that most lowers the excess, if any does.
    double lowest = 0;
    for (std::int64_t p = 0; p < k; ++p)
      if (const double change = p != cur ? b.excess_change(cur, p, wv) : 0; change < lowest) {
        lowest = change;
        best = p;
      }
  }
  return best;
}

// Label propagation over parts on this rank's rows; `part` holds every node's part (global ids),
// kept current on every rank. A node moves to the adjacent part it is most connected to when that
// beats its own part's connection (or equals it and the part is lighter) and the part has room;
// a node of a part over its limit moves to the best adjacent part with room (or, with none
// adjacent, the lightest part with room) whatever the cut says. Within a pass a rank may use a 1/P share of each part's room, or must shed the
// share of a part's excess that its own nodes there hold, so that the ranks' moves together keep
// to the limits.
template <class View>
void refine(const View& g, std::vector<std::int32_t>& part, int k, std::span<const std::int64_t> limit, std::uint64_t seed,
            const comm::Communicator& comm) {
  const std::int64_t n = g.n();
  const auto nc = static_cast<std::size_t>(g.ncon);
  const std::int64_t ranks = comm.size();
  PartBudget b{limit, nc, ranks, std::vector<std::int64_t>(static_cast<std::size_t>(k) * nc, 0), {}, {}, {}};
  b.delta.resize(b.mine.size());
  b.share.resize(b.mine.size());
  std::vector<std::int64_t> conn(static_cast<std::size_t>(k), 0), touched;
  const auto part_of = [&](std::int64_t u) -> std::int64_t { return part[static_cast<std::size_t>(u)]; };
  for (std::int64_t v = 0; v < n; ++v)
    for (std::size_t c = 0; c < nc; ++c) b.mine[static_cast<std::size_t>(part_of(g.first + v)) * nc + c] += g.node_w[static_cast<std::size_t>(v) * nc + c];
  b.load = b.mine;
  comm.allreduce_inplace(std::span<std::int64_t>(b.load), Op::kSum);
  const std::vector<std::int64_t> order = visit_order(n, seed);
  std::vector<std::int64_t> moves;  // (node, new part) pairs of this pass
  for (int pass = 0; pass < kRefinePasses || (pass < kRefinePasses + kBalancePasses && !b.balanced()); ++pass) {
    b.shares();
    std::fill(b.delta.begin(), b.delta.end(), 0);
    moves.clear();
    for (const std::int64_t v : order) {
      const auto vs = static_cast<std::size_t>(v);
      const std::int64_t cur = part_of(g.first + v);
      const std::span<const std::int64_t> wv = g.node_w.subspan(vs * nc, nc);
      const std::int64_t best = best_part(g, v, cur, wv, k, b, part_of, conn, touched);
      if (best == cur) continue;
      move_weight(b.delta, wv, cur, best);
      part[static_cast<std::size_t>(g.first + v)] = static_cast<std::int32_t>(best);
      moves.push_back(g.first + v);
      moves.push_back(best);
    }
    std::int64_t moved = static_cast<std::int64_t>(moves.size() / 2);
    for (std::size_t i = 0; i < b.mine.size(); ++i) b.mine[i] += b.delta[i];
    comm.allreduce_inplace(std::span<std::int64_t>(b.delta), Op::kSum);
    for (std::size_t i = 0; i < b.load.size(); ++i) b.load[i] += b.delta[i];
    if (ranks > 1) {
      const std::vector<std::int64_t> all = comm.allgatherv<std::int64_t>(moves).data;
      for (std::size_t i = 0; i < all.size(); i += 2) part[static_cast<std::size_t>(all[i])] = static_cast<std::int32_t>(all[i + 1]);
      moved = static_cast<std::int64_t>(all.size() / 2);
    }
    if (moved == 0) break;
  }
}

// This rank's rows' parts, then every node's, from every rank.
std::vector<std::int32_t> gather_parts(std::vector<std::int32_t> mine, const comm::Communicator& comm) {
  if (comm.size() == 1) return mine;
  return comm.allgatherv<std::int32_t>(mine).data;
}

// Contiguous node ranges of the dataset's graph, one per rank, each with about the same number of
// nodes plus adjacency entries.
std::vector<std::int64_t> fine_offsets(const CsrGraph& graph, int ranks) {
  const std::int64_t n = graph.num_nodes(), total = n + graph.num_edges();
  std::vector<std::int64_t> offsets(static_cast<std::size_t>(ranks) + 1, n);
  offsets[0] = 0;
  const auto indptr = graph.indptr().span();
  for (int r = 1; r < ranks; ++r) {
    const std::int64_t want = total / ranks * r;
    std::int64_t lo = offsets[static_cast<std::size_t>(r) - 1], hi = n;
    while (lo < hi) {  // the first node v with v + indptr[v] >= want
      const std::int64_t mid = lo + (hi - lo) / 2;
      if (mid + indptr[static_cast<std::size_t>(mid)] < want) lo = mid + 1;
      else hi = mid;
    }
    offsets[static_cast<std::size_t>(r)] = lo;
  }
  return offsets;
}

// The dataset's graph as metis-ml partitions it: simple, with its edge weights, split into node
// ranges, and the balance weights of this rank's range.
struct FineInput {
  std::optional<BuiltGraph> cleaned;  // a simple copy, where the dataset's graph is not simple
  std::vector<std::int64_t> edge_w;   // empty: all 1
  std::vector<std::int64_t> offsets;  // every rank's first node, and the total, last
  std::vector<std::int64_t> node_w;   // ncon per node of this rank's range
  int ncon = 1;
  const CsrGraph& graph(const Dataset& ds) const { return cleaned ? cleaned->graph : ds.graph; }
};

FineInput fine_input(const Dataset& ds, const PartitionConfig& cfg, const comm::Communicator& comm) {
  FineInput in;
  // Coarse graphs of a simple graph are simple: clean the input once if it is not.
  if (cfg.edge_weights == EdgeWeighting::kEntropy) in.edge_w = entropy_edge_weights(ds);
  else if (!ds.edge_weights.empty()) in.edge_w.assign(ds.edge_weights.begin(), ds.edge_weights.end());
  in.cleaned = simple_copy_if_needed(ds, in.edge_w);
  if (in.cleaned) in.edge_w = std::move(in.cleaned->weights);
  in.offsets = fine_offsets(in.graph(ds), comm.size());
  const auto rank = static_cast<std::size_t>(comm.rank());
  // Balance weights of this rank's nodes, one row per node, as METIS's vertex weights (plain node
  // balance: all 1).
  const bool by_cost = std::find(cfg.balance.begin(), cfg.balance.end(), BalanceKey::kCost) != cfg.balance.end();
  std::vector<std::int64_t> cost;
  if (by_cost) cost = node_cost_weights(ds, cfg.cost_fanouts, cfg.cost_remote_weight);
  in.node_w = balance_weights(ds, cfg.balance, &in.ncon, cost, in.offsets[rank], in.offsets[rank + 1]);
  return in;
}

// A part's allowed weight per constraint, and a cluster's.
struct WeightLimits {
  std::vector<std::int64_t> part, cluster;
};

WeightLimits weight_limits(std::span<const std::int64_t> node_w, int ncon, const PartitionConfig& cfg, const comm::Communicator& comm) {
  const auto nc = static_cast<std::size_t>(ncon);
  WeightLimits limits{std::vector<std::int64_t>(nc), std::vector<std::int64_t>(nc)};
  std::vector<std::int64_t> total(nc, 0), heaviest(nc, 0);
  for (std::size_t i = 0; i < node_w.size(); ++i) {
    total[i % nc] += node_w[i];
    heaviest[i % nc] = std::max(heaviest[i % nc], node_w[i]);
  }
  comm.allreduce_inplace(std::span<std::int64_t>(total), Op::kSum);
  comm.allreduce_inplace(std::span<std::int64_t>(heaviest), Op::kMax);
  for (std::size_t c = 0; c < nc; ++c) {
    const double allowed = (1.0 + cfg.imbalance) * static_cast<double>(total[c]) / cfg.parts;
    limits.part[c] = std::max(heaviest[c], static_cast<std::int64_t>(std::floor(allowed)));
    limits.cluster[c] = std::max(heaviest[c], static_cast<std::int64_t>(allowed / kClusterShare));
  }
  return limits;
}

// The coarse levels above `finest` (whose ranges are `offsets`), finest first, until a graph is
// small enough or a level would hardly shrink it.
template <class Fine>
std::vector<Level> coarsen_levels(const Fine& finest, std::span<const std::int64_t> offsets, const CsrGraph& graph, std::span<const std::int64_t> cluster_limit,
                                  const PartitionConfig& cfg, const comm::Communicator& comm) {
  const int k = cfg.parts, rank = comm.rank();
  std::vector<Level> levels;
  std::string scratch = cfg.scratch_dir;
  agree(comm, [&] {
    if (scratch.empty()) scratch = std::filesystem::temp_directory_path().string();
  });
  const std::int64_t target = std::max<std::int64_t>(cfg.coarse_nodes > 0 ? cfg.coarse_nodes : kCoarseNodesPerPart * k, 2 * k);
  // Every rank reads the whole graph's degrees, so all take the same path.
  double degree_cv = 0;
  const std::int64_t max_members = degrees_skewed(graph, &degree_cv) ? 0 : kMeshMembers;
  if (max_members > 0 && rank == 0)
    std::fprintf(stderr, "metis-ml: degrees are not skewed (coefficient of variation %.2f): at most %lld nodes per cluster and level\n", degree_cv,
                 static_cast<long long>(kMeshMembers));
  // One more level from `g` (whose levels' ranges are `ranges`), unless it is small enough or would hardly shrink.
  auto coarsen = [&](const auto& g, std::span<const std::int64_t> ranges, int l) {
    const std::int64_t global_n = ranges.back();
    if (global_n <= target) return false;
    steps::begin("metis-ml: coarsen level " + std::to_string(l + 1) + " (from " + std::to_string(global_n) + " nodes)");
    Level next = contract(g, cluster(g, cluster_limit, max_members, derive_seed(cfg.seed, 0xc0a75e00ULL + static_cast<std::uint64_t>(l))), ranges, scratch, comm);
    if (next.global_n() * 10 > global_n * 9) return false;  // shrank by less than a tenth
    levels.push_back(std::move(next));
    return true;
  };
  for (int l = 0; l < kMaxLevels; ++l) {
    const bool more = levels.empty() ? coarsen(finest, offsets, l) : coarsen(levels.back().view(finest.ncon, rank), levels.back().offsets, l);
    if (!more) break;
  }
  return levels;
}

// `mine` summed over every rank.
std::int64_t summed(std::int64_t mine, const comm::Communicator& comm) {
  comm.allreduce_inplace(std::span<std::int64_t>(&mine, 1), Op::kSum);
  return mine;
}

// What the levels did, for the log: nodes and adjacency entries of each graph.
template <class Fine>
void log_levels(const Fine& finest, std::int64_t global_n, const std::vector<Level>& levels, const comm::Communicator& comm) {
  std::string sizes = std::to_string(global_n) + " nodes / " + std::to_string(summed(finest.indptr.back() - finest.indptr.front(), comm));
  for (const Level& lv : levels) sizes += " -> " + std::to_string(lv.global_n()) + " / " + std::to_string(summed(static_cast<std::int64_t>(lv.indices().size()), comm));
  if (comm.rank() == 0)
    std::fprintf(stderr, "metis-ml: %s%s; METIS partitions the coarsest\n", sizes.c_str(),
                 comm.size() > 1 ? (" (over " + std::to_string(comm.size()) + " ranks)").c_str() : "");
}

// The coarsest graph, whole on every rank, in METIS's arrays.
struct MetisGraph {
  std::vector<idx_t> xadj, adjncy, adjwgt;
  std::vector<std::int64_t> weights;  // ncon per node
};

template <class View>
MetisGraph gather_coarsest(const View& top, std::int64_t global_n, const std::string& dataset, const comm::Communicator& comm) {
  const auto idx_max = static_cast<std::int64_t>(std::numeric_limits<idx_t>::max());
  std::vector<std::int64_t> degrees(static_cast<std::size_t>(top.n())), adj(static_cast<std::size_t>(top.indptr.back() - top.indptr.front())), wgt;
  for (std::int64_t v = 0; v < top.n(); ++v) degrees[static_cast<std::size_t>(v)] = top.indptr[static_cast<std::size_t>(v) + 1] - top.indptr[static_cast<std::size_t>(v)];
  for (std::size_t e = 0; e < adj.size(); ++e) adj[e] = top.indices[static_cast<std::size_t>(top.indptr.front()) + e];
  // Weighted when any rank's rows are (a rank whose rows have no edges has no weights).
  std::int64_t weighted = top.edge_w.empty() ? 0 : 1;
  comm.allreduce_inplace(std::span<std::int64_t>(&weighted, 1), Op::kMax);
  if (weighted == 1) {
    wgt.resize(adj.size());
    // Summed weights are capped within METIS's own sums' headroom: they are only cut costs.
    for (std::size_t e = 0; e < wgt.size(); ++e) wgt[e] = std::min(top.weight(top.indptr.front() + static_cast<std::int64_t>(e)), idx_max / 64);
  }
  const std::int64_t total_entries = summed(static_cast<std::int64_t>(adj.size()), comm);
  agree(comm, [&] {
    if (global_n > idx_max || total_entries > idx_max)
      throw InputError("dataset '" + dataset + "': its coarsest graph (" + std::to_string(global_n) + " nodes, " + std::to_string(total_entries) +
                       " adjacency entries) still exceeds METIS's index range; use --method fennel, ldg or random");
  });
  MetisGraph mg;
  degrees = comm.allgatherv<std::int64_t>(degrees).data;
  mg.xadj.assign(degrees.size() + 1, 0);
  for (std::size_t v = 0; v < degrees.size(); ++v) mg.xadj[v + 1] = mg.xadj[v] + static_cast<idx_t>(degrees[v]);
  degrees = {};
  adj = comm.allgatherv<std::int64_t>(adj).data;
  mg.adjncy.assign(adj.begin(), adj.end());
  adj = {};
  if (weighted == 1) {
    wgt = comm.allgatherv<std::int64_t>(wgt).data;
    mg.adjwgt.assign(wgt.begin(), wgt.end());
    wgt = {};
  }
  mg.weights = comm.allgatherv<std::int64_t>(top.node_w).data;
  return mg;
}

// This rank's cut and whether its parts keep to the limits, as one key to minimise (ties go to the
// lowest rank).
std::int64_t choice_key(const MetisGraph& mg, std::span<const std::int32_t> part, int k, int ncon, std::span<const std::int64_t> part_limit,
                        const comm::Communicator& comm) {
  const auto nc = static_cast<std::size_t>(ncon);
  std::int64_t cut = 0;
  for (std::size_t v = 0; v + 1 < mg.xadj.size(); ++v)
    for (idx_t e = mg.xadj[v]; e < mg.xadj[v + 1]; ++e)
      if (part[v] != part[static_cast<std::size_t>(mg.adjncy[static_cast<std::size_t>(e)])]) cut += mg.adjwgt.empty() ? 1 : mg.adjwgt[static_cast<std::size_t>(e)];
  std::vector<std::int64_t> load(static_cast<std::size_t>(k) * nc, 0);
  for (std::size_t v = 0; v < part.size(); ++v)
    for (std::size_t c = 0; c < nc; ++c) load[static_cast<std::size_t>(part[v]) * nc + c] += mg.weights[v * nc + c];
  bool within = true;
  for (std::size_t i = 0; i < load.size(); ++i) within = within && load[i] <= part_limit[i % nc];
  const std::int64_t ranks = comm.size();
  const std::int64_t cap = (std::int64_t{1} << 58) / ranks;
  return -(((within ? 0 : cap + 1) + std::min(cut / 2, cap)) * ranks + comm.rank());
}

// METIS with a seed per rank on the coarsest graph; the lowest cut within the limits (then the
// lowest rank) is every rank's.
std::vector<std::int32_t> metis_on_coarsest(MetisGraph mg, int ncon, std::span<const std::int64_t> part_limit, const PartitionConfig& cfg, const std::string& dataset,
                                            const comm::Communicator& comm) {
  PartitionConfig mine = cfg;
  mine.seed = cfg.seed + static_cast<std::uint64_t>(comm.rank());
  std::vector<idx_t> p;
  agree(comm, [&] { p = metis_kway(mg.xadj, mg.adjncy, mg.adjwgt, mg.weights, ncon, mine, dataset); });
  std::vector<std::int32_t> part(p.begin(), p.end());
  if (comm.size() == 1) return part;
  std::int64_t key = choice_key(mg, part, cfg.parts, ncon, part_limit, comm);
  comm.allreduce_inplace(std::span<std::int64_t>(&key, 1), Op::kMax);
  const auto winner = static_cast<int>((-key) % comm.size());
  comm.broadcast_vector(part, winner);
  return part;
}

// Back down from the coarsest level's parts `part`, refining each level; returns every node's part
// of the finest graph.
template <class Fine>
std::vector<std::int32_t> project_and_refine(std::vector<Level>& levels, std::vector<std::int32_t> part, const Fine& finest, std::span<const std::int64_t> part_limit,
                                             const PartitionConfig& cfg, const comm::Communicator& comm) {
  for (std::size_t l = levels.size(); l-- > 0;) {
    std::vector<std::int32_t> finer(levels[l].map.size());
    for (std::size_t v = 0; v < finer.size(); ++v) finer[v] = part[static_cast<std::size_t>(levels[l].map[v])];
    levels[l] = {};  // its memory goes back before the next level's refinement
    part = {};
    part = gather_parts(std::move(finer), comm);
    const std::uint64_t seed = derive_seed(cfg.seed, 0x7ef10e00ULL + l);
    steps::begin("metis-ml: project and refine level " + std::to_string(l));
    if (l == 0) refine(finest, part, cfg.parts, part_limit, seed, comm);
    else refine(levels[l - 1].view(finest.ncon, comm.rank()), part, cfg.parts, part_limit, seed, comm);
  }
  return part;
}

}  // namespace

std::vector<PartId> metis_ml_partition(const Dataset& ds, const PartitionConfig& cfg, const comm::Communicator& comm) {
  const int rank = comm.rank();
  steps::begin("metis-ml: fine graph's input");
  const FineInput in = fine_input(ds, cfg, comm);
  const CsrGraph& graph = in.graph(ds);
  const WeightLimits limits = weight_limits(in.node_w, in.ncon, cfg, comm);
  const std::int64_t lo = in.offsets[static_cast<std::size_t>(rank)], hi = in.offsets[static_cast<std::size_t>(rank) + 1];
  return graph.visit([&](const auto& g) {
  using Id = typename std::decay_t<decltype(g)>::Id;
  const FineView<Id> finest{lo, graph.indptr().span().subspan(static_cast<std::size_t>(lo), static_cast<std::size_t>(hi - lo) + 1), g.indices(),
                            in.edge_w, in.node_w, in.ncon};
  auto t0 = Clock::now();
  std::vector<Level> levels = coarsen_levels(finest, in.offsets, graph, limits.cluster, cfg, comm);
  log_levels(finest, in.offsets.back(), levels, comm);
  const double coarsen_s = since(t0);
  t0 = Clock::now();
  steps::begin("metis-ml: METIS on the coarsest graph");
  std::vector<std::int32_t> part =
      metis_on_coarsest(levels.empty() ? gather_coarsest(finest, in.offsets.back(), ds.name, comm)
                                       : gather_coarsest(levels.back().view(in.ncon, rank), levels.back().global_n(), ds.name, comm),
                        in.ncon, limits.part, cfg, ds.name, comm);
  const double metis_s = since(t0);
  t0 = Clock::now();
  part = project_and_refine(levels, std::move(part), finest, limits.part, cfg, comm);
  if (rank == 0) std::fprintf(stderr, "metis-ml: coarsening %.1f s, METIS %.1f s, projection and refinement %.1f s\n", coarsen_s, metis_s, since(t0));
  return std::vector<PartId>(part.begin(), part.end());
  });
}

std::vector<PartId> MetisMlPartitioner::run(const Dataset& ds, const PartitionConfig& cfg) const { return metis_ml_partition(ds, cfg, comm::Communicator::one_rank()); }

std::vector<PartId> MetisMlPartitioner::run_spread(const Dataset& ds, const PartitionConfig& cfg, const comm::Communicator& comm) const {
  return metis_ml_partition(ds, cfg, comm);
}

}  // namespace shardgnn
