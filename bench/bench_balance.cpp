// `shardgnn bench balance`: the rebalancer's acceptance benchmark. Three heterogeneous set-ups on
// a generated block-model graph, each trained without and with rebalancing, every run a separate
// `mpiexec -n P shardgnn train` reading its per-rank metrics file:
//   (a) a random partition where one shard holds half the training nodes (policy none vs cost);
//   (b) a METIS partition with one rank's compute slowed 2x (--simulate-slowdown; none vs cost);
//   (c) a label-skewed partition (each shard holds a few classes; shard seeds vs class-balanced
//       seed sampling), with the test accuracy of single-process training beside it.
// Reported per run: the training time per epoch (evaluation excluded) over the epochs after the
// first (the first is the rebalancer's measurement), the slowest rank's busy time over the mean
// (busy = own work: compute plus sampling outside collectives, no waiting), seeds per rank, and
// the test accuracy of the best-validation model.
#include <boost/json.hpp>
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <sstream>
#include <thread>

#include "datasets/error.hpp"
#include "datasets/generators.hpp"
#include "datasets/json_util.hpp"
#include "datasets/random.hpp"
#include "partition/partitioner.hpp"
#include "partition/shards.hpp"
#include "bench/bench.hpp"
#include "tools/cli.hpp"
#include "bench/process.hpp"
#include "tools/run_report.hpp"

namespace fs = std::filesystem;

namespace shardgnn::cli {

namespace {

struct RunResult {
  std::string scenario, variant;
  bool ok = false;
  std::string note;
  std::string error;       // why the run failed, in one line (its own last error line); empty when it ran
  double epoch_s = 0;      // mean training time per epoch over epochs 2..E
  double imbalance = 0;    // mean over those epochs of max busy / mean busy
  double step_max_s = 0, step_mean_s = 0;  // busy time per step: slowest rank, mean over ranks (same epochs)
  double bound_s = 0;      // an estimate of the shortest epoch this machine allows (mean over the same epochs), see read_run
  std::vector<std::int64_t> seeds;  // per rank, last epoch
  std::int64_t moved = 0;
  double test_acc = -1;
};

// Reads a run's metrics file (its epochs, and the test accuracy from its result line). The limit, an estimate: an
// epoch takes about as long as its busiest rank's own work, and at least the CPU work of all ranks
// spread over the machine's cores (a simulated slowdown sleeps, so its extra time uses no core).
// Sampling on the prefetch thread can overlap compute, so a run may beat it slightly.
void read_run(const std::string& metrics, int cores, RunResult& r) {
  int n = 0;
  const RunMetrics run = load_run_metrics(metrics);
  for (const RunEpoch& e : run.epochs) {
    r.seeds.clear();
    double mx = 0, mean = 0, cpu = 0;
    const double steps = std::max(1.0, static_cast<double>(e.steps));
    for (const RankEpoch& k : e.ranks) {
      r.seeds.push_back(k.seeds);
      mx = std::max(mx, k.busy_s);
      mean += k.busy_s / static_cast<double>(e.ranks.size());
      cpu += k.busy_s - k.compute_s * (1 - 1 / k.slowdown);
    }
    r.moved = e.moved;
    if (e.epoch == 0) continue;  // the rebalancer's measurement epoch
    r.epoch_s += e.train_s;
    r.imbalance += e.imbalance;
    r.step_max_s += mx / steps;
    r.step_mean_s += mean / steps;
    r.bound_s += std::max(mx, cpu / cores);
    ++n;
  }
  if (n == 0) throw std::runtime_error(metrics + ": no epoch after the first");
  r.epoch_s /= n;
  r.imbalance /= n;
  r.step_max_s /= n;
  r.step_mean_s /= n;
  r.bound_s /= n;
  const std::optional<ClassMetrics> test = run.result ? final_test(*run.result) : std::nullopt;
  r.test_acc = test ? test->accuracy : -1;
  r.ok = true;
}

void write_parts(const Dataset& ds, const std::string& data_dir, PartitionResult r, const std::string& out) {
  if (fs::exists(fs::path(out) / "partition.json")) return;
  write_partitioned(ds, data_dir, r, out, {.overwrite = true});
}

struct BalanceOptions {
  int ranks = 0;
  std::string scenarios;
  SbmOptions sbm;
  double heavy_share = 0, slowdown = 0;
  std::string fanouts;
  int batch = 0, hidden = 0, epochs = 0, accuracy_epochs = 0;
  std::uint64_t seed = 0;
  fs::path work;
  std::optional<std::string> json;

