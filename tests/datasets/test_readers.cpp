// The input readers on tiny hand-made inputs whose every expected number is worked out by hand:
// the OGB fixture, METIS in all its header variants, SNAP-style edge lists (plain and gzip), and
// how the cleaning options change the counts in Dataset::cleaning.
#include <zlib.h>

#include <catch2/catch.hpp>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <tuple>
#include <string>
#include <string_view>
#include <vector>

#include "datasets/readers.hpp"
#include "datasets/npy.hpp"
#include "datasets/schema.hpp"
#include "datasets/text.hpp"
#include "datasets/writers.hpp"
#include "test_paths.hpp"
#include "tests/graph_rows.hpp"

namespace fs = std::filesystem;
using namespace shardgnn;
using shardgnn::test::ScratchDir;
using Catch::Matchers::Contains;

namespace {

using Rows = std::vector<std::vector<NodeId>>;

Rows rows_of(const CsrGraph& g) {
  Rows r;
  for (NodeId u = 0; u < g.num_nodes(); ++u) {
    auto nb = row_of(g, u);
    r.emplace_back(nb.begin(), nb.end());
  }
  return r;
}

template <class T>
std::vector<T> vec(const Array<T>& a) {
  return std::vector<T>(a.begin(), a.end());
}
std::vector<std::int64_t> vec(const IntArray& a) { return a.widened(); }

void write_text(const std::string& path, std::string_view text) {
  std::ofstream f(path, std::ios::binary);
  f.write(text.data(), static_cast<std::streamsize>(text.size()));
  REQUIRE(f.good());
}

void write_gz(const std::string& path, std::string_view text) {
  gzFile f = gzopen(path.c_str(), "wb");
  REQUIRE(f != nullptr);
  REQUIRE(gzwrite(f, text.data(), static_cast<unsigned>(text.size())) == static_cast<int>(text.size()));
  REQUIRE(gzclose(f) == Z_OK);
}

ReadOptions opts(bool symmetrize = false, bool drop_self_loops = false, bool drop_duplicates = false) {
  ReadOptions o;
  o.clean.symmetrize = symmetrize;
  o.clean.drop_self_loops = drop_self_loops;
  o.clean.drop_duplicates = drop_duplicates;
  return o;
}

void check_report(const CleanReport& r, std::int64_t in, std::int64_t rev, std::int64_t self, std::int64_t dup, std::int64_t out) {
  CHECK(r.input_entries == in);
  CHECK(r.reverse_added == rev);
  CHECK(r.self_loops_dropped == self);
  CHECK(r.duplicates_dropped == dup);
  CHECK(r.output_entries == out);
}

// A copy of the OGB fixture that a test may modify.
std::string copy_ogb_fixture(const ScratchDir& dir) {
  const std::string dst = dir / "ogb-tiny";
  fs::copy(test::fixture("ogb-tiny"), dst, fs::copy_options::recursive);
  return dst;
}

}  // namespace

// The fixture (tests/fixtures/make_ogb_tiny.sh writes it):
//
//   0 <-> 1          6 ---> 7          9   (isolated, unlabelled: label "nan")
//    \   /            ^     |
//     v v              \    v
//      2 ---> 3         `-- 8
//             ^ \    (a cycle 3 -> 4 -> 5 -> 3)
//             |  v
//             5 <- 4
//
// edge.csv.gz: 0,1 1,0 0,2 1,2 2,3 3,4 4,5 5,3 6,7 7,8 8,6 (directed, as OGB stores them).
TEST_CASE("OGB raw layout: the fixture reads exactly", "[readers]") {
  const std::string dir = test::fixture("ogb-tiny");
  REQUIRE(detect_format(dir) == InputFormat::kOgb);
  const Dataset ds = read_dataset(dir, ReadOptions{});

  CHECK(ds.name == "ogb-tiny");
  CHECK_THAT(ds.source, Catch::Contains("(ogb)"));
  REQUIRE(ds.num_nodes() == 10);
  REQUIRE(ds.graph.num_edges() == 11);
  CHECK(vec(ds.graph.indptr()) == std::vector<EdgeId>{0, 2, 4, 5, 6, 7, 8, 9, 10, 11, 11});
  CHECK(rows_of(ds.graph) == Rows{{1, 2}, {0, 2}, {3}, {4}, {5}, {3}, {7}, {8}, {6}, {}});
  CHECK(ds.node_ids.empty());
  CHECK(ds.edge_weights.empty());
  CHECK(ds.node_weight_dim == 0);
  check_report(ds.cleaning, 11, 0, 0, 0, 11);

  // Features as written in node-feat.csv.gz, decimal and scientific notation alike.
  REQUIRE(ds.feature_dim == 3);
  const std::vector<float> want_features = {
      0.5f,   -1.0f, 0.15f,   //
      1.0f,   0.0f,  2.5f,    //
      -0.25f, 3.0f,  0.0f,    //
      2.0f,   1e-3f, -0.75f,  //
      0.125f, 0.5f,  1.0f,    //
      -3.5f,  2.0f,  4.0f,    //
      10.0f,  -0.02f, 0.75f,  //
      0.0f,   0.0f,  0.0f,    //
      6.25f,  -0.5f, 12.5f,   //
      -1.0f,  1.0f,  -1.0f};
  CHECK(vec(ds.features) == want_features);

  // Labels: node 9 is "nan" in the file, -1 (unlabelled) here.
  CHECK(ds.num_classes == 3);
  CHECK(vec(ds.labels) == std::vector<std::int64_t>{0, 1, 0, 2, 1, 2, 0, 1, 2, -1});

  CHECK(vec(ds.train_idx) == std::vector<NodeId>{0, 1, 2, 3, 4});
  CHECK(vec(ds.val_idx) == std::vector<NodeId>{5, 6});
  CHECK(vec(ds.test_idx) == std::vector<NodeId>{7, 8});
}

