// Training end to end. [cora]: one process on the Cora dataset folder (run at 1 rank only):
// accuracy well above chance, checkpoints and resume, bad checkpoints. [mpi]: at 1 and 2 ranks on
// Cora partitioned per rank count: replicas stay identical, the gradient average equals the
// full-batch gradient, full-neighbourhood inference equals the serial whole-graph computation.
// Only CHECK (never REQUIRE) after the first collective: a failing rank must keep entering them.
#include <torch/cuda.h>
#include <torch/serialize.h>

#include <sys/stat.h>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <numeric>

#include "trainer/torch_catch.hpp"  // torch, then Catch
#include "comm/communicator.hpp"
#include "datasets/readers.hpp"
#include "partition/partitioner.hpp"
#include "partition/shards.hpp"
#include "cora_parts.hpp"
#include "test_paths.hpp"
#include "trainer/cora_training.hpp"
#include "trainer/data_parallel.hpp"
#include "trainer/evaluate.hpp"
#include "model/convs.hpp"
#include "model/gnn.hpp"
#include "trainer/stop.hpp"
#include "trainer/train.hpp"
#include "tests/graph_rows.hpp"

using namespace shardgnn;
namespace fs = std::filesystem;
using Catch::Matchers::Contains;

namespace {

using test::cora;
using test::quick_config;
using test::quick_sampler;

std::string slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), {}};
}