  bool runs(char scenario) const { return scenarios.find(scenario) != std::string::npos; }
};

// The options, or nothing when --help was given.
std::optional<BalanceOptions> parse_options(const std::vector<std::string>& args) {
  po::options_description o("options");
  o.add_options()
      ("ranks", po::value<int>()->default_value(4), "MPI ranks (parts)")
      ("nodes", po::value<std::int64_t>()->default_value(40000), "block-model nodes")
      ("avg-degree", po::value<double>()->default_value(20), "expected undirected degree")
      ("feature-dim", po::value<int>()->default_value(64), "features")
      ("classes", po::value<int>()->default_value(10), "classes")
      ("separation", po::value<double>()->default_value(0.1), "class separation of the features (lower: harder)")
      ("homophily", po::value<double>()->default_value(0.4), "expected fraction of edges inside a class (lower: harder)")
      ("fanouts", po::value<std::string>()->default_value("10,5"), "from the seeds outward")
      // Sized so that a step's compute outweighs its fixed costs (the collectives of every rank's
      // threads, on shared cores): at hidden 128 / batch 256 compute was a small part of an
      // epoch, and busy times were too small to tell ranks apart.
      ("batch", po::value<int>()->default_value(512), "seeds per batch per rank")
      ("hidden", po::value<int>()->default_value(512), "hidden width")
      ("epochs", po::value<int>()->default_value(4), "epochs of the timing runs (a) and (b); the first is not counted")
      ("accuracy-epochs", po::value<int>()->default_value(10), "epochs of the accuracy runs (c)")
      ("slowdown", po::value<double>()->default_value(2.0), "(b): the slowed rank's factor")
      ("heavy-share", po::value<double>()->default_value(0.5), "(a): the share of the training nodes on rank 0")
      ("scenarios", po::value<std::string>()->default_value("a,b,c"), "which of a, b, c to run")
      ("seed", po::value<std::uint64_t>()->default_value(0), "training seed")
      ("workdir", po::value<std::string>()->default_value((fs::temp_directory_path() / "shardgnn-bench-balance").string()), "scratch folder (graphs and partitions are reused)")
      ("json", po::value<std::string>(), "also write the results as JSON here");
  po::variables_map vm;
  if (!parse(args, "shardgnn bench balance [options]", o, {}, vm)) return std::nullopt;
  BalanceOptions opt;
  opt.ranks = vm["ranks"].as<int>();
  if (opt.ranks < 2) throw UsageError("--ranks must be at least 2 (balance is between ranks)");
  opt.scenarios = vm["scenarios"].as<std::string>();
  for (char ch : opt.scenarios)
    if (ch != 'a' && ch != 'b' && ch != 'c' && ch != ',') throw UsageError("--scenarios lists a, b and c, got '" + opt.scenarios + "'");
  opt.sbm = sbm_options(vm);
  opt.sbm.class_separation = vm["separation"].as<double>();
  opt.sbm.homophily = vm["homophily"].as<double>();
  opt.sbm.train_fraction = 0.5;
  opt.sbm.val_fraction = 0.1;
  opt.heavy_share = vm["heavy-share"].as<double>();
  opt.slowdown = vm["slowdown"].as<double>();
  opt.fanouts = vm["fanouts"].as<std::string>();
  opt.batch = vm["batch"].as<int>();
  opt.hidden = vm["hidden"].as<int>();
  opt.epochs = vm["epochs"].as<int>();
  opt.accuracy_epochs = vm["accuracy-epochs"].as<int>();
  opt.seed = vm["seed"].as<std::uint64_t>();
  opt.work = vm["workdir"].as<std::string>();
  if (vm.count("json")) opt.json = vm["json"].as<std::string>();
  return opt;
}

// The generated graph, kept in the workdir and reused by the next run with the same sizes.
SbmGraph prepare_graph(const BalanceOptions& opt) {
  const SbmOptions& sbm = opt.sbm;
  const std::string tag = "sbm-" + std::to_string(sbm.num_nodes) + "-" + std::to_string(static_cast<int>(sbm.avg_degree)) + "-" +
                          std::to_string(sbm.feature_dim) + "-" + std::to_string(sbm.num_classes) + "-" +
                          std::to_string(static_cast<int>(sbm.class_separation * 1000)) + "-" + std::to_string(static_cast<int>(sbm.homophily * 1000));
  SbmGraph g = sbm_graph(opt.work.string(), tag, sbm, /*trim_test=*/false);
  std::fprintf(stderr, "dataset %s: %lld nodes, %lld directed edges, %zu training nodes, %d ranks\n", g.tag.c_str(), static_cast<long long>(g.ds.num_nodes()),
               static_cast<long long>(g.ds.graph.num_edges()), g.ds.train_idx.size(), opt.ranks);
  return g;
}

// (a): a random partition, except that rank 0 gets a `heavy` share of the training nodes.
PartitionResult heavy_random_partition(const Dataset& ds, int P, double heavy) {
  PartitionResult r;
  r.config.parts = P;
  r.config.method = PartitionMethod::kRandom;
  r.assignment.assign(static_cast<std::size_t>(ds.num_nodes()), 0);
  Rng rng(derive_seed(7, 0xa));
  std::vector<char> train(static_cast<std::size_t>(ds.num_nodes()), 0);
  for (NodeId v : ds.train_idx) train[static_cast<std::size_t>(v)] = 1;
  for (NodeId v = 0; v < ds.num_nodes(); ++v) {
    const std::uint64_t x = rng();
    const double u = static_cast<double>(x >> 11) * 0x1.0p-53;
    if (train[static_cast<std::size_t>(v)]) r.assignment[static_cast<std::size_t>(v)] = u < heavy ? 0 : static_cast<PartId>(1 + (x & 0xffff) % (P - 1));
    else r.assignment[static_cast<std::size_t>(v)] = static_cast<PartId>(x % static_cast<std::uint64_t>(P));
  }
  return r;
}

// (b): METIS, balanced nodes and training nodes.
PartitionResult metis_partition(const Dataset& ds, int P) {
  PartitionResult r;
  r.config.parts = P;
  r.config.balance = {BalanceKey::kNodes, BalanceKey::kTrain};
  r.assignment = make_partitioner(r.config.method)->partition(ds, r.config);
  return r;
}

// (c): label-skewed, class c on rank c mod P (shards hold different classes and counts).
PartitionResult label_partition(const Dataset& ds, int P) {
  PartitionResult r;
  r.config.parts = P;
  r.config.method = PartitionMethod::kRandom;  // recorded as such; the assignment is by label
  r.assignment.resize(static_cast<std::size_t>(ds.num_nodes()));
  for (NodeId v = 0; v < ds.num_nodes(); ++v) r.assignment[static_cast<std::size_t>(v)] = static_cast<PartId>(ds.labels[static_cast<std::size_t>(v)] % P);
  return r;
}

struct ScenarioParts {
  std::string a, b, c;  // the partition folders of the three set-ups
};

// Writes the partitions of the scenarios run (each kept in the workdir for the next run).
ScenarioParts write_scenario_parts(const BalanceOptions& opt, const SbmGraph& g) {
  const int P = opt.ranks;
  const double heavy = opt.heavy_share;
  if (!(heavy > 0 && heavy < 1)) throw UsageError("--heavy-share must be in (0, 1)");
  ScenarioParts parts;
  parts.a = (opt.work / (g.tag + "-a-" + std::to_string(P) + "-" + std::to_string(static_cast<int>(heavy * 1000)))).string();
  if (opt.runs('a')) write_parts(g.ds, g.dir, heavy_random_partition(g.ds, P, heavy), parts.a);
  parts.b = (opt.work / (g.tag + "-b-" + std::to_string(P))).string();
  // METIS is the one costly partitioner: skipped outright when its partition is already there.
  if (opt.runs('b') && !fs::exists(fs::path(parts.b) / "partition.json")) write_parts(g.ds, g.dir, metis_partition(g.ds, P), parts.b);
  parts.c = (opt.work / (g.tag + "-c-" + std::to_string(P))).string();
  if (opt.runs('c')) write_parts(g.ds, g.dir, label_partition(g.ds, P), parts.c);
  return parts;
}

// What every training run of the benchmark shares.
struct TrainSetup {
  std::string exe;
  fs::path work;
  std::string fanouts;
  int hidden = 0;
  std::uint64_t seed = 0;
  int cores = 1;
};

// One `mpiexec -n ranks shardgnn train` run of a scenario's variant, read from its run folder.
RunResult run_training(const TrainSetup& s, const std::string& scenario, const std::string& variant, const std::string& dir, int ranks, int batch, int epochs,
                const std::vector<std::string>& extra) {
  RunResult res;
  res.scenario = scenario;
  res.variant = variant;
  const std::string run_dir = (s.work / ("run-" + scenario + "-" + variant)).string();
  fs::remove_all(run_dir);
  std::vector<std::string> argv = {"mpiexec", "-n", std::to_string(ranks), s.exe, "train", dir, "--model", "sage", "--fanouts", s.fanouts,
                                   "--batch", std::to_string(batch), "--hidden", std::to_string(s.hidden), "--epochs",
                                   std::to_string(epochs), "--no-full-eval", "--seed", std::to_string(s.seed), "--run-dir",
                                   run_dir, "--quiet"};
  argv.insert(argv.end(), extra.begin(), extra.end());
  std::fprintf(stderr, "(%s) %s ...\n", scenario.c_str(), variant.c_str());
  const ProcessResult pr = run_process(argv);
  try {
    if (pr.status != 0) throw std::runtime_error(failure_line(pr));
    read_run(run_dir + "/metrics.jsonl", s.cores, res);
  } catch (const std::exception& e) {
    res.error = e.what();
    res.note = "failed: " + res.error;
  }
  return res;
}

struct Runs {
  std::vector<RunResult> rows;
  std::vector<std::pair<std::size_t, std::size_t>> pairs;  // (without, with)
};

// Each scenario without and with its remedy; (c) has single-process training before them.
Runs run_scenarios(const BalanceOptions& opt, const TrainSetup& setup, const ScenarioParts& parts, const std::string& data_dir) {
  const int P = opt.ranks, B = opt.batch, E = opt.epochs, EA = opt.accuracy_epochs;
  const std::string eval_tail = std::to_string(E);
  Runs runs;
  auto& rows = runs.rows;
  if (opt.runs('a')) {
    rows.push_back(run_training(setup, "a", "none", parts.a, P, B, E, {"--eval-every", eval_tail}));
    rows.push_back(run_training(setup, "a", "cost", parts.a, P, B, E, {"--eval-every", eval_tail, "--rebalance", "cost"}));
    runs.pairs.emplace_back(rows.size() - 2, rows.size() - 1);
  }
  if (opt.runs('b')) {
    char slow[64];
    std::snprintf(slow, sizeof slow, "1:%g", opt.slowdown);
    rows.push_back(run_training(setup, "b", "none", parts.b, P, B, E, {"--eval-every", eval_tail, "--simulate-slowdown", slow}));
    rows.push_back(run_training(setup, "b", "cost", parts.b, P, B, E, {"--eval-every", eval_tail, "--simulate-slowdown", slow, "--rebalance", "cost"}));
    runs.pairs.emplace_back(rows.size() - 2, rows.size() - 1);
  }
  if (opt.runs('c')) {
    rows.push_back(run_training(setup, "c", "single-process", data_dir, 1, B * P, EA, {}));
    rows.push_back(run_training(setup, "c", "none", parts.c, P, B, EA, {}));
    rows.push_back(run_training(setup, "c", "class-balanced", parts.c, P, B, EA, {"--seed-sampling", "class-balanced"}));
    runs.pairs.emplace_back(rows.size() - 2, rows.size() - 1);
  }
  return runs;
}

void print_table(const std::vector<RunResult>& rows) {
  std::printf("%-3s %-15s %9s %9s %6s %9s %11s %11s %8s  %-28s %s\n", "", "variant", "epoch s", "limit s", "ratio", "max/mean", "step max s", "step mean s",
              "test acc", "seeds per rank (last epoch)", "moved");
  for (const RunResult& r : rows) {
    std::string seeds;
    for (auto n : r.seeds) {
      if (!seeds.empty()) seeds += ',';
      seeds += std::to_string(n);
    }
    if (!r.ok) {
      std::printf("(%s) %-15s %s\n", r.scenario.c_str(), r.variant.c_str(), r.note.c_str());
    } else {
      std::printf("(%s) %-15s %9.3f %9.3f %6.2f %9.3f %11.4f %11.4f %8.4f  %-28s %lld\n", r.scenario.c_str(), r.variant.c_str(), r.epoch_s, r.bound_s,
                  r.bound_s / r.epoch_s, r.imbalance, r.step_max_s, r.step_mean_s, r.test_acc, seeds.c_str(), static_cast<long long>(r.moved));
    }
  }
}

// Each scenario's run with its remedy against the run without it.
void print_pairs(const Runs& runs) {
  const auto& rows = runs.rows;
  for (auto [a, b] : runs.pairs) {
    const RunResult& x = rows[a];
    const RunResult& y = rows[b];
    if (!x.ok || !y.ok) continue;
    std::printf("(%s) with %s: epoch %.2fx faster; slowest rank's busy time %.3fx the mean (was %.3fx)", y.scenario.c_str(), y.variant.c_str(),
                x.epoch_s / y.epoch_s, y.imbalance, x.imbalance);
    if (y.scenario == "c" && rows[a - 1].ok)
      std::printf("; test acc %.4f vs %.4f single-process (baseline %.4f)", y.test_acc, rows[a - 1].test_acc, x.test_acc);
    std::printf("\n");
  }
}

boost::json::array rows_json(const std::vector<RunResult>& rows) {
  boost::json::array out;
  for (const RunResult& r : rows)
    out.push_back(boost::json::object{{"scenario", r.scenario}, {"variant", r.variant}, {"ok", r.ok}, {"note", r.note}, {"epoch_s", r.epoch_s}, {"limit_s", r.bound_s},
                                      {"max_over_mean_busy", r.imbalance}, {"step_max_s", r.step_max_s}, {"step_mean_s", r.step_mean_s},
                                      {"test_acc", r.test_acc}, {"seeds", boost::json::array(r.seeds.begin(), r.seeds.end())}, {"moved", r.moved}});
  return out;
}

}  // namespace

int bench_balance_main(const std::vector<std::string>& args) {
  g_command = "shardgnn bench balance";
  const std::optional<BalanceOptions> opt = parse_options(args);
  if (!opt) return 0;
  const SbmGraph g = prepare_graph(*opt);
  const ScenarioParts parts = write_scenario_parts(*opt, g);
  const TrainSetup setup{.exe = shardgnn_exe(), .work = opt->work, .fanouts = opt->fanouts, .hidden = opt->hidden, .seed = opt->seed,
                         .cores = std::max(1, static_cast<int>(std::thread::hardware_concurrency()))};
  const Runs runs = run_scenarios(*opt, setup, parts, g.dir);
  print_table(runs.rows);
  print_pairs(runs);
  std::printf("(epoch s: training only, mean over epochs 2..; limit s: an estimate of the shortest epoch this machine allows, max(busiest\n"
              " rank's own work, all ranks' CPU work / %d cores); ratio: limit / epoch (1 = at the limit); max/mean: slowest rank's busy time (own work, no waiting) over the mean;\n"
              " (c) single-process runs one rank with batch %d, the ranks' combined batch)\n",
              setup.cores, opt->batch * opt->ranks);
  if (opt->json) write_json_file(*opt->json, boost::json::object{{"dataset", g.dir}, {"ranks", opt->ranks}, {"rows", rows_json(runs.rows)}});
  std::vector<RunOutcome> outcomes;
  for (const RunResult& r : runs.rows) outcomes.push_back({"(" + r.scenario + ") " + r.variant, r.error});
  return report_failures(g_command, outcomes);
}

}  // namespace shardgnn::cli
