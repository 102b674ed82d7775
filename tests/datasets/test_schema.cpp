#include <catch2/catch.hpp>
#include <filesystem>

#include "datasets/dataset.hpp"
#include "datasets/error.hpp"
#include "datasets/json_util.hpp"
#include "datasets/npy.hpp"
#include "datasets/schema.hpp"
#include "test_paths.hpp"

using namespace shardgnn;
using Catch::Matchers::Contains;
namespace fs = std::filesystem;

namespace {

// Papers 0..2 (2 features each), authors 3..4 (none); papers cite papers, are written by authors,
// authors write papers (the reverse). Paper 0 is labelled 1, paper 2 is labelled 0.
Dataset small_typed() {
  Dataset ds;
  ds.name = "typed";
  ds.schema = GraphSchema({{"paper", 3, 2}, {"author", 2, 0}},
                          {{"paper", "cites", "paper"}, {"paper", "written_by", "author"}, {"author", "writes", "paper"}}, "test");
  // rows: 0: 1 3 | 1: 0 2 4 | 2: 1 | 3: 0 | 4: 1
  ds.graph = CsrGraph(Array<EdgeId>(std::vector<EdgeId>{0, 2, 5, 6, 7, 8}), Array<NodeId>(std::vector<NodeId>{1, 3, 0, 2, 4, 1, 0, 1}));
  ds.type_features.push_back(Array<float>(std::vector<float>{0.f, 1.f, 2.f, 3.f, 4.f, 5.f}));
  ds.type_features.emplace_back();
  ds.num_classes = 2;
  ds.labels = Array<std::int64_t>(std::vector<std::int64_t>{1, -1, 0, -1, -1});
  ds.train_idx = Array<NodeId>(std::vector<NodeId>{0});
  ds.test_idx = Array<NodeId>(std::vector<NodeId>{2});
  return ds;
}

}  // namespace

TEST_CASE("a typed dataset keeps its node types, relations and per-type features through save and load", "[schema]") {
  test::ScratchDir dir;
  save_dataset(small_typed(), dir / "t");
  const auto meta = read_json_file((fs::path(dir / "t") / "meta.json").string()).as_object();
  CHECK(meta.at("node_types").as_array().size() == 2);
  CHECK(meta.at("relations").as_array()[1].at("name").as_string() == "written_by");
  CHECK(fs::exists(fs::path(dir / "t") / "features_paper.npy"));
  CHECK_FALSE(fs::exists(fs::path(dir / "t") / "features_author.npy"));
  CHECK_FALSE(fs::exists(fs::path(dir / "t") / "features.npy"));

  const Dataset ds = load_dataset(dir / "t");
  REQUIRE(ds.schema.typed());
  CHECK(ds.schema.num_types() == 2);
  CHECK(ds.schema.begin(1) == 3);
  CHECK(ds.schema.type_of(0) == 0);
  CHECK(ds.schema.type_of(2) == 0);
  CHECK(ds.schema.type_of(3) == 1);
  CHECK(ds.schema.type_of(4) == 1);
  CHECK(ds.schema.relation_between(0, 1) == 1);
  CHECK(ds.schema.relation_between(1, 1) == -1);
  CHECK(ds.schema.relation_label(2) == "author__writes__paper");
  CHECK(relation_entries(ds.graph, ds.schema) == std::vector<std::int64_t>{4, 2, 2});
  REQUIRE(ds.type_features.size() == 2);
  CHECK(std::vector<float>(ds.type_features[0].begin(), ds.type_features[0].end()) == std::vector<float>{0.f, 1.f, 2.f, 3.f, 4.f, 5.f});
  CHECK(ds.type_features[1].empty());
  CHECK(ds.feature_dim == 0);
  CHECK(validate_dataset(dir / "t").ok());
}

TEST_CASE("an untyped dataset has an empty schema and writes no type keys", "[schema]") {
  test::ScratchDir dir;
  Dataset ds = small_typed();
  ds.schema = GraphSchema();
  ds.type_features.clear();
  save_dataset(ds, dir / "u");
  CHECK_FALSE(read_json_file((fs::path(dir / "u") / "meta.json").string()).as_object().contains("node_types"));
  CHECK_FALSE(load_dataset(dir / "u").schema.typed());
  CHECK_NOTHROW(require_untyped(load_dataset(dir / "u").schema, "u", "partition"));
}