std::string trainer_error(const Shard& shard, const comm::Communicator& world, const TrainConfig& c, const SamplerConfig& s) {
  try {
    Trainer t(shard, "cora", world, c, s);
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("GCN, GraphSAGE and GAT learn Cora well above chance", "[trainer][cora]") {
  auto world = comm::Communicator::world();
  if (world.size() != 1) return;
  const Shard shard = shard_from_dataset(cora());
  for (ModelKind kind : {ModelKind::kGcn, ModelKind::kSage, ModelKind::kGat}) {
    INFO(model_name(kind));
    TrainConfig c = quick_config(kind);
    if (kind == ModelKind::kGat) c.epochs = 8;
    Trainer trainer(shard, "cora", world, c, quick_sampler());
    const TrainResult r = trainer.fit();
    CHECK(r.history.size() == static_cast<std::size_t>(c.epochs));
    CHECK(r.history.back().loss < r.history.front().loss);
    CHECK(r.best_val > 0.7);
    CHECK(r.sampled.test.count == 1000);
    CHECK(r.sampled.test.accuracy > 0.7);  // 7 classes: chance is ~0.3 (the largest class)
    CHECK(r.full.test.accuracy > 0.7);
    CHECK(r.full.test.macro_f1 > 0.6);
  }
}

TEST_CASE("early stopping keeps the best model", "[trainer][cora]") {
  auto world = comm::Communicator::world();
  if (world.size() != 1) return;
  const Shard shard = shard_from_dataset(cora());
  TrainConfig c = quick_config(ModelKind::kGcn);
  c.model.hidden = 16;
  c.epochs = 40;
  c.eval.patience = 2;
  c.eval.final_full = false;
  // Batches of 100: the 500 validation nodes fill whole batches in the final evaluation too (which
  // follows them with the test nodes), so both sample the same neighbourhoods.
  SamplerConfig s = quick_sampler();
  s.batch_size = 100;
  Trainer t(shard, "cora", world, c, s);
  const TrainResult r = t.fit();
  CHECK(r.stopped_early);
  CHECK(r.history.size() == static_cast<std::size_t>(r.best_epoch + 1 + c.eval.patience));
  for (const EpochRecord& e : r.history) CHECK(e.val.accuracy <= r.best_val);
  // The best model is restored: the same sampled neighbourhoods give the same val accuracy.
  CHECK(r.sampled.val.accuracy == r.best_val);
}

TEST_CASE("a resumed run ends exactly where an uninterrupted one does", "[trainer][cora][checkpoint]") {
  auto world = comm::Communicator::world();
  if (world.size() != 1) return;
  const Shard shard = shard_from_dataset(cora());
  test::ScratchDir dir;
  TrainConfig c = quick_config(ModelKind::kGcn);
  c.model.hidden = 32;
  c.epochs = 4;
  c.eval.final_full = false;

  TrainConfig whole = c;
  whole.files.checkpoint_dir = dir / "whole";
  Trainer a(shard, "cora", world, whole, quick_sampler());
  const TrainResult ra = a.fit();

  TrainConfig first = c;
  first.files.checkpoint_dir = dir / "split";
  first.epochs = 2;
  {
    Trainer b(shard, "cora", world, first, quick_sampler());
    b.fit();
  }
  REQUIRE(fs::exists(dir / "split/checkpoint.pt"));
  TrainConfig rest = c;
  rest.files.checkpoint_dir = dir / "split";
  rest.files.resume = true;
  Trainer b(shard, "cora", world, rest, quick_sampler());
  const TrainResult rb = b.fit();
  CHECK(rb.start_epoch == 2);
  REQUIRE(rb.history.size() == 2);
  for (std::size_t i = 0; i < 2; ++i) {
    CHECK(rb.history[i].loss == ra.history[i + 2].loss);
    CHECK(rb.history[i].val.accuracy == ra.history[i + 2].val.accuracy);
  }
  CHECK(rb.best_val == ra.best_val);
  CHECK(rb.best_epoch == ra.best_epoch);
  CHECK(b.weights_checksum() == a.weights_checksum());
  CHECK(rb.sampled.test.accuracy == ra.sampled.test.accuracy);

  // The weights file is a {name: tensor} dict for torch.load, holding the best model.
  const std::string bytes = slurp(dir / "whole/weights.pt");
  const c10::IValue v = torch::pickle_load(std::vector<char>(bytes.begin(), bytes.end()));
  REQUIRE(v.isGenericDict());
  const auto dict = v.toGenericDict();
  CHECK(dict.contains("conv0.fc.weight"));
  CHECK(dict.at("conv0.fc.weight").toTensor().sizes() == torch::IntArrayRef({32, 1433}));
  CHECK(dict.at("conv1.bias").toTensor().sizes() == torch::IntArrayRef({7}));
}

TEST_CASE("bad devices and foreign, damaged or existing checkpoints are clear errors that overwrite nothing", "[trainer][cora][bad-input]") {
  auto world = comm::Communicator::world();
  if (world.size() != 1) return;
  const Shard shard = shard_from_dataset(cora());
  test::ScratchDir dir;
  TrainConfig c = quick_config(ModelKind::kGcn);
  c.model.hidden = 16;
  c.epochs = 1;
  c.eval.final_full = false;
  c.files.checkpoint_dir = dir.str();
  Trainer(shard, "cora", world, c, quick_sampler()).fit();
  const std::string path = dir / "checkpoint.pt";
  const std::string original = slurp(path);
  REQUIRE(!original.empty());

  CHECK_THAT(trainer_error(shard, world, c, quick_sampler()), Contains("a checkpoint exists: pass --resume"));
  TrainConfig other = c;
  other.files.resume = true;
  other.model.kind = ModelKind::kSage;
  CHECK_THAT(trainer_error(shard, world, other, quick_sampler()), Contains("the checkpoint is of gcn (hidden 16, 2 layers"));
  other = c;
  other.files.resume = true;
  other.model.hidden = 32;
  CHECK_THAT(trainer_error(shard, world, other, quick_sampler()), Contains("this run trains gcn (hidden 32"));
  other = c;
  other.files.resume = true;
  CHECK_THAT(trainer_error(shard, world, other, SamplerConfig{}), Contains("3 layers"));  // three fanouts
  CHECK(slurp(path) == original);

  // A damaged checkpoint is refused by its checksum before torch parses it (a flipped byte in a
  // member's header made torch's loader corrupt the heap), and is left as it is.
  other = c;
  other.files.resume = true;
  for (std::size_t at : {std::size_t{40}, original.size() / 2, original.size() - 40}) {
    std::string flipped = original;
    flipped[at] = static_cast<char>(flipped[at] ^ 0x10);
    std::ofstream(path, std::ios::binary | std::ios::trunc) << flipped;
    CHECK_THAT(trainer_error(shard, world, other, quick_sampler()), Contains("checkpoint.pt: damaged checkpoint: checksum"));
    CHECK(slurp(path) == flipped);
  }
  // A FIFO in its place is refused, not opened (the open would wait for a writer).
  fs::remove(path);
  REQUIRE(::mkfifo(path.c_str(), 0600) == 0);
  CHECK_THAT(trainer_error(shard, world, other, quick_sampler()), Contains("checkpoint.pt: not a regular file"));
  fs::remove(path);
  for (const std::string& bad : {std::string("not a checkpoint"), original.substr(0, original.size() / 2)}) {
    std::ofstream(path, std::ios::binary | std::ios::trunc) << bad;
    CHECK_THAT(trainer_error(shard, world, other, quick_sampler()), Contains("checkpoint.pt: damaged checkpoint: no shardgnn checksum"));
    CHECK(slurp(path) == bad);
  }

  if (!torch::cuda::is_available()) {
    TrainConfig gpu = quick_config(ModelKind::kGcn);
    gpu.device.name = "cuda";
    CHECK_THAT(trainer_error(shard, world, gpu, quick_sampler()), Contains("--device cuda: no CUDA device available"));
  }
  TrainConfig zero = quick_config(ModelKind::kGcn);
  zero.model.hidden = 0;
  CHECK_THAT(trainer_error(shard, world, zero, quick_sampler()), Contains("--hidden must be at least 1"));
}

namespace {

using PartFixture = test::CoraParts;

}  // namespace

TEST_CASE("replicas stay identical across ranks through training", "[trainer][mpi]") {
  PartFixture fx;
  for (OptimizerKind opt : {OptimizerKind::kAdam, OptimizerKind::kSgd}) {
    TrainConfig c = quick_config(ModelKind::kSage);
    c.optim.kind = opt;
    c.epochs = 2;
    c.eval.final_full = true;
    SamplerConfig s = quick_sampler();
    s.batch_size = 16;  // several steps per epoch
    s.cache_policy = CachePolicy::kDegree;
    s.cache_fraction = 0.3;
    Trainer t(fx.shard, "cora", fx.world, c, s);
    const auto before = fx.world.allgather(t.weights_checksum());
    const TrainResult r = t.fit();
    const auto after = fx.world.allgather(t.weights_checksum());
    INFO(optimizer_name(opt));
    CHECK(std::all_of(before.begin(), before.end(), [&](std::uint64_t x) { return x == before[0]; }));
    CHECK(std::all_of(after.begin(), after.end(), [&](std::uint64_t x) { return x == after[0]; }));
    CHECK(after[0] != before[0]);
    CHECK(r.history.back().steps >= 140 / 16 / fx.world.size());
    CHECK(r.sampled.test.count == 1000);  // every rank's test nodes, counted once
    CHECK(r.full.val.count == 500);
    if (opt == OptimizerKind::kAdam) CHECK(r.full.test.accuracy > 0.6);
  }
}

TEST_CASE("a run stopped by a signal after any step resumes exactly where an uninterrupted one goes", "[trainer][mpi][checkpoint]") {
  PartFixture fx;
  const std::string root = fx.root;  // a folder every rank sees
  TrainConfig c = quick_config(ModelKind::kSage);
  c.epochs = 3;
  c.eval.final_full = false;
  c.model.dropout = 0.5;  // so that a resumed step must draw the same masks
  SamplerConfig s = quick_sampler();
  s.batch_size = 16;  // several steps per epoch: stops inside epochs and at their ends
  TrainConfig whole = c;
  whole.files.checkpoint_dir = root + "/whole";
  Trainer a(fx.shard, "cora", fx.world, whole, s);
  const TrainResult ra = a.fit();

  // Rank 0 alone is asked to stop before every step: every rank stops after that step, and the
  // next run resumes there, until the epochs are done.
  TrainConfig part = c;
  part.files.checkpoint_dir = root + "/stopped";
  part.files.resume = true;
  int runs = 0;
  std::vector<double> losses;
  for (;; ++runs) {
    REQUIRE(runs < 200);
    clear_stop();
    if (fx.world.rank() == 0) request_stop(SIGTERM);
    Trainer b(fx.shard, "cora", fx.world, part, s);
    const TrainResult rb = b.fit();
    for (const EpochRecord& e : rb.history) losses.push_back(e.loss);
    if (rb.stop_signal == 0) {
      CHECK(b.weights_checksum() == a.weights_checksum());
      CHECK(rb.best_val == ra.best_val);
      CHECK(rb.best_epoch == ra.best_epoch);
      CHECK(rb.sampled.test.accuracy == ra.sampled.test.accuracy);
      break;
    }
    CHECK(rb.stop_signal == SIGTERM);
    CHECK(rb.checkpointed);
    CHECK_THAT(rb.stop_message, Contains("stopped by SIGTERM"));
  }
  clear_stop();
  // More runs than epochs: some stopped inside an epoch; the epochs' losses are those of the
  // uninterrupted run (a resumed epoch's sums include its steps before the stop).
  CHECK(runs > c.epochs);
  REQUIRE(losses.size() == ra.history.size());
  for (std::size_t i = 0; i < losses.size(); ++i) CHECK(losses[i] == ra.history[i].loss);
}

TEST_CASE("a stop signal delivered twice is one request, the same sender asking again is a second", "[trainer][signals]") {
  using Action = StopSignals::Action;
  const auto t0 = std::chrono::steady_clock::time_point{} + std::chrono::hours(1);
  const auto soon = t0 + StopSignals::kDuplicateWindow / 2;
  const auto later = t0 + StopSignals::kDuplicateWindow + std::chrono::milliseconds(1);
  {  // slurmstepd, then MPICH's proxy forwarding the same scancel
    StopSignals s;
    CHECK(s.receive(100, t0) == Action::first);
    CHECK(s.receive(200, soon) == Action::duplicate);
    CHECK(s.receive(300, soon) == Action::duplicate);
    CHECK(s.receive(100, soon) == Action::second);
  }
  {  // Ctrl-C twice on a terminal (the kernel sends both)
    StopSignals s;
    CHECK(s.receive(0, t0) == Action::first);
    CHECK(s.receive(0, soon) == Action::second);
  }
  {  // one sender passing on two copies at once (timeout signals mpiexec twice, its proxy forwards both)
    StopSignals s;
    CHECK(s.receive(100, t0) == Action::first);
    CHECK(s.receive(100, t0 + StopSignals::kEchoWindow / 2) == Action::duplicate);
    CHECK(s.receive(100, t0 + StopSignals::kEchoWindow * 2) == Action::second);
  }
  {  // another process long after the first: a second request
    StopSignals s;
    CHECK(s.receive(100, t0) == Action::first);
    CHECK(s.receive(200, later) == Action::second);
  }
}

TEST_CASE("rebalanced, class-balanced and global training: every seed once, identical replicas, seeded, per-rank records", "[trainer][mpi][rebalance]") {
  PartFixture fx;
  const std::int64_t total = 140;  // Cora's training nodes
  struct Variant {
    RebalancePolicy policy;
    SeedSampling sampling;
    int slow_rank;
  };
  for (const Variant v : {Variant{RebalancePolicy::kSeeds, SeedSampling::kShard, -1}, Variant{RebalancePolicy::kCost, SeedSampling::kShard, 0},
                          Variant{RebalancePolicy::kNone, SeedSampling::kClassBalanced, -1}, Variant{RebalancePolicy::kNone, SeedSampling::kGlobal, -1},
                          Variant{RebalancePolicy::kCost, SeedSampling::kGlobal, 0}}) {
    TrainConfig c = quick_config(ModelKind::kSage);
    c.epochs = 3;
    c.eval.final_full = false;
    c.balance.rebalance = v.policy;
    c.balance.seed_sampling = v.sampling;
    c.levers.slow_rank = v.slow_rank;
    c.levers.slowdown = v.slow_rank >= 0 ? 4.0 : 1.0;
    SamplerConfig s = quick_sampler();
    s.batch_size = 16;
    auto run = [&] {
      Trainer t(fx.shard, "cora", fx.world, c, s);
      const TrainResult r = t.fit();
      return std::make_pair(r, t.weights_checksum());
    };
    const auto [r, sum] = run();
    INFO("policy " << rebalance_policy_name(v.policy) << ", seed sampling " << seed_sampling_name(v.sampling));
    const auto sums = fx.world.allgather(sum);
    CHECK(std::all_of(sums.begin(), sums.end(), [&](std::uint64_t x) { return x == sums[0]; }));
    for (const EpochRecord& e : r.history) {
      CHECK(static_cast<int>(e.ranks.size()) == fx.world.size());
      std::int64_t seeds = 0;
      for (const RankEpoch& k : e.ranks) {
        seeds += k.seeds;
        CHECK(k.steps == e.steps);
        CHECK(k.busy_s >= k.compute_s);
        CHECK(k.slowdown == (k.rank == v.slow_rank ? 4.0 : 1.0));
      }
      CHECK(seeds == total);  // each seed once per epoch (class-balanced: as many draws)
      CHECK(std::accumulate(e.plan_load.begin(), e.plan_load.end(), std::int64_t{0}) == total);
      CHECK(e.imbalance >= 1.0);
      // Equal step counts, and no rank's batch larger than its share spread over them.
      CHECK(e.steps == (total + 16 * fx.world.size() - 1) / (16 * fx.world.size()));
    }
    if (v.policy == RebalancePolicy::kSeeds) {
      // Equal counts: the same plan every epoch, so the run is reproducible bit for bit.
      const auto again = run();
      CHECK(again.second == sum);
      for (const EpochRecord& e : r.history)
        for (std::int64_t n : e.plan_load) CHECK(std::abs(n - total / fx.world.size()) <= 1);
    }
    if (v.policy == RebalancePolicy::kCost && fx.world.size() > 1) {
      // Rank 0 computes 4x slower: after the first (measuring) epoch it is given fewer seeds.
      const auto& last = r.history.back().plan_load;
      CHECK(last[0] < last[1]);
    }
  }
}

TEST_CASE("the sample-weighted gradient average equals the gradient of the whole batch", "[trainer][mpi]") {
  auto world = comm::Communicator::world();
  const int P = world.size(), rank = world.rank();
  // Every rank can build all ranks' data: rank r holds examples [start_r, start_r + r + 3).
  torch::manual_seed(1);
  const torch::Tensor all_x = torch::randn({64, 6});
  const torch::Tensor all_y = torch::randint(0, 3, {64}, torch::kLong);
  std::vector<std::int64_t> start(static_cast<std::size_t>(P) + 1, 0);
  for (int r = 0; r < P; ++r) start[static_cast<std::size_t>(r) + 1] = start[static_cast<std::size_t>(r)] + r + 3;
  namespace F = torch::nn::functional;
  auto make = [] {
    torch::manual_seed(2);
    return torch::nn::Linear(6, 3);
  };
  torch::nn::Linear local = make(), reference = make();
  const auto a = start[static_cast<std::size_t>(rank)], b = start[static_cast<std::size_t>(rank) + 1];
  F::cross_entropy(local(all_x.slice(0, a, b)), all_y.slice(0, a, b), F::CrossEntropyFuncOptions().reduction(torch::kSum)).backward();
  GradientAllreducer reducer(*local, world, /*nccl=*/nullptr, /*bucket_bytes=*/64);  // tiny buckets: several collectives
  std::vector<double> extras{1.0 * rank};
  const double total = reducer.average(static_cast<double>(b - a), extras);
  CHECK(total == static_cast<double>(start.back()));
  CHECK(extras[0] == P * (P - 1) / 2.0);
  F::cross_entropy(reference(all_x.slice(0, 0, start.back())), all_y.slice(0, 0, start.back())).backward();
  CHECK(torch::allclose(local->weight.grad(), reference->weight.grad(), 1e-5, 1e-6));
  CHECK(torch::allclose(local->bias.grad(), reference->bias.grad(), 1e-5, 1e-6));
}

TEST_CASE("full-neighbourhood inference equals the serial whole-graph computation", "[trainer][mpi]") {
  PartFixture fx;
  // The serial reference: one block holding the whole dataset graph.
  const NodeId n = fx.ds.num_nodes();
  Block whole;
  whole.num_src = whole.num_dst = n;
  whole.indptr.assign(fx.ds.graph.indptr().begin(), fx.ds.graph.indptr().end());
  whole.indices = ids_of(fx.ds.graph);
  BlockTensors wt = to_tensors(whole, torch::kCPU);
  wt.src_degree = wt.in_degree;  // symmetric graph
  const torch::Tensor x = torch::from_blob(const_cast<float*>(fx.ds.features.data()), {n, fx.ds.feature_dim}, torch::kFloat);
  const NodeId first = fx.info.book.begin(fx.world.rank());
  std::vector<std::int64_t> mine;
  for (NodeId i = 0; i < fx.shard.graph.num_nodes(); ++i) mine.push_back(fx.old_of_new[first + i]);
  const torch::Tensor mine_t = torch::tensor(mine, torch::kLong);
  // Hidden width 16: every layer narrows its rows, so each projects its table before the sums.
  // Width 4: the output layer (4 -> 7) widens, so GraphSAGE and GCN sum the 4-wide rows first.
  for (const std::int64_t hidden : {std::int64_t{16}, std::int64_t{4}}) {
    for (ModelKind kind : {ModelKind::kGcn, ModelKind::kSage, ModelKind::kGat}) {
      torch::manual_seed(5);  // the same weights on every rank
      Gnn model(GnnOptions(ModelConfig{.kind = kind, .hidden = static_cast<int>(hidden), .heads = 2}, fx.ds.feature_dim, fx.ds.num_classes, 2));
      torch::Tensor want;
      {
        torch::NoGradGuard g;
        model->eval();
        want = model->forward({wt, wt}, x).index_select(0, mine_t);
      }
      INFO(model_name(kind) << ", hidden " << hidden);
      CHECK(model->projects_table(0, fx.ds.graph.num_edges(), n, n));
      CHECK(model->projects_table(1, fx.ds.graph.num_edges(), n, n) == (hidden == 16 || kind == ModelKind::kGat));
      // Blocks of 300 dst nodes; one block (chunk 0: Cora fits every budget); and blocks cut where
      // their src rows would pass 4 KiB (a few dozen of the rows gathered). Each with the first
      // layer's blocks kept for the second, none kept, and only some.
      for (const auto& [chunk, src_bytes] : {std::pair<std::int64_t, std::int64_t>{300, kEvalSrcBytes}, {0, kEvalSrcBytes}, {0, std::int64_t{4} << 10}}) {
        for (const std::int64_t kept_bytes : {kEvalKeptBlockBytes, std::int64_t{0}, std::int64_t{32} << 10}) {
          INFO("chunk " << chunk << ", src bytes " << src_bytes << ", kept block bytes " << kept_bytes);
          const torch::Tensor got = full_inference(model, fx.shard, fx.world, torch::kCPU, chunk, src_bytes, kept_bytes);
          CHECK(got.sizes() == want.sizes());
          CHECK(torch::allclose(got, want, 1e-4, 1e-5));
        }
      }
    }
  }
}

TEST_CASE("epochs are validated on a fixed sample of the validation set, the test set once at the end", "[trainer][mpi][eval]") {
  PartFixture fx;
  TrainConfig c = quick_config(ModelKind::kGcn);
  c.epochs = 3;
  c.eval.sample = 101;  // of Cora's 500 validation nodes, split across the ranks
  c.eval.final_full = false;
  Trainer t(fx.shard, "cora", fx.world, c, quick_sampler());
  const TrainResult r = t.fit();
  REQUIRE(r.history.size() == 3);
  for (const EpochRecord& e : r.history) {
    CHECK(e.evaluated);
    CHECK(!e.tested);
    CHECK(e.val.count == 101);  // the shares of all ranks add up to the sample exactly
    CHECK(e.test.count == 0);
  }
  // The final evaluation covers both whole sets.
  CHECK(r.sampled.val.count == 500);
  CHECK(r.sampled.test.count == 1000);
  TrainConfig bad = c;
  bad.eval.sample = -1;
  CHECK_THAT(trainer_error(fx.shard, fx.world, bad, quick_sampler()), Contains("--eval-sample"));
  TrainConfig profiled_bf16 = c;
  profiled_bf16.levers.profile_steps = 2;
  profiled_bf16.model.precision = Precision::kBFloat16;
  CHECK_THAT(trainer_error(fx.shard, fx.world, profiled_bf16, quick_sampler()), Contains("--precision bf16 runs with --device cuda only"));
}

TEST_CASE("full-neighbourhood validation through the sampler scores as layer-wise full inference", "[trainer][mpi][eval]") {
  PartFixture fx;
  for (ModelKind kind : {ModelKind::kGcn, ModelKind::kSage, ModelKind::kGat}) {
    INFO(model_name(kind));
    TrainConfig c = quick_config(kind);
    c.epochs = 3;
    c.eval.mode = EvalMode::kFull;
    c.eval.final_full = true;
    Trainer t(fx.shard, "cora", fx.world, c, quick_sampler());
    const TrainResult r = t.fit();
    REQUIRE(r.best_epoch >= 0);
    // The best epoch's validation (every neighbour of the validation nodes, drawn by the sampler)
    // and the restored best model's layer-wise inference over the whole graph.
    const ClassMetrics& epoch = r.history[static_cast<std::size_t>(r.best_epoch)].val;
    CHECK(epoch.count == r.full.val.count);
    CHECK(epoch.accuracy == Approx(r.full.val.accuracy).margin(1.0 / 500));  // a tie broken the other way at most
  }
}

TEST_CASE("validation batches kept after the first validation score as freshly sampled ones", "[trainer][mpi][eval]") {
  PartFixture fx;
  // GraphSAGE and GCN keep their first layer's sums in place of the features, GAT the features.
  for (const auto& [mode, kind] : {std::pair{EvalMode::kSampled, ModelKind::kSage}, {EvalMode::kFull, ModelKind::kSage},
                                   {EvalMode::kSampled, ModelKind::kGcn}, {EvalMode::kSampled, ModelKind::kGat}}) {
    INFO(eval_mode_name(mode) << ", " << model_name(kind));
    TrainConfig c = quick_config(kind);
    c.epochs = 3;
    c.optim.lr = 1e-12;  // the weights stay put, so every validation must score alike
    c.eval.mode = mode;
    c.eval.final_full = false;
    Trainer t(fx.shard, "cora", fx.world, c, quick_sampler());
    CHECK_FALSE(t.validation_batches_kept());
    const TrainResult r = t.fit();
    CHECK(t.validation_batches_kept());  // Cora's fit any budget
    REQUIRE(r.history.size() == 3);
    // Epoch 1 samples the batches (and keeps them); epochs 2 and 3 score the kept ones.
    for (const EpochRecord& e : r.history) {
      CHECK(e.val.count == 500);
      CHECK(e.val.accuracy == r.history[0].val.accuracy);
      CHECK(e.val.macro_f1 == r.history[0].val.macro_f1);
    }
    // The final evaluation samples afresh with the training fanouts (the test set is not kept).
    if (mode == EvalMode::kSampled) CHECK(r.sampled.val.accuracy == r.history[0].val.accuracy);
  }
}

TEST_CASE("with every fanout -1 the final evaluation scores the full neighbourhoods once", "[trainer][mpi][eval]") {
  PartFixture fx;
  TrainConfig c = quick_config(ModelKind::kGcn);
  c.epochs = 1;
  SamplerConfig all = quick_sampler();
  all.fanouts.assign(all.fanouts.size(), -1);
  Trainer t(fx.shard, "cora", fx.world, c, all);
  const TrainResult r = t.fit();
  CHECK(r.sampled_is_full);
  CHECK(r.sampled.test.count == 1000);
  // What the skipped pass would have scored: the sampler over every neighbour, as full inference.
  const SplitMetrics sampled = t.evaluate_sampled();
  CHECK(sampled.test.count == r.full.test.count);
  CHECK(sampled.test.accuracy == Approx(r.full.test.accuracy).margin(1.0 / 1000));  // a tie broken the other way at most
  const TrainResult s = Trainer(fx.shard, "cora", fx.world, c, quick_sampler()).fit();
  CHECK_FALSE(s.sampled_is_full);
  CHECK(s.has_full);
}

TEST_CASE("validations inside epochs are recorded in step order and change nothing of the training", "[trainer][mpi][eval]") {
  PartFixture fx;
  TrainConfig c = quick_config(ModelKind::kSage);
  c.epochs = 2;
  c.eval.final_full = false;
  c.eval.sample = 100;
  SamplerConfig s = quick_sampler();
  s.batch_size = 16;  // several steps per epoch
  Trainer plain(fx.shard, "cora", fx.world, c, s);
  const TrainResult rp = plain.fit();
  c.eval.fraction = 0.25;
  Trainer inner(fx.shard, "cora", fx.world, c, s);
  const TrainResult ri = inner.fit();
  CHECK(inner.weights_checksum() == plain.weights_checksum());
  REQUIRE(ri.history.size() == 2);
  for (std::size_t i = 0; i < 2; ++i) {
    const EpochRecord& e = ri.history[i];
    CHECK(e.loss == rp.history[i].loss);
    CHECK(e.val.accuracy == rp.history[i].val.accuracy);
    CHECK(rp.history[i].inner.empty());
    // Every quarter of the epoch's steps, none at its end.
    const std::int64_t every = std::max<std::int64_t>(1, std::llround(0.25 * static_cast<double>(e.steps)));
    CHECK(static_cast<std::int64_t>(e.inner.size()) == (e.steps - 1) / every);
    for (std::size_t j = 0; j < e.inner.size(); ++j) {
      CHECK(e.inner[j].step == static_cast<std::int64_t>(j + 1) * every);
      CHECK(e.inner[j].score > 0);
      CHECK(e.inner[j].train_s <= e.train_s);
      if (j > 0) CHECK(e.inner[j].train_s > e.inner[j - 1].train_s);
    }
  }
}