TEST_CASE("OGB raw layout: cleaning options and a forced format", "[readers]") {
  const std::string dir = test::fixture("ogb-tiny");
  SECTION("--symmetrize adds the 9 missing reverses (0->1 and 1->0 are already both there)") {
    ReadOptions o = opts(true);
    o.format = InputFormat::kOgb;
    o.name = "tiny";
    const Dataset ds = read_dataset(dir, o);
    CHECK(ds.name == "tiny");
    check_report(ds.cleaning, 11, 9, 0, 0, 20);
    CHECK(rows_of(ds.graph) == Rows{{1, 2}, {0, 2}, {0, 1, 3}, {2, 4, 5}, {3, 5}, {3, 4}, {7, 8}, {6, 8}, {6, 7}, {}});
  }
  SECTION("dropping self-loops and duplicates changes nothing on a clean graph") {
    const Dataset ds = read_dataset(dir, opts(false, true, true));
    check_report(ds.cleaning, 11, 0, 0, 0, 11);
  }
}

TEST_CASE("OGB raw layout: node count sources and split choice", "[readers]") {
  ScratchDir tmp;
  const std::string dir = copy_ogb_fixture(tmp);

  SECTION("without num-node-list the count comes from the feature rows (isolated node 9 kept)") {
    fs::remove(dir + "/raw/num-node-list.csv.gz");
    const Dataset ds = read_dataset(dir, ReadOptions{});
    CHECK(ds.num_nodes() == 10);
    CHECK(ds.labels.size() == 10);
  }
  SECTION("with edges only the count is the largest id + 1 (isolated node 9 is lost)") {
    fs::remove(dir + "/raw/num-node-list.csv.gz");
    fs::remove(dir + "/raw/node-feat.csv.gz");
    fs::remove(dir + "/raw/node-label.csv.gz");
    const Dataset ds = read_dataset(dir, ReadOptions{});
    CHECK(ds.num_nodes() == 9);
    CHECK(ds.feature_dim == 0);
    CHECK(ds.num_classes == 0);
    CHECK(ds.labels.empty());
    CHECK(vec(ds.test_idx) == std::vector<NodeId>{7, 8});
  }
  SECTION("plain .csv files are read as well as .csv.gz") {
    fs::remove(dir + "/raw/edge.csv.gz");
    write_text(dir + "/raw/edge.csv", "0,9\n9,0\n");
    const Dataset ds = read_dataset(dir, ReadOptions{});
    CHECK(rows_of(ds.graph) == Rows{{9}, {}, {}, {}, {}, {}, {}, {}, {}, {0}});
  }
  SECTION("two split folders need --ogb-split; naming one picks it") {
    fs::create_directories(dir + "/split/random");
    write_gz(dir + "/split/random/train.csv.gz", "8\n");
    write_gz(dir + "/split/random/valid.csv.gz", "7\n6\n");
    write_gz(dir + "/split/random/test.csv.gz", "0\n");
    CHECK_THROWS_WITH(read_dataset(dir, ReadOptions{}), Catch::Contains("random, time") && Catch::Contains("--ogb-split"));
    ReadOptions o;
    o.ogb_split = "random";
    const Dataset ds = read_dataset(dir, o);
    CHECK(vec(ds.train_idx) == std::vector<NodeId>{8});
    CHECK(vec(ds.val_idx) == std::vector<NodeId>{7, 6});
    CHECK(vec(ds.test_idx) == std::vector<NodeId>{0});
    o.ogb_split = "time";
    CHECK(read_dataset(dir, o).train_idx.size() == 5);
  }
  SECTION("no split folder: no split") {
    fs::remove_all(dir + "/split");
    const Dataset ds = read_dataset(dir, ReadOptions{});
    CHECK(ds.train_idx.empty());
    CHECK(ds.val_idx.empty());
    CHECK(ds.test_idx.empty());
    CHECK(ds.num_classes == 3);
  }
  SECTION("integral float labels ('2.0') as some OGB files write them") {
    write_gz(dir + "/raw/node-label.csv.gz", "0.0\n1.0\n0\n2.0\n1\n2\n0\n1\n2\nNaN\n");
    const Dataset ds = read_dataset(dir, ReadOptions{});
    CHECK(vec(ds.labels) == std::vector<std::int64_t>{0, 1, 0, 2, 1, 2, 0, 1, 2, -1});
  }
}