TEST_CASE("typed datasets refuse edges no relation allows, clashing relations and wrong counts, in one line", "[schema][bad-input]") {
  test::ScratchDir dir;
  SECTION("an author -> author entry") {
    Dataset ds = small_typed();
    // Author 3's row gains author 4.
    ds.graph = CsrGraph(Array<EdgeId>(std::vector<EdgeId>{0, 2, 5, 6, 8, 9}), Array<NodeId>(std::vector<NodeId>{1, 3, 0, 2, 4, 1, 0, 4, 1}));
    save_dataset(ds, dir / "bad");
    const std::string file = (fs::path(dir / "bad") / "indices.npy").string();
    CHECK_THROWS_WITH(load_dataset(dir / "bad"), Contains(file) && Contains("element 7") && Contains("3 -> 4") && Contains("no relation joins them"));
    const auto res = validate_dataset(dir / "bad");
    REQUIRE(res.errors.size() == 1);
    CHECK_THAT(res.errors[0], Contains("element 7"));
  }
  SECTION("two relations on one pair of types, without relation ids; a relation listed twice") {
    CHECK_THROWS_WITH(GraphSchema({{"paper", 3, 0}}, {{"paper", "cites", "paper"}, {"paper", "extends", "paper"}}, "m.json"),
                      Contains("m.json") && Contains("relation 1") && Contains("paper__extends__paper joins the same types as paper__cites__paper") &&
                          Contains("--relation-ids"));
    const GraphSchema with_ids({{"paper", 3, 0}}, {{"paper", "cites", "paper"}, {"paper", "extends", "paper"}}, "m.json", true);
    CHECK(with_ids.relation_between(0, 0) == GraphSchema::kSeveralRelations);
    CHECK_THROWS_WITH(GraphSchema({{"paper", 3, 0}}, {{"paper", "cites", "paper"}, {"paper", "cites", "paper"}}, "m.json", true),
                      Contains("m.json") && Contains("relation 1") && Contains("paper__cites__paper listed twice"));
  }
  SECTION("a relation naming an unknown type, a bad or repeated type name") {
    CHECK_THROWS_WITH(GraphSchema({{"paper", 3, 0}}, {{"paper", "by", "author"}}, "m.json"), Contains("destination type 'author' is not a listed node type"));
    CHECK_THROWS_WITH(GraphSchema({{"pa per", 3, 0}}, {}, "m.json"), Contains("name 'pa per'"));
    CHECK_THROWS_WITH(GraphSchema({{"paper", 3, 0}, {"paper", 1, 0}}, {}, "m.json"), Contains("'paper' listed twice"));
  }
  SECTION("counts that do not add up to num_nodes, and homogeneous features beside types") {
    save_dataset(small_typed(), dir / "t");
    const std::string meta_path = (fs::path(dir / "t") / "meta.json").string();
    auto meta = read_json_file(meta_path).as_object();
    meta["node_types"].as_array()[1].as_object()["count"] = 3;
    write_json_file(meta_path, meta);
    CHECK_THROWS_WITH(load_dataset(dir / "t"), Contains(meta_path) && Contains("counts add up to 6 nodes, num_nodes is 5"));
    meta["node_types"].as_array()[1].as_object()["count"] = 2;
    meta["feature_dim"] = 4;
    write_json_file(meta_path, meta);
    CHECK_THROWS_WITH(load_dataset(dir / "t"), Contains("key 'feature_dim'") && Contains("per node type"));
  }
  SECTION("commands of one node type say so") {
    CHECK_THROWS_WITH(require_untyped(small_typed().schema, "data/mag", "partition"),
                      Contains("data/mag") && Contains("2 node types, 3 relations") && Contains("partition takes graphs of one node type"));
  }
}

