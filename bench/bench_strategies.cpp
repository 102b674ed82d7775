// `shardgnn bench strategies`: what a partitioning strategy does to training, end to end. For
// every part count, partitioning method and seed-sampling policy it partitions the dataset, trains
// the same model with the same budget on one rank per part for each seed, and reports test
// micro-F1 (accuracy) and macro-F1 as mean ± std over the seeds, the epoch time and its split,
// bytes received, and the partition's label entropy, KL divergence, edge cut and balance; a
// single-process run of the same model is the reference row. After Deshmukh et al. 2023,
// "Entropy Aware Training for Fast and Accurate Distributed GNN".
#include <algorithm>
#include <boost/json.hpp>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <sstream>
#include <thread>

#include <sched.h>

#include "datasets/error.hpp"
#include "datasets/fileio.hpp"
#include "datasets/json_util.hpp"
#include "partition/report.hpp"
#include "partition/shards.hpp"
#include "sampler/rebalance.hpp"
#include "bench/bench.hpp"
#include "tools/cli.hpp"
#include "bench/process.hpp"
#include "tools/run_report.hpp"

namespace fs = std::filesystem;

namespace shardgnn::cli {

namespace {

// The strategies by name: the `partition` options each stands for.
const std::map<std::string, std::vector<std::string>>& strategy_args() {
  static const std::map<std::string, std::vector<std::string>> m = {
      {"metis", {"--method", "metis"}},
      {"metis-entropy", {"--method", "metis", "--edge-weights", "entropy"}},  // EAT's entropy-aware edge weights
      {"metis-labels", {"--method", "metis", "--balance", "nodes,labels"}},   // every shard its share of each class
      {"fennel", {"--method", "fennel"}},
      {"ldg", {"--method", "ldg"}},
      {"random", {"--method", "random"}},
      {"labels", {"--method", "labels"}},  // label-skewed on purpose
  };
  return m;
}

struct StrategyOptions {
  std::string dataset;
  std::vector<int> parts;
  std::vector<std::string> methods, samplings;
  int seeds = 3;
  int batch = 32;  // over all ranks
  std::vector<std::string> train_args;  // the model and budget, the same for every row
  std::vector<std::string> parallel_args;  // added for the partitioned runs
  std::string personalize;  // "" or the epochs of --personalize, run as a second result per trial
  fs::path work;
  std::optional<std::string> json, svg;
};

std::optional<StrategyOptions> parse_options(const std::vector<std::string>& args) {
  po::options_description o("options");
  o.add_options()
      ("parts", po::value<std::string>()->default_value("4,8,16"), "part counts (one rank per part)")
      ("methods", po::value<std::string>()->default_value("metis,metis-entropy,metis-labels,fennel,ldg,random,labels"),
       "strategies: metis, metis-entropy (entropy-aware edge weights), metis-labels (label-balanced), fennel, ldg, random, labels (label-skewed)")
      ("seed-sampling", po::value<std::string>()->default_value("shard,class-balanced"), "seed-sampling policies to train each partition with")
      ("seeds", po::value<int>()->default_value(3), "training seeds per row (mean ± std over them)")
      ("model", po::value<std::string>()->default_value("sage"), "sage, gcn or gat")
      ("fanouts", po::value<std::string>()->default_value("10,10"), "from the seeds outward")
      ("batch", po::value<int>()->default_value(32), "seeds per step over all ranks (each of K ranks takes a K-th): every row takes as many steps per epoch")
      ("hidden", po::value<int>()->default_value(64), "hidden width")
      ("epochs", po::value<int>()->default_value(50), "epochs per run")
      ("lr", po::value<double>()->default_value(0.01), "learning rate")
      ("dropout", po::value<double>()->default_value(0.5), "dropout")
      ("weight-decay", po::value<double>()->default_value(5e-4), "weight decay")
      ("node-local", po::value<std::string>()->default_value("off"),
       "off: every rank is its own machine, rows of other ranks come over MPI and are counted in MB/rank; on: ranks of this node read each other's shards")
      ("personalize", po::value<int>()->default_value(0), "also score each run after N epochs of per-rank fine-tuning (train --personalize)")
      ("workdir", po::value<std::string>()->default_value((fs::temp_directory_path() / "shardgnn-bench-strategies").string()), "scratch folder")
      ("json", po::value<std::string>(), "also write the rows as JSON here")
      ("svg", po::value<std::string>(), "also draw micro-F1 against epoch time here");
  po::variables_map vm;
  if (!parse(args, "shardgnn bench strategies <dataset-dir> [options]", o, {"dataset"}, vm)) return std::nullopt;
  StrategyOptions opt;
  opt.dataset = vm["dataset"].as<std::string>();
  opt.parts = split_int_list(vm["parts"].as<std::string>(), "--parts", 2);
  opt.methods = split_list(vm["methods"].as<std::string>(), "--methods");
  for (const std::string& m : opt.methods)
    if (!strategy_args().count(m)) throw UsageError("unknown strategy '" + m + "' in --methods");
  opt.samplings = split_list(vm["seed-sampling"].as<std::string>(), "--seed-sampling");
  for (const std::string& s : opt.samplings)
    try {
      parse_seed_sampling(s);
    } catch (const InputError& e) {
      throw UsageError(e.what());
    }
  opt.seeds = vm["seeds"].as<int>();
  if (opt.seeds < 1) throw UsageError("--seeds must be at least 1");
  if (vm["personalize"].as<int>() < 0) throw UsageError("--personalize must be >= 0");
  if (vm["personalize"].as<int>() > 0) opt.personalize = std::to_string(vm["personalize"].as<int>());
  opt.batch = vm["batch"].as<int>();
  if (opt.batch < 1) throw UsageError("--batch must be at least 1");
  // Every digit of a real option: std::to_string keeps six decimals, so 1e-7 would become 0.
  const auto exact = [](double v) {
    char text[32];
    std::snprintf(text, sizeof text, "%.17g", v);
    return std::string(text);
  };
  opt.train_args = {"--model", vm["model"].as<std::string>(), "--fanouts", vm["fanouts"].as<std::string>(),
                    "--hidden", std::to_string(vm["hidden"].as<int>()), "--epochs", std::to_string(vm["epochs"].as<int>()),
                    "--lr", exact(vm["lr"].as<double>()), "--dropout", exact(vm["dropout"].as<double>()),
                    "--weight-decay", exact(vm["weight-decay"].as<double>()), "--eval", "full", "--threads", "1"};
  const std::string node_local = vm["node-local"].as<std::string>();
  parse_on_off(node_local, "--node-local");
  opt.parallel_args = {"--node-local", node_local};
  opt.work = vm["workdir"].as<std::string>();
  if (vm.count("json")) opt.json = vm["json"].as<std::string>();
  if (vm.count("svg")) opt.svg = vm["svg"].as<std::string>();
  return opt;
}

// One training run's outcome.
struct Trial {
  double micro_f1 = 0, macro_f1 = 0;
  double personal_micro = -1, personal_macro = -1;  // after --personalize, when asked
  double epoch_s = 0, wait_s = 0, compute_s = 0, allreduce_s = 0, mb_per_rank = 0;
};

struct Row {
  int parts = 1;
  std::string method = "single process", sampling = "shard";
  std::optional<PartitionMetrics> partition;
  std::vector<Trial> trials;
  std::string failure;  // why the row has no trials
};

struct Stat {
  double mean = 0, std = 0;
};
Stat stat(const std::vector<Trial>& trials, double Trial::*field) {
  Stat s;
  for (const Trial& t : trials) s.mean += t.*field / static_cast<double>(trials.size());
  for (const Trial& t : trials) s.std += (t.*field - s.mean) * (t.*field - s.mean) / static_cast<double>(trials.size());
  s.std = std::sqrt(s.std);
  return s;
}

Trial train_once(const StrategyOptions& opt, const std::string& data, int ranks, const std::string& sampling, int seed) {
  const std::string metrics = (opt.work / "metrics.jsonl").string();
  fs::remove(metrics);
  std::vector<std::string> argv;
  if (ranks > 1) argv = {"mpiexec", "-n", std::to_string(ranks)};
  const int per_rank = (opt.batch + ranks - 1) / ranks;
  argv.insert(argv.end(), {shardgnn_exe(), "train", data, "--seed", std::to_string(seed), "--seed-sampling", sampling, "--metrics", metrics, "--batch",
                           std::to_string(per_rank)});
  argv.insert(argv.end(), opt.train_args.begin(), opt.train_args.end());
  if (ranks > 1) argv.insert(argv.end(), opt.parallel_args.begin(), opt.parallel_args.end());
  if (!opt.personalize.empty()) argv.insert(argv.end(), {"--personalize", opt.personalize});
  const ProcessResult pr = run_process(argv);
  if (pr.status != 0) throw std::runtime_error("train failed (" + failure_line(pr) + ")");
  const RunMetrics run = load_run_metrics(metrics);
  if (!run.result || !run.result->full) throw std::runtime_error(metrics + ": no full-neighbourhood test scores in the run's result line");
  Trial t;
  // One class per node: micro-F1 is the accuracy; label sets carry their own.
  const auto micro = [](const ClassMetrics& m) { return m.kind == ScoreKind::kLabelSets ? m.micro_f1 : m.accuracy; };
  t.micro_f1 = micro(*run.result->full);
  t.macro_f1 = run.result->full->macro_f1;
  if (!opt.personalize.empty()) {
    if (!run.result->personalized) throw std::runtime_error(metrics + ": no personalized test scores in the run's result line");
    t.personal_micro = micro(*run.result->personalized);
    t.personal_macro = run.result->personalized->macro_f1;
  }
  // The median epoch's training time (evaluation excluded), and the mean split and bytes.
  std::vector<double> train_s;
  for (const RunEpoch& e : run.epochs) {
    train_s.push_back(e.train_s);
    const auto n = static_cast<double>(run.epochs.size());
    t.wait_s += e.sample_wait_s / n;
    t.compute_s += e.compute_s / n;
    t.allreduce_s += e.allreduce_s / n;
    t.mb_per_rank += e.bytes_received / 1e6 / ranks / n;
  }
  std::nth_element(train_s.begin(), train_s.begin() + static_cast<std::ptrdiff_t>(train_s.size() / 2), train_s.end());
  t.epoch_s = train_s.empty() ? 0 : train_s[train_s.size() / 2];
  return t;
}

void run_row(const StrategyOptions& opt, const std::string& data, Row& row) {
  for (int seed = 0; seed < opt.seeds; ++seed) {
    std::fprintf(stderr, "K=%d %s, %s seeds, seed %d ...\n", row.parts, row.method.c_str(), row.sampling.c_str(), seed);
    try {
      row.trials.push_back(train_once(opt, data, row.parts, row.sampling, seed));
    } catch (const std::exception& e) {
      row.failure = e.what();
      row.trials.clear();
      return;
    }
  }
}

int usable_cores() {
  cpu_set_t set;
  return sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : static_cast<int>(std::thread::hardware_concurrency());
}

std::string mean_std(const std::vector<Trial>& trials, double Trial::*field) {
  const Stat s = stat(trials, field);
  return render::fmt("%.2f", 100 * s.mean) + " ± " + render::fmt("%.2f", 100 * s.std);
}

void print_table(const std::vector<Row>& rows, int cores, bool personal) {
  std::printf("%3s %-15s %-15s %16s %16s %s%8s %7s %7s %7s %8s %8s %7s %7s %6s\n", "K", "strategy", "seed sampling", "micro-F1 %", "macro-F1 %",
              personal ? "   personalized % " : "", "epoch s", "wait", "compute", "allred", "MB/rank", "entropy", "max KL", "cut", "bal");
  for (const Row& r : rows) {
    std::printf("%3d %-15s %-15s ", r.parts, r.method.c_str(), r.sampling.c_str());
    if (r.trials.empty()) {
      std::printf("failed: %s\n", r.failure.c_str());
      continue;
    }
    const bool over = r.parts > cores;
    // One more than the columns: "±" is two bytes, which printf counts.
    std::printf("%17s %17s ", mean_std(r.trials, &Trial::micro_f1).c_str(), mean_std(r.trials, &Trial::macro_f1).c_str());
    if (personal) std::printf("%18s ", mean_std(r.trials, &Trial::personal_micro).c_str());
    std::printf("%7.3f%s %7.3f %7.3f %7.3f %8.2f", stat(r.trials, &Trial::epoch_s).mean, over ? "*" : " ", stat(r.trials, &Trial::wait_s).mean,
                stat(r.trials, &Trial::compute_s).mean, stat(r.trials, &Trial::allreduce_s).mean, stat(r.trials, &Trial::mb_per_rank).mean);
    if (r.partition)
      std::printf(" %8.3f %7.3f %7lld %6.3f\n", r.partition->mean_label_entropy, r.partition->max_label_kl, static_cast<long long>(r.partition->edge_cut),
                  r.partition->nodes.ratio());
    else
      std::printf(" %8s %7s %7s %6s\n", "-", "-", "-", "-");
  }
  std::printf("(micro-F1: test accuracy with full neighbourhoods (label sets: over every (node, label) entry), mean ± std (population) over seeds;\n"
              " epoch s: median epoch's training time, evaluation excluded;\n"
              " wait/compute/allred: its split, mean over epochs and ranks; MB/rank: bytes received per rank per epoch; entropy: mean shard label\n"
              " entropy in bits; max KL: largest shard's KL divergence from the global label mix; cut: edge cut; bal: largest shard / mean;\n"
              " * the run had more ranks than this machine's %d cores: its times are oversubscribed, compare accuracy only)\n",
              cores);
}

boost::json::object stat_json(const std::vector<Trial>& trials, double Trial::*field) {
  const Stat s = stat(trials, field);
  boost::json::array values;
  for (const Trial& t : trials) values.emplace_back(t.*field);
  return {{"mean", s.mean}, {"std", s.std}, {"values", values}};
}

boost::json::value rows_json(const std::vector<Row>& rows, int cores, bool personal) {
  boost::json::array out;
  for (const Row& r : rows) {
    boost::json::object o{{"parts", r.parts}, {"strategy", r.method}, {"seed_sampling", r.sampling}, {"oversubscribed", r.parts > cores}};
    if (r.trials.empty()) {
      o["failure"] = r.failure;
    } else {
      o["micro_f1"] = stat_json(r.trials, &Trial::micro_f1);
      o["macro_f1"] = stat_json(r.trials, &Trial::macro_f1);
      if (personal) {
        o["personalized_micro_f1"] = stat_json(r.trials, &Trial::personal_micro);
        o["personalized_macro_f1"] = stat_json(r.trials, &Trial::personal_macro);
      }
      o["epoch_s"] = stat_json(r.trials, &Trial::epoch_s);
      o["split_s"] = {{"batch_wait", stat(r.trials, &Trial::wait_s).mean}, {"compute", stat(r.trials, &Trial::compute_s).mean},
                      {"allreduce", stat(r.trials, &Trial::allreduce_s).mean}};
      o["mb_received_per_rank"] = stat(r.trials, &Trial::mb_per_rank).mean;
    }
    if (r.partition) {
      boost::json::array entropy, kl;
      for (const ShardMetrics& s : r.partition->shards) {
        entropy.emplace_back(s.label_entropy);
        kl.emplace_back(s.label_kl);
      }
      o["partition"] = {{"edge_cut", r.partition->edge_cut}, {"node_balance", r.partition->nodes.ratio()},
                        {"global_label_entropy", r.partition->global_label_entropy}, {"mean_label_entropy", r.partition->mean_label_entropy},
                        {"max_label_kl", r.partition->max_label_kl}, {"shard_label_entropy", entropy}, {"shard_label_kl", kl}};
    }
    out.push_back(std::move(o));
  }
  return boost::json::object{{"machine", machine_description()}, {"cores", cores}, {"rows", out}};
}

// Micro-F1 against epoch time, a point per row (mean over seeds, with the std as a bar): colour by
// strategy, circle for shard seed sampling, square for class-balanced, hollow when oversubscribed.
std::string rows_svg(const std::vector<Row>& rows, int cores) {
  using render::fmt;
  const double W = 760, H = 460, x0 = 70, y0 = 30, pw = 460, ph = 360;
  double tmax = 0, fmin = 1, fmax = 0;
  for (const Row& r : rows) {
    if (r.trials.empty()) continue;
    const Stat f = stat(r.trials, &Trial::micro_f1);
    tmax = std::max(tmax, stat(r.trials, &Trial::epoch_s).mean);
    fmin = std::min(fmin, f.mean - f.std);
    fmax = std::max(fmax, f.mean + f.std);
  }
  if (tmax <= 0) tmax = 1;
  fmin = std::max(0.0, fmin - 0.02);
  fmax = std::min(1.0, fmax + 0.02);
  if (fmax <= fmin) fmax = fmin + 0.1;
  const auto X = [&](double t) { return x0 + pw * t / (tmax * 1.05); };
  const auto Y = [&](double f) { return y0 + ph * (fmax - f) / (fmax - fmin); };
  std::map<std::string, int> colour;
  for (const Row& r : rows) colour.emplace(r.method, static_cast<int>(colour.size()) % 10);
  std::ostringstream s;
  s << "<svg xmlns='http://www.w3.org/2000/svg' width='" << W << "' height='" << H << "' font-family='sans-serif' font-size='11'>\n"
    << "<rect width='100%' height='100%' fill='white'/>\n"
    << "<text x='" << x0 << "' y='18' font-size='13'>test micro-F1 against epoch time, one point per strategy (mean ± std over seeds)</text>\n"
    << "<rect x='" << x0 << "' y='" << y0 << "' width='" << pw << "' height='" << ph << "' fill='none' stroke='#444'/>\n";
  for (int i = 0; i <= 4; ++i) {
    const double f = fmin + (fmax - fmin) * i / 4, t = tmax * 1.05 * i / 4;
    s << "<text x='" << x0 - 6 << "' y='" << Y(f) + 4 << "' text-anchor='end'>" << fmt("%.1f", 100 * f) << "</text>\n"
      << "<text x='" << X(t) << "' y='" << y0 + ph + 16 << "' text-anchor='middle'>" << fmt("%.2f", t) << "</text>\n";
  }
  s << "<text x='" << x0 + pw / 2 << "' y='" << y0 + ph + 34 << "' text-anchor='middle'>epoch s (median epoch, training only)</text>\n"
    << "<text transform='translate(18," << y0 + ph / 2 << ") rotate(-90)' text-anchor='middle'>micro-F1 %</text>\n";
  for (const Row& r : rows) {
    if (r.trials.empty()) continue;
    const Stat f = stat(r.trials, &Trial::micro_f1);
    const double x = X(stat(r.trials, &Trial::epoch_s).mean), y = Y(f.mean);
    const std::string c = render::kColors[colour[r.method]];
    const std::string fill = r.parts > cores ? "white" : c;
    s << "<line x1='" << x << "' x2='" << x << "' y1='" << Y(f.mean - f.std) << "' y2='" << Y(f.mean + f.std) << "' stroke='" << c << "'/>\n";
    if (r.sampling == "class-balanced")
      s << "<rect x='" << x - 4 << "' y='" << y - 4 << "' width='8' height='8' fill='" << fill << "' stroke='" << c << "'/>\n";
    else
      s << "<circle cx='" << x << "' cy='" << y << "' r='4' fill='" << fill << "' stroke='" << c << "'/>\n";
    s << "<text x='" << x + 6 << "' y='" << y - 4 << "' font-size='9'>K" << r.parts << "</text>\n";
  }
  double ly = y0 + 6;
  for (const auto& [name, i] : colour) {
    s << "<circle cx='" << x0 + pw + 24 << "' cy='" << ly << "' r='4' fill='" << render::kColors[i] << "'/>"
      << "<text x='" << x0 + pw + 34 << "' y='" << ly + 4 << "'>" << render::xml_escape(name) << "</text>\n";
    ly += 16;
  }
  s << "<text x='" << x0 + pw + 20 << "' y='" << ly + 10 << "'>circle: shard seeds</text>\n"
    << "<text x='" << x0 + pw + 20 << "' y='" << ly + 26 << "'>square: class-balanced</text>\n"
    << "<text x='" << x0 + pw + 20 << "' y='" << ly + 42 << "'>hollow: more ranks than</text>\n"
    << "<text x='" << x0 + pw + 20 << "' y='" << ly + 56 << "'>the " << cores << " cores (times oversubscribed)</text>\n"
    << "</svg>\n";
  return s.str();
}

}  // namespace

int bench_strategies_main(const std::vector<std::string>& args) {
  g_command = "shardgnn bench strategies";
  const std::optional<StrategyOptions> parsed = parse_options(args);
  if (!parsed) return 0;
  const StrategyOptions& opt = *parsed;
  const Dataset ds = load_dataset(opt.dataset, Contents::trust);
  require_untyped(ds.schema, opt.dataset, "bench strategies");
  if (ds.num_classes == 0) throw InputError(opt.dataset + ": no labels, nothing to score");
  fs::create_directories(opt.work);
  const int cores = usable_cores();
  const bool personal = !opt.personalize.empty();
  std::vector<Row> rows;
  Row reference;
  run_row(opt, opt.dataset, reference);
  rows.push_back(std::move(reference));
  for (const int k : opt.parts)
    for (const std::string& method : opt.methods) {
      const std::string dir = (opt.work / (std::to_string(k) + "-" + method)).string();
      std::vector<std::string> argv = {shardgnn_exe(), "partition", opt.dataset, "--parts", std::to_string(k), "--out", dir, "--force"};
      const auto& extra = strategy_args().at(method);
      argv.insert(argv.end(), extra.begin(), extra.end());
      std::fprintf(stderr, "partitioning K=%d %s ...\n", k, method.c_str());
      const ProcessResult pr = run_process(argv);
      std::optional<PartitionMetrics> metrics;
      std::string failure;
      if (pr.status == 0) metrics = load_partition_info(dir).metrics;
      else failure = "partition failed (" + failure_line(pr) + ")";
      for (const std::string& sampling : opt.samplings) {
        Row row;
        row.parts = k;
        row.method = method;
        row.sampling = sampling;
        row.partition = metrics;
        if (metrics) run_row(opt, dir, row);
        else row.failure = failure;
        rows.push_back(std::move(row));
      }
    }
  print_table(rows, cores, personal);
  if (opt.json) write_json_file(*opt.json, rows_json(rows, cores, personal));
  if (opt.svg) write_text_file_atomic(*opt.svg, rows_svg(rows, cores));
  return std::any_of(rows.begin(), rows.end(), [](const Row& r) { return r.trials.empty(); }) ? 1 : 0;
}

}  // namespace shardgnn::cli