// ---------------------------------------------------------------------------------------------
// Edge lists and cleaning

// Ids 0..3, dense. Entries: (0,1) twice, (1,2) and (2,1), self-loop (2,2), one-directional (3,0),
// self-loop (3,3) twice: 8 directed entries.
constexpr std::string_view kMessy = "0 1\n0 1\n1 2\n2 1\n2 2\n3 0\n3 3\n3 3\n";

TEST_CASE("edge list cleaning: counts in Dataset::cleaning", "[readers]") {
  ScratchDir tmp;
  const std::string path = tmp / "messy.txt";
  write_text(path, kMessy);

  SECTION("no option: everything kept as given") {
    const Dataset ds = read_dataset(path, opts());
    REQUIRE(ds.num_nodes() == 4);
    CHECK(ds.node_ids.empty());  // ids already 0..n-1: no relabelling to record
    check_report(ds.cleaning, 8, 0, 0, 0, 8);
    CHECK(rows_of(ds.graph) == Rows{{1, 1}, {2}, {1, 2}, {0, 3, 3}});
  }
  SECTION("--symmetrize: reverses matched by multiplicity") {
    // 1->0 needed twice (0->1 twice), 0->3 once; 1<->2 already both ways; self-loops are their own reverse.
    const Dataset ds = read_dataset(path, opts(true));
    check_report(ds.cleaning, 8, 3, 0, 0, 11);
    CHECK(rows_of(ds.graph) == Rows{{1, 1, 3}, {0, 0, 2}, {1, 2}, {0, 3, 3}});
  }
  SECTION("--drop-self-loops") {
    const Dataset ds = read_dataset(path, opts(false, true));
    check_report(ds.cleaning, 8, 0, 3, 0, 5);
    CHECK(rows_of(ds.graph) == Rows{{1, 1}, {2}, {1}, {0}});
  }
  SECTION("--drop-duplicates: one (0,1) and one (3,3) removed") {
    const Dataset ds = read_dataset(path, opts(false, false, true));
    check_report(ds.cleaning, 8, 0, 0, 2, 6);
    CHECK(rows_of(ds.graph) == Rows{{1}, {2}, {1, 2}, {0, 3}});
  }
  SECTION("all three: a simple undirected graph") {
    const Dataset ds = read_dataset(path, opts(true, true, true));
    check_report(ds.cleaning, 8, 2, 3, 1, 6);
    CHECK(rows_of(ds.graph) == Rows{{1, 3}, {0, 2}, {1}, {0}});
  }
  SECTION("--num-nodes keeps ids as they are and adds isolated nodes up to the count") {
    ReadOptions o = opts();
    o.num_nodes = 6;
    const Dataset ds = read_dataset(path, o);
    CHECK(ds.num_nodes() == 6);
    CHECK(ds.node_ids.empty());
    CHECK(rows_of(ds.graph) == Rows{{1, 1}, {2}, {1, 2}, {0, 3, 3}, {}, {}});
  }
}

// SNAP's own layout: '#' header lines, tab separated; here also CRLF line ends, spaces, commas,
// extra columns and a blank line, with ids that are not 0..n-1.
constexpr std::string_view kSnap =
    "# Directed graph (each unordered pair of nodes is saved once): tiny.txt\r\n"
    "# Nodes: 4 Edges: 5\r\n"
    "# FromNodeId\tToNodeId\r\n"
    "30\t10\r\n"
    "10 20\r\n"
    "\r\n"
    "20,30\r\n"
    "  % another comment style\r\n"
    "10 , 40\r\n"
    "40\t10\t0.5 extra columns are ignored\r\n";
// Relabelled in increasing id order: 10 -> 0, 20 -> 1, 30 -> 2, 40 -> 3.
const Rows kSnapRows = {{1, 3}, {2}, {0}, {0}};

