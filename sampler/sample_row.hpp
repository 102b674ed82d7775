// Neighbour choice for one node, shared by the distributed sampler and the serial reference.
// The random stream is keyed by (seed, epoch, step, hop, the node's id in the source dataset), so
// a draw does not depend on which rank makes it, and a one-rank run (whose shard keeps the
// dataset's order) reproduces the serial reference exactly. Under other partitionings the draws
// have the same distribution but pick other neighbours: the keyed positions index the shard's
// row, which is sorted by the new ids.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <span>
#include <vector>

#include "datasets/graph.hpp"
#include "datasets/int_array.hpp"
#include "datasets/schema.hpp"
#include "partition/node_types.hpp"

namespace shardgnn {

inline std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// The key of one hop of one step; a node's key is node_key(hop_key(...), node).
inline std::uint64_t hop_key(std::uint64_t seed, std::int64_t epoch, std::int64_t step, int hop) {
  std::uint64_t k = splitmix64(seed ^ 0x5ad1e5a3c0ffee11ULL);
  k = splitmix64(k ^ static_cast<std::uint64_t>(epoch));
  k = splitmix64(k ^ static_cast<std::uint64_t>(step));
  return splitmix64(k ^ static_cast<std::uint64_t>(hop));
}
inline std::uint64_t node_key(std::uint64_t hop, std::int64_t node) { return splitmix64(hop ^ static_cast<std::uint64_t>(node)); }

// A tiny counter-based stream: fast, and fully determined by the key.
class KeyedStream {
 public:
  explicit KeyedStream(std::uint64_t key) : state_(key) {}
  std::uint64_t next() { return splitmix64(state_ += 0x9e3779b97f4a7c15ULL); }
  // Uniform in [0, n) (Lemire's multiply-shift; the bias is below 2^-32 for n < 2^32).
  std::uint64_t below(std::uint64_t n) {
    __extension__ using u128 = unsigned __int128;
    return static_cast<std::uint64_t>((static_cast<u128>(next()) * n) >> 64);
  }

