// Model specs and cards without torch: parsing, the errors a bad spec gets (file, key path, what
// was expected), the built-ins' expansion, and the card's round trip and checks.
#include <boost/json.hpp>
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>

#include "datasets/error.hpp"
#include "datasets/fileio.hpp"
#include "model/card.hpp"
#include "model/spec.hpp"

using namespace shardgnn;
namespace fs = std::filesystem;

namespace {

// The message of the InputError that `f` throws ("" when none).
template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

SpecContext untyped(std::int64_t hops) { return SpecContext{.in = 10, .out = 3, .hops = hops}; }

}  // namespace

TEST_CASE("a spec file declares encoder, layers, jumping knowledge and head", "[model][spec]") {
  const ModelSpec s = parse_spec(R"({
    // comments and trailing commas are allowed, as in hand-written configuration
    "name": "deep-sage",
    "layers": [
      {"kind": "sage", "width": 64, "aggregation": "max", "norm": "batch", "residual": "add"},
      {"kind": "gatv2", "width": 64, "heads": 8, "attn_dropout": 0.1, "activation": "elu"},
      {"kind": "gin", "width": 32, "mlp_layers": 3, "train_eps": false, "dropout": 0.2},
    ],
    "jumping_knowledge": "cat",
    "head": {"kind": "mlp", "layers": 2, "width": 48, "dropout": 0.1},
  })",
                                 "deep.json", 0.5);
  CHECK(s.name == "deep-sage");
  REQUIRE(s.layers.size() == 3);
  CHECK(s.layers[0].kind == LayerKind::kSage);
  CHECK(s.layers[0].aggregation == Aggregation::kMax);
  CHECK(s.layers[0].norm == Norm::kBatch);
  CHECK(s.layers[0].residual == Residual::kAdd);
  CHECK(s.layers[0].dropout == 0.5);  // --dropout, where a layer names none
  CHECK(s.layers[1].heads == 8);
  CHECK(s.layers[1].activation == Activation::kElu);
  CHECK(s.layers[2].mlp_layers == 3);
  CHECK_FALSE(s.layers[2].train_eps);
  CHECK(s.layers[2].dropout == 0.2);
  CHECK(s.layers[2].activation == Activation::kRelu);  // a head follows: the last layer is hidden
  CHECK(s.jumping_knowledge == JumpingKnowledge::kCat);
  CHECK(s.head.kind == HeadKind::kMlp);
  const ModelSpec c = check_spec(s, untyped(3), "deep.json");
  CHECK(readout_width(c) == 64 + 64 + 32);
  CHECK(layer_in_width(c, 10, 0) == 10);
  CHECK(layer_in_width(c, 10, 2) == 64);
  // Written and read back, the same spec (and the same checksum).
  const ModelSpec back = parse_spec(boost::json::serialize(boost::json::value_from(c)), "back.json", 0);
  CHECK(spec_checksum(back) == spec_checksum(c));
  CHECK(boost::json::serialize(boost::json::value_from(back)) == boost::json::serialize(boost::json::value_from(c)));
}

TEST_CASE("the built-ins are specs: --model sage and a file of its spec are one model", "[model][spec]") {
  const ModelSpec sage = builtin_spec("sage", 64, 4, 0, 0.5, 2);
  REQUIRE(sage.layers.size() == 2);
  CHECK(sage.layers[0].width == 64);
  CHECK(sage.layers[0].activation == Activation::kRelu);
  CHECK(sage.layers[1].width == 0);  // the task's width, resolved by check_spec
  CHECK(sage.layers[1].activation == Activation::kNone);
  const ModelSpec checked = check_spec(sage, untyped(2), "--model sage");
  CHECK(checked.layers[1].width == 3);
  const ModelSpec from_file = check_spec(parse_spec(boost::json::serialize(boost::json::value_from(checked)), "sage.json", 0.5), untyped(2), "sage.json");
  CHECK(spec_checksum(from_file) == spec_checksum(checked));

  const ModelSpec gat = builtin_spec("gat", 64, 4, 0, 0.6, 3);
  CHECK(gat.layers[0].heads == 4);
  CHECK(gat.layers[0].concat);
  CHECK(gat.layers[0].attn_dropout == 0.6);
  CHECK(gat.layers[0].activation == Activation::kElu);
  CHECK_FALSE(gat.layers[2].concat);  // the output averages its heads
  const ModelSpec rgat = builtin_spec("rgat", 32, 2, 0, 0.2, 2);
  CHECK(rgat.encoder.linear);
  CHECK(rgat.encoder.width == 32);
  CHECK(rgat.layers[0].attn_dropout == 0);  // MLPerf's reference drops no attention
  CHECK(builtin_spec("rgcn", 32, 2, 5, 0.2, 2).layers[1].bases == 5);
  CHECK(builtin_spec("graphsage", 8, 1, 0, 0, 1).name == "sage");
  CHECK_THAT(error_of([] { builtin_spec("gin", 8, 1, 0, 0, 1); }), Catch::Matchers::Contains("a spec file"));
  CHECK(names_spec_file("models/deep.json"));
  CHECK(names_spec_file("deep.json"));
  CHECK_FALSE(names_spec_file("sage"));
}

