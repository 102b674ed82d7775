// `shardgnn train <dir>`: train a GNN. <dir> is a partitioned dataset (partition.json; run
// under `mpiexec -n <parts>`, one rank per part) or a dataset folder (meta.json; one process,
// the whole graph as a single part viewed in place).
#include <cstdio>
#include <filesystem>
#include <iostream>

#include "comm/communicator.hpp"
#include "datasets/dataset.hpp"
#include "datasets/error.hpp"
#include "partition/shards.hpp"
#include "sampler/config.hpp"
#include "tools/cli.hpp"
#include "trainer/train.hpp"

namespace fs = std::filesystem;

namespace shardgnn::cli {

namespace {

// What a rank trains on; `dataset` backs the shard's arrays in the single-process case.
struct Input {
  Dataset dataset;
  Shard shard;
  std::string name;
  std::string kind;  // "partitioned" or "dataset"
};

// Loads this rank's part of <dir>, turning any failure into an error every rank reports.
void load_input(const comm::Communicator& world, const std::string& dir, Input& in) {
  std::string error;
  try {
    if (fs::exists(fs::path(dir) / "partition.json")) {
      const PartitionInfo info = load_partition_info(dir);
      in.shard = load_shard_for_rank(info, world.rank(), world.size());
      in.name = info.dataset_name;
      in.kind = "partitioned";
    } else if (fs::exists(fs::path(dir) / "meta.json")) {
      if (world.size() != 1)
        throw InputError(dir + ": a dataset folder trains in one process; for " + std::to_string(world.size()) + " ranks partition it first (shardgnn partition " +
                         dir + " --parts " + std::to_string(world.size()) + " --out DIR)");
      in.dataset = load_dataset(dir);
      in.shard = shard_from_dataset(in.dataset);
      in.name = in.dataset.name;
      in.kind = "dataset";
    } else {
      throw InputError(dir + ": neither a partitioned dataset (partition.json) nor a dataset folder (meta.json)");
    }
  } catch (const std::exception& e) {
    error = e.what();
  }
  world.check_all(error.empty(), error);
}

std::string fixed4(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4f", x);
  return buf;
}

}  // namespace

int train_main(const std::vector<std::string>& args, const comm::Communicator& world) {
  g_command = "shardgnn train";
  po::options_description o("options");
  o.add_options()
      ("model", po::value<std::string>()->default_value("sage"), "sage, gcn or gat")
      ("fanouts", po::value<std::string>()->default_value("15,10,5"), "neighbours per hop from the seeds outward (-1 = all); their count is the depth")
      ("batch", po::value<int>()->default_value(1024), "seeds per batch per rank")
      ("hidden", po::value<int>()->default_value(256), "hidden width (GAT: split between the heads)")
      ("heads", po::value<int>()->default_value(4), "GAT attention heads")
      ("dropout", po::value<double>()->default_value(0.5), "dropout on every layer's input")
      ("lr", po::value<double>()->default_value(0.01), "learning rate")
      ("weight-decay", po::value<double>()->default_value(5e-4), "L2 weight decay")
      ("optimizer", po::value<std::string>()->default_value("adam"), "adam or sgd (momentum 0.9)")
      ("momentum", po::value<double>()->default_value(0.9), "SGD momentum")
      ("lr-schedule", po::value<std::string>()->default_value("none"), "none, step or cosine")
      ("lr-step", po::value<int>()->default_value(0), "step schedule: epochs between decays (0 = a third of --epochs)")
      ("lr-gamma", po::value<double>()->default_value(0.1), "step schedule: decay factor")
      ("epochs", po::value<int>()->default_value(20), "epochs")
      ("eval-every", po::value<int>()->default_value(1), "validate every N epochs (and after the last)")
      ("eval", po::value<std::string>()->default_value("sampled"), "per-epoch validation: sampled (training fanouts) or full (all neighbours)")
      ("no-full-eval", "skip the final full-neighbourhood evaluation")
      ("eval-chunk", po::value<std::int64_t>()->default_value(4096), "nodes per block in full-neighbourhood inference")
      ("patience", po::value<int>()->default_value(0), "stop after N validations without a better val accuracy (0 = never)")
      ("seed", po::value<std::uint64_t>()->default_value(0), "seed of weights, dropout and sampling")
      ("device", po::value<std::string>()->default_value("cpu"), "cpu, cuda (the node-local rank's GPU) or cuda:N")
      ("threads", po::value<int>()->default_value(0), "torch threads per rank (0 = OMP_NUM_THREADS, else the cores shared among the node's ranks)")
      ("prefetch", po::value<int>()->default_value(2), "batches sampled ahead by a thread (0 = none)")
      ("replace", "sample with replacement")
      ("cache-policy", po::value<std::string>()->default_value("degree"), "remote feature cache: none, degree or presample")
      ("cache-fraction", po::value<double>()->default_value(0.2), kCacheFractionHelp)
      ("node-local", po::value<std::string>()->default_value("on"), kNodeLocalHelp)
      ("checkpoint-dir", po::value<std::string>(), "write DIR/checkpoint.pt after every epoch and DIR/weights.pt at the end")
      ("resume", "continue from DIR/checkpoint.pt if it exists")
      ("force", "start over even though DIR/checkpoint.pt exists")
      ("weights", po::value<std::string>(), "write the best weights here (a tensor dict for Python's torch.load)")
      ("metrics", po::value<std::string>(), "write one JSON line per epoch here")
      ("run-dir", po::value<std::string>(), "write the metrics to DIR/metrics.jsonl (read by `shardgnn report DIR`)")
      ("rebalance", po::value<std::string>()->default_value("none"),
       "between epochs, reassign training seeds across ranks: none, seeds (equal counts) or cost (by measured cost per seed)")
      ("remote-seed-factor", po::value<double>()->default_value(1.2), "rebalancing: cost of a seed trained away from its owner, relative to an own seed")
      ("seed-sampling", po::value<std::string>()->default_value("shard"),
       "shard (each rank its own training nodes) or class-balanced (from all ranks', inversely to class frequency)")
      ("simulate-slowdown", po::value<std::string>(), "RANK:FACTOR: that rank computes FACTOR times slower (heterogeneous hardware, for tests and benchmarks)")
      ("quiet,q", "no progress output");
  po::variables_map vm;
  std::string usage_error;
  bool help = false;
  try {
    help = !parse(args, "[mpiexec -n P] shardgnn train <partitioned-dir | dataset-dir> [--model sage] [--fanouts 15,10,5] [--batch 1024] [options]", o,
                  {"dir"}, vm);
  } catch (const std::exception& e) {
    usage_error = e.what();
  }
  world.check_all(usage_error.empty(), usage_error);
  if (help) return 0;

  TrainConfig tc;
  SamplerConfig sc;
  std::string bad;
  try {
    tc.model = parse_model(vm["model"].as<std::string>());
    tc.hidden = vm["hidden"].as<int>();
    tc.heads = vm["heads"].as<int>();
    tc.dropout = vm["dropout"].as<double>();
    tc.lr = vm["lr"].as<double>();
    tc.weight_decay = vm["weight-decay"].as<double>();
    tc.optimizer = parse_optimizer(vm["optimizer"].as<std::string>());
    tc.momentum = vm["momentum"].as<double>();
    tc.lr_schedule = parse_lr_schedule(vm["lr-schedule"].as<std::string>());
    tc.lr_step_epochs = vm["lr-step"].as<int>();
    tc.lr_gamma = vm["lr-gamma"].as<double>();
    tc.epochs = vm["epochs"].as<int>();
    tc.eval_every = vm["eval-every"].as<int>();
    tc.eval_mode = parse_eval_mode(vm["eval"].as<std::string>());
    tc.final_full_eval = vm.count("no-full-eval") == 0;
    tc.eval_chunk = vm["eval-chunk"].as<std::int64_t>();
    tc.patience = vm["patience"].as<int>();
    tc.seed = vm["seed"].as<std::uint64_t>();
    tc.device = vm["device"].as<std::string>();
    tc.threads = vm["threads"].as<int>();
    if (vm.count("checkpoint-dir")) tc.checkpoint_dir = vm["checkpoint-dir"].as<std::string>();
    tc.resume = vm.count("resume") > 0;
    tc.overwrite = vm.count("force") > 0;
    if (vm.count("weights")) tc.weights_path = vm["weights"].as<std::string>();
    if (vm.count("metrics")) tc.metrics_path = vm["metrics"].as<std::string>();
    if (vm.count("run-dir")) {
      if (vm.count("metrics")) throw InputError("--run-dir and --metrics both name the metrics file: pass one");
      tc.metrics_path = (fs::path(vm["run-dir"].as<std::string>()) / "metrics.jsonl").string();
    }
    tc.rebalance = parse_rebalance_policy(vm["rebalance"].as<std::string>());
    tc.remote_seed_factor = vm["remote-seed-factor"].as<double>();
    const std::string sampling = vm["seed-sampling"].as<std::string>();
    if (sampling != "shard" && sampling != "class-balanced")
      throw InputError("unknown --seed-sampling " + quote_token(sampling) + ", expected shard or class-balanced");
    tc.class_balanced = sampling == "class-balanced";
    if (vm.count("simulate-slowdown")) parse_slowdown(vm["simulate-slowdown"].as<std::string>(), tc.slow_rank, tc.slowdown);
    tc.progress = vm.count("quiet") == 0;
    validate(tc);
    sc.fanouts = parse_fanouts(vm["fanouts"].as<std::string>());
    sc.batch_size = vm["batch"].as<int>();
    sc.replace = vm.count("replace") > 0;
    sc.seed = tc.seed;
    sc.prefetch = vm["prefetch"].as<int>();
    sc.cache_policy = parse_cache_policy(vm["cache-policy"].as<std::string>());
    sc.cache_fraction = vm["cache-fraction"].as<double>();
    sc.node_local = parse_on_off(vm["node-local"].as<std::string>(), "--node-local");
    validate(sc);
  } catch (const std::exception& e) {
    bad = e.what();
  }
  world.check_all(bad.empty(), bad);

  const std::string dir = vm["dir"].as<std::string>();
  Input in;
  load_input(world, dir, in);
  Trainer trainer(in.shard, in.name, world, tc, sc);
  if (world.rank() == 0 && tc.progress)
    std::printf("training %s on '%s' (%s, %d rank%s, %s): %lld parameters, fanouts %s, batch %d\n", model_name(tc.model).c_str(), in.name.c_str(),
                in.kind.c_str(), world.size(), world.size() == 1 ? "" : "s", trainer.device_name().c_str(),
                static_cast<long long>(trainer.num_parameters()), vm["fanouts"].as<std::string>().c_str(), sc.batch_size);
  const TrainResult r = trainer.fit();
  if (world.rank() == 0) {
    std::printf("best validation accuracy %s at epoch %d%s\n", fixed4(r.best_val).c_str(), r.best_epoch + 1, r.stopped_early ? " (stopped early)" : "");
    std::printf("test accuracy %s, macro-F1 %s (sampled neighbourhoods)\n", fixed4(r.sampled.test.accuracy).c_str(), fixed4(r.sampled.test.macro_f1).c_str());
    if (r.has_full)
      std::printf("test accuracy %s, macro-F1 %s (full neighbourhoods)\n", fixed4(r.full.test.accuracy).c_str(), fixed4(r.full.test.macro_f1).c_str());
    std::fflush(stdout);
  }
  return 0;
}

}  // namespace shardgnn::cli

// The entry point `shardgnn train` finds with dlsym: training (and libtorch) lives in this module
// so that every other command starts without loading libtorch. Exceptions stay inside the module:
// run_guarded turns them into the job-wide outcome here. `wait_mode` is the comm::WaitMode the
// loader's Environment chose: this module has its own copy of the MPI layer's state (it is loaded
// with RTLD_LOCAL), which would otherwise stay at its default and spin on an oversubscribed node.
extern "C" int shardgnn_train_entry(const std::vector<std::string>* args, const shardgnn::comm::Communicator* world, int wait_mode) {
  using namespace shardgnn;
  comm::set_wait_mode(static_cast<comm::WaitMode>(wait_mode));
  cli::keep_freed_memory_in_heap();
  return comm::run_guarded("shardgnn train", *world, [&] {
    try {
      return cli::train_main(*args, *world);
    } catch (const cli::UsageError& e) {
      throw comm::CollectiveError(e.what());
    }
  });
}