TEST_CASE("SNAP edge list: comments, CRLF, separators, relabelling", "[readers]") {
  ScratchDir tmp;
  SECTION("plain text") {
    const std::string path = tmp / "tiny.txt";
    write_text(path, kSnap);
    REQUIRE(detect_format(path) == InputFormat::kEdgeList);
    const Dataset ds = read_dataset(path, ReadOptions{});
    CHECK(ds.name == "tiny");
    CHECK_THAT(ds.source, Catch::Contains("(edge list)"));
    REQUIRE(ds.num_nodes() == 4);
    CHECK(rows_of(ds.graph) == kSnapRows);
    CHECK(vec(ds.node_ids) == std::vector<std::int64_t>{10, 20, 30, 40});
    check_report(ds.cleaning, 5, 0, 0, 0, 5);
  }
  SECTION("gzip, named .txt.gz") {
    const std::string path = tmp / "tiny.txt.gz";
    write_gz(path, kSnap);
    REQUIRE(is_gzip_file(path));
    REQUIRE(detect_format(path) == InputFormat::kEdgeList);
    const Dataset ds = read_dataset(path, ReadOptions{});
    CHECK(ds.name == "tiny");
    CHECK(rows_of(ds.graph) == kSnapRows);
    CHECK(vec(ds.node_ids) == std::vector<std::int64_t>{10, 20, 30, 40});
  }
  SECTION("gzip is recognised by its magic, not its name") {
    const std::string path = tmp / "edges.el";
    write_gz(path, kSnap);
    const Dataset ds = read_dataset(path, ReadOptions{});
    CHECK(ds.name == "edges");
    CHECK(rows_of(ds.graph) == kSnapRows);
  }
  SECTION("--symmetrize on the relabelled graph: 30->10 and 10->40<->10 ...") {
    // 10->20, 20->30, 30->10 need their reverses (3); 10->40 and 40->10 are a pair.
    const std::string path = tmp / "tiny.txt";
    write_text(path, kSnap);
    const Dataset ds = read_dataset(path, opts(true));
    check_report(ds.cleaning, 5, 3, 0, 0, 8);
    CHECK(rows_of(ds.graph) == Rows{{1, 2, 3}, {0, 2}, {0, 1}, {0}});
  }
  SECTION("no newline after the last line") {
    const std::string path = tmp / "t.tsv";
    write_text(path, "5\t7\r\n7\t5");
    const Dataset ds = read_dataset(path, ReadOptions{});
    CHECK(rows_of(ds.graph) == Rows{{1}, {0}});
    CHECK(vec(ds.node_ids) == std::vector<std::int64_t>{5, 7});
  }
}

TEST_CASE("edge list relabelling with very sparse and very large ids", "[readers]") {
  ScratchDir tmp;
  const std::string path = tmp / "big-ids.txt";
  SECTION("ids far beyond the edge count take the sorted path") {
    write_text(path, "5000000000 7\n7 123456789012\n123456789012 5000000000\n");
    const Dataset ds = read_dataset(path, ReadOptions{});
    CHECK(vec(ds.node_ids) == std::vector<std::int64_t>{7, 5000000000, 123456789012});
    CHECK(rows_of(ds.graph) == Rows{{2}, {0}, {1}});
  }
  SECTION("19-digit ids that still fit in 64 bits are valid") {
    write_text(path, "1000000000000000000 9223372036854775806\n3 1000000000000000000\n");
    const Dataset ds = read_dataset(path, ReadOptions{});
    CHECK(vec(ds.node_ids) == std::vector<std::int64_t>{3, 1000000000000000000, INT64_MAX - 1});
    CHECK(rows_of(ds.graph) == Rows{{1}, {2}, {}});
  }
}

// ---------------------------------------------------------------------------------------------
// METIS

// A triangle 1-2-3 plus isolated vertex 4 (a blank line), in every header variant.
TEST_CASE("METIS: plain graph with comments and an isolated vertex", "[readers]") {
  ScratchDir tmp;
  const std::string path = tmp / "tri.graph";
  write_text(path,
             "% a comment before the header\n"
             "4 3\n"
             "2 3\n"
             "% a comment between vertex lines\n"
             "1 3\n"
             "1 2\n"
             "\n");
  REQUIRE(detect_format(path) == InputFormat::kMetis);
  const Dataset ds = read_dataset(path, ReadOptions{});
  CHECK(ds.name == "tri");
  CHECK_THAT(ds.source, Catch::Contains("(metis)"));
  REQUIRE(ds.num_nodes() == 4);
  CHECK(rows_of(ds.graph) == Rows{{1, 2}, {0, 2}, {0, 1}, {}});
  CHECK(ds.edge_weights.empty());
  CHECK(ds.node_weights.empty());
  CHECK(ds.node_weight_dim == 0);
  check_report(ds.cleaning, 6, 0, 0, 0, 6);
  SECTION("already symmetric: --symmetrize adds nothing") {
    check_report(read_dataset(path, opts(true, true, true)).cleaning, 6, 0, 0, 0, 6);
  }
  SECTION("CRLF line ends and a .metis name") {
    const std::string p2 = tmp / "tri.metis";
    write_text(p2, "% c\r\n4 3\r\n2 3\r\n1 3\r\n1 2\r\n\r\n");
    REQUIRE(detect_format(p2) == InputFormat::kMetis);
    CHECK(rows_of(read_dataset(p2, ReadOptions{}).graph) == Rows{{1, 2}, {0, 2}, {0, 1}, {}});
  }
  SECTION("gzip") {
    const std::string p2 = tmp / "tri.graph.gz";
    write_gz(p2, "4 3\n2 3\n1 3\n1 2\n\n");
    REQUIRE(detect_format(p2) == InputFormat::kMetis);
    CHECK(rows_of(read_dataset(p2, ReadOptions{}).graph) == Rows{{1, 2}, {0, 2}, {0, 1}, {}});
  }
}

