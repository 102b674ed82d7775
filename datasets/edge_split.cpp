#include "datasets/edge_split.hpp"

#include <boost/unordered/unordered_flat_map.hpp>
#include <boost/unordered/unordered_flat_set.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <functional>
#include <optional>
#include <tuple>
#include <vector>

#include "datasets/builder.hpp"
#include "datasets/error.hpp"
#include "datasets/npy.hpp"
#include "datasets/random.hpp"
#include "datasets/readers.hpp"
#include "datasets/text.hpp"

namespace fs = std::filesystem;

namespace shardgnn {

namespace {

using Pair = std::pair<NodeId, NodeId>;  // (u, v), u < v

enum Split : int { kTrain = 0, kVal = 1, kTest = 2 };

// Streams of the split's random draws.
constexpr std::uint64_t kEdgeHashStream = 0x5eed'ed9e, kNegativeStream = 0x5eed'0e9a, kRankStream = 0x5eed'4a4b;
constexpr int kBucketBits = 20;  // the histogram of the hashes' top bits: 8 MiB of counts


// Calls fn(u, v) for every undirected edge {u, v}, u < v, once (repeated entries of a multigraph
// give one edge), in row order.
template <class F>
void for_each_undirected(const CsrGraph& graph, F&& fn) {
  graph.visit([&](const auto& g) {
    for (NodeId u = 0; u < g.num_nodes(); ++u) {
      const auto row = g.neighbors(u);
      auto it = std::upper_bound(row.begin(), row.end(), u);
      for (NodeId prev = -1; it != row.end(); ++it)
        if (*it != prev) fn(u, prev = *it);
    }
  });
}

// Which split each undirected edge falls in: by hash rank (drawn) or by a set (pair files).
class Classifier {
 public:
  // Drawn: the k_val edges of lowest hash are validation, the next k_test test.
  Classifier(const CsrGraph& g, std::uint64_t seed, std::int64_t k_val, std::int64_t k_test) : key_(derive_seed(seed, kEdgeHashStream)) {
    std::vector<std::int64_t> count(std::size_t{1} << kBucketBits, 0);
    for_each_undirected(g, [&](NodeId u, NodeId v) { ++count[bucket(hash(u, v))]; });
    // start_[b]: the rank of bucket b's first edge in hash order.
    start_.assign(count.size() + 1, 0);
    for (std::size_t b = 0; b < count.size(); ++b) start_[b + 1] = start_[b] + count[b];
    t1_ = k_val;
    t2_ = k_val + k_test;
    // The edges of a bucket a boundary cuts through are ranked one by one.
    std::vector<std::tuple<std::uint64_t, NodeId, NodeId>> edge;
    for (const std::int64_t t : {t1_, t2_}) {
      const auto b = static_cast<std::size_t>(std::upper_bound(start_.begin(), start_.end(), t) - start_.begin()) - 1;
      if (b < count.size() && start_[b] < t && t < start_[b + 1]) cut_.push_back(b);
    }
    if (cut_.empty()) return;
    for_each_undirected(g, [&](NodeId u, NodeId v) {
      const std::uint64_t h = hash(u, v);
      if (std::find(cut_.begin(), cut_.end(), bucket(h)) != cut_.end()) edge.emplace_back(h, u, v);
    });
    std::sort(edge.begin(), edge.end());
    std::vector<std::int64_t> next(cut_.size());
    for (std::size_t i = 0; i < cut_.size(); ++i) next[i] = start_[cut_[i]];
    for (const auto& [h, u, v] : edge) {
      const std::size_t i = static_cast<std::size_t>(std::find(cut_.begin(), cut_.end(), bucket(h)) - cut_.begin());
      ranked_[{u, v}] = next[i]++;
    }
  }
  // Pair files: the held-out sets.
  Classifier(boost::unordered_flat_set<Pair> val, boost::unordered_flat_set<Pair> test) : val_(std::move(val)), test_(std::move(test)) {}

  Split operator()(NodeId u, NodeId v) const {
    if (u > v) std::swap(u, v);
    if (start_.empty()) return val_.contains({u, v}) ? kVal : test_.contains({u, v}) ? kTest : kTrain;
    const std::size_t b = bucket(hash(u, v));
    std::int64_t rank = start_[b];  // a bucket no boundary cuts through: any of its ranks will do
    if (std::find(cut_.begin(), cut_.end(), b) != cut_.end()) rank = ranked_.at({u, v});
    return rank < t1_ ? kVal : rank < t2_ ? kTest : kTrain;
  }

