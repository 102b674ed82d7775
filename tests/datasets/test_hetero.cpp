#include <catch2/catch.hpp>

#include <numeric>

#include "datasets/dataset.hpp"
#include "datasets/error.hpp"
#include "datasets/hetero.hpp"
#include "graph_rows.hpp"
#include "test_paths.hpp"

using namespace shardgnn;
using Catch::Matchers::Contains;

namespace {
// A graph's rows and ids, whichever width it holds them at.
std::pair<std::vector<EdgeId>, std::vector<NodeId>> rows(const CsrGraph& g) {
  return {std::vector<EdgeId>(g.indptr().begin(), g.indptr().end()), ids_of(g)};
}
}  // namespace

TEST_CASE("the hetero generator's type counts follow IGB-Het's", "[hetero]") {
  // IGB-Het tiny and medium exactly; between them and below tiny as the docs say.
  CHECK(hetero_type_counts(100000) == std::vector<std::int64_t>{100000, 357041, 8738, 84220});
  CHECK(hetero_type_counts(10000000) == std::vector<std::int64_t>{10000000, 15544654, 23256, 415054});
  CHECK(hetero_type_counts(1000) == std::vector<std::int64_t>{1000, 3570, 87, 842});
  const auto mid = hetero_type_counts(3000000);
  CHECK(mid[1] > 1926066);
  CHECK(mid[1] < 15544654);
}

TEST_CASE("the hetero generator's graph is typed, symmetric, seeded and homophilous as asked", "[hetero]") {
  HeteroOptions o;
  o.papers = 3000;
  o.featureless = {"institute"};
  const Dataset a = generate_hetero(o);
  const GraphSchema& s = a.schema;
  REQUIRE(s.num_types() == 4);
  CHECK(s.types()[2].feature_dim == 0);
  CHECK(a.type_features[0].size() == static_cast<std::size_t>(3000 * 128));
  CHECK(a.type_features[2].size() == 0);
  REQUIRE(s.relations().size() == 7);
  check_relations(a.graph, s, "generated");  // throws on an entry outside every relation
  CHECK(a.cleaning.symmetric);
  // Each relation has as many entries as its reverse; cites is its own.
  const auto entries = relation_entries(a.graph, s);
  CHECK(entries[1] == entries[4]);  // written_by, rev_written_by
  CHECK(entries[2] == entries[5]);
  CHECK(entries[3] == entries[6]);
  CHECK(entries[2] == s.types()[1].count);  // one institute an author, no duplicates possible
  // Only papers are labelled, every one; the split is of papers.
  std::int64_t labelled = 0;
  for (NodeId v = 0; v < a.num_nodes(); ++v)
    if (a.labels[static_cast<std::size_t>(v)] >= 0) {
      CHECK(s.type_of(v) == 0);
      ++labelled;
    }
  CHECK(labelled == 3000);
  CHECK(a.train_idx.size() + a.val_idx.size() + a.test_idx.size() == 3000);
  // Citations join papers of one class at homophily + (1 - homophily) / classes, drawn or not.
  std::int64_t same = 0, cites = 0;
  const auto [indptr, indices] = rows(a.graph);
  for (NodeId p = 0; p < 3000; ++p)
    for (EdgeId e = indptr[static_cast<std::size_t>(p)]; e < indptr[static_cast<std::size_t>(p) + 1]; ++e)
      if (const NodeId q = indices[static_cast<std::size_t>(e)]; q < 3000) {
        ++cites;
        same += a.labels[static_cast<std::size_t>(p)] == a.labels[static_cast<std::size_t>(q)];
      }
  const double expected = o.homophily + (1 - o.homophily) / o.classes;
  CHECK(static_cast<double>(same) / static_cast<double>(cites) == Approx(expected).margin(0.02));

  const Dataset b = generate_hetero(o);
  CHECK(rows(a.graph) == rows(b.graph));
  CHECK(std::equal(a.type_features[1].begin(), a.type_features[1].end(), b.type_features[1].begin()));
  // Through bucket files: the same graph.
  test::ScratchDir dir;
  const Dataset c = generate_hetero(o, dir.path(), 1 << 16);
  CHECK(rows(a.graph) == rows(c.graph));
  CHECK(a.cleaning == c.cleaning);
}

TEST_CASE("the hetero generator refuses what it cannot make, in one line", "[hetero]") {
  HeteroOptions o;
  o.featureless = {"journal"};
  CHECK_THROWS_WITH(generate_hetero(o), Contains("unknown type 'journal'"));
  o = {};
  o.homophily = 1.5;
  CHECK_THROWS_WITH(generate_hetero(o), Contains("--homophily"));
}

TEST_CASE("the kg generator's relations shift the class as asked, and only together with the relation tell it", "[hetero]") {
  KgOptions o;
  o.entities = 4000;
  const Dataset a = generate_kg(o);
  const GraphSchema& s = a.schema;
  REQUIRE(s.num_types() == 1);
  REQUIRE(s.relations().size() == 16);
  CHECK(s.relation_ids());
  REQUIRE(a.edge_relations.size() == static_cast<std::size_t>(a.graph.num_edges()));
  CHECK(a.train_idx.size() + a.val_idx.size() + a.test_idx.size() == 4000);
  // Per relation: an edge of r joins class c to c + r with signal + (1 - signal) / classes; its
  // reverse rev_r (8 + r) the other way; over all relations every shift is as common as any.
  const int K = o.classes;
  std::vector<std::vector<std::int64_t>> shift(16, std::vector<std::int64_t>(static_cast<std::size_t>(K), 0));
  std::vector<std::int64_t> blind(static_cast<std::size_t>(K), 0);
  const auto [indptr, indices] = rows(a.graph);
  for (NodeId u = 0; u < 4000; ++u)
    for (EdgeId e = indptr[static_cast<std::size_t>(u)]; e < indptr[static_cast<std::size_t>(u) + 1]; ++e) {
      const auto r = static_cast<std::size_t>(a.edge_relations[static_cast<std::size_t>(e)]);
      const auto d = static_cast<std::size_t>(((a.labels[static_cast<std::size_t>(indices[static_cast<std::size_t>(e)])] - a.labels[static_cast<std::size_t>(u)]) % K + K) % K);
      ++shift[r][d];
      ++blind[d];
    }
  for (std::size_t r = 0; r < 16; ++r) {
    const std::int64_t total = std::accumulate(shift[r].begin(), shift[r].end(), std::int64_t{0});
    const auto want = static_cast<std::size_t>(r < 8 ? r : (K - (r - 8) % K) % K);
    INFO("relation " << r);
    CHECK(static_cast<double>(shift[r][want]) / static_cast<double>(total) == Approx(o.signal + (1 - o.signal) / K).margin(0.03));
  }
  const std::int64_t all = std::accumulate(blind.begin(), blind.end(), std::int64_t{0});
  for (const std::int64_t n : blind) CHECK(static_cast<double>(n) / static_cast<double>(all) == Approx(1.0 / K).margin(0.01));
  // Seeded: the same options give the same graph and ids.
  const Dataset b = generate_kg(o);
  CHECK(rows(a.graph) == rows(b.graph));
  CHECK(std::equal(a.edge_relations.begin(), a.edge_relations.end(), b.edge_relations.begin()));
  o.signal = 1.5;
  CHECK_THROWS_WITH(generate_kg(o), Contains("--signal"));
}
