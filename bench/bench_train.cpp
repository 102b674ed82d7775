// `shardgnn bench train`: epoch time and its split for data-parallel training on a generated
// block-model graph (default ~1M nodes, ~25M edges, 100 features), at each rank count, with
// DGL's sampler-based training of the same model on the same graph beside it (one process,
// as many threads as our ranks) and, with --distdgl-python, DistDGL (one partition, server and
// trainer per rank, launched locally by bench/peers/distdgl_train.py). Each of our ranks and each
// DistDGL trainer computes with one thread, so every row's "cores" is the threads it used.
// --task link trains link prediction instead, on the graph split by split_edges, beside DGL's
// edge dataloader (bench/peers/dgl_link.py), and reports the test AUC.
#include <boost/json.hpp>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <optional>
#include <sstream>

#include "datasets/edge_split.hpp"
#include "datasets/error.hpp"
#include "datasets/generators.hpp"
#include "datasets/json_util.hpp"
#include "partition/partitioner.hpp"
#include "partition/shards.hpp"
#include "bench/bench.hpp"
#include "tools/cli.hpp"
#include "bench/process.hpp"
#include "tools/run_report.hpp"

namespace fs = std::filesystem;

namespace shardgnn::cli {

SbmOptions sbm_options(const po::variables_map& vm) {
  SbmOptions sbm;
  sbm.num_nodes = vm["nodes"].as<std::int64_t>();
  sbm.avg_degree = vm["avg-degree"].as<double>();
  sbm.feature_dim = vm["feature-dim"].as<int>();
  sbm.num_classes = vm["classes"].as<int>();
  return sbm;
}

SbmGraph sbm_graph(const std::string& work, const std::string& tag, const SbmOptions& sbm, bool trim_test) {
  fs::create_directories(work);
  SbmGraph g{tag, (fs::path(work) / tag).string(), {}};
  if (!fs::exists(fs::path(g.dir) / "meta.json")) {
    std::fprintf(stderr, "generating %s ...\n", tag.c_str());
    Dataset d = generate_sbm(sbm);
    if (trim_test) {  // the generator puts every node outside train and val in the test set
      std::vector<NodeId> test(d.test_idx.begin(), d.test_idx.begin() + static_cast<std::ptrdiff_t>(std::min(d.test_idx.size(), d.val_idx.size())));
      d.test_idx = Array<NodeId>(std::move(test));
    }
    save_dataset(d, g.dir, true);
  }
  g.ds = load_dataset(g.dir);
  return g;
}

namespace {

struct TrainBenchOptions {
  std::vector<int> ranks;
  SbmOptions sbm;
  std::string model, fanouts, device;
  PartitionMethod method = PartitionMethod::kMetis;
  int batch = 0, hidden = 0, epochs = 0, profile_ops = 0;
  bool link = false;  // --task link
  int negatives = 1;
  std::optional<std::string> dgl_python, distdgl_python, json;
  fs::path work;
};

// The options, or nothing when --help was given.
std::optional<TrainBenchOptions> parse_options(const std::vector<std::string>& args) {
  po::options_description o("options");
  o.add_options()
      ("nodes", po::value<std::int64_t>()->default_value(1000000), "block-model nodes")
      ("avg-degree", po::value<double>()->default_value(50), "expected undirected degree (50: ~25M edges at 1M nodes)")
      ("feature-dim", po::value<int>()->default_value(100), "features")
      ("classes", po::value<int>()->default_value(10), "classes")
      ("train", po::value<double>()->default_value(0.1), "training fraction (sets the steps per epoch)")
      ("ranks", po::value<std::string>()->default_value("1,2"), "rank counts to run")
      ("method", po::value<std::string>()->default_value("metis"), "partition method for more than one rank (see partition --help)")
      ("device", po::value<std::string>()->default_value("cpu"), "our runs' device: cpu, or cuda (every rank of the node shares its GPUs; the peers run on the CPU)")
      ("model", po::value<std::string>()->default_value("sage"), "sage, gcn or gat (DGL runs the same model, sage for gat; DistDGL runs sage)")
      ("fanouts", po::value<std::string>()->default_value("15,10,5"), "from the seeds outward")
      ("task", po::value<std::string>()->default_value("nodes"), "nodes (node classification) or link (link prediction on the graph's edges split 85/5/10)")
      ("negatives", po::value<int>()->default_value(1), "--task link: negatives per training edge")
      ("batch", po::value<int>()->default_value(1024), "seeds (--task link: training edges) per batch per rank")
      ("hidden", po::value<int>()->default_value(256), "hidden width")
      ("epochs", po::value<int>()->default_value(2), "epochs per run (the fastest is reported)")
      ("profile-ops", po::value<int>()->default_value(0), "our runs record N steps op by op and print each op's time against its limit")
      ("dgl-python", po::value<std::string>(), "a python with DGL (scripts/peers.sh): run DGL's training beside ours")
      ("distdgl-python", po::value<std::string>(), "a python with DGL: run DistDGL beside ours (as many partitions, servers and trainers as ranks)")
      ("workdir", po::value<std::string>()->default_value((fs::temp_directory_path() / "shardgnn-bench-train").string()), "scratch folder (the graph is kept and reused)")
      ("json", po::value<std::string>(), "also write the results as JSON here");
  po::variables_map vm;
  if (!parse(args, "shardgnn bench train [options]", o, {}, vm)) return std::nullopt;
  TrainBenchOptions opt;
  opt.ranks = split_int_list(vm["ranks"].as<std::string>(), "--ranks", 1);
  opt.sbm = sbm_options(vm);
  opt.sbm.train_fraction = vm["train"].as<double>();
  opt.sbm.val_fraction = 0.01;
  opt.sbm.class_separation = 0.3;
  opt.model = vm["model"].as<std::string>();
  const std::string task = vm["task"].as<std::string>();
  if (task != "nodes" && task != "link") throw UsageError("unknown --task '" + task + "', expected nodes or link");
  opt.link = task == "link";
  opt.negatives = vm["negatives"].as<int>();
  if (opt.link && opt.model != "sage") throw UsageError("--task link runs sage (the DGL peer's link model)");
  opt.method = parse_method(vm["method"].as<std::string>());
  opt.device = vm["device"].as<std::string>();
  opt.fanouts = vm["fanouts"].as<std::string>();
  opt.batch = vm["batch"].as<int>();
  opt.hidden = vm["hidden"].as<int>();
  opt.epochs = vm["epochs"].as<int>();
  opt.profile_ops = vm["profile-ops"].as<int>();
  if (opt.profile_ops < 0) throw UsageError("--profile-ops must be >= 0");
  if (vm.count("dgl-python")) opt.dgl_python = vm["dgl-python"].as<std::string>();
  if (vm.count("distdgl-python")) opt.distdgl_python = vm["distdgl-python"].as<std::string>();
  if (vm.count("json")) opt.json = vm["json"].as<std::string>();
  opt.work = vm["workdir"].as<std::string>();
  return opt;
}

// The generated graph, kept in the workdir and reused by the next run with the same sizes.
SbmGraph prepare_graph(const TrainBenchOptions& opt) {
  const SbmOptions& sbm = opt.sbm;
  const std::string tag = "sbm-" + std::to_string(sbm.num_nodes) + "-" + std::to_string(static_cast<int>(sbm.avg_degree)) + "-" +
                          std::to_string(sbm.feature_dim) + "-" + std::to_string(static_cast<int>(sbm.train_fraction * 1000)) + "-v2";
  // Evaluation is not what this measures: a test set as small as the validation set.
  SbmGraph g = sbm_graph(opt.work.string(), tag, sbm, /*trim_test=*/true);
  if (opt.link) {
    // Its edges split as Kipf and Welling's (85/5/10, seed 0), once, kept beside it.
    SbmGraph split{g.tag + "-link", g.dir + "-link", {}};
    if (!fs::exists(fs::path(split.dir) / "meta.json")) {
      std::fprintf(stderr, "splitting its edges ...\n");
      const std::string scratch = split.dir + ".scratch";
      fs::create_directories(scratch);
      EdgeSplitReport rep;
      save_dataset(split_edges(g.ds, {}, scratch, rep), split.dir, true);
      fs::remove_all(scratch);
    }
    split.ds = load_dataset(split.dir);
    g = std::move(split);
  }
  std::fprintf(stderr, "dataset %s: %lld nodes, %lld directed edges, %lld features, %zu training nodes\n", g.ds.name.c_str(),
               static_cast<long long>(g.ds.num_nodes()), static_cast<long long>(g.ds.graph.num_edges()), static_cast<long long>(g.ds.feature_dim),
               g.ds.train_idx.size());
  return g;
}

// The shards our p ranks train on: the graph itself for one rank, else its partition (--method)
// (written once, then reused).
std::string partitions_for(const TrainBenchOptions& opt, const SbmGraph& g, int p) {
  if (p == 1) return g.dir;
  const std::string method = method_name(opt.method);
  const std::string parts = (opt.work / (g.tag + "-" + method + "-" + std::to_string(p))).string();
  if (!fs::exists(fs::path(parts) / "partition.json")) {
    std::fprintf(stderr, "partitioning into %d (%s, balance nodes,train) ...\n", p, method.c_str());
    PartitionResult r;
    r.config.parts = p;
    r.config.method = opt.method;
    r.config.balance = {BalanceKey::kNodes, BalanceKey::kTrain};
    r.assignment = make_partitioner(r.config.method)->partition(g.ds, r.config);
    write_partitioned(g.ds, g.dir, r, parts, {.overwrite = true});
  }
  return parts;
}

struct Row {
  std::string who;
  int ranks = 0;
  double epoch_s = 0, wait = 0, compute = 0, allreduce = 0, test_acc = 0;
  std::string note;
  std::string op_profile;  // ours with --profile-ops: rank 0's table
  std::string error;       // why the run failed, in one line (its own last error line); empty when it ran
};

// Our run's row from its metrics file: the fastest epoch and its split.
Row read_our_run(int p, const std::string& device, const ProcessResult& pr, const std::string& metrics) {
  Row row;
  row.who = "shardgnn";
  row.ranks = p;
  if (pr.status != 0 || !fs::exists(metrics)) {
    row.error = pr.status != 0 ? failure_line(pr) : "wrote no metrics file " + metrics;
    row.note = "failed: " + row.error;
    return row;
  }
  row.epoch_s = 1e300;
  const RunMetrics run = load_run_metrics(metrics);
  for (const RunEpoch& e : run.epochs) {
    row.note = std::to_string(p) + " rank(s) of 1 thread" + (device == "cpu" ? "" : " on " + device) + (e.gemm.empty() ? "" : ", products on " + e.gemm) +
               (e.blas_core.empty() ? "" : ", OpenBLAS " + e.blas_core + " kernels");
    // Training time only: the epoch's evaluation (when it had one) is not part of it.
    const double train_s = e.epoch_s - e.eval_s;
    if (train_s < row.epoch_s) {
      row.epoch_s = train_s;
      row.wait = e.sample_wait_s;
      row.compute = e.compute_s;
      row.allreduce = e.allreduce_s;
    }
  }
  // The best model's test accuracy and op profile, from the run's result line (epochs are only validated).
  if (run.result) {
    if (const auto test = final_test(*run.result)) row.test_acc = test->kind == ScoreKind::kLinks ? test->auc : test->accuracy;
    row.op_profile = run.result->op_profile;
  }
  return row;
}

Row run_ours(const TrainBenchOptions& opt, const std::string& exe, const std::string& parts, int p) {
  const std::string metrics = (opt.work / ("metrics-" + std::to_string(p) + ".jsonl")).string();
  fs::remove(metrics);
  std::vector<std::string> argv = {"mpiexec", "-n", std::to_string(p), exe, "train", parts, "--model", opt.model, "--fanouts", opt.fanouts,
                                         "--batch", std::to_string(opt.batch), "--hidden", std::to_string(opt.hidden), "--epochs", std::to_string(opt.epochs),
                                         "--eval-every", std::to_string(opt.epochs), "--no-full-eval", "--threads", "1", "--metrics", metrics, "--device", opt.device};
  if (opt.profile_ops > 0) argv.insert(argv.end(), {"--profile-ops", std::to_string(opt.profile_ops)});
  if (opt.link) argv.insert(argv.end(), {"--task", "link", "--negatives", std::to_string(opt.negatives)});
  std::fprintf(stderr, "training on %d rank(s) ...\n", p);
  return read_our_run(p, opt.device, run_process(argv), metrics);
}

// A peer's row from the result file it wrote ({epoch_s, test_acc, dgl_version}); `note`
// describes the run.
Row peer_row(const char* who, int p, const ProcessResult& pr, const fs::path& result, const std::function<std::string(const std::string&)>& note) {
  Row d;
  d.who = who;
  d.ranks = p;
  try {
    if (pr.status != 0) throw std::runtime_error(failure_line(pr));
    const auto v = read_json_file(result.string()).as_object();
    d.epoch_s = v.at("epoch_s").to_number<double>();
    d.test_acc = v.at("test_acc").to_number<double>();
    d.note = note(std::string(v.at("dgl_version").as_string()));
  } catch (const std::exception& e) {
    d.error = e.what();
    d.note = "failed: " + d.error;
  }
  return d;
}

// Where a peer run writes its result; none is left from an earlier run to be read instead.
fs::path peer_result(const TrainBenchOptions& opt, const char* who, int p) {
  fs::create_directories(opt.work);
  fs::path f = opt.work / (std::string(who) + "-" + std::to_string(p) + ".json");
  fs::remove(f);
  return f;
}

// DGL's link prediction in one process with as many threads as our ranks, on our ranks' combined batch.
Row run_dgl_link(const TrainBenchOptions& opt, const std::string& data_dir, const std::string& fan, int p) {
  std::fprintf(stderr, "DGL link-prediction training, %d thread(s) ...\n", p);
  const fs::path result = peer_result(opt, "dgl", p);
  const ProcessResult pr = run_process({*opt.dgl_python, std::string(SHARDGNN_SOURCE_DIR) + "/bench/peers/dgl_link.py", data_dir, "--result", result.string(),
                                        "--fanouts", fan, "--batch", std::to_string(opt.batch * p), "--negatives", std::to_string(opt.negatives), "--hidden",
                                        std::to_string(opt.hidden), "--epochs", std::to_string(opt.epochs), "--threads", std::to_string(p)});
  return peer_row("dgl", p, pr, result, [&](const std::string& version) {
    return "DGL " + version + " sage, edge dataloader (exclude reverse_id, uniform negatives), 1 process, " + std::to_string(p) + " thread(s), batch " +
           std::to_string(opt.batch * p) + " edges";
  });
}

// DGL in one process with as many threads as our ranks, on our ranks' combined batch.
Row run_dgl(const TrainBenchOptions& opt, const std::string& data_dir, const std::string& fan, int p) {
  if (opt.link) return run_dgl_link(opt, data_dir, fan, p);
  std::fprintf(stderr, "DGL training, %d thread(s) ...\n", p);
  const std::string model = opt.model == "gcn" ? "gcn" : "sage";  // the peer has no GAT
  const fs::path result = peer_result(opt, "dgl", p);
  const ProcessResult pr = run_process({*opt.dgl_python, std::string(SHARDGNN_SOURCE_DIR) + "/bench/peers/dgl_train.py", data_dir, "--result", result.string(),
                                        "--model", model, "--fanouts", fan, "--batch", std::to_string(opt.batch * p), "--hidden", std::to_string(opt.hidden),
                                        "--epochs", std::to_string(opt.epochs), "--threads", std::to_string(p)});
  return peer_row("dgl", p, pr, result, [&](const std::string& version) {
    return "DGL " + version + " " + model + ", 1 process, " + std::to_string(p) + " thread(s), batch " + std::to_string(opt.batch * p);
  });
}

Row run_distdgl(const TrainBenchOptions& opt, const std::string& data_dir, const std::string& fan, int p) {
  std::fprintf(stderr, "DistDGL training, %d partition(s), %d server(s), %d trainer(s) ...\n", p, p, p);
  const fs::path result = peer_result(opt, "distdgl", p);
  const ProcessResult pr = run_process({*opt.distdgl_python, std::string(SHARDGNN_SOURCE_DIR) + "/bench/peers/distdgl_train.py", data_dir, "--result",
                                        result.string(), "--trainers", std::to_string(p), "--parts", std::to_string(p), "--fanouts", fan, "--batch",
                                        std::to_string(opt.batch), "--hidden", std::to_string(opt.hidden), "--epochs", std::to_string(opt.epochs), "--threads",
                                        "1", "--workdir", (opt.work / "distdgl").string()});
  return peer_row("distdgl", p, pr, result, [&](const std::string& version) {
    return "DistDGL " + version + ", " + std::to_string(p) + " trainer(s) + " + std::to_string(p) + " server(s), " + std::to_string(p) +
           (p > 1 ? " METIS partitions" : " partition") + ", batch " + std::to_string(opt.batch) + " per trainer";
  });
}

// Ours and the peers at every rank count, in that order.
std::vector<Row> run_all(const TrainBenchOptions& opt, const SbmGraph& g) {
  const std::string fan = input_first_fanouts(parse_fanouts(opt.fanouts));
  const std::string exe = shardgnn_exe();
  std::vector<Row> rows;
  for (int p : opt.ranks) {
    rows.push_back(run_ours(opt, exe, partitions_for(opt, g, p), p));
    if (opt.dgl_python) rows.push_back(run_dgl(opt, g.dir, fan, p));
    if (opt.distdgl_python && !opt.link) rows.push_back(run_distdgl(opt, g.dir, fan, p));
  }
  return rows;
}

void print_table(const std::vector<Row>& rows, bool link) {
  std::printf("%-9s %5s %9s %9s %9s %9s %8s  %s\n", "who", "cores", "epoch s", "wait s", "compute s", "allred s", link ? "test AUC" : "test acc", "");
  for (const Row& r : rows)
    std::printf("%-9s %5d %9.2f %9.2f %9.2f %9.2f %8.4f  %s\n", r.who.c_str(), r.ranks, r.epoch_s, r.wait, r.compute, r.allreduce, r.test_acc, r.note.c_str());
}

// Each peer's epoch time over ours at the same core count.
void print_peer_ratios(const std::vector<Row>& rows) {
  for (const Row& r : rows)
    for (const Row& d : rows)
      if (r.who == "shardgnn" && (d.who == "dgl" || d.who == "distdgl") && r.ranks == d.ranks && r.epoch_s > 0 && d.epoch_s > 0)
        std::printf("%d core(s): %s epoch / ours = %.2fx\n", r.ranks, d.who == "dgl" ? "DGL" : "DistDGL", d.epoch_s / r.epoch_s);
}

boost::json::array rows_json(const std::vector<Row>& rows) {
  boost::json::array out;
  for (const Row& r : rows)
    out.push_back(boost::json::object{{"who", r.who}, {"cores", r.ranks}, {"epoch_s", r.epoch_s}, {"sample_wait_s", r.wait}, {"compute_s", r.compute},
                                      {"allreduce_s", r.allreduce}, {"test_acc", r.test_acc}, {"note", r.note}, {"op_profile", r.op_profile},
                                      {"failed", !r.error.empty()}, {"error", r.error}});
  return out;
}

}  // namespace

int bench_train_main(const std::vector<std::string>& args) {
  g_command = "shardgnn bench train";
  const std::optional<TrainBenchOptions> opt = parse_options(args);
  if (!opt) return 0;
  const SbmGraph g = prepare_graph(*opt);
  const std::vector<Row> rows = run_all(*opt, g);
  print_table(rows, opt->link);
  print_peer_ratios(rows);
  for (const Row& r : rows)
    if (!r.op_profile.empty()) std::printf("\n%d rank(s): %s", r.ranks, r.op_profile.c_str());
  std::printf("(epoch s: training only, evaluation excluded; ours: %s epoch and its split; %s; the graph stays in %s for the next run)\n",
              opt->epochs > 1 ? "the fastest" : "one",
              opt->link ? "test AUC: after the last epoch, full neighbourhoods for both" : "test acc: after the last epoch, sampled\n neighbourhoods for both",
              opt->work.c_str());
  if (opt->json) write_json_file(*opt->json, boost::json::object{{"dataset", g.dir}, {"rows", rows_json(rows)}});
  std::vector<RunOutcome> outcomes;
  for (const Row& r : rows) outcomes.push_back({r.who + " on " + std::to_string(r.ranks) + " core(s)", r.error});
  return report_failures(g_command, outcomes);
}

}  // namespace shardgnn::cli
