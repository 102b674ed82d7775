// `shardgnn bench hetero`: MLPerf Training's GNN protocol (R-GAT on IGB-Het, trained to a target
// validation accuracy) at a size one machine holds: the hetero generator's graph, the reference
// configuration (R-GAT, a GATConv per relation summed per destination type, 4 heads, fanouts
// 15,10,5 per relation, batch 1024 per rank, Adam lr 0.001, dropout 0.2, features stored as
// float16) with the hidden width scaled (128 for the reference's 512), validation on a fixed
// sample of the validation papers, and DGL's R-GAT (bench/peers/dgl_rgat.py: HeteroGraphConv over
// GATConv, its neighbour sampler) on the same graph and settings, one process of one thread, beside
// ours. Reports each run's epoch time and its split, its validation accuracy by epoch and the
// training seconds until the first validation at or above --target: at epoch ends for both, and
// for ours also counting its validations every --eval-fraction of an epoch (MLPerf's cadence;
// the peer validates at epoch ends only).
#include <boost/json.hpp>
#include <cstdio>
#include <filesystem>
#include <optional>

#include "bench/bench.hpp"
#include "bench/process.hpp"
#include "datasets/error.hpp"
#include "datasets/json_util.hpp"
#include "partition/partitioner.hpp"
#include "partition/shards.hpp"
#include "sampler/config.hpp"
#include "tools/run_report.hpp"

namespace fs = std::filesystem;

