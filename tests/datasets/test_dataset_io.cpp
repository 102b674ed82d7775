#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>

#include "datasets/array_dir.hpp"
#include "datasets/dataset.hpp"
#include "datasets/error.hpp"
#include "datasets/json_util.hpp"
#include "datasets/npy.hpp"
#include "datasets/readers.hpp"
#include "test_paths.hpp"
#include "tests/graph_rows.hpp"

using namespace shardgnn;
using Catch::Matchers::Contains;
namespace fs = std::filesystem;

namespace {

template <class T>
bool same(const Array<T>& a, const Array<T>& b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin());
}
// Labels compare by value, whatever width each is held at.
bool same(const IntArray& a, const IntArray& b) { return a.widened() == b.widened(); }

void check_identical(const Dataset& a, const Dataset& b) {
  CHECK(a.name == b.name);
  CHECK(same(a.graph.indptr(), b.graph.indptr()));
  CHECK(ids_of(a.graph) == ids_of(b.graph));
  CHECK(a.feature_dim == b.feature_dim);
  CHECK(same(a.features, b.features));
  CHECK(a.num_classes == b.num_classes);
  CHECK(same(a.labels, b.labels));
  CHECK(same(a.train_idx, b.train_idx));
  CHECK(same(a.val_idx, b.val_idx));
  CHECK(same(a.test_idx, b.test_idx));
  CHECK(same(a.node_ids, b.node_ids));
  CHECK(a.node_weight_dim == b.node_weight_dim);
  CHECK(same(a.node_weights, b.node_weights));
  CHECK(same(a.edge_weights, b.edge_weights));
  CHECK(a.cleaning.reverse_added == b.cleaning.reverse_added);
  CHECK(a.cleaning.output_entries == b.cleaning.output_entries);
}

void write_text(const std::string& path, const std::string& text) { std::ofstream(path, std::ios::binary) << text; }

}  // namespace

TEST_CASE("convert -> save -> load gives identical arrays, memory-mapped", "[dataset-io]") {
  test::ScratchDir dir;
  for (const char* name : {"cora.npz", "citeseer.npz", "4elt.graph", "soc-Slashdot0902.txt.gz"}) {
    INFO(name);
    ReadOptions opts;
    opts.clean.symmetrize = true;
    Dataset in = read_dataset(test::sample(name), opts);
    const std::string out = dir / name;
    save_dataset(in, out);
    Dataset back = load_dataset(out);
    check_identical(in, back);
    CHECK(back.graph.narrow_ids());
    CHECK(back.graph.narrow_indices().is_mapped());
    CHECK(validate_dataset(out).ok());
  }
}

TEST_CASE("meta.json is one DatasetMeta: what was done to the features is kept, a bad value named", "[dataset-io]") {
  test::ScratchDir dir;
  ReadOptions opts;
  opts.clean.symmetrize = true;
  Dataset in = read_dataset(test::sample("cora.npz"), opts);
  CHECK(in.feature_norm == FeatureNorm::kNone);
  normalize_feature_rows(in);
  CHECK(in.feature_norm == FeatureNorm::kRow);
  const std::string out = dir / "norm";
  save_dataset(in, out);
  const Dataset back = load_dataset(out);
  CHECK(back.feature_norm == FeatureNorm::kRow);
  // The description round-trips through its JSON form, field for field.
  const DatasetMeta m = meta_of(back);
  const DatasetMeta again = boost::json::value_to<DatasetMeta>(boost::json::value_from(m));
  CHECK((again.name == m.name && again.source == m.source && again.num_nodes == m.num_nodes && again.num_edges == m.num_edges));
  CHECK((again.feature_dim == m.feature_dim && again.num_classes == m.num_classes && again.feature_norm == FeatureNorm::kRow));
  CHECK(again.cleaning == m.cleaning);
  // A value the reader does not know is one line naming the file and the key.
  const std::string meta = out + "/meta.json";
  boost::json::value root = read_json_file(meta);
  root.as_object()["feature_norm"] = "l2";
  write_text(meta, boost::json::serialize(root));
  CHECK_THROWS_WITH(load_dataset(out), meta + ": key 'feature_norm': expected \"none\" or \"row\", found \"l2\"");
}

