#include <catch2/catch.hpp>

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