namespace shardgnn::cli {

namespace {

struct HeteroBenchOptions {
  std::int64_t papers = 0;
  int feature_dim = 0;
  std::vector<int> ranks;
  std::string fanouts, feature_dtype;
  int batch = 0, hidden = 0, heads = 0, epochs = 0;
  double lr = 0, dropout = 0, target = 0, eval_fraction = 0;
  std::int64_t eval_sample = 0;
  std::optional<std::string> dgl_python, json;
  fs::path work;
};

std::optional<HeteroBenchOptions> parse_options(const std::vector<std::string>& args) {
  po::options_description o("options");
  o.add_options()
      ("papers", po::value<std::int64_t>()->default_value(20000), "the generator's papers (the other types follow IGB-Het's counts)")
      ("feature-dim", po::value<int>()->default_value(128), "feature width of the paper, author and fos types")
      ("feature-dtype", po::value<std::string>()->default_value("float16"), "feature storage, float16 as MLPerf's reference stores IGB-Het, or float32")
      ("ranks", po::value<std::string>()->default_value("1"), "our rank counts (more than one: a metis --balance ntypes,train partition per count)")
      ("fanouts", po::value<std::string>()->default_value("15,10,5"),
       "per relation, from the seeds outward (MLPerf's); \"15,10,5;cites=5,5,5\" gives a relation its own (train's syntax, DGL's sampler given the same)")
      ("batch", po::value<int>()->default_value(1024), "seed papers per batch per rank (MLPerf's per GPU)")
      ("hidden", po::value<int>()->default_value(128), "hidden width (MLPerf's is 512: scaled to this machine)")
      ("heads", po::value<int>()->default_value(4), "attention heads (MLPerf's)")
      ("lr", po::value<double>()->default_value(0.001), "Adam's learning rate (MLPerf's)")
      ("dropout", po::value<double>()->default_value(0.2), "dropout on every layer's input (MLPerf's)")
      ("epochs", po::value<int>()->default_value(4), "epochs per run")
      ("target", po::value<double>()->default_value(0.6), "validation accuracy whose first reaching stops the clock (MLPerf: 0.72 on IGBH-Full)")
      ("eval-sample", po::value<std::int64_t>()->default_value(1000), "validate on this many validation papers, the same each time (0 = all)")
      ("eval-fraction", po::value<double>()->default_value(0.05), "ours also validates every this fraction of an epoch (MLPerf's 0.05; at least every step; 0 = epoch ends only)")
      ("dgl-python", po::value<std::string>(), "a python with DGL (scripts/peers.sh): run DGL's R-GAT beside ours")
      ("workdir", po::value<std::string>()->default_value((fs::temp_directory_path() / "shardgnn-bench-hetero").string()), "scratch folder (the graph is kept and reused)")
      ("json", po::value<std::string>(), "also write the results as JSON here");
  po::variables_map vm;
  if (!parse(args, "shardgnn bench hetero [options]", o, {}, vm)) return std::nullopt;
  HeteroBenchOptions opt;
  opt.papers = vm["papers"].as<std::int64_t>();
  opt.feature_dim = vm["feature-dim"].as<int>();
  opt.feature_dtype = vm["feature-dtype"].as<std::string>();
  if (opt.feature_dtype != "float16" && opt.feature_dtype != "float32") throw UsageError("--feature-dtype: float16 or float32, got '" + opt.feature_dtype + "'");
  opt.ranks = split_int_list(vm["ranks"].as<std::string>(), "--ranks", 1);
  opt.fanouts = vm["fanouts"].as<std::string>();
  std::string overrides;
  parse_fanouts_option(opt.fanouts, overrides);  // checked before any work; the overrides once the graph is there
  opt.batch = vm["batch"].as<int>();
  opt.hidden = vm["hidden"].as<int>();
  opt.heads = vm["heads"].as<int>();
  opt.lr = vm["lr"].as<double>();
  opt.dropout = vm["dropout"].as<double>();
  opt.epochs = vm["epochs"].as<int>();
  opt.target = vm["target"].as<double>();
  opt.eval_sample = vm["eval-sample"].as<std::int64_t>();
  opt.eval_fraction = vm["eval-fraction"].as<double>();
  if (opt.epochs < 1) throw UsageError("--epochs must be at least 1");
  if (vm.count("dgl-python")) opt.dgl_python = vm["dgl-python"].as<std::string>();
  if (vm.count("json")) opt.json = vm["json"].as<std::string>();
  opt.work = vm["workdir"].as<std::string>();
  return opt;
}

// The generated graph, kept in the workdir and reused by a run with the same options.
std::string prepare_graph(const HeteroBenchOptions& opt) {
  const std::string tag = "hetero-" + std::to_string(opt.papers) + "-" + std::to_string(opt.feature_dim) + "-" + opt.feature_dtype;
  const fs::path dir = opt.work / tag;
  if (!fs::exists(dir / "meta.json")) {
    std::fprintf(stderr, "generating %s ...\n", tag.c_str());
    fs::create_directories(opt.work);
    const ProcessResult pr = run_process({shardgnn_exe(), "data", "generate", "hetero", "--papers", std::to_string(opt.papers), "--feature-dim",
                                          std::to_string(opt.feature_dim), "--feature-dtype", opt.feature_dtype, "--out", dir.string(), "--force"});
    if (pr.status != 0) throw InputError(dir.string() + ": data generate hetero failed (" + failure_line(pr) + ")");
  }
  return dir.string();
}

// Our p ranks' input: the dataset folder for one, else a partition per node type's balance.
std::string partitions_for(const std::string& data, int p) {
  if (p == 1) return data;
  const std::string parts = data + "-metis-" + std::to_string(p);
  if (!fs::exists(fs::path(parts) / "partition.json")) {
    std::fprintf(stderr, "partitioning into %d (metis, balance ntypes,train) ...\n", p);
    const Dataset d = load_dataset(data);
    PartitionResult r;
    r.config.parts = p;
    r.config.balance = {BalanceKey::kNtypes, BalanceKey::kTrain};
    r.assignment = make_partitioner(r.config.method)->partition(d, r.config);
    write_partitioned(d, data, r, parts, {.overwrite = true});
  }
  return parts;
}

struct Run {
  std::string who, note;
  std::string error;  // why the run failed, in one line (its own last error line); empty when it ran
  int cores = 0;
  double epoch_s = 0, wait = 0, compute = 0, allreduce = 0;  // the fastest epoch's training
  std::vector<double> val, train_s;                         // per epoch, at its end
  std::optional<double> to_target;                          // training seconds until the target, validations at epoch ends
  std::optional<double> to_target_inner;                    // the same counting the validations inside epochs
  std::int64_t validations = 0;
};

void clock_target(Run& r, double target) {
  double trained = 0;
  for (std::size_t i = 0; i < r.val.size() && !r.to_target; ++i) {
    trained += r.train_s[i];
    if (r.val[i] >= target) r.to_target = trained;
  }
}

Run run_ours(const HeteroBenchOptions& opt, const std::string& input, int p) {
  const std::string metrics = (opt.work / ("metrics-" + std::to_string(p) + ".jsonl")).string();
  fs::remove(metrics);
  const std::vector<std::string> argv = {"mpiexec", "-n", std::to_string(p), shardgnn_exe(), "train", input, "--model", "rgat", "--fanouts", opt.fanouts,
                                         "--batch", std::to_string(opt.batch), "--hidden", std::to_string(opt.hidden), "--heads", std::to_string(opt.heads),
                                         "--lr", std::to_string(opt.lr), "--dropout", std::to_string(opt.dropout), "--weight-decay", "0",
                                         "--epochs", std::to_string(opt.epochs), "--eval-sample", std::to_string(opt.eval_sample),
                                         "--eval-fraction", std::to_string(opt.eval_fraction), "--no-test",
                                         "--threads", "1", "--metrics", metrics};
  std::fprintf(stderr, "training R-GAT on %d rank(s) ...\n", p);
  const ProcessResult pr = run_process(argv);
  Run r;
  r.who = "shardgnn";
  r.cores = p;
  if (pr.status != 0 || !fs::exists(metrics)) {
    r.error = pr.status != 0 ? failure_line(pr) : "wrote no metrics file " + metrics;
    r.note = "failed: " + r.error;
    return r;
  }
  r.epoch_s = 1e300;
  double before = 0;  // training seconds of the epochs before
  for (const RunEpoch& e : load_run_metrics(metrics).epochs) {
    for (const InnerValidation& i : e.inner)
      if (!r.to_target_inner && i.score >= opt.target) r.to_target_inner = before + i.train_s;
    if (!r.to_target_inner && e.val.accuracy >= opt.target) r.to_target_inner = before + e.train_s;
    r.validations += static_cast<std::int64_t>(e.inner.size()) + 1;
    before += e.train_s;
    r.val.push_back(e.val.accuracy);
    r.train_s.push_back(e.train_s);
    if (e.train_s < r.epoch_s) {
      r.epoch_s = e.train_s;
      r.wait = e.sample_wait_s;
      r.compute = e.compute_s;
      r.allreduce = e.allreduce_s;
    }
    r.note = std::to_string(p) + " rank(s) of 1 thread, products on " + e.gemm;
  }
  clock_target(r, opt.target);
  return r;
}

// DGL's fanouts: one list input layer first, or with per-relation overrides a {relation label:
// fanout} object per layer, input layer first, as its sampler takes a dict per layer.
std::vector<std::string> dgl_fanouts(const HeteroBenchOptions& opt, const std::vector<std::vector<int>>& per_relation, const GraphSchema& schema) {
  if (opt.fanouts.find(';') == std::string::npos) return {"--fanouts", input_first_fanouts(parse_fanouts(opt.fanouts))};
  boost::json::array layers;
  for (auto hop = per_relation.rbegin(); hop != per_relation.rend(); ++hop) {
    boost::json::object layer;
    for (std::size_t r = 0; r < hop->size(); ++r) layer[schema.relation_label(static_cast<int>(r))] = (*hop)[r];
    layers.push_back(std::move(layer));
  }
  return {"--relation-fanouts", boost::json::serialize(layers)};
}

Run run_dgl(const HeteroBenchOptions& opt, const std::string& data, const std::vector<std::vector<int>>& per_relation, const GraphSchema& schema) {
  const fs::path result = opt.work / "dgl-rgat.json";
  fs::remove(result);
  std::fprintf(stderr, "training DGL's R-GAT ...\n");
  std::vector<std::string> argv = {*opt.dgl_python, std::string(SHARDGNN_SOURCE_DIR) + "/bench/peers/dgl_rgat.py", data, "--result", result.string()};
  for (std::string& a : dgl_fanouts(opt, per_relation, schema)) argv.push_back(std::move(a));
  for (const std::string& a : {std::string("--batch"), std::to_string(opt.batch), std::string("--hidden"), std::to_string(opt.hidden), std::string("--heads"),
                               std::to_string(opt.heads), std::string("--lr"), std::to_string(opt.lr), std::string("--dropout"), std::to_string(opt.dropout),
                               std::string("--epochs"), std::to_string(opt.epochs), std::string("--threads"), std::string("1")})
    argv.push_back(a);
  const ProcessResult pr = run_process(argv);
  Run r;
  r.who = "dgl";
  r.cores = 1;
  try {
    if (pr.status != 0) throw std::runtime_error(failure_line(pr));
    const boost::json::object v = read_json_file(result.string()).as_object();
    r.epoch_s = v.at("epoch_s").to_number<double>();
    for (const auto& x : v.at("epoch_times").as_array()) r.train_s.push_back(x.to_number<double>());
    for (const auto& x : v.at("val_acc").as_array()) r.val.push_back(x.to_number<double>());
    r.note = "DGL " + std::string(v.at("dgl_version").as_string()) + ", 1 process of 1 thread, whole validation set";
  } catch (const std::exception& e) {
    r.error = e.what();
    r.note = "failed: " + r.error;
    r.epoch_s = 0;
    r.train_s.clear();
    r.val.clear();
    return r;
  }
  clock_target(r, opt.target);
  return r;
}

std::string fixed(double x, int digits) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.*f", digits, x);
  return buf;
}

std::string vals(const Run& r) {
  std::string s;
  for (const double v : r.val) {
    if (!s.empty()) s += ' ';
    s += fixed(v, 4);
  }
  return s;
}

}  // namespace