TEST_CASE("a bad spec is one line naming the file, the key path and what was expected", "[model][spec]") {
  const auto parse_error = [](const std::string& text) { return error_of([&] { parse_spec(text, "m.json", 0.5); }); };
  const auto check_error = [](const std::string& text, SpecContext ctx) { return error_of([&] { check_spec(parse_spec(text, "m.json", 0.5), ctx, "m.json"); }); };
  using Catch::Matchers::Contains;
  CHECK_THAT(parse_error(R"({"layers": [{"kind": "sage", "width": 8},]x)"), Contains("m.json") && Contains("line 1") && Contains("malformed JSON"));
  CHECK_THAT(parse_error(R"({"layers": [{"kind": "sagex"}]})"), Contains("m.json") && Contains("layers[0].kind") && Contains("gatv2"));
  CHECK_THAT(parse_error(R"({"layers": [{"kind": "sage", "widht": 8}]})"), Contains("layers[0].widht") && Contains("unknown key"));
  CHECK_THAT(parse_error(R"({"layer": []})"), Contains("key 'layer'") && Contains("unknown key"));
  CHECK_THAT(parse_error(R"({"layers": []})"), Contains("key 'layers'") && Contains("at least one layer"));
  CHECK_THAT(parse_error(R"({"layers": [{"kind": "sage", "heads": 4}]})"), Contains("layers[0].heads") && Contains("gat, gatv2 and rgat"));
  CHECK_THAT(parse_error(R"({"layers": [{"kind": "gat", "width": "8"}]})"), Contains("layers[0].width") && Contains("integer"));
  CHECK_THAT(parse_error(R"({"layers": [{"kind": "gat", "dropout": 1.5}]})"), Contains("layers[0].dropout") && Contains("[0, 1)"));
  CHECK_THAT(parse_error(R"({"layers": [{"kind": "sage"}], "head": {"kind": "mlp", "layers": 2}})"), Contains("head.width") && Contains("hidden width"));
  CHECK_THAT(parse_error("[1, 2]"), Contains("expected an object"));
  // Against the data: hops, widths, heads, graph kind, jumping knowledge.
  CHECK_THAT(check_error(R"({"layers": [{"kind": "sage"}]})", untyped(2)), Contains("key 'layers'") && Contains("--fanouts 2 hops"));
  CHECK_THAT(check_error(R"({"layers": [{"kind": "gat", "width": 10, "heads": 4}, {"kind": "sage"}]})", untyped(2)),
             Contains("layers[0].width") && Contains("not divisible by heads 4"));
  CHECK_THAT(check_error(R"({"layers": [{"kind": "sage"}, {"kind": "sage", "width": 7}]})", untyped(2)),
             Contains("layers[0].width") && Contains("missing"));
  CHECK_THAT(check_error(R"({"layers": [{"kind": "sage", "width": 8}, {"kind": "sage", "width": 7}]})", untyped(2)),
             Contains("layers[1].width") && Contains("3 wide"));
  CHECK_THAT(check_error(R"({"layers": [{"kind": "rgcn", "width": 8}]})", untyped(1)), Contains("layers[0].kind") && Contains("typed graphs"));
  CHECK_THAT(check_error(R"({"layers": [{"kind": "sage", "width": 8}], "jumping_knowledge": "cat"})", untyped(1)), Contains("key 'head'"));
  CHECK_THAT(check_error(R"({"layers": [{"kind": "sage", "width": 8}, {"kind": "sage", "width": 4}], "jumping_knowledge": "max", "head": {"kind": "linear"}})",
                         untyped(2)),
             Contains("layers[1].width") && Contains("one width"));
  SpecContext typed = untyped(1);
  typed.typed = true;
  CHECK_THAT(check_error(R"({"layers": [{"kind": "rgcn", "width": 8}], "head": {"kind": "linear"}})", typed), Contains("encoder.width"));
  CHECK_THAT(check_error(R"({"encoder": {"width": 8}, "layers": [{"kind": "gcn"}]})", typed), Contains("layers[0].kind") && Contains("rgcn"));
  CHECK(check_error(R"({"encoder": {"width": 8}, "layers": [{"kind": "rgat", "heads": 2}]})", typed).empty());
  const fs::path missing = fs::temp_directory_path() / "shardgnn-no-such-spec.json";
  CHECK_THAT(error_of([&] { read_spec_file(missing.string(), 0.5); }), Contains(missing.string()) && Contains("no such model spec file"));
}

