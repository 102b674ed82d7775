// The trainer on a GPU against the CPU: layers within float tolerance, a short Cora run within an
// accuracy band, checkpoints written on one device and resumed on the other. Without a CUDA
// device the program exits 77, which ctest reports as skipped; SHARDGNN_TEST_DEVICE=cpu runs
// the same comparisons with the CPU standing in for the GPU (a rehearsal of the test itself).
#include <torch/cuda.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <thread>

#include "trainer/torch_catch.hpp"  // torch, then Catch
#include "catch_session.hpp"
#include "comm/communicator.hpp"
#include "partition/shards.hpp"
#include "test_paths.hpp"
#include "trainer/cora_training.hpp"
#include "model/convs.hpp"
#include "model/gnn.hpp"
#include "trainer/staging.hpp"
#include "trainer/train.hpp"

using namespace shardgnn;
namespace fs = std::filesystem;

namespace {

// The device under test: the first GPU, or the CPU in a rehearsal.
std::string device_name() { return torch::cuda::is_available() ? "cuda:0" : "cpu"; }

using test::cora;

TrainConfig quick(const std::string& device) {
  TrainConfig c = test::quick_config(ModelKind::kSage);
  c.epochs = 8;
  c.device.name = device;
  return c;
}

SamplerConfig sampler() { return test::quick_sampler(); }

// num_dst dst nodes among num_src src nodes, in-edges from (v * 7 + k * 3) % num_src.
Block block(std::int64_t num_src, std::int64_t num_dst, std::int64_t degree) {
  Block b;
  b.num_src = num_src;
  b.num_dst = num_dst;
  b.indptr.push_back(0);
  for (std::int64_t v = 0; v < num_dst; ++v) {
    for (std::int64_t k = 1; k <= degree; ++k) b.indices.push_back((v * 7 + k * 3) % num_src);
    b.indptr.push_back(static_cast<std::int64_t>(b.indices.size()));
  }
  return b;
}

// A two-layer batch of 200 input nodes with 12 features, labels (two unlabelled) and degrees.
MiniBatch batch() {
  MiniBatch mb;
  mb.blocks = {block(200, 60, 5), block(60, 16, 4)};
  mb.layer_nodes = {std::vector<NodeId>(16), std::vector<NodeId>(60), std::vector<NodeId>(200)};
  for (std::size_t h = 0; h < mb.layer_nodes.size(); ++h)
    for (std::size_t i = 0; i < mb.layer_nodes[h].size(); ++i) mb.layer_nodes[h][i] = static_cast<NodeId>(i * 3);
  mb.feature_dim = 12;
  mb.features.resize(200 * 12);
  for (std::size_t i = 0; i < mb.features.size(); ++i) mb.features[i] = static_cast<float>(i % 97) * 0.25f;
  ClassTargets y;
  for (std::int64_t i = 0; i < 16; ++i) y.classes.push_back(i == 3 || i == 9 ? -1 : i % 4);
  mb.targets = std::move(y);
  for (std::int64_t i = 0; i < 200; ++i) mb.degrees.push_back(1 + i % 11);
  return mb;
}

bool same(const torch::Tensor& a, const torch::Tensor& b) { return a.defined() == b.defined() && (!a.defined() || torch::equal(a, b.to(torch::kCPU))); }

// Every tensor of `got` (on any device) equals the CPU's `want`.
void check_same(const BatchTensors& want, const BatchTensors& got) {
  CHECK(same(want.x, got.x));
  CHECK(same(want.y, got.y));
  REQUIRE(want.blocks.size() == got.blocks.size());
  for (std::size_t l = 0; l < want.blocks.size(); ++l) {
    INFO("block " << l);
    const BlockTensors &a = want.blocks[l], &b = got.blocks[l];
    CHECK(a.num_src == b.num_src);
    CHECK(a.num_dst == b.num_dst);
    CHECK(same(a.indptr, b.indptr));
    CHECK(same(a.src, b.src));
    CHECK(same(a.dst, b.dst));
    CHECK(same(a.in_degree, b.in_degree));
    CHECK(same(a.src_degree, b.src_degree));
  }
}

}  // namespace

TEST_CASE("a batch staged for the device by another thread arrives whole: the tensors the CPU makes of it", "[device][staging]") {
  const torch::Device dev(device_name());
  const MiniBatch mb = batch();
  const BatchTensors want = to_tensors(mb, torch::kCPU);
  INFO("on " << dev);
  SECTION("packed into two tensors and unpacked") {
    const PackedBatch packed = pack_batch(mb, dev, /*pinned=*/!dev.is_cpu());
    CHECK(packed.ints.device() == dev);
    check_same(want, unpack_batch(packed, mb));
  }
  SECTION("staged on the prefetch side, taken on this one") {
    const BatchStager stager(dev);
    CHECK(stager.copies() == !dev.is_cpu());
    MiniBatch staged = batch();
    std::thread producer([&] { stager.stage(staged); });
    producer.join();
    CHECK(static_cast<bool>(staged.staged) == stager.copies());
    const BatchTensors got = stager.take(staged);
    CHECK(got.x.device() == dev);
    check_same(want, got);
  }
}