TEST_CASE("relabelled ids and METIS weights survive the round trip", "[dataset-io]") {
  test::ScratchDir dir;
  //  100 - 7 - 5000       (ids are sparse: relabelled to 1, 0, 2 in increasing id order)
  write_text(dir / "e.txt", "7 100\n7 5000\n");
  ReadOptions el;
  el.clean.symmetrize = true;
  Dataset e = read_dataset(dir / "e.txt", el);
  REQUIRE(e.node_ids.size() == 3);
  CHECK(std::vector<std::int64_t>(e.node_ids.begin(), e.node_ids.end()) == std::vector<std::int64_t>{7, 100, 5000});
  save_dataset(e, dir / "e");
  check_identical(e, load_dataset(dir / "e"));

  // 1 -(5)- 2 -(3)- 3, vertex weights 2 per vertex (fmt 011, ncon 2)
  write_text(dir / "w.graph", "% weighted\n3 2 011 2\n1 1 2 5\n2 2 1 5 3 3\n3 3 2 3\n");
  Dataset w = read_dataset(dir / "w.graph", {});
  CHECK(w.node_weight_dim == 2);
  CHECK(std::vector<std::int64_t>(w.edge_weights.begin(), w.edge_weights.end()) == std::vector<std::int64_t>{5, 5, 3, 3});
  save_dataset(w, dir / "w");
  Dataset wb = load_dataset(dir / "w");
  check_identical(w, wb);
  CHECK(validate_dataset(dir / "w").ok());
}

TEST_CASE("save refuses a non-empty folder unless told to replace it, and replaces atomically", "[dataset-io]") {
  test::ScratchDir dir;
  Dataset a = read_dataset(test::fixture("deflated.npz"), {});
  save_dataset(a, dir / "ds");
  CHECK_THROWS_WITH(save_dataset(a, dir / "ds"), Contains("not empty") && Contains("--force"));
  ReadOptions sym;
  sym.clean.symmetrize = true;
  Dataset cora = read_dataset(test::sample("cora.npz"), sym);
  save_dataset(cora, dir / "ds", /*overwrite=*/true);
  CHECK(load_dataset(dir / "ds").num_nodes() == 2708);
  // Only the dataset folder remains: no temporary or swapped-out folders.
  CHECK(std::distance(fs::directory_iterator(dir.str()), fs::directory_iterator()) == 1);
}

