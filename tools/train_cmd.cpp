// `shardgnn train <dir>` (the program shardgnn-train, which the dispatcher execs): train a GNN.
// <dir> is a partitioned dataset (partition.json; run under `mpiexec -n <parts>`, one rank per
// part) or a dataset folder (meta.json; one process, the whole graph as a single part viewed in
// place).
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <iostream>
#include <map>

#include "comm/communicator.hpp"
#include "datasets/dataset.hpp"
#include "datasets/error.hpp"
#include "datasets/names.hpp"
#include "partition/shards.hpp"
#include "sampler/config.hpp"
#include "sampler/feature_store.hpp"
#include "tools/cli.hpp"
#include "tools/mpi_program.hpp"
#include "tools/run_input.hpp"
#include "tools/sampler_options.hpp"
#include "trainer/stop.hpp"
#include "trainer/train.hpp"

namespace fs = std::filesystem;

namespace shardgnn::cli {

namespace {

std::string fixed4(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4f", x);
  return buf;
}

// The start-of-run lines a batch log needs (rank 0 prints; collective): when, which job, where
// the ranks run and with how many threads, how big the shards are, where the run's files go; and
// which process each rank is, since a rank killed outright takes its peers down before they can
// say anything, and the launcher names the lost process by PID and host (Hydra) or task (srun).
void print_run_lines(const comm::Communicator& world, const Shard& shard, const Trainer& trainer, const TrainConfig& tc) {
  struct RankFacts {
    char host[64];
    std::int64_t pid, nodes, entries, cached_rows, capped;
  };
  RankFacts me{};
  ::gethostname(me.host, sizeof me.host - 1);
  me.pid = ::getpid();
  me.nodes = shard.graph.num_nodes();
  me.entries = shard.graph.num_edges();
  me.cached_rows = trainer.features().cached_rows();
  me.capped = trainer.features().cache_capped();
  const auto all = world.allgather<RankFacts>(me);
  const std::vector<int> node_of = world.node_ids();
  if (world.rank() != 0 || !tc.files.progress) return;
  std::map<int, int> per_node;
  for (const int n : node_of) ++per_node[n];
  int most = 0;
  for (const auto& [node, count] : per_node) most = std::max(most, count);
  const auto [fewest, most_nodes] = std::minmax_element(all.begin(), all.end(), [](const RankFacts& a, const RankFacts& b) { return a.nodes < b.nodes; });
  const auto [least, most_entries] = std::minmax_element(all.begin(), all.end(), [](const RankFacts& a, const RankFacts& b) { return a.entries < b.entries; });
  const char* job = std::getenv("SLURM_JOB_ID");
  const char* restarts = std::getenv("SLURM_RESTART_COUNT");
  std::string where = job ? std::string("SLURM job ") + job + (restarts && std::atoi(restarts) > 0 ? std::string(" (restart ") + restarts + ")" : "")
                          : std::string("no batch job");
  std::printf("run: %s, %s, %d rank%s on %zu node%s (at most %d per node), %s, shards %lld-%lld nodes and %lld-%lld entries%s\n", utc_now().c_str(),
              where.c_str(), world.size(), world.size() == 1 ? "" : "s", per_node.size(), per_node.size() == 1 ? "" : "s", most,
              trainer.threads_text().c_str(), static_cast<long long>(fewest->nodes), static_cast<long long>(most_nodes->nodes),
              static_cast<long long>(least->entries), static_cast<long long>(most_entries->entries),
              tc.files.checkpoint_dir.empty() ? "" : (", checkpoints in " + tc.files.checkpoint_dir).c_str());
  if (world.size() > 1) {
    const auto [few_rows, most_rows] = std::minmax_element(all.begin(), all.end(), [](const RankFacts& a, const RankFacts& b) { return a.cached_rows < b.cached_rows; });
    const bool capped = std::any_of(all.begin(), all.end(), [](const RankFacts& f) { return f.capped != 0; });
    const double row_mb = static_cast<double>(shard.feature_row_bytes()) / 1e6;  // a cached row as stored
    std::printf("feature cache: %lld-%lld rows per rank (%.0f-%.0f MB)%s, rows on the wire as %s\n", static_cast<long long>(few_rows->cached_rows),
                static_cast<long long>(most_rows->cached_rows), static_cast<double>(few_rows->cached_rows) * row_mb,
                static_cast<double>(most_rows->cached_rows) * row_mb, capped ? ", held to its share of the node's memory" : "",
                trainer.features().wire_name().c_str());
    std::string line = "ranks (host:pid):";
    for (std::size_t r = 0; r < all.size(); ++r) line += (r ? ", " : " ") + std::to_string(r) + " " + all[r].host + ":" + std::to_string(all[r].pid);
    std::printf("%s\n", line.c_str());
  }
  std::fflush(stdout);
}

// The run's outcome as the metrics file's last line (rank 0; a failure fails every rank).
void write_result(const comm::Communicator& world, const TrainConfig& tc, const TrainResult& r) {
  comm::agree(world, [&] {
    if (world.rank() != 0 || tc.files.metrics.empty()) return;
    ResultRecord rec;
    rec.best_epoch = r.best_epoch;
    rec.best_val = r.best_val;
    rec.score = r.score;
    rec.stopped_early = r.stopped_early;
    if (r.tested && !r.sampled_is_full) rec.sampled = r.sampled.test;
    if (r.tested && r.has_full) rec.full = r.full.test;
    if (r.tested) rec.rank_test = (r.has_full ? r.full : r.sampled).test_per_rank;
    if (r.personalized) rec.personalized = r.personalized->test;
    rec.personalized_full = r.personalized_full;
    rec.train_s = r.train_s;
    rec.sampled_s = r.sampled_s;
    rec.full_s = r.full_s;
    if (r.op_profile) rec.op_profile = format_op_profile(*r.op_profile);
    MetricsLog(tc.files.metrics, /*append=*/true).write(rec);
  });
}

// The command line, in groups by concern; the levers meant for benchmarks and tests sit in a
// group of their own. What options cannot bind directly lands in `extra`.
struct ExtraOptions {
  std::string slowdown, stop, run_dir, scratch;
  bool no_full_eval = false, no_test = false, quiet = false;
};
po::options_description train_options(TrainConfig& tc, SamplerConfig& sc, ExtraOptions& x) {
  po::options_description sampling("sampling and features");
  add_sampler_options(sampling, sc);
  sampling.add_options()("prefetch", bound(sc.prefetch), "batches sampled ahead by a thread (0 = none)");
  po::options_description model("model");
  model.add_options()
      ("task", bound(tc.task, parse_task, task_name),
       (std::string("auto (from the labels: labels.npy one class per node, label_bits.npy a set), classes or label-sets (a dataset with the other kind is refused), ") +
        "or link (link prediction on a dataset split by data split-edges; --batch counts edges). " + task_defaults_text()).c_str())
      ("negatives", bound(tc.link.negatives), "link: corrupted destinations drawn per training edge (uniform over the nodes)")
      ("scorer", po::value<std::string>()->notifier([&tc](const std::string& v) {
         if (v != "dot" && v != "mlp" && v != "distmult") throw UsageError("unknown --scorer '" + v + "', expected dot, mlp or distmult");
         tc.link.scorer = parse_scorer(v);
       })->default_value("dot"), "link: dot (h_u . h_v), mlp (a two-layer MLP over h_u * h_v) or distmult (h_u . diag(r) h_v with r learnt)")
      ("select", po::value<std::string>()->notifier([&tc](const std::string& v) {
         if (v != "auc" && v != "mrr") throw UsageError("unknown --select '" + v + "', expected auc or mrr");
         tc.link.select_mrr = v == "mrr";
       })->default_value("auc"), "link: the validation score that picks the best model, auc or mrr (needs split-edges --eval-negatives)")
      ("exclude", po::value<std::string>()->notifier([&tc](const std::string& v) {
         if (v != "reverse" && v != "none") throw UsageError("unknown --exclude '" + v + "', expected reverse or none");
         tc.link.exclude_positives = v == "reverse";
       })->default_value("reverse"), "link: reverse cuts a batch's positives (both directions) from its sampled blocks; none keeps them (GAE's full-batch protocol, for comparison)")
      ("hits", bound(tc.link.hits_k), "link: K of Hits@K over the ranking negatives")
      ("embedding-dim", bound(tc.link.embedding_dim), "link: the last layer's width, the embedding (0 = --hidden)")
      ("model", po::value<std::string>()->notifier([&tc](const std::string& v) {
         if (names_spec_file(v)) tc.model.spec = v;
         else tc.model.kind = parse_model(v);
       })->default_value("sage"), "a built-in, sage, gcn or gat (on a typed graph rgcn or rgat), or a model spec file (FILE.json: docs/models.md); "
                                    "--hidden, --heads and --bases shape the built-ins, --dropout is also a spec's layers' default")
      ("hidden", bound(tc.model.hidden), "built-ins: hidden width (GAT, R-GAT: split between the heads)")
      ("heads", bound(tc.model.heads), "built-ins: GAT and R-GAT attention heads")
      ("embedding-optimizer", bound(tc.embedding.optimizer, parse_sparse_optimizer, sparse_optimizer_name),
       "typed graphs: the sparse optimizer of the learnable rows of node types without features, adam or adagrad")
      ("embedding-lr", bound(tc.embedding.lr), "typed graphs: the learning rate of those rows")
      ("bases", bound(tc.model.bases), "R-GCN: relation weights as combinations of this many bases (0 = a weight per relation)")
      ("dropout", bound(tc.model.dropout), "dropout on every layer's input (--task link: 0 unless given, as GAE)");
  po::options_description optim("optimiser");
  optim.add_options()
      ("epochs", bound(tc.epochs), "epochs")
      ("lr", bound(tc.optim.lr), "learning rate")
      ("weight-decay", bound(tc.optim.weight_decay), "L2 weight decay (--task link: 0 unless given, as GAE)")
      ("optimizer", bound(tc.optim.kind, parse_optimizer, optimizer_name), "adam or sgd (momentum 0.9)")
      ("momentum", bound(tc.optim.momentum), "SGD momentum")
      ("lr-schedule", bound(tc.optim.schedule, parse_lr_schedule, lr_schedule_name), "none, step or cosine")
      ("lr-step", bound(tc.optim.step_epochs), "step schedule: epochs between decays (0 = a third of --epochs)")
      ("lr-gamma", bound(tc.optim.gamma), "step schedule: decay factor")
      ("seed", bound(tc.seed), "seed of weights, dropout and sampling");
  po::options_description eval("evaluation");
  eval.add_options()
      ("eval-fraction", bound(tc.eval.fraction),
       "also validate every this fraction of an epoch inside it (MLPerf's GNN: 0.05): reported in the metrics, the best model still chosen at epoch ends")
      ("eval-every", bound(tc.eval.every), "validate every N epochs (and after the last); the test set is scored once, on the best model")
      ("eval-sample", bound(tc.eval.sample), "validate on at most N validation nodes, the same ones each time (0 = all)")
      ("eval", bound(tc.eval.mode, parse_eval_mode, eval_mode_name), "per-epoch validation: sampled (training fanouts) or full (all neighbours)")
      ("patience", bound(tc.eval.patience), "stop after N validations without a better val accuracy (0 = never)")
      ("no-full-eval", po::bool_switch(&x.no_full_eval), "skip the final full-neighbourhood evaluation")
      ("no-test", po::bool_switch(&x.no_test), "score no test set at the end (validation only: sweeps, and benchmarks of training alone)")
      ("eval-chunk", bound(tc.eval.chunk), "nodes per block in full-neighbourhood inference (0: blocks of about 4M edges)");
  po::options_description files("run files");
  files.add_options()
      ("run-dir", po::value(&x.run_dir),
       "the run's folder: DIR/metrics.jsonl (read by `shardgnn report DIR`), and DIR/checkpoint.pt and DIR/weights.pt unless --checkpoint-dir "
       "is given (under SLURM, with none of --run-dir, --checkpoint-dir and --metrics: shardgnn-run-$SLURM_JOB_ID)")
      ("checkpoint-dir", po::value(&tc.files.checkpoint_dir), "write DIR/checkpoint.pt after every epoch (and on a stop signal) and DIR/weights.pt at the end")
      ("resume", po::value<std::string>()->implicit_value("auto")->notifier([&tc](const std::string& v) {
         if (v != "auto") throw UsageError("--resume takes no value, or 'auto' (the same), got '" + v + "'");
         tc.files.resume = true;
       }),
       "continue from the checkpoint when there is one, else start afresh: one command for a job's first run and every restart")
      ("force", po::bool_switch(&tc.files.overwrite), "start over even though DIR/checkpoint.pt exists")
      ("weights", po::value(&tc.files.weights), "write the best weights here (a tensor dict for Python's torch.load)")
      ("metrics", po::value(&tc.files.metrics), "write one JSON line per epoch here, and the run's result as the last line")
      ("scratch", po::value(&x.scratch),
       "with more parts than ranks: folder for the spill files a rank merges its parts into, unlinked as they are made (default: $TMPDIR or /tmp)")
      ("quiet,q", po::bool_switch(&x.quiet), "no progress output");
  po::options_description device("device");
  device.add_options()
      ("device", bound(tc.device.name), "cpu, cuda (the node-local rank's GPU) or cuda:N")
      ("precision", bound(tc.model.precision, parse_precision, precision_name),
       "fp32, or bf16 (with --device cuda): matrix products in bfloat16, the rest in float32")
      ("threads", bound(tc.device.threads), "torch threads per rank (0 = OMP_NUM_THREADS, else the cores shared among the node's ranks)");
  po::options_description balance("load balance and the seed paper's methods (Deshmukh et al. 2023, for comparison)");
  balance.add_options()
      ("rebalance", bound(tc.balance.rebalance, parse_rebalance_policy, rebalance_policy_name),
       "between epochs, reassign training seeds across ranks: none, seeds (equal counts) or cost (by measured cost per seed)")
      ("remote-seed-factor", bound(tc.balance.remote_seed_factor), "rebalancing: cost of a seed trained away from its owner, relative to an own seed")
      ("seed-sampling", bound(tc.balance.seed_sampling, parse_seed_sampling, seed_sampling_name),
       "shard (each rank its own training nodes), class-balanced (drawn from all ranks', inversely to class frequency) or global "
       "(each rank a slice of one shuffle of all ranks': every global batch a uniform draw, as at one rank)")
      ("personalize", bound(tc.balance.personalize_epochs),
       "after the shared model is scored, each rank fine-tunes its own copy on its own shard for N epochs and scores its own test nodes with it "
       "(Entropy-Aware Training's personalisation, at --lr with a fresh optimiser; the saved weights stay the shared model's)");
  po::options_description job("the job");
  add_collective_timeout_option(job);
  po::options_description levers("for benchmarks and tests");
  levers.add_options()
      ("profile-ops", bound(tc.levers.profile_steps), "record N steps of the first epoch op by op and print each op's time against its FLOP or byte limit")
      ("simulate-slowdown", po::value(&x.slowdown), "RANK:FACTOR: that rank computes FACTOR times slower (heterogeneous hardware)")
      ("simulate-stop", po::value(&x.stop), "EPOCH:STEP: rank 0 asks to stop (as on SIGTERM) during that step of that epoch, both from 1");
  po::options_description o("options");
  o.add(model).add(sampling).add(optim).add(eval).add(files).add(device).add(balance).add(job).add(levers);
  return o;
}

// What the options leave to be decided: the switches, the run folder, the slowdown; then every
// check (collective: a bad value fails every rank).
void finish_config(const comm::Communicator& world, const po::variables_map& vm, ExtraOptions& x, TrainConfig& tc, SamplerConfig& sc) {
  std::string& run_dir = x.run_dir;  // decided here under SLURM
  comm::agree(world, [&] {
    tc.eval.final_full = !x.no_full_eval;
    tc.eval.final_test = !x.no_test;
    tc.files.progress = !x.quiet;
    // A batch job's run folder is keyed on its job id, which a requeued job keeps: the same
    // command then finds the checkpoint its previous run left.
    if (run_dir.empty() && !vm.count("metrics") && tc.files.checkpoint_dir.empty())
      if (const char* job = std::getenv("SLURM_JOB_ID"); job != nullptr && *job != '\0') run_dir = std::string("shardgnn-run-") + job;
    if (!run_dir.empty()) {
      if (vm.count("metrics")) throw InputError("--run-dir and --metrics both name the metrics file: pass one");
      tc.files.metrics = (fs::path(run_dir) / "metrics.jsonl").string();
      if (tc.files.checkpoint_dir.empty()) tc.files.checkpoint_dir = run_dir;
    }
    // The task's own defaults where the command line names no value.
    const TaskDefaults d = task_defaults(tc.task);
    if (vm["dropout"].defaulted()) tc.model.dropout = d.dropout;
    if (vm["weight-decay"].defaulted()) tc.optim.weight_decay = d.weight_decay;
    if (vm["batch"].defaulted()) sc.batch_size = d.batch;
    if (vm["negatives"].defaulted() && d.negatives > 0) tc.link.negatives = d.negatives;
    if (vm.count("simulate-slowdown")) parse_slowdown(x.slowdown, tc.levers.slow_rank, tc.levers.slowdown);
    if (vm.count("simulate-stop")) parse_simulated_stop(x.stop, tc.levers.stop_epoch, tc.levers.stop_step);
    validate(tc);
    sc.seed = tc.seed;
    validate(sc);
  });
}

// Rank 0's first line: what trains on what, where its products and gradients run.
void print_header(const comm::Communicator& world, const Input& in, const Trainer& trainer, const TrainConfig& tc, const SamplerConfig& sc) {
  const std::string blas = blas_core().empty() ? "" : blas_core() + " kernels";
  const std::string gemm = trainer.gemm_backend();
  if (world.rank() != 0 || !tc.files.progress) return;
  std::printf("training %s on '%s' (%s, %d rank%s, %s %s, products on %s%s%s%s%s): %lld parameters, fanouts %s, batch %d\n", model_label(tc.model).c_str(),
              in.name.c_str(), in.kind.c_str(), world.size(), world.size() == 1 ? "" : "s", trainer.device_name().c_str(),
              precision_name(tc.model.precision).c_str(), gemm.c_str(), blas.empty() ? "" : ", BLAS ", blas.c_str(),
              world.size() == 1 ? "" : ", gradients over ", world.size() == 1 ? "" : trainer.gradient_path().c_str(),
              static_cast<long long>(trainer.num_parameters()), fanouts_text(sc.fanouts).c_str(), sc.batch_size);
}

// "accuracy 0.7950, macro-F1 0.7806", or a multi-label model's "micro-F1 0.6123, macro-F1 0.4012".
// Link prediction: "AUC 0.9123, AP 0.9204[, MRR 0.4, Hits@50 0.9]".
std::string scores(const ClassMetrics& m) { return m.kind == ScoreKind::kLinks ? headline_score(m) : headline_score(m) + ", macro-F1 " + fixed4(m.macro_f1); }

// Rank 0's closing lines: the best model's scores, and the op profile when asked.
void print_result(const comm::Communicator& world, const TrainConfig& tc, const TrainResult& r) {
  if (world.rank() != 0) return;
  std::printf("best validation %s %s at epoch %d%s\n", r.score.c_str(), fixed4(r.best_val).c_str(), r.best_epoch + 1, r.stopped_early ? " (stopped early)" : "");
  if (r.last_model) std::printf("the last epoch's model is scored and saved: the embedding rows of featureless types are not kept per epoch\n");
  if (!r.tested) std::printf("test set not scored (--no-test)\n");
  else if (!r.sampled_is_full) std::printf("test %s (sampled neighbourhoods, %.2f s)\n", scores(r.sampled.test).c_str(), r.sampled_s);
  if (r.has_full) std::printf("test %s (full neighbourhoods, %.2f s)\n", scores(r.full.test).c_str(), r.full_s);
  if (r.personalized)
    std::printf("test %s (personalized: %d epoch%s per rank on its own shard, each rank's test nodes scored by its copy, %s neighbourhoods)\n",
                scores(r.personalized->test).c_str(), tc.balance.personalize_epochs, tc.balance.personalize_epochs == 1 ? "" : "s",
                r.personalized_full ? "full" : "sampled");
  if (r.op_profile) std::printf("%s", format_op_profile(*r.op_profile).c_str());
  else if (tc.levers.profile_steps > 0) std::printf("no op profile: the first epoch had no step past its first to record\n");
  std::fflush(stdout);
}

}  // namespace

int train_main(const std::vector<std::string>& args, const comm::Communicator& world) {
  require_launch_joined(world);  // else refused later for the symptom (parts != ranks), not the cause
  TrainConfig tc;
  SamplerConfig sc;
  ExtraOptions extra;
  po::options_description o = train_options(tc, sc, extra);
  po::variables_map vm;
  bool help = false;
  comm::agree(world, [&] {
    help = !parse(args, "[mpiexec -n P] shardgnn train <partitioned-dir | dataset-dir> [--model sage] [--fanouts 15,10,5] [--batch 1024] [options]", o,
                  {"dir"}, vm);
  });
  if (help) return 0;
  finish_config(world, vm, extra, tc, sc);

  Input in;
  std::optional<Trainer> trainer_slot;
  {
    // Ranks load and merge shards of unequal sizes, and build their caches, before they meet.
    const comm::LongWaits start_up(comm::kLongWaitFactor);
    load_input(world, vm["dir"].as<std::string>(), extra.scratch, "trains", in);
    trainer_slot.emplace(in.shard, in.name, world, tc, sc);
  }
  Trainer& trainer = *trainer_slot;
  print_header(world, in, trainer, tc, sc);
  print_run_lines(world, in.shard, trainer, tc);
  const TrainResult r = trainer.fit();
  print_peak_memory(world);
  if (r.stop_signal != 0) {
    const int status = r.checkpointed ? kExitStoppedResumable : 128 + r.stop_signal;
    if (world.rank() == 0) {
      std::fflush(stdout);
      std::fprintf(stderr, "%s: %s (exit status %d)\n", g_command.c_str(), r.stop_message.c_str(), status);
    }
    return status;
  }
  write_result(world, tc, r);
  print_result(world, tc, r);
  return 0;
}

}  // namespace shardgnn::cli

int main(int argc, char** argv) {
  shardgnn::take_stop_signals(argv);  // first: every later thread leaves the signals to ours
  const int status = shardgnn::cli::run_mpi_program(argc, argv, "train", /*threads=*/true, shardgnn::cli::train_main);
  if (status == shardgnn::kExitStoppedResumable) shardgnn::keep_exit_status_for_launcher();
  return status;
}