TEST_CASE("relation ids per edge: version 5, the narrowest width, through save, load and validate, other folders staying version 4",
          "[schema][relation-ids]") {
  test::ScratchDir dir;
  // small_typed() with two relations between papers: 0 -> 1 cites, 1 -> 0 and 1 -> 2 extend.
  Dataset ds = small_typed();
  ds.schema = GraphSchema({{"paper", 3, 2}, {"author", 2, 0}},
                          {{"paper", "cites", "paper"}, {"paper", "written_by", "author"}, {"author", "writes", "paper"}, {"paper", "extends", "paper"}},
                          "test", true);
  // rows by (relation, neighbour): 0: (0,1) (1,3) | 1: (1,4) (3,0) (3,2) | 2: (0,1) | 3: (2,0) | 4: (2,1)
  ds.graph = CsrGraph(Array<EdgeId>(std::vector<EdgeId>{0, 2, 5, 6, 7, 8}), Array<NodeId>(std::vector<NodeId>{1, 3, 4, 0, 2, 1, 0, 1}));
  ds.edge_relations = Array<std::int32_t>(std::vector<std::int32_t>{0, 1, 1, 3, 3, 0, 2, 2});
  save_dataset(ds, dir / "r");
  const auto meta = read_json_file((fs::path(dir / "r") / "meta.json").string()).as_object();
  CHECK(meta.at("version").as_int64() == 5);
  CHECK(meta.at("relation_ids").as_bool());
  CHECK(meta.at("arrays").at("edge_relations").at("dtype").as_string() == dtype_descr(DType::kInt8));
  const Dataset back = load_dataset(dir / "r");
  CHECK(back.schema.relation_ids());
  CHECK(back.edge_relations.widened() == std::vector<std::int64_t>{0, 1, 1, 3, 3, 0, 2, 2});
  CHECK(relation_entries(back.graph, back.schema, back.edge_relations) == std::vector<std::int64_t>{2, 2, 2, 2});
  CHECK(validate_dataset(dir / "r").ok());
  // A row out of (relation, neighbour) order is refused on load and reported by validate.
  ds.graph = CsrGraph(Array<EdgeId>(std::vector<EdgeId>{0, 2, 5, 6, 7, 8}), Array<NodeId>(std::vector<NodeId>{1, 3, 4, 2, 0, 1, 0, 1}));
  save_dataset(ds, dir / "bad");
  const std::string file = (fs::path(dir / "bad") / "indices.npy").string();
  CHECK_THROWS_WITH(load_dataset(dir / "bad"), Contains(file) && Contains("element 4") && Contains("not ordered by (relation, neighbour)"));
  const auto res = validate_dataset(dir / "bad");
  REQUIRE(res.errors.size() == 1);
  CHECK_THAT(res.errors[0], Contains("element 4"));
  // Without relation ids nothing changes on disk.
  save_dataset(small_typed(), dir / "t");
  const auto plain = read_json_file((fs::path(dir / "t") / "meta.json").string()).as_object();
  CHECK(plain.at("version").as_int64() == 4);
  CHECK_FALSE(plain.contains("relation_ids"));
  CHECK_FALSE(plain.at("arrays").as_object().contains("edge_relations"));
}

TEST_CASE("a typed dataset's per-type features store as float16 or bfloat16 and read back rounded", "[schema][feature-dtype]") {
  test::ScratchDir dir;
  const Dataset ds = small_typed();
  for (const FeatureDtype as : {FeatureDtype::kFloat16, FeatureDtype::kBFloat16}) {
    const std::string out = dir / feature_dtype_name(as);
    save_dataset(ds, out, false, as);
    const Dataset back = load_dataset(out);
    CHECK(back.feature_dtype == as);
    REQUIRE(back.type_features16.size() == 2);
    CHECK(back.type_features.empty());
    CHECK(back.type_features16[1].empty());  // authors have none
    std::vector<float> row(2);
    for (std::int64_t i = 0; i < 3; ++i) {
      const float* x = back.type_row_f32(0, i, row.data());
      // Small integers survive either 2-byte type exactly.
      CHECK(x[0] == ds.type_features[0].data()[i * 2]);
      CHECK(x[1] == ds.type_features[0].data()[i * 2 + 1]);
    }
    CHECK(validate_dataset(out).ok());
    // Saved again as float32: the rows widen back.
    save_dataset(back, dir / "wide", true, FeatureDtype::kFloat32);
    const Dataset wide = load_dataset(dir / "wide");
    CHECK(std::equal(wide.type_features[0].begin(), wide.type_features[0].end(), ds.type_features[0].begin()));
  }
}
