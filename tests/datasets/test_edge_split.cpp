// data split-edges: exact, keyed, leak-free splits; negatives that are non-edges; pre-split pair
// files; and validate catching a held-out edge left in the graph.
#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>

#include "datasets/dataset.hpp"
#include "datasets/edge_split.hpp"
#include "datasets/error.hpp"
#include "datasets/readers.hpp"
#include "test_paths.hpp"
#include "tests/graph_rows.hpp"

using namespace shardgnn;
using Catch::Matchers::Contains;
namespace fs = std::filesystem;

namespace {

using Edge = std::pair<NodeId, NodeId>;

std::set<Edge> undirected(const CsrGraph& g) {
  std::set<Edge> out;
  for (NodeId u = 0; u < g.num_nodes(); ++u)
    for (const NodeId v : row_of(g, u))
      if (u < v) out.insert({u, v});
  return out;
}

std::vector<Edge> rows(const Array<NodeId>& a) {
  std::vector<Edge> out;
  for (std::size_t i = 0; i + 1 < a.size(); i += 2) out.emplace_back(a[i], a[i + 1]);
  return out;
}

Dataset cora() {
  ReadOptions o;
  o.clean.symmetrize = o.clean.drop_self_loops = o.clean.drop_duplicates = true;
  return read_npz_dataset(test::sample("cora.npz"), o);
}

}  // namespace

TEST_CASE("split-edges holds out exact, disjoint shares of the undirected edges in both directions, with non-edge negatives", "[edge_split]") {
  const Dataset ds = cora();
  const std::set<Edge> all = undirected(ds.graph);
  test::ScratchDir scratch;
  EdgeSplitOptions o;
  o.seed = 7;
  o.eval_negatives = 5;
  EdgeSplitReport rep;
  const Dataset split = split_edges(ds, o, scratch.path(), rep);
  CHECK(rep.undirected_edges == static_cast<std::int64_t>(all.size()));
  CHECK(rep.val == std::llround(0.05 * static_cast<double>(all.size())));
  CHECK(rep.test == std::llround(0.10 * static_cast<double>(all.size())));
  const auto val = rows(split.val_pos), test = rows(split.test_pos);
  REQUIRE(static_cast<std::int64_t>(val.size()) == rep.val);
  REQUIRE(static_cast<std::int64_t>(test.size()) == rep.test);
  // The training graph is the rest, every held-out edge gone in both directions.
  std::set<Edge> held(val.begin(), val.end());
  held.insert(test.begin(), test.end());
  CHECK(held.size() == val.size() + test.size());
  std::set<Edge> train;
  std::set_difference(all.begin(), all.end(), held.begin(), held.end(), std::inserter(train, train.end()));
  CHECK(undirected(split.graph) == train);
  CHECK(split.graph.num_edges() == 2 * static_cast<EdgeId>(train.size()));
  for (const auto& [u, v] : held) {
    CHECK(u < v);
    CHECK(all.count({u, v}) == 1);
    CHECK_FALSE(split.graph.has_edge(v, u));
  }
  // Negatives: as many as positives, distinct, non-edges of the whole graph, val and test apart.
  const auto vn = rows(split.val_neg), tn = rows(split.test_neg);
  CHECK(vn.size() == val.size());
  CHECK(tn.size() == test.size());
  std::set<Edge> negs(vn.begin(), vn.end());
  negs.insert(tn.begin(), tn.end());
  CHECK(negs.size() == vn.size() + tn.size());
  for (const auto& [u, v] : negs) {
    CHECK(u < v);
    CHECK(all.count({u, v}) == 0);
  }
  // Ranking negatives: 5 non-neighbours of each positive's first node.
  REQUIRE(split.val_neg_dst.size() == 5 * val.size());
  for (std::size_t i = 0; i < split.val_neg_dst.size(); ++i) {
    const NodeId u = val[i / 5].first, w = split.val_neg_dst[i];
    CHECK(w != u);
    CHECK_FALSE(ds.graph.has_edge(u, w));
  }
  // Keyed: the same seed splits the same way, another seed otherwise.
  test::ScratchDir s2, s3;
  const Dataset again = split_edges(ds, o, s2.path(), rep);
  CHECK(rows(again.val_pos) == val);
  CHECK(rows(again.test_neg) == tn);
  o.seed = 8;
  CHECK(rows(split_edges(ds, o, s3.path(), rep).val_pos) != val);
}