 private:
  std::uint64_t hash(NodeId u, NodeId v) const { return derive_seed(derive_seed(key_, static_cast<std::uint64_t>(u)), static_cast<std::uint64_t>(v)); }
  static std::size_t bucket(std::uint64_t h) { return static_cast<std::size_t>(h >> (64 - kBucketBits)); }

  std::uint64_t key_ = 0;
  std::vector<std::int64_t> start_;
  std::int64_t t1_ = 0, t2_ = 0;
  std::vector<std::size_t> cut_;
  boost::unordered_flat_map<Pair, std::int64_t> ranked_;
  boost::unordered_flat_set<Pair> val_, test_;
};

// The pairs of a text file of held-out edges, as dataset ids (u < v), each an edge of `g`.
std::vector<NodeId> read_pair_file(const std::string& path, const Dataset& ds, boost::unordered_flat_set<Pair>& seen) {
  boost::unordered_flat_map<std::int64_t, NodeId> index;  // original id -> dataset id
  for (std::size_t i = 0; i < ds.node_ids.size(); ++i) index[ds.node_ids[i]] = static_cast<NodeId>(i);
  const NodeId n = ds.num_nodes();
  std::vector<NodeId> out;
  for_each_text_chunk(path, [&](std::string_view text, std::uint64_t first_line) {
    RawEdges raw;
    parse_edge_list_text(text, path, first_line, raw);
    for (std::size_t i = 0; i < raw.src.size(); ++i) {
      // parse_edge_list_text counts lines, not pairs: the pair's line is found again for errors.
      const auto where = [&] { return "pair " + std::to_string(out.size() / 2 + 1); };
      NodeId ends[2] = {raw.src[i], raw.dst[i]};
      for (NodeId& x : ends) {
        if (ds.node_ids.empty()) {
          if (x < 0 || x >= n) throw InputError(path, where(), "node id " + std::to_string(x) + " out of range [0, " + std::to_string(n) + ")");
        } else {
          const auto it = index.find(x);
          if (it == index.end()) throw InputError(path, where(), "node id " + std::to_string(x) + " is not a node of the dataset (its node_ids.npy)");
          x = it->second;
        }
      }
      const NodeId u = std::min(ends[0], ends[1]), v = std::max(ends[0], ends[1]);
      if (u == v) throw InputError(path, where(), "a self-loop (" + std::to_string(raw.src[i]) + ", " + std::to_string(raw.dst[i]) + "), expected an edge between two nodes");
      if (!ds.graph.has_edge(u, v)) throw InputError(path, where(), "(" + std::to_string(raw.src[i]) + ", " + std::to_string(raw.dst[i]) + ") is not an edge of the graph");
      if (!seen.insert({u, v}).second) throw InputError(path, where(), "(" + std::to_string(raw.src[i]) + ", " + std::to_string(raw.dst[i]) + ") is held out twice");
      out.push_back(u);
      out.push_back(v);
    }
  });
  if (out.empty()) throw InputError(path, "", "no pairs, expected lines 'u v' of held-out edges");
  return out;
}

// `count` non-edges {u, v} of `g` (u < v), none in `taken` (which they join), drawn uniformly.
std::vector<NodeId> draw_negatives(const CsrGraph& g, std::int64_t count, Rng& rng, boost::unordered_flat_set<Pair>& taken, const char* split) {
  const NodeId n = g.num_nodes();
  boost::random::uniform_int_distribution<NodeId> node(0, n - 1);
  std::vector<NodeId> out;
  out.reserve(static_cast<std::size_t>(2 * count));
  std::int64_t tries = 0;
  const std::int64_t cap = 1000 + 100 * count;
  while (static_cast<std::int64_t>(out.size()) < 2 * count) {
    if (++tries > cap)
      throw InputError("the graph is too dense to draw " + std::to_string(count) + " distinct " + split + " non-edges (" + std::to_string(out.size() / 2) +
                       " found in " + std::to_string(cap) + " draws)");
    const NodeId a = node(rng), b = node(rng);
    const NodeId u = std::min(a, b), v = std::max(a, b);
    if (u == v || g.has_edge(u, v) || !taken.insert({u, v}).second) continue;
    out.push_back(u);
    out.push_back(v);
  }
  return out;
}

// For each positive (u, v): `k` destinations w != u with (u, w) not an edge of `g`, drawn
// uniformly (repeats allowed, as in OGB's random negatives), written row by row to `path` (they
// are the largest held-out array: k ids an edge) and mapped from there.
Array<NodeId> draw_rank_negatives(const CsrGraph& g, std::span<const NodeId> pos, std::int64_t k, Rng& rng, const char* split, const std::string& path) {
  const NodeId n = g.num_nodes();
  boost::random::uniform_int_distribution<NodeId> node(0, n - 1);
  const std::vector<std::int64_t> shape{static_cast<std::int64_t>(pos.size() / 2), k};
  write_npy_streamed(path, DType::kInt64, shape, [&](const NpySink& sink) {
    std::vector<NodeId> row;
    for (std::size_t p = 0; p < pos.size(); p += 2) {
      const NodeId u = pos[p];
      row.clear();
      for (std::int64_t tries = 0; static_cast<std::int64_t>(row.size()) < k;) {
        if (++tries > 1000 + 100 * k)
          throw InputError("node " + std::to_string(u) + " of a " + split + " edge neighbours almost every node: no " + std::to_string(k) + " non-neighbours found to rank it against");
        const NodeId w = node(rng);
        if (w != u && !g.has_edge(u, w)) row.push_back(w);
      }
      sink(row.data(), row.size() * sizeof(NodeId));
    }
  });
  return npy_view<NodeId>(map_npy(path), 2);
}

}  // namespace

Dataset split_edges(const Dataset& ds, const EdgeSplitOptions& o, const std::string& scratch, EdgeSplitReport& report) {
  const CsrGraph& g = ds.graph;
  const NodeId n = ds.num_nodes();
  if (ds.edge_split) throw InputError("'" + ds.name + "' is already split into training and held-out edges; split the dataset it came from");
  if (!ds.cleaning.symmetric && !is_symmetric(g))
    throw InputError("'" + ds.name + "' is directed: split-edges holds out undirected edges (convert it with --symmetrize)");
  if (!ds.edge_weights.empty()) throw InputError("'" + ds.name + "' has edge weights, which split-edges does not carry over");
  if (o.eval_negatives < 0) throw InputError("--eval-negatives must be 0 or more, got " + std::to_string(o.eval_negatives));
  if (o.val_file.empty() != o.test_file.empty()) throw InputError("--val-edges and --test-edges go together: give both files, or neither to draw the split");
  report = {};
  for_each_undirected(g, [&](NodeId, NodeId) { ++report.undirected_edges; });

  Dataset out;
  std::vector<NodeId> val_pos, test_pos;
  std::optional<Classifier> split;
  if (o.val_file.empty()) {
    if (!(o.val >= 0 && o.test >= 0 && o.val + o.test < 1))
      throw InputError("--val and --test must be fractions of at least 0 that sum below 1, got " + std::to_string(o.val) + " and " + std::to_string(o.test));
    const auto k_val = static_cast<std::int64_t>(std::llround(o.val * static_cast<double>(report.undirected_edges)));
    const auto k_test = static_cast<std::int64_t>(std::llround(o.test * static_cast<double>(report.undirected_edges)));
    if (k_val == 0 || k_test == 0 || k_val + k_test >= report.undirected_edges)
      throw InputError("'" + ds.name + "' has " + std::to_string(report.undirected_edges) + " undirected edges: --val " + std::to_string(o.val) + " and --test " +
                       std::to_string(o.test) + " hold out " + std::to_string(k_val) + " and " + std::to_string(k_test) + ", expected at least one each and some left to train on");
    split.emplace(g, o.seed, k_val, k_test);
  } else {
    boost::unordered_flat_set<Pair> seen;
    val_pos = read_pair_file(o.val_file, ds, seen);
    boost::unordered_flat_set<Pair> val(seen.begin(), seen.end());
    test_pos = read_pair_file(o.test_file, ds, seen);  // `seen` refuses a pair of both files
    boost::unordered_flat_set<Pair> test;
    for (std::size_t i = 0; i < test_pos.size(); i += 2) test.insert({test_pos[i], test_pos[i + 1]});
    if (static_cast<std::int64_t>(seen.size()) >= report.undirected_edges) throw InputError(o.test_file, "", "the two files hold out every edge: none is left to train on");
    split.emplace(std::move(val), std::move(test));
  }

  // The training graph: held-out edges leave in both directions; drawn positives are collected
  // in row order.
  const bool drawn = o.val_file.empty();
  std::vector<EdgeId> indptr(static_cast<std::size_t>(n) + 1, 0);
  g.visit([&](const auto& view) {
    for (NodeId u = 0; u < n; ++u) {
      EdgeId kept = 0;
      NodeId prev = -1;
      for (const NodeId v : view.neighbors(u)) {
        if (u == v) { ++kept; continue; }
        const Split s = (*split)(u, v);
        if (s == kTrain) ++kept;
        else if (drawn && u < v && v != prev) (s == kVal ? val_pos : test_pos).insert((s == kVal ? val_pos : test_pos).end(), {u, v});
        prev = v;
      }
      indptr[static_cast<std::size_t>(u) + 1] = indptr[static_cast<std::size_t>(u)] + kept;
    }
  });
  report.val = static_cast<std::int64_t>(val_pos.size() / 2);
  report.test = static_cast<std::int64_t>(test_pos.size() / 2);
  report.train_entries = indptr.back();
  const std::string indptr_path = (fs::path(scratch) / "indptr.npy").string(), indices_path = (fs::path(scratch) / "indices.npy").string();
  write_npy(indptr_path, std::span<const EdgeId>(indptr));
  indptr = {};
  const std::int64_t total = report.train_entries;
  // Written at the input's width, which the training graph's ids keep.
  g.visit([&](const auto& view) {
    using Id = typename std::decay_t<decltype(view)>::Id;
    write_npy_streamed(indices_path, dtype_of<Id>(), std::span<const std::int64_t>(&total, 1), [&](const NpySink& sink) {
      std::vector<Id> row;
      for (NodeId u = 0; u < n; ++u) {
        row.clear();
        for (const Id v : view.neighbors(u))
          if (u == v || (*split)(u, v) == kTrain) row.push_back(v);
        sink(row.data(), row.size() * sizeof(Id));
      }
    });
  });
  out.graph = map_csr(ExternalCsr{indptr_path, indices_path, {}});

  // Negatives come from the whole graph's non-edges, so none is a held-out positive either.
  Rng rng(derive_seed(o.seed, kNegativeStream));
  boost::unordered_flat_set<Pair> taken;
  out.val_neg = Array<NodeId>(draw_negatives(g, report.val, rng, taken, "validation"));
  out.test_neg = Array<NodeId>(draw_negatives(g, report.test, rng, taken, "test"));
  if (o.eval_negatives > 0) {
    Rng rank_rng(derive_seed(o.seed, kRankStream));
    out.val_neg_dst = draw_rank_negatives(g, val_pos, o.eval_negatives, rank_rng, "validation", (fs::path(scratch) / "val_neg_dst.npy").string());
    out.test_neg_dst = draw_rank_negatives(g, test_pos, o.eval_negatives, rank_rng, "test", (fs::path(scratch) / "test_neg_dst.npy").string());
  }
  out.val_pos = Array<NodeId>(std::move(val_pos));
  out.test_pos = Array<NodeId>(std::move(test_pos));
  out.edge_split = true;
  out.eval_negatives = o.eval_negatives;

  out.name = ds.name;
  out.source = ds.source;
  share_part<FeatureTable>(out, ds);
  share_part<NodeLabels>(out, ds);
  out.train_idx = view_of(ds.train_idx);
  out.val_idx = view_of(ds.val_idx);
  out.test_idx = view_of(ds.test_idx);
  out.node_ids = view_of(ds.node_ids);
  out.node_weight_dim = ds.node_weight_dim;
  out.node_weights = view_of(ds.node_weights);
  out.cleaning = ds.cleaning;
  out.cleaning.symmetric = true;
  out.cleaning.output_entries = report.train_entries;
  return out;
}

}  // namespace shardgnn
