// Reading models back (run under ASan and UBSan by scripts/test.sh): a declared model written as
// weights.pt and its card loads as the same model; a flipped byte, a storage record cut short, a
// card of other weights or of another graph, and a card whose spec names other layers are refused
// with one line naming the file; weights from before cards still load, R-GCN's old "rgnn." names
// included.
#include <filesystem>
#include <fstream>
#include <iterator>

#include "trainer/torch_catch.hpp"  // torch, then Catch
#include "datasets/error.hpp"
#include "datasets/fileio.hpp"
#include "model/card.hpp"
#include "model/gnn.hpp"
#include "trainer/checkpoint.hpp"

using namespace shardgnn;
namespace fs = std::filesystem;
using Catch::Matchers::Contains;

namespace {

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

std::vector<char> bytes_of(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

void write_bytes(const std::string& path, const std::vector<char>& b) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(b.data(), static_cast<std::streamsize>(b.size()));
}

// A declared model with every kind of module a spec adds: an encoder, norms, a residual
// projection, a GIN layer's eps, jumping knowledge and an MLP head.
ModelSpec declared_spec() {
  return parse_spec(R"({"name": "io", "encoder": {"width": 12},
    "layers": [{"kind": "gin", "width": 8, "norm": "batch", "residual": "add"},
               {"kind": "gatv2", "width": 8, "heads": 2, "norm": "layer"}],
    "jumping_knowledge": "cat", "head": {"kind": "mlp", "layers": 2, "width": 6}})",
                    "io.json", 0.1);
}

struct Saved {
  fs::path dir;
  std::string weights, card;
  Gnn model{nullptr};
};

Saved save_declared(const std::string& name) {
  Saved s;
  s.dir = fs::temp_directory_path() / ("shardgnn-io-" + name + "-" + std::to_string(::getpid()));
  fs::remove_all(s.dir);
  fs::create_directories(s.dir);
  torch::manual_seed(3);
  GnnOptions o(declared_spec(), 5, 3);
  s.model = Gnn(o);
  {
    // Running statistics that are not the initial ones, so that a lost buffer shows.
    torch::NoGradGuard no_grad;
    for (auto& b : s.model->buffers())
      if (b.is_floating_point()) b.add_(0.25);
  }
  s.weights = (s.dir / "weights.pt").string();
  s.card = card_path(s.weights);
  save_weights(s.weights, *s.model);
  ModelCard card;
  card.spec = s.model->options.spec();
  card.in = 5;
  card.out = 3;
  card.task = "classes";
  card.feature_dtype = "float32";
  card.dataset = "io";
  card.partition = "not partitioned";
  write_model_card(s.card, card, s.weights);
  return s;
}

}  // namespace

TEST_CASE("a declared model loads from its weights and card as the same model", "[model_io]") {
  Saved s = save_declared("same");
  LoadedWeights loaded = load_weights(s.weights, torch::kCPU);
  REQUIRE(loaded.card.has_value());
  CHECK(loaded.note.empty());
  CHECK(loaded.card->spec.name == "io");
  const auto a = s.model->named_parameters(), b = loaded.model->named_parameters();
  REQUIRE(a.size() == b.size());
  for (const auto& item : a) CHECK(torch::equal(item.value(), b[item.key()]));
  const auto ba = s.model->named_buffers(), bb = loaded.model->named_buffers();
  REQUIRE(ba.size() == bb.size());
  for (const auto& item : ba) CHECK(torch::equal(item.value(), bb[item.key()]));
  // The same outputs on a small block (eval mode: no dropout, running statistics).
  s.model->eval();
  const torch::Tensor indptr = torch::tensor({0, 2, 3, 5}, torch::kLong), indices = torch::tensor({1, 3, 0, 4, 2}, torch::kLong);
  std::vector<BlockTensors> blocks{block_tensors(5, 3, indptr, indices), block_tensors(3, 2, torch::tensor({0, 1, 2}, torch::kLong), torch::tensor({2, 0}, torch::kLong))};
  const torch::Tensor x = torch::randn({5, 5});
  torch::NoGradGuard no_grad;
  CHECK(torch::allclose(s.model->forward(blocks, x), loaded.model->forward(blocks, x)));
  fs::remove_all(s.dir);
}