TEST_CASE("validate reports corruption, out-of-range ids and bad splits, naming the file", "[dataset-io]") {
  test::ScratchDir dir;
  save_dataset(read_dataset(test::sample("cora.npz"), {}), dir / "cora");
  REQUIRE(validate_dataset(dir / "cora").ok());
  SECTION("a flipped byte is a checksum error") {
    std::fstream f(dir / "cora/labels.npy", std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(200);
    f.put('\x05');
    f.close();
    auto r = validate_dataset(dir / "cora");
    REQUIRE_FALSE(r.ok());
    CHECK_THAT(r.errors[0], Contains("labels.npy") && Contains("checksum"));
  }
  SECTION("content errors name file and element even when checksums are regenerated") {
    // An array rewritten by a tool that also fixed meta.json's checksum still gets its content checked.
    Dataset ds = load_dataset(dir / "cora");
    std::vector<std::int64_t> train(ds.train_idx.begin(), ds.train_idx.end());
    train[3] = train[2];  // a duplicate
    std::vector<std::int64_t> labels = ds.labels.widened();
    labels[10] = 9;       // beyond 7 classes
    Dataset bad;
    bad.name = ds.name;
    bad.graph = CsrGraph(Array<EdgeId>(std::vector<EdgeId>(ds.graph.indptr().begin(), ds.graph.indptr().end())),
                         Array<NodeId>(ids_of(ds.graph)));
    bad.num_classes = 7;
    bad.labels = Array<std::int64_t>(std::move(labels));
    bad.train_idx = Array<NodeId>(std::move(train));
    save_dataset(bad, dir / "bad");
    auto r = validate_dataset(dir / "bad");
    REQUIRE(r.errors.size() == 2);
    CHECK_THAT(r.errors[0], Contains("labels.npy") && Contains("element 10") && Contains("outside [-1, 7)"));
    CHECK_THAT(r.errors[1], Contains("train_idx.npy") && Contains("element 3") && Contains("listed twice"));
  }
}

TEST_CASE("ids (neighbours and splits) are stored 32 bits wide and labels 8, and a version-1 folder with 64-bit ones loads as it is and rewrites narrow", "[dataset-io][ids]") {
  test::ScratchDir dir;
  auto file = [&](const char* folder, const char* name) { return (fs::path(dir / folder) / name).string(); };
  Dataset in = read_dataset(test::sample("cora.npz"), {});
  REQUIRE_FALSE(in.graph.narrow_ids());  // built in memory: 64-bit
  save_dataset(in, dir / "new");
  const auto meta = read_json_file(file("new", "meta.json")).as_object();
  CHECK(meta.at("version").as_int64() == kDatasetFormatVersionWithoutRelationIds);
  CHECK(meta.at("arrays").at("indices").at("dtype").as_string() == "<i4");
  CHECK(meta.at("arrays").at("labels").at("dtype").as_string() == dtype_descr(DType::kInt8));  // Cora's 7 classes
  CHECK(fs::file_size(file("new", "labels.npy")) == static_cast<std::uintmax_t>(in.num_nodes()) + 128);
  CHECK(load_dataset(dir / "new").labels.widened() == in.labels.widened());
  CHECK(meta.at("arrays").at("train_idx").at("dtype").as_string() == "<i4");
  CHECK(fs::file_size(file("new", "test_idx.npy")) == in.test_idx.size() * 4 + 128);
  CHECK(load_dataset(dir / "new").test_idx.widened() == in.test_idx.widened());
  CHECK(fs::file_size(file("new", "indices.npy")) < static_cast<std::uintmax_t>(in.graph.num_edges()) * 4 + 200);

  // The previous format: int64 ids and labels, version 1 (written here as that version wrote it).
  save_dataset(in, dir / "old");
  auto old_meta = read_json_file(file("old", "meta.json")).as_object();
  const std::vector<NodeId> ids = ids_of(in.graph);
  old_meta["arrays"].as_object()["indices"] = write_listed_array(dir / "old", "indices", ids);
  old_meta["arrays"].as_object()["labels"] = write_listed_array(dir / "old", "labels", in.labels.widened());
  old_meta["arrays"].as_object()["test_idx"] = write_listed_array(dir / "old", "test_idx", in.test_idx.widened());
  old_meta["version"] = 1;
  write_json_file(file("old", "meta.json"), old_meta);
  Dataset old = load_dataset(dir / "old");
  CHECK_FALSE(old.graph.narrow_ids());
  CHECK(ids_of(old.graph) == ids);
  CHECK(old.labels.element_bytes() == 8);
  CHECK(old.labels.widened() == in.labels.widened());
  CHECK(old.test_idx.element_bytes() == 8);
  CHECK(old.test_idx.widened() == in.test_idx.widened());
  CHECK(validate_dataset(dir / "old").ok());

  // What `data convert OLD --out NEW` does: the same graph, narrow.
  save_dataset(old, dir / "rewritten");
  Dataset back = load_dataset(dir / "rewritten");
  CHECK(back.graph.narrow_ids());
  CHECK(ids_of(back.graph) == ids);
  CHECK(back.labels.element_bytes() == 1);
  CHECK(back.labels.widened() == in.labels.widened());
  CHECK(back.test_idx.element_bytes() == 4);
  CHECK(back.test_idx.widened() == in.test_idx.widened());
  CHECK(std::equal(back.graph.indptr().begin(), back.graph.indptr().end(), in.graph.indptr().begin(), in.graph.indptr().end()));

  // A version this build does not know is refused with one line saying which it reads.
  old_meta["version"] = kDatasetFormatVersion + 1;
  write_json_file(file("old", "meta.json"), old_meta);
  CHECK_THROWS_WITH(load_dataset(dir / "old"), Contains("key 'version'") && Contains("reads versions 1 to " + std::to_string(kDatasetFormatVersion)));
}

TEST_CASE("loading costs O(1): arrays are mapped, not read", "[dataset-io]") {
  test::ScratchDir dir;
  save_dataset(read_dataset(test::sample("citeseer.npz"), {}), dir / "c");
  Dataset ds = load_dataset(dir / "c");
  CHECK(ds.features.is_mapped());
  CHECK(ds.labels.is_mapped());
  CHECK(ds.graph.indptr().is_mapped());
  // A mapped dataset keeps its files alive on its own.
  Dataset moved = std::move(ds);
  CHECK(moved.features.size() == 3327u * 3703u);
}

TEST_CASE("a dataset whose arrays are corrupt under valid checksums is refused at load, naming the first bad element", "[dataset-io]") {
  test::ScratchDir dir;
  // 0 - 1 - 2, written by save_dataset, so meta.json's checksums match the corrupt arrays.
  auto save = [&](const std::string& name, std::vector<EdgeId> indptr, std::vector<NodeId> indices, std::vector<NodeId> train) {
    Dataset d;
    d.name = name;
    d.graph = CsrGraph(Array<EdgeId>(std::move(indptr)), Array<NodeId>(std::move(indices)));
    d.num_classes = 2;
    d.labels = Array<std::int64_t>(std::vector<std::int64_t>{0, 1, -1});
    d.train_idx = Array<NodeId>(std::move(train));
    save_dataset(d, dir / name);
    return dir / name;
  };
  CHECK_NOTHROW(load_dataset(save("good", {0, 1, 3, 4}, {1, 0, 2, 1}, {0, 2})));
  CHECK_THROWS_WITH(load_dataset(save("down", {0, 3, 1, 4}, {1, 0, 2, 1}, {0})), Contains("indptr.npy: element 2") && Contains("below the one before"));
  CHECK_THROWS_WITH(load_dataset(save("id", {0, 1, 3, 4}, {1, 0, 7, 1}, {0})), Contains("indices.npy: element 2") && Contains("node id 7 out of range [0, 3)"));
  CHECK_THROWS_WITH(load_dataset(save("neg", {0, 1, 3, 4}, {1, -5, 2, 1}, {0})), Contains("indices.npy: element 1"));
  CHECK_THROWS_WITH(load_dataset(save("split", {0, 1, 3, 4}, {1, 0, 2, 1}, {0, 3})), Contains("train_idx.npy: element 1"));
  // Trusted, the load stays O(1); validate then reports the problem instead of reading out of bounds.
  CHECK_NOTHROW(load_dataset(dir / "down", Contents::trust));
  CHECK_FALSE(validate_dataset(dir / "down").ok());
}

TEST_CASE("files named in meta.json must be plain names of regular files inside the folder, checked before any read", "[dataset-io]") {
  test::ScratchDir dir;
  save_dataset(read_dataset(test::fixture("deflated.npz"), {}), dir / "ds");
  const std::string meta_path = dir / "ds/meta.json";
  std::string meta;
  {
    std::ifstream in(meta_path);
    meta.assign(std::istreambuf_iterator<char>(in), {});
  }
  for (const char* target : {"/etc/passwd", "/dev/zero", "../ds/labels.npy", "..", "."}) {
    INFO(target);
    std::string bad = meta;
    const auto at = bad.find("\"labels.npy\"");
    REQUIRE(at != std::string::npos);
    bad.replace(at, 12, std::string("\"") + target + "\"");
    write_text(meta_path, bad);
    CHECK_THROWS_WITH(load_dataset(dir / "ds"), Contains("key 'arrays.labels.file'"));
    const auto r = validate_dataset(dir / "ds");
    REQUIRE_FALSE(r.ok());
    CHECK_THAT(r.errors[0], Contains("key 'arrays.labels.file'"));
  }
  write_text(meta_path, meta);
  CHECK(validate_dataset(dir / "ds").ok());
}

namespace {
template <class T>
std::vector<T> values(const Array<T>& a) { return {a.begin(), a.end()}; }
std::vector<std::int64_t> values(const IntArray& a) { return a.widened(); }
}  // namespace

TEST_CASE("keep_largest_component keeps the largest component with everything that belongs to its nodes", "[dataset-io]") {
  //  0 - 1    2 - 3 - 4    5 -> 6    7
  //  (edges as drawn, both ways, except 5 -> 6: components ignore direction)
  const std::vector<std::vector<NodeId>> adj = {{1}, {0}, {3}, {2, 4}, {3}, {6}, {}, {}};
  Dataset ds;
  std::vector<EdgeId> indptr = {0};
  std::vector<NodeId> indices;
  for (const auto& nb : adj) {
    indices.insert(indices.end(), nb.begin(), nb.end());
    indptr.push_back(static_cast<EdgeId>(indices.size()));
  }
  ds.graph = CsrGraph(Array<EdgeId>(indptr), Array<NodeId>(indices));
  ds.feature_dim = 2;
  std::vector<float> f;
  for (int v = 0; v < 8; ++v) f.insert(f.end(), {static_cast<float>(v), static_cast<float>(10 * v)});
  ds.features = Array<float>(f);
  ds.num_classes = 3;
  ds.labels = Array<std::int64_t>(std::vector<std::int64_t>{0, 1, 2, 0, 1, 2, 0, 1});
  ds.train_idx = Array<NodeId>(std::vector<NodeId>{0, 3});
  ds.val_idx = Array<NodeId>(std::vector<NodeId>{4, 7});
  ds.test_idx = Array<NodeId>(std::vector<NodeId>{2, 5});
  ds.edge_weights = Array<std::int64_t>(std::vector<std::int64_t>{1, 1, 2, 3, 4, 5, 6});  // one per entry
  CHECK(keep_largest_component(ds) == 4);
  CHECK(values(ds.graph.indptr()) == std::vector<EdgeId>{0, 1, 3, 4});
  CHECK(ids_of(ds.graph) == std::vector<NodeId>{1, 0, 2, 1});
  CHECK(values(ds.edge_weights) == std::vector<std::int64_t>{2, 3, 4, 5});
  CHECK(values(ds.features) == std::vector<float>{2, 20, 3, 30, 4, 40});
  CHECK(values(ds.labels) == std::vector<std::int64_t>{2, 0, 1});
  CHECK(values(ds.node_ids) == std::vector<std::int64_t>{2, 3, 4});
  CHECK(values(ds.train_idx) == std::vector<NodeId>{1});
  CHECK(values(ds.val_idx) == std::vector<NodeId>{2});
  CHECK(values(ds.test_idx) == std::vector<NodeId>{0});
  // Again on the result: one component, nothing changes; ids map through to the first input.
  CHECK(keep_largest_component(ds) == 1);
  CHECK(values(ds.node_ids) == std::vector<std::int64_t>{2, 3, 4});

  // Ties go to the component holding the smallest id; a one-way edge still joins.
  Dataset tie;
  tie.graph = CsrGraph(Array<EdgeId>(std::vector<EdgeId>{0, 1, 1, 2, 3}), Array<NodeId>(std::vector<NodeId>{1, 3, 2}));  // 0 -> 1   2 - 3
  tie.node_ids = Array<std::int64_t>(std::vector<std::int64_t>{100, 101, 102, 103});
  CHECK(keep_largest_component(tie) == 2);
  CHECK(values(tie.node_ids) == std::vector<std::int64_t>{100, 101});
  CHECK(values(tie.graph.indptr()) == std::vector<EdgeId>{0, 1, 1});
  CHECK(ids_of(tie.graph) == std::vector<NodeId>{1});
}