TEST_CASE("METIS: format field 001 (edge weights)", "[readers]") {
  ScratchDir tmp;
  const std::string path = tmp / "w.graph";
  // Weights: 1-2: 5, 1-3: 7, 2-3: 9. Neighbours listed out of order on line 2.
  const char* fmt = GENERATE("001", "1");
  write_text(path, std::string("4 3 ") + fmt + "\n2 5 3 7\n3 9 1 5\n1 7 2 9\n\n");
  const Dataset ds = read_dataset(path, ReadOptions{});
  CHECK(rows_of(ds.graph) == Rows{{1, 2}, {0, 2}, {0, 1}, {}});
  // Aligned with the sorted rows, not the file order.
  CHECK(vec(ds.edge_weights) == std::vector<std::int64_t>{5, 7, 5, 9, 7, 9});
  CHECK(ds.node_weight_dim == 0);
  CHECK(ds.node_weights.empty());
}

TEST_CASE("METIS: format field 010 (one vertex weight)", "[readers]") {
  ScratchDir tmp;
  const std::string path = tmp / "vw.graph";
  const char* fmt = GENERATE("010", "10");
  // Vertex 4 is isolated: its line holds only its weight.
  write_text(path, std::string("4 3 ") + fmt + "\n4 2 3\n1 1 3\n2 1 2\n7\n");
  const Dataset ds = read_dataset(path, ReadOptions{});
  CHECK(rows_of(ds.graph) == Rows{{1, 2}, {0, 2}, {0, 1}, {}});
  CHECK(ds.node_weight_dim == 1);
  CHECK(vec(ds.node_weights) == std::vector<std::int64_t>{4, 1, 2, 7});
  CHECK(ds.edge_weights.empty());
}

TEST_CASE("METIS: format field 011 with ncon = 2", "[readers]") {
  ScratchDir tmp;
  const std::string path = tmp / "vw2.graph";
  write_text(path,
             "4 3 011 2\n"
             "1 10  2 5  3 7\n"
             "2 20  1 5  3 9\n"
             "3 30  1 7  2 9\n"
             "4 40\n");
  const Dataset ds = read_dataset(path, ReadOptions{});
  CHECK(rows_of(ds.graph) == Rows{{1, 2}, {0, 2}, {0, 1}, {}});
  CHECK(ds.node_weight_dim == 2);
  CHECK(vec(ds.node_weights) == std::vector<std::int64_t>{1, 10, 2, 20, 3, 30, 4, 40});
  CHECK(vec(ds.edge_weights) == std::vector<std::int64_t>{5, 7, 5, 9, 7, 9});
}

TEST_CASE("METIS: format field 100 (vertex sizes are read and dropped)", "[readers]") {
  ScratchDir tmp;
  const std::string path = tmp / "vs.graph";
  write_text(path, "4 3 100\n9 2 3\n8 1 3\n7 1 2\n6\n");
  const Dataset ds = read_dataset(path, ReadOptions{});
  CHECK(rows_of(ds.graph) == Rows{{1, 2}, {0, 2}, {0, 1}, {}});
  CHECK(ds.node_weights.empty());
  CHECK(ds.edge_weights.empty());
}

TEST_CASE("METIS: cleaning a graph with a duplicate edge", "[readers]") {
  ScratchDir tmp;
  const std::string path = tmp / "dup.graph";
  // Edge 1-2 listed twice on both sides (m counts it twice): 4 entries between 1 and 2, plus 2-3.
  write_text(path, "3 3\n2 2\n1 1 3\n2\n");
  check_report(read_dataset(path, ReadOptions{}).cleaning, 6, 0, 0, 0, 6);
  const Dataset ds = read_dataset(path, opts(false, false, true));
  check_report(ds.cleaning, 6, 0, 0, 2, 4);
  CHECK(rows_of(ds.graph) == Rows{{1}, {0, 2}, {1}});
}

// ---------------------------------------------------------------------------------------------
// Typed inputs: OGB's heterogeneous layout (ogbn-mag's) and IGB-Het's numpy layout.

namespace {

// ogbn-mag's layout in miniature: 2 authors, 1 institution, 3 papers, 2 fields of study (in the
// file's order author, field_of_study, institution, paper: global ids 0-1, 2-3, 4, 5-7).
std::string write_mag_layout(const ScratchDir& dir) {
  const fs::path d = dir / "mag";
  fs::create_directories(d / "raw" / "relations" / "author___affiliated_with___institution");
  fs::create_directories(d / "raw" / "relations" / "author___writes___paper");
  fs::create_directories(d / "raw" / "relations" / "paper___cites___paper");
  fs::create_directories(d / "raw" / "relations" / "paper___has_topic___field_of_study");
  fs::create_directories(d / "raw" / "node-feat" / "paper");
  fs::create_directories(d / "raw" / "node-label" / "paper");
  fs::create_directories(d / "split" / "time" / "paper");
  write_gz((d / "raw" / "num-node-dict.csv.gz").string(), "author,field_of_study,institution,paper\n2,2,1,3\n");
  write_gz((d / "raw" / "relations" / "author___affiliated_with___institution" / "edge.csv.gz").string(), "0,0\n1,0\n");
  write_gz((d / "raw" / "relations" / "author___writes___paper" / "edge.csv.gz").string(), "0,0\n0,1\n1,2\n");
  write_gz((d / "raw" / "relations" / "paper___cites___paper" / "edge.csv.gz").string(), "1,0\n2,0\n");
  write_text((d / "raw" / "relations" / "paper___has_topic___field_of_study" / "edge.csv").string(), "0,1\n2,0\n");
  write_gz((d / "raw" / "node-feat" / "paper" / "node-feat.csv.gz").string(), "0.5,1\n2,3\n4,5.25\n");
  write_gz((d / "raw" / "node-label" / "paper" / "node-label.csv.gz").string(), "3\n0\n1\n");
  write_text((d / "split" / "time" / "paper" / "train.csv").string(), "0\n1\n");
  write_text((d / "split" / "time" / "paper" / "valid.csv").string(), "2\n");
  write_text((d / "split" / "time" / "paper" / "test.csv").string(), "");
  return d.string();
}

}  // namespace