 private:
  std::uint64_t state_;
};

// The neighbours chosen for one node of degree d, as positions 0..d-1 in its CSR row, written to
// pos (room for `fanout` entries). Returns how many, or -1 when the whole row is taken: fanout
// -1, or fanout >= d without replacement. Without replacement the choice is Floyd's algorithm and
// the positions are sorted (chosen neighbours keep their CSR order); with replacement `fanout`
// independent uniform draws.
inline int choose_neighbors(std::int64_t d, int fanout, bool replace, std::uint64_t key, std::int64_t* pos) {
  if (d == 0) return 0;
  if (fanout < 0 || (!replace && fanout >= d)) return -1;
  KeyedStream rng(key);
  if (replace) {
    for (int i = 0; i < fanout; ++i) pos[i] = static_cast<std::int64_t>(rng.below(static_cast<std::uint64_t>(d)));
    return fanout;
  }
  // Floyd: for j in d-k .. d-1, pick t in [0, j]; take t unless taken, else take j.
  int k = 0;
  for (std::int64_t j = d - fanout; j < d; ++j) {
    const auto t = static_cast<std::int64_t>(rng.below(static_cast<std::uint64_t>(j + 1)));
    const bool taken = std::find(pos, pos + k, t) != pos + k;
    pos[k++] = taken ? j : t;
  }
  // Fanouts are small: an insertion sort stays inline in every caller, where std::sort was called
  // out of line once a second sampler instantiated it.
  if (k > 64) {
    std::sort(pos, pos + k);
    return k;
  }
  for (int i = 1; i < k; ++i) {
    const std::int64_t x = pos[i];
    int j = i;
    for (; j > 0 && pos[j - 1] > x; --j) pos[j] = pos[j - 1];
    pos[j] = x;
  }
  return k;
}

// Samples the neighbours of many rows of one CSR graph: rows[i] (local ids of `graph`) is keyed
// by node_key(key, orig[rows[i]]) (key: the hop's hop_key; orig empty: the local id itself). Appends the chosen
// neighbours of each row to `out` and the end of each row's run in `out` to `ends`.
// Sampling is bound by memory latency, not arithmetic: the rows are random places in the CSR
// arrays. So offsets and keys are prefetched kFar rows ahead, and a row's neighbours are read
// kLag rows after its choice is made and their cache lines are prefetched.
// Compiled once per id width of the graph and of `orig` (sample_rows dispatches once per call).
template <class Idx, class OrigId>
void sample_rows_of(const CsrView<Idx>& graph, std::span<const OrigId> orig, std::span<const NodeId> rows, int fanout, bool replace, std::uint64_t key,
                    std::vector<NodeId>& out, std::vector<std::int64_t>& ends, std::vector<std::int64_t>& scratch) {
  constexpr std::size_t kFar = 16, kLag = 4, kRing = 8;
  static_assert(kLag < kRing, "a row's choice must outlive the rows chosen after it until it is emitted");
  struct Pending {
    EdgeId begin = 0, degree = 0;
    int chosen = 0;  // -1: the whole row
  };
  std::array<Pending, kRing> ring;
  const std::size_t F = fanout > 0 ? static_cast<std::size_t>(fanout) : 0;
  scratch.resize(kRing * F);
  const EdgeId* indptr = graph.indptr().data();
  const Idx* indices = graph.indices().data();
  const OrigId* ids = orig.empty() ? nullptr : orig.data();
  const std::size_t n = rows.size();
  auto emit = [&](std::size_t i) {
    const Pending& p = ring[i % kRing];
    const Idx* row = indices + p.begin;
    if (p.chosen < 0) {
      out.insert(out.end(), row, row + p.degree);
    } else {
      // Sized once, then written: a push_back per pick was a call per pick where it was not inlined.
      const std::int64_t* pos = scratch.data() + (i % kRing) * F;
      const std::size_t at = out.size();
      out.resize(at + static_cast<std::size_t>(p.chosen));
      for (int q = 0; q < p.chosen; ++q) out[at + static_cast<std::size_t>(q)] = row[pos[q]];
    }
    ends.push_back(static_cast<std::int64_t>(out.size()));
  };
  for (std::size_t i = 0; i < n; ++i) {
    if (i + kFar < n) {
      const NodeId u = rows[i + kFar];
      __builtin_prefetch(indptr + u);
      if (ids) __builtin_prefetch(ids + u);
    }
    const NodeId u = rows[i];
    const EdgeId b = indptr[u], d = indptr[u + 1] - b;
    std::int64_t* pos = scratch.data() + (i % kRing) * F;
    const int k = choose_neighbors(d, fanout, replace, node_key(key, ids ? ids[u] : u), pos);
    ring[i % kRing] = Pending{b, d, k};
    if (k < 0) {
      __builtin_prefetch(indices + b);
      if (d > 8) __builtin_prefetch(indices + b + 8);
    } else {
      std::uintptr_t last = 0;
      for (int q = 0; q < k; ++q) {
        const auto line = reinterpret_cast<std::uintptr_t>(indices + b + pos[q]) >> 6;
        if (line != last) __builtin_prefetch(indices + b + pos[q]);
        last = line;
      }
    }
    if (i >= kLag) emit(i - kLag);
  }
  for (std::size_t i = n > kLag ? n - kLag : 0; i < n; ++i) emit(i);
}

// Typed graphs: row u's neighbours grouped by node type (one relation joins u's type to each),
// each group sampled as choose_neighbors samples a row, with its relation's fanout
// (fanouts[relation]; a type no relation reaches from u's gives none), keyed by (node key, type).
// Emits each row's choice grouped by type, in type order, each group in row order. `types` gives
// any global id's type; rows[i] is global id first + rows[i]. Classifying a row walks it whole,
// so a typed hop costs O(degree) a row where an untyped one costs O(fanout).
template <class Idx, class OrigId>
void sample_typed_rows_of(const CsrView<Idx>& graph, std::span<const OrigId> orig, NodeId first, std::span<const NodeId> rows, const NodeTypeIndex& types,
                          const GraphSchema& schema, std::span<const int> fanouts, bool replace, std::uint64_t key, std::vector<NodeId>& out,
                          std::vector<std::int64_t>& ends, std::vector<std::vector<std::int64_t>>& groups, std::vector<std::int64_t>& pos) {
  const int T = types.num_types();
  groups.resize(static_cast<std::size_t>(T));
  for (const NodeId u : rows) {
    for (auto& g : groups) g.clear();
    const auto row = graph.neighbors(u);
    for (std::size_t j = 0; j < row.size(); ++j) groups[static_cast<std::size_t>(types(row[j]))].push_back(static_cast<std::int64_t>(j));
    const int tu = types(first + u);
    const std::uint64_t nk = node_key(key, orig.empty() ? u : static_cast<std::int64_t>(orig[static_cast<std::size_t>(u)]));
    for (int t = 0; t < T; ++t) {
      const auto& g = groups[static_cast<std::size_t>(t)];
      const int r = schema.relation_between(tu, t);
      if (g.empty() || r < 0) continue;
      const int fanout = fanouts[static_cast<std::size_t>(r)];
      pos.resize(static_cast<std::size_t>(std::max(fanout, 0)));
      const int k = choose_neighbors(static_cast<std::int64_t>(g.size()), fanout, replace, splitmix64(nk ^ static_cast<std::uint64_t>(t)), pos.data());
      if (k < 0) {
        for (const std::int64_t j : g) out.push_back(row[static_cast<std::size_t>(j)]);
      } else {
        for (int q = 0; q < k; ++q) out.push_back(row[static_cast<std::size_t>(g[static_cast<std::size_t>(pos[static_cast<std::size_t>(q)])])]);
      }
    }
    ends.push_back(static_cast<std::int64_t>(out.size()));
  }
}

// Graphs with relation ids: each row is one run per relation (ordered by relation, then
// neighbour), so a relation's neighbours are a range found by binary search on its relation ids, and
// each is sampled as choose_neighbors samples a row, with its relation's fanout, keyed by (node
// key, relation). Emits each row's choice run by run, in relation order, and each pick's relation
// into `out_rel`. O(relations in the row x log degree + picks) a row.
template <class Idx, class OrigId, class Rel>
void sample_relation_rows_of(const CsrView<Idx>& graph, std::span<const Rel> rel, std::span<const OrigId> orig, std::span<const NodeId> rows,
                             std::span<const int> fanouts, bool replace, std::uint64_t key, std::vector<NodeId>& out, std::vector<std::int64_t>& ends,
                             std::vector<std::int32_t>& out_rel, std::vector<std::int64_t>& pos) {
  const auto indices = graph.indices();
  for (const NodeId u : rows) {
    const EdgeId b = graph.indptr()[u], e = graph.indptr()[u + 1];
    const std::uint64_t nk = node_key(key, orig.empty() ? u : static_cast<std::int64_t>(orig[static_cast<std::size_t>(u)]));
    for (EdgeId a = b; a < e;) {
      const Rel r = rel[static_cast<std::size_t>(a)];
      const auto run_end = static_cast<EdgeId>(std::upper_bound(rel.begin() + a, rel.begin() + e, r) - rel.begin());
      const int fanout = fanouts[static_cast<std::size_t>(r)];
      pos.resize(static_cast<std::size_t>(std::max(fanout, 0)));
      const int k = choose_neighbors(run_end - a, fanout, replace, splitmix64(nk ^ static_cast<std::uint64_t>(r)), pos.data());
      const std::size_t before = out.size();
      if (k < 0) {
        out.insert(out.end(), indices.begin() + a, indices.begin() + run_end);
      } else {
        for (int q = 0; q < k; ++q) out.push_back(indices[static_cast<std::size_t>(a + pos[static_cast<std::size_t>(q)])]);
      }
      out_rel.insert(out_rel.end(), out.size() - before, static_cast<std::int32_t>(r));
      a = run_end;
    }
    ends.push_back(static_cast<std::int64_t>(out.size()));
  }
}

inline void sample_rows(const CsrGraph& graph, std::span<const NodeId> orig, std::span<const NodeId> rows, int fanout, bool replace, std::uint64_t key,
                        std::vector<NodeId>& out, std::vector<std::int64_t>& ends, std::vector<std::int64_t>& scratch) {
  graph.visit([&](const auto& g) { sample_rows_of(g, orig, rows, fanout, replace, key, out, ends, scratch); });
}
// The same keyed by a shard's original ids at their stored width.
inline void sample_rows(const CsrGraph& graph, const IntArray& orig, std::span<const NodeId> rows, int fanout, bool replace, std::uint64_t key,
                        std::vector<NodeId>& out, std::vector<std::int64_t>& ends, std::vector<std::int64_t>& scratch) {
  orig.visit([&](auto ids) { graph.visit([&](const auto& g) { sample_rows_of(g, ids, rows, fanout, replace, key, out, ends, scratch); }); });
}

}  // namespace shardgnn
