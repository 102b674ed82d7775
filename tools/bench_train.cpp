// `shardgnn bench train`: epoch time and its split for data-parallel training on a generated
// block-model graph (default ~1M nodes, ~25M edges, 100 features), at each rank count, with
// DGL's sampler-based training of the same model on the same graph beside it (one process,
// as many threads as our ranks) and, with --distdgl-python, DistDGL (one partition, server and
// trainer per rank, launched locally by tools/peers/distdgl_train.py).
#include <boost/json.hpp>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>

#include "datasets/error.hpp"
#include "datasets/generators.hpp"
#include "datasets/json_util.hpp"
#include "partition/partitioner.hpp"
#include "partition/shards.hpp"
#include "tools/cli.hpp"
#include "tools/process.hpp"

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

void ensure_sbm_dataset(const std::string& dir, const SbmOptions& sbm, bool trim_test) {
  if (fs::exists(fs::path(dir) / "meta.json")) return;
  std::fprintf(stderr, "generating %s ...\n", fs::path(dir).filename().c_str());
  Dataset g = generate_sbm(sbm);
  if (trim_test) {  // the generator puts every node outside train and val in the test set
    std::vector<NodeId> test(g.test_idx.begin(), g.test_idx.begin() + static_cast<std::ptrdiff_t>(std::min(g.test_idx.size(), g.val_idx.size())));
    g.test_idx = Array<NodeId>(std::move(test));
  }
  save_dataset(g, dir, true);
}

