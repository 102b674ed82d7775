// Golden counts for every real graph in ../shared/datasets (the table in its README). The small
// files ship in datasets/samples (the METIS meshes gzipped, byte-identical once inflated), so a
// fresh clone runs all but Amazon-Photo, which is read from ../shared when present.
#include <catch2/catch.hpp>

#include "datasets/readers.hpp"
#include "datasets/stats.hpp"
#include "test_paths.hpp"
#include "tests/graph_rows.hpp"

using namespace shardgnn;

namespace {

struct Golden {
  std::int64_t nodes, undirected, directed, features, classes, train, val, test;
};

void check(const Dataset& ds, const Golden& g) {
  const DatasetStats s = compute_stats(ds);
  CHECK(s.nodes == g.nodes);
  CHECK(s.undirected_edges == g.undirected);
  CHECK(s.directed_edges == g.directed);
  CHECK(s.feature_dim == g.features);
  CHECK(s.num_classes == g.classes);
  CHECK(s.train == g.train);
  CHECK(s.val == g.val);
  CHECK(s.test == g.test);
}

}  // namespace

TEST_CASE("golden: Cora (npz, Planetoid split)", "[golden]") {
  Dataset ds = read_dataset(test::sample("cora.npz"), {});
  check(ds, {2708, 5278, 10556, 1433, 7, 140, 500, 1000});
  CHECK(compute_stats(ds).symmetric);
  CHECK(compute_stats(ds).labelled == 2708);
}

TEST_CASE("golden: CiteSeer (npz, 15 unlabelled nodes)", "[golden]") {
  Dataset ds = read_dataset(test::sample("citeseer.npz"), {});
  check(ds, {3327, 4552, 9104, 3703, 6, 120, 500, 1000});
  CHECK(compute_stats(ds).labelled == 3327 - 15);
  CHECK(compute_stats(ds).symmetric);
}

TEST_CASE("golden: METIS meshes 4elt, copter2, mdual", "[golden]") {
  struct Mesh { const char* sample; const char* shared; std::int64_t n, m; };
  for (const Mesh& mesh : {Mesh{"4elt.graph", "metis/4elt.graph", 15606, 45878},
                           Mesh{"copter2.graph.gz", "metis/copter2.graph", 55476, 352238},
                           Mesh{"mdual.graph.gz", "metis/mdual.graph", 258569, 513132}}) {
    INFO(mesh.sample);
    Dataset ds = read_dataset(test::sample(mesh.sample), {});
    check(ds, {mesh.n, mesh.m, 2 * mesh.m, 0, 0, 0, 0, 0});
    const DatasetStats s = compute_stats(ds);
    CHECK(s.symmetric);
    CHECK(s.self_loops == 0);
    // The shipped gzip copies are the shared originals, byte for byte once inflated.
    if (std::string shared = test::shared_dataset(mesh.shared); !shared.empty()) {
      Dataset orig = read_dataset(shared, {});
      CHECK(ids_of(orig.graph) == ids_of(ds.graph));
    }
  }
}

TEST_CASE("golden: SNAP Slashdot (gzip edge list, self-loops, CRLF)", "[golden]") {
  ReadOptions raw_opts;
  Dataset raw = read_dataset(test::sample("soc-Slashdot0902.txt.gz"), raw_opts);
  CHECK(raw.num_nodes() == 82168);
  CHECK(raw.cleaning.input_entries == 948464);
  CHECK(raw.graph.num_edges() == 948464);
  CHECK(raw.node_ids.empty());  // ids 0..82167 all appear: no relabelling needed
  ReadOptions sym;
  sym.clean.symmetrize = true;
  Dataset ds = read_dataset(test::sample("soc-Slashdot0902.txt.gz"), sym);
  const DatasetStats s = compute_stats(ds);
  CHECK(s.undirected_edges == 504230);
  CHECK(s.symmetric);
  CHECK(s.self_loops > 0);
  sym.clean.drop_self_loops = true;
  Dataset clean = read_dataset(test::sample("soc-Slashdot0902.txt.gz"), sym);
  CHECK(clean.graph.num_edges() == 2 * 504230);
  CHECK(clean.cleaning.self_loops_dropped == s.self_loops);
}

TEST_CASE("golden: Amazon-Photo (npz, asymmetric adjacency, no split)", "[golden]") {
  const std::string path = test::shared_dataset("amazon-photo/amazon_electronics_photo.npz");
  if (path.empty()) {
    WARN("../shared/datasets/amazon-photo not present: Amazon-Photo golden counts skipped");
    return;
  }
  Dataset raw = read_dataset(path, {});
  const DatasetStats rs = compute_stats(raw);
  CHECK(rs.nodes == 7650);
  CHECK(rs.directed_edges == 143663);
  CHECK_FALSE(rs.symmetric);
  CHECK(rs.undirected_edges == 119081);
  CHECK(rs.feature_dim == 745);
  CHECK(rs.num_classes == 8);
  ReadOptions sym;
  sym.clean.symmetrize = true;
  Dataset ds = read_dataset(path, sym);
  const DatasetStats s = compute_stats(ds);
  CHECK(s.symmetric);
  CHECK(s.undirected_edges == 119081);
  CHECK(ds.cleaning.reverse_added == s.directed_edges - 143663);
}