TEST_CASE("split-edges saves and loads its arrays, and validate finds a held-out edge left in the graph", "[edge_split]") {
  const Dataset ds = cora();
  test::ScratchDir dir;
  EdgeSplitReport rep;
  EdgeSplitOptions o;
  o.eval_negatives = 3;
  {
    const Dataset split = split_edges(ds, o, dir.path(), rep);
    save_dataset(split, dir / "split", false);
  }
  const Dataset back = load_dataset(dir / "split");
  CHECK(back.edge_split);
  CHECK(back.eval_negatives == 3);
  CHECK(static_cast<std::int64_t>(back.val_pos.size()) == 2 * rep.val);
  CHECK(back.test_neg_dst.size() == 3 * back.test_pos.size() / 2);
  CHECK(validate_dataset(dir / "split").ok());
  // The held-out edges back in the graph: a leak validate names.
  Dataset leaky = cora();
  leaky.edge_split = true;
  leaky.eval_negatives = 3;
  leaky.val_pos = Array<NodeId>(std::vector<NodeId>(back.val_pos.begin(), back.val_pos.end()));
  leaky.val_neg = Array<NodeId>(std::vector<NodeId>(back.val_neg.begin(), back.val_neg.end()));
  leaky.test_pos = Array<NodeId>(std::vector<NodeId>(back.test_pos.begin(), back.test_pos.end()));
  leaky.test_neg = Array<NodeId>(std::vector<NodeId>(back.test_neg.begin(), back.test_neg.end()));
  leaky.val_neg_dst = Array<NodeId>(std::vector<NodeId>(back.val_neg_dst.begin(), back.val_neg_dst.end()));
  leaky.test_neg_dst = Array<NodeId>(std::vector<NodeId>(back.test_neg_dst.begin(), back.test_neg_dst.end()));
  save_dataset(leaky, dir / "leaky", false);
  const ValidationResult r = validate_dataset(dir / "leaky");
  REQUIRE_FALSE(r.ok());
  CHECK_THAT(r.errors.front(), Contains("val_pos_edges.npy") && Contains("is still in the graph (it would leak into training)"));
}

TEST_CASE("split-edges takes pre-split pair files in the input's ids, and refuses what it cannot split", "[edge_split]") {
  const Dataset ds = cora();
  test::ScratchDir dir;
  const auto all = undirected(ds.graph);
  auto it = all.begin();
  {
    std::ofstream val(dir / "val.txt"), test(dir / "test.txt");
    for (int i = 0; i < 10; ++i, ++it) val << it->second << " " << it->first << "\n";  // either order
    for (int i = 0; i < 20; ++i, ++it) test << it->first << "\t" << it->second << "\n";
  }
  EdgeSplitOptions o;
  o.val_file = dir / "val.txt";
  o.test_file = dir / "test.txt";
  EdgeSplitReport rep;
  const Dataset split = split_edges(ds, o, dir.path(), rep);
  CHECK(rep.val == 10);
  CHECK(rep.test == 20);
  CHECK(rows(split.val_pos).front() == *all.begin());
  CHECK(split.graph.num_edges() == ds.graph.num_edges() - 60);
  // A pair that is not an edge, a pair held out twice, a lone file.
  { std::ofstream(dir / "bad.txt") << "0 1\n" << all.begin()->first << " " << all.begin()->second << "\n"; }
  const bool edge01 = all.count({0, 1}) > 0;
  REQUIRE_FALSE(edge01);
  o.val_file = dir / "bad.txt";
  CHECK_THROWS_WITH(split_edges(ds, o, dir.path(), rep), Contains("bad.txt") && Contains("pair 1") && Contains("(0, 1) is not an edge of the graph"));
  { std::ofstream(dir / "twice.txt") << all.begin()->first << " " << all.begin()->second << "\n"; }
  o.val_file = dir / "twice.txt";
  o.test_file = dir / "val.txt";
  CHECK_THROWS_WITH(split_edges(ds, o, dir.path(), rep), Contains("val.txt") && Contains("held out twice"));
  o.test_file.clear();
  CHECK_THROWS_WITH(split_edges(ds, o, dir.path(), rep), Contains("go together"));
  // A directed graph, fractions that leave nothing, a dataset split already.
  Dataset d;
  d.name = "one-way";
  d.graph = CsrGraph(Array<EdgeId>(std::vector<EdgeId>{0, 1, 2, 2}), Array<NodeId>(std::vector<NodeId>{1, 2}));
  EdgeSplitOptions drawn;
  CHECK_THROWS_WITH(split_edges(d, drawn, dir.path(), rep), Contains("'one-way' is directed") && Contains("--symmetrize"));
  drawn.val = 0.6;
  drawn.test = 0.5;
  CHECK_THROWS_WITH(split_edges(ds, drawn, dir.path(), rep), Contains("sum below 1"));
  CHECK_THROWS_WITH(split_edges(split, EdgeSplitOptions{}, dir.path(), rep), Contains("already split"));
}