TEST_CASE("dropout draws the same mask on the device as on the CPU from the same seed", "[device][dropout]") {
  const torch::Device dev(device_name());
  Gnn cpu(GnnOptions(ModelConfig{.kind = ModelKind::kSage, .hidden = 16, .dropout = 0.3}, 12, 4, 2));
  Gnn other(GnnOptions(ModelConfig{.kind = ModelKind::kSage, .hidden = 16, .dropout = 0.3}, 12, 4, 2));
  other->to(dev);
  torch::manual_seed(2);
  const torch::Tensor x = torch::randn({3001, 7});
  for (const bool grad : {false, true}) {  // the mask applied in one pass, and the mask kept for the gradient
    INFO((grad ? "with" : "without") << " a gradient, on " << dev);
    cpu->reseed_dropout(41);
    other->reseed_dropout(41);
    const torch::Tensor a = cpu->dropout(x.clone().requires_grad_(grad), 0.3);
    const torch::Tensor b = other->dropout(x.to(dev).requires_grad_(grad), 0.3);
    CHECK(torch::equal(a, b.to(torch::kCPU)));
    const double kept = a.ne(0).to(torch::kDouble).mean().item<double>();
    CHECK(kept == Approx(0.7).margin(0.02));
  }
}

TEST_CASE("every layer gives the CPU's logits and gradients on the device, within float tolerance", "[device][layers]") {
  const torch::Device dev(device_name());
  const std::vector<Block> blocks{block(200, 60, 5), block(60, 16, 4)};
  torch::manual_seed(3);
  const torch::Tensor x = torch::randn({200, 12});
  for (ModelKind kind : {ModelKind::kSage, ModelKind::kGcn, ModelKind::kGat}) {
    INFO(model_name(kind) << " on " << dev);
    torch::manual_seed(5);
    Gnn cpu(GnnOptions(ModelConfig{.kind = kind, .hidden = 16, .heads = 2}, 12, 4, 2));
    Gnn other(GnnOptions(ModelConfig{.kind = kind, .hidden = 16, .heads = 2}, 12, 4, 2));
    {
      torch::NoGradGuard g;
      const auto from = cpu->parameters(), to = other->parameters();
      for (std::size_t i = 0; i < from.size(); ++i) to[i].copy_(from[i]);
    }
    cpu->eval();
    other->eval();
    other->to(dev);
    auto on_cpu = to_tensors(blocks, torch::kCPU), on_dev = to_tensors(blocks, dev);
    if (kind == ModelKind::kGcn) {
      // As training runs GCN: full-graph degrees (at least the sampled in-edges, 5 and 4 here).
      const torch::Tensor degree = torch::arange(200, torch::kFloat).remainder(7) + 5;
      for (std::size_t l = 0; l < blocks.size(); ++l) {
        on_cpu[l].src_degree = degree.slice(0, 0, blocks[l].num_src);
        on_dev[l].src_degree = on_cpu[l].src_degree.to(dev);
      }
    }
    const torch::Tensor a = cpu->forward(on_cpu, x);
    const torch::Tensor b = other->forward(on_dev, x.to(dev));
    CHECK(torch::allclose(a, b.to(torch::kCPU), 1e-4, 1e-5));
    a.square().sum().backward();
    b.square().sum().backward();
    const auto ga = cpu->parameters(), gb = other->parameters();
    for (std::size_t i = 0; i < ga.size(); ++i) CHECK(torch::allclose(ga[i].grad(), gb[i].grad().to(torch::kCPU), 1e-3, 1e-4));
  }
}

TEST_CASE("a short Cora run on the device scores within a band of the same run on the CPU", "[device][cora]") {
  auto world = comm::Communicator::world();
  const Shard shard = shard_from_dataset(cora());
  Trainer on_cpu(shard, "cora", world, quick("cpu"), sampler());
  const TrainResult a = on_cpu.fit();
  Trainer on_device(shard, "cora", world, quick(device_name()), sampler());
  const TrainResult b = on_device.fit();
  INFO("test accuracy: CPU " << a.full.test.accuracy << ", " << device_name() << " " << b.full.test.accuracy);
  CHECK(b.full.test.accuracy > 0.7);
  CHECK(std::abs(a.full.test.accuracy - b.full.test.accuracy) < 0.05);
}

TEST_CASE("a checkpoint written on one device resumes on the other", "[device][checkpoint]") {
  auto world = comm::Communicator::world();
  const Shard shard = shard_from_dataset(cora());
  test::ScratchDir dir;
  int run = 0;
  for (const auto& [first, second] : {std::pair{device_name(), std::string("cpu")}, {std::string("cpu"), device_name()}}) {
    INFO(first << " then " << second);
    const fs::path ck = dir / ("run-" + std::to_string(run++));
    TrainConfig c = quick(first);
    c.epochs = 3;
    c.files.checkpoint_dir = ck;
    Trainer(shard, "cora", world, c, sampler()).fit();
    REQUIRE(fs::exists(ck / "checkpoint.pt"));
    c.device.name = second;
    c.epochs = 6;
    c.files.resume = true;
    Trainer t(shard, "cora", world, c, sampler());
    const TrainResult r = t.fit();
    CHECK(r.start_epoch == 3);
    CHECK(r.history.size() == 3);
    CHECK(r.full.test.accuracy > 0.7);
  }
}

int main(int argc, char** argv) {
  comm::Environment env(argc, argv);
  const char* rehearse = std::getenv("SHARDGNN_TEST_DEVICE");
  if (!torch::cuda::is_available() && !(rehearse != nullptr && std::string(rehearse) == "cpu")) {
    std::printf("no CUDA device here: the device tests are skipped (SHARDGNN_TEST_DEVICE=cpu rehearses them on the CPU)\n");
    return 77;
  }
  return test::run_catch(argc, argv);
}