TEST_CASE("OGB's heterogeneous layout reads as a typed graph, with reverse relations on request", "[readers][typed]") {
  ScratchDir dir;
  const std::string mag = write_mag_layout(dir);
  CHECK(detect_format(mag) == InputFormat::kOgb);
  ReadOptions o;
  o.add_reverse = true;
  const Dataset ds = read_dataset(mag, o);
  const GraphSchema& s = ds.schema;
  REQUIRE(s.num_types() == 4);
  CHECK(s.types()[0].name == "author");
  CHECK(s.begin(3) == 5);
  CHECK(s.types()[3].feature_dim == 2);
  CHECK(s.types()[0].feature_dim == 0);
  CHECK(vec(ds.type_features[3]) == std::vector<float>{0.5f, 1, 2, 3, 4, 5.25f});
  // Three reverses (cites, within one type, becomes undirected instead).
  REQUIRE(s.relations().size() == 7);
  CHECK(s.relation_label(4) == "institution__rev_affiliated_with__author");
  CHECK(s.relation_label(5) == "paper__rev_writes__author");
  CHECK(relation_entries(ds.graph, s) == std::vector<std::int64_t>{2, 3, 4, 2, 2, 3, 2});
  // Paper 0 (global 5) cites nothing, is cited by papers 1 and 2, written by author 0, has topic 1.
  CHECK(row_of(ds.graph, 5) == std::vector<NodeId>{0, 3, 6, 7});
  CHECK(row_of(ds.graph, 0) == std::vector<NodeId>{4, 5, 6});
  CHECK(vec(ds.labels) == std::vector<std::int64_t>{-1, -1, -1, -1, -1, 3, 0, 1});
  CHECK(ds.num_classes == 4);
  CHECK(vec(ds.train_idx) == std::vector<std::int64_t>{5, 6});
  CHECK(vec(ds.val_idx) == std::vector<std::int64_t>{7});
  CHECK(ds.test_idx.size() == 0);

  // Without reverses: each entry stays in its source's row only.
  const Dataset plain = read_dataset(mag, ReadOptions{});
  CHECK(plain.schema.relations().size() == 4);
  CHECK(row_of(plain.graph, 5) == std::vector<NodeId>{3});
  CHECK_THROWS_WITH(read_dataset(mag, opts(true)), Contains("--symmetrize on a typed graph") && Contains("--add-reverse"));
}

TEST_CASE("OGB's heterogeneous layout: bad input is one line naming the file and the edge", "[readers][typed]") {
  ScratchDir dir;
  const std::string mag = write_mag_layout(dir);
  const fs::path cites = fs::path(mag) / "raw" / "relations" / "paper___cites___paper" / "edge.csv.gz";
  write_gz(cites.string(), "1,0\n0,3\n");
  CHECK_THROWS_WITH(read_dataset(mag, ReadOptions{}), Contains("edge.csv.gz") && Contains("edge 2") && Contains("paper id below 3"));
  fs::remove_all(cites.parent_path());
  fs::create_directories(fs::path(mag) / "raw" / "relations" / "paper___cites___journal");
  CHECK_THROWS_WITH(read_dataset(mag, ReadOptions{}), Contains("paper___cites___journal") && Contains("node type 'journal'"));
  fs::remove_all(fs::path(mag) / "raw" / "relations" / "paper___cites___journal");
  // A reverse the input already holds: a second relation between papers and authors.
  fs::create_directories(fs::path(mag) / "raw" / "relations" / "paper___written_by___author");
  write_gz((fs::path(mag) / "raw" / "relations" / "paper___written_by___author" / "edge.csv.gz").string(), "0,0\n");
  ReadOptions o;
  o.add_reverse = true;
  CHECK_THROWS_WITH(read_dataset(mag, o), Contains("paper") && Contains("author"));
  CHECK_THROWS_WITH(read_dataset(copy_ogb_fixture(dir), o), Contains("--add-reverse applies to typed inputs"));
}