TEST_CASE("a model card round-trips, and refuses other weights and other graphs", "[model][card]") {
  const fs::path dir = fs::temp_directory_path() / ("shardgnn-card-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::string weights = (dir / "weights.pt").string();
  write_text_file_atomic(weights, "not really torch, but bytes with a CRC");
  ModelCard card;
  card.spec = check_spec(builtin_spec("gat", 16, 2, 0, 0.5, 2), untyped(2), "--model gat");
  card.in = 10;
  card.out = 3;
  card.task = "classes";
  card.feature_dtype = "float32";
  card.dataset = "cora";
  card.partition = "not partitioned";
  CHECK(card_path(weights) == (dir / "model.json").string());
  CHECK(card_path((dir / "best.pt").string()) == (dir / "best.model.json").string());
  write_model_card(card_path(weights), card, weights);
  const ModelCard back = read_model_card(card_path(weights));
  CHECK(spec_checksum(back.spec) == spec_checksum(card.spec));
  CHECK(back.in == 10);
  CHECK(back.out == 3);
  CHECK(back.task == "classes");
  CHECK(back.program == program_version());
  CHECK_NOTHROW(check_card_weights(back, card_path(weights), weights));
  // A flipped byte: the CRC names the weights file.
  write_text_file_atomic(weights, "not really torch, but bytes with a CRX");
  CHECK_THAT(error_of([&] { check_card_weights(back, card_path(weights), weights); }), Catch::Matchers::Contains(weights) && Catch::Matchers::Contains("CRC-32"));
  write_text_file_atomic(weights, "short");
  CHECK_THAT(error_of([&] { check_card_weights(back, card_path(weights), weights); }), Catch::Matchers::Contains("bytes"));
  // A typed graph is not the untyped one the card was trained on.
  const GraphSchema typed({{"paper", 5, 4}, {"author", 3, 0}}, {{"author", "writes", "paper"}}, "test");
  CHECK_THAT(error_of([&] { check_card_schema(back, card_path(weights), typed, "input"); }), Catch::Matchers::Contains("typed graph"));
  // A damaged card: one line naming the card and the key.
  std::string text;
  {
    std::ifstream in(card_path(weights));
    text.assign(std::istreambuf_iterator<char>(in), {});
  }
  const auto with = [&](const std::string& from, const std::string& to) {
    std::string t = text;
    t.replace(t.find(from), from.size(), to);
    write_text_file_atomic(card_path(weights), t);
    return error_of([&] { read_model_card(card_path(weights)); });
  };
  CHECK_THAT(with("\"task\"", "\"tusk\""), Catch::Matchers::Contains("model.json") && Catch::Matchers::Contains("task"));
  CHECK_THAT(with("\"kind\": \"gat\"", "\"kind\": \"gatz\""), Catch::Matchers::Contains("model.json") && Catch::Matchers::Contains("layers[0].kind"));
  CHECK_THAT(with("\"version\": 1", "\"version\": 9"), Catch::Matchers::Contains("version 9"));
  fs::remove_all(dir);
}