TEST_CASE("a batch-normalised model trains on a batch of one seed (running statistics for that batch)", "[model_io]") {
  Gnn model(GnnOptions(declared_spec(), 5, 3));
  model->train();
  const torch::Tensor indptr = torch::tensor({0, 2, 3}, torch::kLong), indices = torch::tensor({1, 2, 0}, torch::kLong);
  std::vector<BlockTensors> blocks{block_tensors(3, 2, indptr, indices), block_tensors(2, 1, torch::tensor({0, 1}, torch::kLong), torch::tensor({1}, torch::kLong))};
  const torch::Tensor out = model->forward(blocks, torch::randn({3, 5}));
  CHECK(out.sizes() == torch::IntArrayRef({1, 3}));
  CHECK(torch::isfinite(out).all().item<bool>());
  out.sum().backward();
  CHECK(model->named_modules()["norm0"]->is_training());  // the norm went back to training mode
}

TEST_CASE("damaged weights and cards are refused with one line naming the file", "[model_io]") {
  Saved s = save_declared("damaged");
  const std::vector<char> good = bytes_of(s.weights);
  // A flipped byte: the card's CRC-32 no longer matches.
  std::vector<char> flipped = good;
  flipped[flipped.size() / 2] = static_cast<char>(flipped[flipped.size() / 2] ^ 0x40);
  write_bytes(s.weights, flipped);
  CHECK_THAT(error_of([&] { load_weights(s.weights, torch::kCPU); }), Contains(s.weights) && Contains("does not match its model card"));
  // Without the card, the archive reader itself: a truncated file is not a weights file.
  const std::string bare = (s.dir / "bare.pt").string();
  write_bytes(bare, std::vector<char>(good.begin(), good.begin() + static_cast<std::ptrdiff_t>(good.size() / 3)));
  CHECK_THAT(error_of([&] { load_weights(bare, torch::kCPU); }), Contains(bare));
  // A card that names other layers than the weights hold.
  write_bytes(s.weights, good);
  std::string card_text;
  {
    std::ifstream in(s.card);
    card_text.assign(std::istreambuf_iterator<char>(in), {});
  }
  const auto with = [&](const std::string& from, const std::string& to) {
    std::string t = card_text;
    const auto at = t.find(from);
    REQUIRE(at != std::string::npos);
    t.replace(at, from.size(), to);
    write_text_file_atomic(s.card, t);
    return error_of([&] { load_weights(s.weights, torch::kCPU); });
  };
  CHECK_THAT(with("\"mlp_layers\": 2", "\"mlp_layers\": 3"), Contains(s.weights) && Contains("lacks entry 'conv0.mlp2.weight'"));
  CHECK_THAT(with("\"norm\": \"layer\"", "\"norm\": \"none\""), Contains(s.weights) && Contains("norm1"));
  CHECK_THAT(with("\"kind\": \"gatv2\"", "\"kind\": \"gatx\""), Contains(s.card) && Contains("layers[1].kind"));
  CHECK_THAT(with("{", "["), Contains(s.card));
  // A typed graph is not the untyped one the card describes.
  write_text_file_atomic(s.card, card_text);
  const GraphSchema typed({{"paper", 3, 5}, {"author", 2, 5}}, {{"paper", "written_by", "author"}}, "test");
  CHECK_THAT(error_of([&] { load_weights(s.weights, torch::kCPU, &typed); }), Contains("typed graph"));
  fs::remove_all(s.dir);
}

TEST_CASE("weights from before cards load through the names, R-GCN's rgnn. entries included", "[model_io]") {
  const fs::path dir = fs::temp_directory_path() / ("shardgnn-io-legacy-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  // A built-in GraphSAGE saved without a card.
  torch::manual_seed(4);
  Gnn sage(GnnOptions(ModelConfig{.kind = ModelKind::kSage, .hidden = 8}, 5, 3, 2));
  const std::string w = (dir / "sage.pt").string();
  save_weights(w, *sage);
  const LoadedWeights a = load_weights(w, torch::kCPU);
  CHECK_FALSE(a.card.has_value());
  CHECK_THAT(a.note, Contains("has no model card"));
  CHECK(a.model->options.spec().name == "sage");
  // R-GCN as the old trainer named it: every entry under "rgnn.".
  const GraphSchema schema({{"paper", 3, 4}, {"author", 2, 0}}, {{"paper", "written_by", "author"}, {"author", "writes", "paper"}}, "test");
  GnnOptions ro(ModelConfig{.kind = ModelKind::kRgcn, .hidden = 6}, 0, 3, 2);
  ro.schema(schema);
  Gnn rgcn(ro);
  torch::nn::Module old;  // the old trainer's layout: the model under "rgnn"
  old.register_module("rgnn", rgcn.ptr());
  const std::string rw = (dir / "rgcn.pt").string();
  save_weights(rw, old);
  const LoadedWeights b = load_weights(rw, torch::kCPU, &schema);
  CHECK(b.model->typed());
  for (const auto& item : rgcn->named_parameters()) CHECK(torch::equal(item.value(), b.model->named_parameters()[item.key()]));
  fs::remove_all(dir);
}
