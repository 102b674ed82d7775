#include <catch2/catch.hpp>

#include <filesystem>

#include "datasets/builder.hpp"
#include "datasets/generators.hpp"
#include "datasets/npy.hpp"
#include "test_paths.hpp"
#include "tests/graph_rows.hpp"

using namespace shardgnn;

namespace {

EdgeList edges(std::int64_t n, std::vector<std::pair<NodeId, NodeId>> list) {
  EdgeList el;
  el.num_nodes = n;
  for (auto [u, v] : list) {
    el.src.push_back(u);
    el.dst.push_back(v);
  }
  return el;
}

std::vector<std::vector<NodeId>> rows(const CsrGraph& g) {
  std::vector<std::vector<NodeId>> r;
  for (NodeId u = 0; u < g.num_nodes(); ++u) r.push_back(row_of(g, u));
  return r;
}

}  // namespace

// 0 -> 1 -> 2      (directed, 1 -> 2 given twice), 2 -> 2 self-loop, 3 isolated, 2 -> 0
TEST_CASE("build_csr keeps the input as is when no option is set, rows sorted", "[builder]") {
  auto b = build_csr(edges(4, {{1, 2}, {0, 1}, {2, 2}, {1, 2}, {2, 0}}), {});
  CHECK(rows(b.graph) == std::vector<std::vector<NodeId>>{{1}, {2, 2}, {0, 2}, {}});
  CHECK(b.report.input_entries == 5);
  CHECK(b.report.output_entries == 5);
  CHECK(b.report.reverse_added + b.report.self_loops_dropped + b.report.duplicates_dropped == 0);
}

TEST_CASE("build_csr cleaning options and their counts", "[builder]") {
  const auto in = [] { return edges(4, {{1, 2}, {0, 1}, {2, 2}, {1, 2}, {2, 0}}); };
  SECTION("drop self-loops") {
    auto b = build_csr(in(), {false, true, false});
    CHECK(rows(b.graph) == std::vector<std::vector<NodeId>>{{1}, {2, 2}, {0}, {}});
    CHECK(b.report.self_loops_dropped == 1);
  }
  SECTION("drop duplicates") {
    auto b = build_csr(in(), {false, false, true});
    CHECK(rows(b.graph) == std::vector<std::vector<NodeId>>{{1}, {2}, {0, 2}, {}});
    CHECK(b.report.duplicates_dropped == 1);
  }
  SECTION("symmetrize keeps multiplicities: (1,2) twice needs (2,1) twice") {
    auto b = build_csr(in(), {true, false, false});
    CHECK(rows(b.graph) == std::vector<std::vector<NodeId>>{{1, 2}, {0, 2, 2}, {0, 1, 1, 2}, {}});
    CHECK(b.report.reverse_added == 4);  // (1,0), (2,1) x2, (0,2)
    CHECK(b.report.output_entries == 9);
  }
  SECTION("all three: the simple undirected graph") {
    auto b = build_csr(in(), {true, true, true});
    CHECK(rows(b.graph) == std::vector<std::vector<NodeId>>{{1, 2}, {0, 2}, {0, 1}, {}});
    CHECK(b.report.reverse_added == 3);
    CHECK(b.report.self_loops_dropped == 1);
    CHECK(b.report.duplicates_dropped == 1);
    CHECK(b.report.output_entries == 6);
  }
}

TEST_CASE("symmetrize adds nothing to a graph that is already symmetric", "[builder]") {
  //  0 - 1 - 2 - 0 (triangle)
  auto b = build_csr(edges(3, {{0, 1}, {1, 0}, {1, 2}, {2, 1}, {2, 0}, {0, 2}}), {true, false, false});
  CHECK(b.report.reverse_added == 0);
  CHECK(b.report.output_entries == 6);
}

TEST_CASE("weights travel with their edges through sorting and cleaning", "[builder]") {
  EdgeList el = edges(3, {{0, 2}, {0, 1}, {1, 0}, {0, 1}});
  el.weight = {7, 3, 3, 5};
  auto b = build_csr(std::move(el), {false, false, true});
  CHECK(rows(b.graph) == std::vector<std::vector<NodeId>>{{1, 2}, {0}, {}});
  // The duplicate (0,1) keeps the smaller weight deterministically; (0,2) keeps 7.
  CHECK(b.weights == std::vector<std::int64_t>{3, 7, 3});
}

namespace {
// An existing CSR cleaned again through build_csr (as a reader of a CSR file would).
BuiltGraph rebuild_csr(const CsrGraph& g, const CleanOptions& options) {
  EdgeList el;
  el.num_nodes = g.num_nodes();
  el.src.resize(static_cast<std::size_t>(g.num_edges()));
  el.dst = ids_of(g);
  for (NodeId u = 0; u < g.num_nodes(); ++u)
    std::fill(el.src.begin() + g.indptr()[u], el.src.begin() + g.indptr()[u + 1], u);
  return build_csr(std::move(el), options);
}
}  // namespace

TEST_CASE("rebuild_csr re-cleans an existing CSR", "[builder]") {
  auto b = build_csr(edges(3, {{0, 1}, {1, 2}}), {});
  auto r = rebuild_csr(b.graph, {true, false, false});
  CHECK(rows(r.graph) == std::vector<std::vector<NodeId>>{{1}, {0, 2}, {1}});
  CHECK(r.report.reverse_added == 2);
}

TEST_CASE("the bounded build through bucket files gives build_csr's graph and report", "[builder][external]") {
  RmatOptions r;
  r.scale = 10;
  r.edge_factor = 8;
  r.seed = 3;
  const std::int64_t m = std::int64_t{8} << 10;
  for (const CleanOptions clean : {CleanOptions{}, CleanOptions{true, false, false}, CleanOptions{true, true, true}, CleanOptions{false, true, true}}) {
    INFO("symmetrize " << clean.symmetrize << ", drop self-loops " << clean.drop_self_loops << ", drop duplicates " << clean.drop_duplicates);
    const BuiltGraph want = build_csr(generate_rmat_edges(r), clean);
    // 64 KiB for the entries: 2 to 4 thousand of 16 bytes, so several buckets of node ranges.
    for (const std::uint64_t memory : {std::uint64_t{64} << 10, std::uint64_t{1} << 30}) {
      INFO("memory " << memory);
      test::ScratchDir dir;
      const ExternalCsr got = build_csr_external(
          std::int64_t{1} << r.scale, m, [&](const EdgeSink& sink) { generate_rmat_stream(r, 1000, sink); }, clean, dir.str(), memory);
      const CsrGraph g = map_csr(got);
      CHECK(rows(g) == rows(want.graph));
      CHECK(got.report == want.report);
      // Only the two arrays are left in the scratch folder.
      CHECK(std::distance(std::filesystem::directory_iterator(dir.str()), std::filesystem::directory_iterator{}) == 2);
    }
  }
}

TEST_CASE("R-MAT's edge stream is generate_rmat_edges in pieces", "[builder][external]") {
  RmatOptions r;
  r.scale = 9;
  r.edge_factor = 4;
  const EdgeList all = generate_rmat_edges(r);
  std::vector<NodeId> src, dst;
  std::size_t pieces = 0;
  generate_rmat_stream(r, 777, [&](std::span<const NodeId> s, std::span<const NodeId> d) {
    CHECK(s.size() <= 777);
    src.insert(src.end(), s.begin(), s.end());
    dst.insert(dst.end(), d.begin(), d.end());
    ++pieces;
  });
  CHECK(src == all.src);
  CHECK(dst == all.dst);
  CHECK(pieces == (all.src.size() + 776) / 777);
}