TEST_CASE("two relations between one pair of types store a relation id per edge, rows ordered by (relation, neighbour)", "[readers][typed][relation-ids]") {
  ScratchDir dir;
  const std::string mag = write_mag_layout(dir);
  fs::create_directories(fs::path(mag) / "raw" / "relations" / "author___reviews___paper");
  write_gz((fs::path(mag) / "raw" / "relations" / "author___reviews___paper" / "edge.csv.gz").string(), "0,2\n1,0\n1,2\n");
  // Relations in folder order: affiliated_with 0, reviews 1, writes 2, cites 3, has_topic 4.
  const Dataset plain = read_dataset(mag, ReadOptions{});
  const GraphSchema& s = plain.schema;
  REQUIRE(s.relation_ids());
  REQUIRE(s.relations().size() == 5);
  CHECK(s.relation_label(1) == "author__reviews__paper");
  CHECK(s.relation_between(s.type_named("author"), s.type_named("paper")) == GraphSchema::kSeveralRelations);
  CHECK(s.relation_between(s.type_named("paper"), s.type_named("paper")) == 3);
  // Author 0 (global 0): institution 4 (affiliated), reviews paper 2 (7), writes papers 0 and 1
  // (5, 6): grouped by relation, not sorted by neighbour. Author 1 reviews and writes paper 2.
  CHECK(row_of(plain.graph, 0) == std::vector<NodeId>{4, 7, 5, 6});
  CHECK(vec(plain.edge_relations).size() == static_cast<std::size_t>(plain.graph.num_edges()));
  CHECK(std::vector<std::int64_t>(plain.edge_relations.begin(), plain.edge_relations.begin() + 4) == std::vector<std::int64_t>{0, 1, 2, 2});
  CHECK(row_of(plain.graph, 1) == std::vector<NodeId>{4, 5, 7, 7});
  CHECK(relation_entries(plain.graph, s, plain.edge_relations) == std::vector<std::int64_t>{2, 3, 3, 2, 2});

  // Reverses: every relation gets its own, cites (within one type) included; each entry
  // (u, r, v) then has (v, reverse of r, u).
  ReadOptions o;
  o.add_reverse = true;
  const Dataset ds = read_dataset(mag, o);
  REQUIRE(ds.schema.relations().size() == 10);
  CHECK(ds.schema.relation_label(8) == "paper__rev_cites__paper");
  CHECK(relation_entries(ds.graph, ds.schema, ds.edge_relations) == std::vector<std::int64_t>{2, 3, 3, 2, 2, 2, 3, 3, 2, 2});
  // Paper 2 (global 7): cites paper 0 (5), has topic field 0 (2), reviewed by authors 0 and 1,
  // written by author 1.
  CHECK(row_of(ds.graph, 7) == std::vector<NodeId>{5, 2, 0, 1, 1});
  std::int64_t unmatched = 0;
  std::set<std::tuple<NodeId, std::int64_t, NodeId>> entries;
  for (NodeId u = 0; u < ds.num_nodes(); ++u)
    for (EdgeId e = ds.graph.indptr()[u]; e < ds.graph.indptr()[u + 1]; ++e) entries.insert({u, ds.edge_relations[static_cast<std::size_t>(e)], row_of(ds.graph, u)[static_cast<std::size_t>(e - ds.graph.indptr()[u])]});
  for (const auto& [u, r, v] : entries) unmatched += !entries.contains({v, r < 5 ? r + 5 : r - 5, u});
  CHECK(unmatched == 0);
  CHECK(ds.cleaning.symmetric);
  // Through the IGB-Het layout and back: the same relations and entries.
  write_igbh_layout(ds, dir / "igbh");
  const Dataset back = read_dataset(dir / "igbh", ReadOptions{});
  CHECK(back.schema.relation_ids());
  CHECK(back.schema.relations().size() == 10);
  std::map<std::string, std::int64_t> want, got;
  const auto w = relation_entries(ds.graph, ds.schema, ds.edge_relations), g = relation_entries(back.graph, back.schema, back.edge_relations);
  for (std::size_t r = 0; r < 10; ++r) want[ds.schema.relation_label(static_cast<int>(r))] = w[r], got[back.schema.relation_label(static_cast<int>(r))] = g[r];
  CHECK(got == want);
  CHECK(back.graph.num_edges() == ds.graph.num_edges());

  // Asked for on a graph with one relation per pair: ids stored all the same.
  ReadOptions ids;
  ids.relation_ids = true;
  fs::remove_all(fs::path(mag) / "raw" / "relations" / "author___reviews___paper");
  const Dataset asked = read_dataset(mag, ids);
  CHECK(asked.schema.relation_ids());
  CHECK(relation_entries(asked.graph, asked.schema, asked.edge_relations) == std::vector<std::int64_t>{2, 3, 2, 2});
  CHECK_THROWS_WITH(read_dataset(copy_ogb_fixture(dir), ids), Contains("--relation-ids applies to typed inputs"));
}