int bench_train_main(const std::vector<std::string>& args) {
  g_command = "shardgnn bench train";
  po::options_description o("options");
  o.add_options()
      ("nodes", po::value<std::int64_t>()->default_value(1000000), "block-model nodes")
      ("avg-degree", po::value<double>()->default_value(50), "expected undirected degree (50: ~25M edges at 1M nodes)")
      ("feature-dim", po::value<int>()->default_value(100), "features")
      ("classes", po::value<int>()->default_value(10), "classes")
      ("train", po::value<double>()->default_value(0.1), "training fraction (sets the steps per epoch)")
      ("ranks", po::value<std::string>()->default_value("1,2"), "rank counts to run")
      ("model", po::value<std::string>()->default_value("sage"), "sage, gcn or gat (the DGL peer runs sage)")
      ("fanouts", po::value<std::string>()->default_value("15,10,5"), "from the seeds outward")
      ("batch", po::value<int>()->default_value(1024), "seeds per batch per rank")
      ("hidden", po::value<int>()->default_value(256), "hidden width")
      ("epochs", po::value<int>()->default_value(2), "epochs per run (the fastest is reported)")
      ("dgl-python", po::value<std::string>(), "a python with DGL (scripts/peers.sh): run DGL's training beside ours")
      ("distdgl-python", po::value<std::string>(), "a python with DGL: run DistDGL beside ours (as many partitions, servers and trainers as ranks)")
      ("workdir", po::value<std::string>()->default_value((fs::temp_directory_path() / "shardgnn-bench-train").string()), "scratch folder (the graph is kept and reused)")
      ("json", po::value<std::string>(), "also write the results as JSON here");
  po::variables_map vm;
  if (!parse(args, "shardgnn bench train [options]", o, {}, vm)) return 0;
  std::vector<int> ranks;
  {
    std::stringstream ss(vm["ranks"].as<std::string>());
    for (std::string item; std::getline(ss, item, ',');) {
      if (item.empty() || item.find_first_not_of("0123456789") != std::string::npos || std::stoi(item) < 1)
        throw UsageError("--ranks must list positive integers, got '" + item + "'");
      ranks.push_back(std::stoi(item));
    }
  }
  const fs::path work = vm["workdir"].as<std::string>();
  fs::create_directories(work);
  SbmOptions sbm = sbm_options(vm);
  sbm.train_fraction = vm["train"].as<double>();
  sbm.val_fraction = 0.01;
  sbm.class_separation = 0.3;
  const std::string tag = "sbm-" + std::to_string(sbm.num_nodes) + "-" + std::to_string(static_cast<int>(sbm.avg_degree)) + "-" +
                          std::to_string(sbm.feature_dim) + "-" + std::to_string(static_cast<int>(sbm.train_fraction * 1000)) + "-v2";
  const std::string data_dir = (work / tag).string();
  // Evaluation is not what this measures: a test set as small as the validation set.
  ensure_sbm_dataset(data_dir, sbm, /*trim_test=*/true);
  const Dataset ds = load_dataset(data_dir);
  std::fprintf(stderr, "dataset %s: %lld nodes, %lld directed edges, %lld features, %zu training nodes\n", ds.name.c_str(),
               static_cast<long long>(ds.num_nodes()), static_cast<long long>(ds.graph.num_edges()), static_cast<long long>(ds.feature_dim),
               ds.train_idx.size());

  struct Row {
    std::string who;
    int ranks = 0;
    double epoch_s = 0, wait = 0, compute = 0, allreduce = 0, test_acc = 0;
    std::string note;
  };
  std::vector<Row> rows;
  const std::string fan = input_first_fanouts(parse_fanouts(vm["fanouts"].as<std::string>()));
  // A peer's row from its JSON output ({epoch_s, test_acc, dgl_version}); `note` describes the run.
  auto peer_row = [&](const char* who, int p, const ProcessResult& pr, const std::function<std::string(const std::string&)>& note) {
    Row d;
    d.who = who;
    d.ranks = p;
    try {
      if (pr.status != 0) throw std::runtime_error("exit " + std::to_string(pr.status));
      const auto v = boost::json::parse(pr.out).as_object();
      d.epoch_s = v.at("epoch_s").to_number<double>();
      d.test_acc = v.at("test_acc").to_number<double>();
      d.note = note(std::string(v.at("dgl_version").as_string()));
    } catch (const std::exception& e) {
      d.note = std::string("failed: ") + e.what();
    }
    rows.push_back(d);
  };
  const std::string exe = self_exe();
  for (int p : ranks) {
    std::string parts = data_dir;
    if (p > 1) {
      parts = (work / (tag + "-metis-" + std::to_string(p))).string();
      if (!fs::exists(fs::path(parts) / "partition.json")) {
        std::fprintf(stderr, "partitioning into %d (METIS, balance nodes,train) ...\n", p);
        PartitionResult r;
        r.config.parts = p;
        r.config.balance = {BalanceKey::kNodes, BalanceKey::kTrain};
        r.assignment = make_partitioner(r.config.method)->partition(ds, r.config);
        write_partitioned(ds, data_dir, r, parts, {.overwrite = true});
      }
    }
    const std::string metrics = (work / ("metrics-" + std::to_string(p) + ".jsonl")).string();
    fs::remove(metrics);
    std::vector<std::string> argv = {"mpiexec", "-n", std::to_string(p), exe, "train", parts, "--model", vm["model"].as<std::string>(),
                                     "--fanouts", vm["fanouts"].as<std::string>(), "--batch", std::to_string(vm["batch"].as<int>()),
                                     "--hidden", std::to_string(vm["hidden"].as<int>()), "--epochs", std::to_string(vm["epochs"].as<int>()),
                                     "--eval-every", std::to_string(vm["epochs"].as<int>()), "--no-full-eval", "--metrics", metrics};
    std::fprintf(stderr, "training on %d rank(s) ...\n", p);
    const ProcessResult pr = run_process(argv);
    Row row;
    row.who = "shardgnn";
    row.ranks = p;
    if (pr.status != 0 || !fs::exists(metrics)) {
      row.note = "failed (exit " + std::to_string(pr.status) + ")";
    } else {
      row.epoch_s = 1e300;
      std::ifstream in(metrics);
      for (std::string line; std::getline(in, line);) {
        const auto v = boost::json::parse(line).as_object();
        if (!v.contains("epoch_s")) continue;
        // Training time only: the epoch's evaluation (when it had one) is not part of it.
        const auto& t = v.at("time_s").as_object();
        const double e = v.at("epoch_s").to_number<double>() - t.at("eval").to_number<double>();
        if (e < row.epoch_s) {
          row.epoch_s = e;
          row.wait = t.at("sample_wait").to_number<double>();
          row.compute = t.at("compute").to_number<double>();
          row.allreduce = t.at("allreduce").to_number<double>();
        }
        if (auto* test = v.if_contains("test")) row.test_acc = test->as_object().at("acc").to_number<double>();
      }
    }
    rows.push_back(row);
    if (vm.count("dgl-python")) {
      std::fprintf(stderr, "DGL training, %d thread(s) ...\n", p);
      const ProcessResult dg = run_process({vm["dgl-python"].as<std::string>(), std::string(SHARDGNN_SOURCE_DIR) + "/tools/peers/dgl_train.py", data_dir,
                                            "--fanouts", fan, "--batch", std::to_string(vm["batch"].as<int>() * p), "--hidden",
                                            std::to_string(vm["hidden"].as<int>()), "--epochs", std::to_string(vm["epochs"].as<int>()), "--threads",
                                            std::to_string(p)});
      peer_row("dgl", p, dg, [&](const std::string& version) {
        return "DGL " + version + ", 1 process, " + std::to_string(p) + " thread(s), batch " + std::to_string(vm["batch"].as<int>() * p);
      });
    }
    if (vm.count("distdgl-python")) {
      std::fprintf(stderr, "DistDGL training, %d partition(s), %d server(s), %d trainer(s) ...\n", p, p, p);
      const ProcessResult dd = run_process({vm["distdgl-python"].as<std::string>(), std::string(SHARDGNN_SOURCE_DIR) + "/tools/peers/distdgl_train.py",
                                            data_dir, "--trainers", std::to_string(p), "--parts", std::to_string(p), "--fanouts", fan, "--batch",
                                            std::to_string(vm["batch"].as<int>()), "--hidden", std::to_string(vm["hidden"].as<int>()), "--epochs",
                                            std::to_string(vm["epochs"].as<int>()), "--workdir", (work / "distdgl").string()});
      peer_row("distdgl", p, dd, [&](const std::string& version) {
        return "DistDGL " + version + ", " + std::to_string(p) + " trainer(s) + " + std::to_string(p) + " server(s), " + std::to_string(p) +
               (p > 1 ? " METIS partitions" : " partition") + ", batch " + std::to_string(vm["batch"].as<int>()) + " per trainer";
      });
    }
  }
  std::printf("%-9s %5s %9s %9s %9s %9s %8s  %s\n", "who", "cores", "epoch s", "wait s", "compute s", "allred s", "test acc", "");
  boost::json::array out;
  for (const Row& r : rows) {
    std::printf("%-9s %5d %9.2f %9.2f %9.2f %9.2f %8.4f  %s\n", r.who.c_str(), r.ranks, r.epoch_s, r.wait, r.compute, r.allreduce, r.test_acc, r.note.c_str());
    out.push_back(boost::json::object{{"who", r.who}, {"cores", r.ranks}, {"epoch_s", r.epoch_s}, {"sample_wait_s", r.wait}, {"compute_s", r.compute},
                                      {"allreduce_s", r.allreduce}, {"test_acc", r.test_acc}, {"note", r.note}});
  }
  for (const Row& r : rows)
    for (const Row& d : rows)
      if (r.who == "shardgnn" && (d.who == "dgl" || d.who == "distdgl") && r.ranks == d.ranks && r.epoch_s > 0 && d.epoch_s > 0)
        std::printf("%d core(s): %s epoch / ours = %.2fx\n", r.ranks, d.who == "dgl" ? "DGL" : "DistDGL", d.epoch_s / r.epoch_s);
  std::printf("(epoch s: training only, evaluation excluded; ours: %s epoch and its split; test acc: after the last epoch, sampled\n"
              " neighbourhoods for both; the graph stays in %s for the next run)\n",
              vm["epochs"].as<int>() > 1 ? "the fastest" : "one", work.c_str());
  if (vm.count("json")) write_json_file(vm["json"].as<std::string>(), boost::json::object{{"dataset", data_dir}, {"rows", out}});
  return 0;
}

}  // namespace shardgnn::cli