int bench_hetero_main(const std::vector<std::string>& args) {
  const std::optional<HeteroBenchOptions> opt = parse_options(args);
  if (!opt) return 0;
  const std::string data = prepare_graph(*opt);
  // Per-relation overrides named against the graph's relations before anything trains.
  const GraphSchema schema = load_dataset(data).schema;
  const std::vector<std::vector<int>> per_relation = parse_relation_fanouts(opt->fanouts, schema);
  std::vector<Run> runs;
  for (const int p : opt->ranks) runs.push_back(run_ours(*opt, partitions_for(data, p), p));
  if (opt->dgl_python) runs.push_back(run_dgl(*opt, data, per_relation, schema));
  std::printf("R-GAT on %s: hidden %d, %d heads, fanouts %s per relation, batch %d per rank, Adam lr %g, dropout %g, %s features\n", data.c_str(), opt->hidden,
              opt->heads, opt->fanouts.c_str(), opt->batch, opt->lr, opt->dropout, opt->feature_dtype.c_str());
  std::printf("%-9s %5s %9s %9s %9s %9s %12s %12s  %s\n", "who", "cores", "epoch s", "wait s", "compute s", "allred s", "s to target", "(inner)",
              "validation accuracy at epoch ends");
  for (const Run& r : runs) {
    const std::string to = r.to_target ? fixed(*r.to_target, 1) : "not reached";
    const std::string inner = r.who != "shardgnn" ? "-" : r.to_target_inner ? fixed(*r.to_target_inner, 1) : "not reached";
    std::printf("%-9s %5d %9.2f %9.2f %9.2f %9.2f %12s %12s  %s (%s)\n", r.who.c_str(), r.cores, r.epoch_s, r.wait, r.compute, r.allreduce, to.c_str(),
                inner.c_str(), vals(r).c_str(), r.note.c_str());
  }
  for (const Run& r : runs)
    for (const Run& d : runs)
      if (r.who == "shardgnn" && d.who == "dgl" && r.cores == 1 && r.epoch_s > 0 && d.epoch_s > 0)
        std::printf("1 core: DGL epoch / ours = %.2fx\n", d.epoch_s / r.epoch_s);
  std::printf("(epoch s: training only, the fastest of %d; s to target: training seconds until the first validation at or above %g at an epoch's end, "
              "(inner) counting ours every %g epoch too, on %lld validation papers (0: all); the graph stays in %s)\n",
              opt->epochs, opt->target, opt->eval_fraction, static_cast<long long>(opt->eval_sample), opt->work.c_str());
  if (opt->json) {
    boost::json::array rows;
    for (const Run& r : runs) {
      boost::json::array val(r.val.begin(), r.val.end());
      rows.push_back(boost::json::object{{"who", r.who}, {"cores", r.cores}, {"epoch_s", r.epoch_s}, {"sample_wait_s", r.wait}, {"compute_s", r.compute},
                                         {"allreduce_s", r.allreduce}, {"val_acc", val}, {"seconds_to_target", r.to_target ? boost::json::value(*r.to_target) : nullptr},
                                         {"seconds_to_target_inner", r.to_target_inner ? boost::json::value(*r.to_target_inner) : nullptr},
                                         {"note", r.note}, {"failed", !r.error.empty()}, {"error", r.error}});
    }
    write_json_file(*opt->json, boost::json::object{{"dataset", data}, {"target", opt->target}, {"rows", rows}});
  }
  std::vector<RunOutcome> outcomes;
  for (const Run& r : runs) outcomes.push_back({r.who + " on " + std::to_string(r.cores) + " core(s)", r.error});
  return report_failures("shardgnn bench hetero", outcomes);
}

}  // namespace shardgnn::cli