TEST_CASE("relation ids out of range, against their relation's types, or out of (relation, neighbour) order are one line naming the file and element",
          "[readers][typed][relation-ids]") {
  ScratchDir dir;
  const std::string mag = write_mag_layout(dir);
  ReadOptions ids;
  ids.relation_ids = true;
  const Dataset ds = read_dataset(mag, ids);
  REQUIRE_NOTHROW(check_relation_ids(ds.graph, ds.schema, ds.edge_relations, "r.npy", "i.npy"));
  auto with = [&](std::size_t e, std::int32_t r) {
    std::vector<std::int32_t> v;
    for (const auto x : ds.edge_relations) v.push_back(static_cast<std::int32_t>(x));
    v[e] = r;
    return IntArray(Array<std::int32_t>(std::move(v)));
  };
  // Entry 0: author 0 -> institution (affiliated_with, 0).
  CHECK_THROWS_WITH(check_relation_ids(ds.graph, ds.schema, with(0, 4), "r.npy", "i.npy"), Contains("r.npy") && Contains("element 0") && Contains("expected 0 to 3"));
  CHECK_THROWS_WITH(check_relation_ids(ds.graph, ds.schema, with(0, 2), "r.npy", "i.npy"),
                    Contains("r.npy") && Contains("element 0") && Contains("not as its relation paper__cites__paper does"));
  // Author 0's row: institution 4 (relation 0), papers 5 and 6 (relation 1); swapping the papers' order.
  std::vector<NodeId> swapped = row_of(ds.graph, 0);
  REQUIRE(swapped == std::vector<NodeId>{4, 5, 6});
  std::vector<NodeId> indices;
  ds.graph.visit([&](const auto& g) { indices.assign(g.indices().begin(), g.indices().end()); });
  std::swap(indices[1], indices[2]);
  const CsrGraph bad(Array<EdgeId>(std::vector<EdgeId>(ds.graph.indptr().begin(), ds.graph.indptr().end())), Array<NodeId>(std::move(indices)));
  CHECK_THROWS_WITH(check_relation_ids(bad, ds.schema, ds.edge_relations, "r.npy", "i.npy"),
                    Contains("i.npy") && Contains("element 2") && Contains("not ordered by (relation, neighbour)"));
  CHECK_THROWS_WITH(check_relation_ids(ds.graph, ds.schema, IntArray(Array<std::int32_t>(std::vector<std::int32_t>{0})), "r.npy", "i.npy"),
                    Contains("r.npy") && Contains("1 relation ids, expected one per entry"));
}

TEST_CASE("IGB-Het's numpy layout reads as a typed graph", "[readers][typed]") {
  ScratchDir dir;
  const fs::path p = fs::path(dir / "igbh") / "processed";
  for (const char* sub : {"paper", "author", "paper__cites__paper", "paper__written_by__author"}) fs::create_directories(p / sub);
  const std::vector<float> paper_feat{1, 2, 3, 4, 5, 6}, author_feat{7, 8};
  write_npy((p / "paper" / "node_feat.npy").string(), DType::kFloat32, paper_feat.data(), std::vector<std::int64_t>{3, 2});
  write_npy((p / "author" / "node_feat.npy").string(), DType::kFloat32, author_feat.data(), std::vector<std::int64_t>{2, 1});
  // IGB-Het's labels are floats in some releases.
  const std::vector<float> labels{2, 0, 1};
  write_npy((p / "paper" / "node_label_19.npy").string(), std::span<const float>(labels));
  const std::vector<std::int64_t> cites{0, 1, 2, 1}, written{0, 0, 1, 1, 2, 0};
  write_npy((p / "paper__cites__paper" / "edge_index.npy").string(), DType::kInt64, cites.data(), std::vector<std::int64_t>{2, 2});
  write_npy((p / "paper__written_by__author" / "edge_index.npy").string(), DType::kInt64, written.data(), std::vector<std::int64_t>{3, 2});
  const std::string root = dir / "igbh";
  CHECK(detect_format(root) == InputFormat::kIgbh);
  ReadOptions o;
  o.add_reverse = true;
  const Dataset ds = read_dataset(root, o);
  // Types in name order: author (ids 0-1), paper (2-4).
  REQUIRE(ds.schema.num_types() == 2);
  CHECK(ds.schema.types()[1].name == "paper");
  CHECK(ds.schema.types()[0].feature_dim == 1);
  CHECK(vec(ds.type_features[1]) == paper_feat);
  CHECK(vec(ds.labels) == std::vector<std::int64_t>{-1, -1, 2, 0, 1});
  CHECK(ds.schema.relations().size() == 3);
  CHECK(ds.schema.relation_label(2) == "author__rev_written_by__paper");
  CHECK(row_of(ds.graph, 0) == std::vector<NodeId>{2, 4});  // author 0 wrote papers 0 and 2
  CHECK(row_of(ds.graph, 3) == std::vector<NodeId>{1, 2, 4});

  const std::vector<std::int64_t> bad{0, 1, 3, 0};
  write_npy((p / "paper__cites__paper" / "edge_index.npy").string(), DType::kInt64, bad.data(), std::vector<std::int64_t>{2, 2});
  CHECK_THROWS_WITH(read_dataset(root, o), Contains("edge_index.npy") && Contains("edge 2") && Contains("paper id below 3"));
}
