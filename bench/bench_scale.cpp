// `shardgnn bench scale`: the whole pipeline at one R-MAT scale, as a user runs it: generate (with
// random features and a split), partition, then one training epoch (one rank per part, or fewer
// ranks that each merge several parts). Each
// stage runs as its own process; the table gives its wall time, its peak resident memory, its
// peak anonymous memory (mapped shard and dataset files are page cache, not the process's own)
// and the bytes it left on disk. A stage that fails ends the run there, with its exit status.
// The training stage's epochs are split as the metrics file records them: waiting for batches,
// compute and the gradient all-reduce (means over the ranks). Last, the same pipeline projected
// onto P nodes like this one from the steps' rates (Projection says how).
#include <unistd.h>

#include <algorithm>
#include <boost/json.hpp>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include "datasets/json_util.hpp"
#include "bench/bench.hpp"
#include "tools/cli.hpp"
#include "bench/process.hpp"

namespace fs = std::filesystem;

namespace shardgnn::cli {

namespace {

struct ScaleOptions {
  int scale = 0, edge_factor = 0, parts = 0, feature_dim = 0, epochs = 0, partition_ranks = 1, train_ranks = 0;
  double train = 0;
  std::vector<double> project_edges;  // this graph's edges, then --project-edges
  std::vector<int> project_nodes;
  std::string method, balance, memory_limit, feature_dtype;
  fs::path work;
  std::optional<std::string> json;
};

std::optional<ScaleOptions> parse_options(const std::vector<std::string>& args) {
  po::options_description o("options");
  o.add_options()
      ("scale", po::value<int>()->default_value(20), "R-MAT scale: 2^scale nodes")
      ("edge-factor", po::value<int>()->default_value(16), "edges per node")
      ("parts", po::value<int>()->default_value(2), "parts")
      ("method", po::value<std::string>()->default_value("metis"), "partition method (see partition --help)")
      // On R-MAT, node balance alone lets a min-cut partition put every edge in one part.
      ("balance", po::value<std::string>()->default_value("nodes,edges"), "partition --balance keys")
      ("feature-dim", po::value<int>()->default_value(16), "random features per node")
      ("train", po::value<double>()->default_value(0.01), "training fraction (also the validation fraction)")
      ("epochs", po::value<int>()->default_value(1), "training epochs")
      ("memory-limit", po::value<std::string>(), "passed to data generate (e.g. 4G)")
      ("feature-dtype", po::value<std::string>()->default_value("float32"), "passed to data generate: float32, float16 or bfloat16 (the partition keeps it)")
      ("partition-ranks", po::value<int>()->default_value(1), "MPI ranks sharing the partition stage (mpiexec -n R; the multilevel path spreads its work)")
      ("train-ranks", po::value<int>(), "MPI ranks of the training stage (default: one per part; fewer merge several parts each)")
      ("workdir", po::value<std::string>()->default_value((fs::temp_directory_path() / "shardgnn-bench-scale").string()),
       "scratch folder (its outputs are replaced on every run)")
      ("project-edges", po::value<double>(), "also project the pipeline onto a graph of this many edges (beside the one it ran, 2^scale x edge factor; e.g. 1e10)")
      ("project-nodes", po::value<std::string>()->default_value("1,2,4,8,16,32"), "project it onto these counts of nodes like this one")
      ("json", po::value<std::string>(), "also write the results as JSON here");
  po::variables_map vm;
  if (!parse(args,
             "shardgnn bench scale [options]\n\n"
             "Generates an R-MAT graph, partitions it and trains one epoch, each stage its own process; prints each\n"
             "stage's time and memory, each step's (datasets/step_log.hpp), then the same pipeline projected onto\n"
             "--project-nodes nodes like this one from the steps' rates: every step grows with the edges; metis-ml's\n"
             "steps and the shard writer divide over the nodes, METIS on the coarsest graph (or a partition that\n"
             "ran in one process) runs whole on every rank; generation is one process; the network and shared\n"
             "storage are not modelled (a lower bound).",
             o, {}, vm))
    return std::nullopt;
  ScaleOptions s;
  s.scale = vm["scale"].as<int>();
  s.edge_factor = vm["edge-factor"].as<int>();
  s.parts = vm["parts"].as<int>();
  s.method = vm["method"].as<std::string>();
  s.balance = vm["balance"].as<std::string>();
  s.feature_dim = vm["feature-dim"].as<int>();
  s.train = vm["train"].as<double>();
  s.epochs = vm["epochs"].as<int>();
  s.partition_ranks = vm["partition-ranks"].as<int>();
  s.train_ranks = vm.count("train-ranks") ? vm["train-ranks"].as<int>() : s.parts;
  if (vm.count("memory-limit")) s.memory_limit = vm["memory-limit"].as<std::string>();
  s.feature_dtype = vm["feature-dtype"].as<std::string>();
  s.work = vm["workdir"].as<std::string>();
  if (vm.count("json")) s.json = vm["json"].as<std::string>();
  const double edges = std::ldexp(static_cast<double>(s.edge_factor), s.scale);
  s.project_edges = {edges};
  if (vm.count("project-edges")) {
    s.project_edges.push_back(vm["project-edges"].as<double>());
    if (!(std::isfinite(s.project_edges.back()) && s.project_edges.back() > 0)) throw UsageError("--project-edges must be a positive number of edges");
  }
  s.project_nodes = split_int_list(vm["project-nodes"].as<std::string>(), "--project-nodes", 1);
  if (s.parts < 1) throw UsageError("--parts must be at least 1");
  if (s.epochs < 1) throw UsageError("--epochs must be at least 1");
  if (s.partition_ranks < 1) throw UsageError("--partition-ranks must be at least 1");
  if (s.train_ranks < 1 || s.train_ranks > s.parts) throw UsageError("--train-ranks must be from 1 to --parts (" + std::to_string(s.parts) + ")");
  return s;
}

std::uintmax_t bytes_on_disk(const fs::path& p) {
  std::error_code ec;
  std::uintmax_t n = 0;
  if (fs::is_regular_file(p, ec)) return fs::file_size(p, ec);
  for (const auto& e : fs::recursive_directory_iterator(p, ec))
    if (e.is_regular_file(ec)) n += e.file_size(ec);
  return n;
}

struct Stage {
  std::string name;
  ProcessResult run;
  std::uintmax_t disk = 0;
};

// One epoch record of the metrics file: its wall time and the ranks' mean split.
struct EpochSplit {
  double epoch_s = 0, wait_s = 0, compute_s = 0, allreduce_s = 0;
};

std::vector<EpochSplit> epoch_splits(const fs::path& metrics) {
  std::vector<EpochSplit> out;
  std::ifstream in(metrics);
  for (std::string line; std::getline(in, line);) {
    const boost::json::value v = boost::json::parse(line);
    const auto* o = v.if_object();
    if (o == nullptr || !o->contains("epoch") || !o->contains("time_s")) continue;  // the result record
    const auto& t = o->at("time_s").as_object();
    out.push_back({o->at("epoch_s").to_number<double>(), t.at("sample_wait").to_number<double>(), t.at("compute").to_number<double>(),
                   t.at("allreduce").to_number<double>()});
  }
  return out;
}

// One step of a stage (datasets/step_log.hpp), over the ranks that logged it: rank 0's wall time,
// the bytes all of them read and wrote, the largest anonymous peak.
struct StepRow {
  std::string stage, step;
  double wall_s = 0, anon_peak_mib = 0;
  std::int64_t read_bytes = 0, write_bytes = 0, rchar = 0, wchar = 0;
  int ranks = 0;
};

// The step log files of a stage: `base` itself (one process), or base.rank0, base.rank1, ...
std::vector<StepRow> read_steps(const std::string& stage, const fs::path& base, int ranks) {
  std::vector<StepRow> rows;
  for (int r = 0; r < ranks; ++r) {
    const fs::path file = ranks == 1 ? base : fs::path(base.string() + ".rank" + std::to_string(r));
    std::ifstream in(file);
    std::size_t i = 0;
    for (std::string line; std::getline(in, line); ++i) {
      const auto o = boost::json::parse(line).as_object();
      if (i == rows.size()) rows.push_back({stage, std::string(o.at("step").as_string())});
      StepRow& row = rows[i];
      if (r == 0) row.wall_s = o.at("wall_s").to_number<double>();
      row.anon_peak_mib = std::max(row.anon_peak_mib, o.at("anon_peak_mib").to_number<double>());
      row.read_bytes += o.at("read_bytes").to_number<std::int64_t>();
      row.write_bytes += o.at("write_bytes").to_number<std::int64_t>();
      row.rchar += o.at("rchar").to_number<std::int64_t>();
      row.wchar += o.at("wchar").to_number<std::int64_t>();
      row.ranks += 1;
    }
  }
  return rows;
}

// The pipeline of this run on P nodes like this one, from its steps' measured rates. Every step's
// work grows with the edges. A step of the multilevel partitioner (metis-ml, which spreads its
// levels over the ranks) and the shard writer are divided over the ranks (as many a node as
// here), their memory too, which is a lower bound: a rank also keeps a few arrays over all nodes
// of a level. METIS on the coarsest graph runs whole on every rank, and that graph grows with the
// edges (R-MAT's coarsening stops once a level shrinks the graph by less than a tenth), so neither
// its time nor its memory divides; neither does a partition that ran in one process (METIS on the
// whole graph, the streaming methods). Generation is one process. The interconnect and the shared
// storage are taken to be as fast per node as this box's memory and disk: not modelled.
struct Projection {
  int nodes = 0;
  double generate_s = 0, partition_s = 0, train_s = 0, generate_gib = 0, partition_gib_per_node = 0;
  std::string largest;  // the partition step with the most memory per node
};

Projection project(const ScaleOptions& s, double edges, const std::vector<StepRow>& steps, double train_epoch_s, int nodes) {
  const double f = edges / std::ldexp(static_cast<double>(s.edge_factor), s.scale);
  Projection p;
  p.nodes = nodes;
  const bool multilevel = std::any_of(steps.begin(), steps.end(), [](const StepRow& r) { return r.step.starts_with("metis-ml:"); });
  for (const StepRow& r : steps) {
    if (r.stage == "generate") {
      p.generate_s += r.wall_s * f;
      p.generate_gib = std::max(p.generate_gib, r.anon_peak_mib * f / 1024);
      continue;
    }
    const bool whole = !multilevel || r.step.find("METIS on the coarsest graph") != std::string::npos;
    const double share = whole ? f : f / nodes;
    p.partition_s += r.wall_s * share;
    const double gib = r.anon_peak_mib * share / 1024 * s.partition_ranks;
    if (gib > p.partition_gib_per_node) p.partition_gib_per_node = gib, p.largest = r.step;
  }
  p.train_s = train_epoch_s * f / nodes;
  return p;
}

}  // namespace

int bench_scale_main(const std::vector<std::string>& args) {
  g_command = "shardgnn bench scale";
  const std::optional<ScaleOptions> opt = parse_options(args);
  if (!opt) return 0;
  const ScaleOptions& s = *opt;
  const std::string exe = shardgnn_exe();
  fs::create_directories(s.work);
  const fs::path data = s.work / ("rmat-s" + std::to_string(s.scale) + "-e" + std::to_string(s.edge_factor));
  const fs::path parts = data.string() + "-" + s.method + "-" + std::to_string(s.parts);
  const std::string frac = std::to_string(s.train);
  const fs::path metrics = s.work / "train-metrics.jsonl";
  fs::remove(metrics);
  std::vector<std::string> generate = {exe, "data", "generate", "rmat", "--scale", std::to_string(s.scale), "--edge-factor", std::to_string(s.edge_factor),
                                       "--symmetrize", "--drop-self-loops", "--drop-duplicates", "--feature-dim", std::to_string(s.feature_dim),
                                       "--train", frac, "--val", frac, "--feature-dtype", s.feature_dtype, "--out", data.string(), "--force"};
  if (!s.memory_limit.empty()) generate.insert(generate.end(), {"--memory-limit", s.memory_limit});
  std::vector<std::string> partition = {exe, "partition", data.string(), "--parts", std::to_string(s.parts), "--method", s.method, "--balance", s.balance,
                                        "--out", parts.string(), "--force"};
  if (s.partition_ranks > 1) partition.insert(partition.begin(), {"mpiexec", "-n", std::to_string(s.partition_ranks)});
  const std::vector<std::pair<std::string, std::vector<std::string>>> plan = {
      {"generate", generate},
      {"partition", partition},
      {"train", {"mpiexec", "-n", std::to_string(s.train_ranks), exe, "train", parts.string(), "--epochs", std::to_string(s.epochs), "--eval-sample", "1000",
                 "--no-test", "--threads", "1", "--quiet", "--metrics", metrics.string()}},
  };
  std::vector<Stage> stages;
  // Generation and partitioning log their steps (datasets/step_log.hpp) to a file per stage and rank.
  auto step_log = [&](const std::string& stage) { return s.work / ("steps-" + stage + ".jsonl"); };
  for (const char* stage : {"generate", "partition"})
    for (const auto& e : fs::directory_iterator(s.work))
      if (e.path().filename().string().starts_with(step_log(stage).filename().string())) fs::remove(e.path());
  for (const auto& [name, argv] : plan) {
    std::fprintf(stderr, "%s ...\n", name.c_str());
    if (name == "train") ::unsetenv("SHARDGNN_STEP_LOG");
    else ::setenv("SHARDGNN_STEP_LOG", step_log(name).c_str(), 1);
    Stage st{name, run_process(argv), 0};
    if (name == "generate") st.disk = bytes_on_disk(data);
    if (name == "partition") st.disk = bytes_on_disk(parts);
    stages.push_back(std::move(st));
    if (stages.back().run.status != 0) break;
  }
  std::printf("R-MAT scale %d, edge factor %d, %d features (%s), %s into %d parts balancing %s on %d rank%s, training on %d rank%s (1 thread each)\n",
              s.scale, s.edge_factor, s.feature_dim, s.feature_dtype.c_str(), s.method.c_str(), s.parts, s.balance.c_str(), s.partition_ranks, s.partition_ranks == 1 ? "" : "s",
              s.train_ranks, s.train_ranks == 1 ? "" : "s");
  std::printf("%-10s %8s %10s %12s %12s %s\n", "stage", "wall s", "peak MiB", "anon MiB", "disk MiB", "");
  boost::json::array rows;
  for (const Stage& st : stages) {
    const std::string note = st.run.status == 0 ? "" : "failed (exit " + std::to_string(st.run.status) + ")";
    std::printf("%-10s %8.1f %10.0f %12.0f %12.0f %s\n", st.name.c_str(), st.run.wall_s, st.run.peak_rss_mb, st.run.peak_anon_mb,
                static_cast<double>(st.disk) / (1 << 20), note.c_str());
    rows.push_back(boost::json::object{{"stage", st.name}, {"status", st.run.status}, {"wall_s", st.run.wall_s}, {"peak_rss_mb", st.run.peak_rss_mb},
                                       {"peak_anon_mb", st.run.peak_anon_mb}, {"disk_bytes", st.disk}});
  }
  std::printf("(peak MiB: the largest process of the stage, mapped files included; anon MiB: its largest anonymous memory, sampled every 100 ms;\n"
              " disk: the stage's output folder, kept in %s)\n",
              s.work.c_str());
  // The steps of generation and partitioning: where the time, the I/O and the memory go.
  std::vector<StepRow> steps = read_steps("generate", step_log("generate"), 1);
  for (StepRow& r : read_steps("partition", step_log("partition"), s.partition_ranks)) steps.push_back(std::move(r));
  boost::json::array step_rows;
  if (!steps.empty()) {
    std::printf("\n%-10s %-52s %8s %10s %10s %10s %10s %10s\n", "stage", "step", "wall s", "read MB", "written MB", "rchar MB", "wchar MB", "anon MiB");
    for (const StepRow& r : steps) {
      std::printf("%-10s %-52s %8.1f %10.0f %10.0f %10.0f %10.0f %10.0f\n", r.stage.c_str(), r.step.c_str(), r.wall_s, r.read_bytes / 1e6, r.write_bytes / 1e6,
                  r.rchar / 1e6, r.wchar / 1e6, r.anon_peak_mib);
      step_rows.push_back(boost::json::object{{"stage", r.stage}, {"step", r.step}, {"wall_s", r.wall_s}, {"read_bytes", r.read_bytes},
                                              {"write_bytes", r.write_bytes}, {"rchar", r.rchar}, {"wchar", r.wchar}, {"anon_peak_mib", r.anon_peak_mib},
                                              {"ranks", r.ranks}});
    }
    std::printf("(wall: rank 0's; read and written: what reached the storage layer, rchar and wchar: what passed through read and write calls,\n"
                " page cache included, summed over the ranks; anon: the largest rank's peak anonymous memory in the step, sampled every 20 ms)\n");
  }
  const std::vector<EpochSplit> epochs = stages.size() == plan.size() && stages.back().run.status == 0 ? epoch_splits(metrics) : std::vector<EpochSplit>{};
  boost::json::array epoch_rows;
  for (std::size_t e = 0; e < epochs.size(); ++e) {
    const EpochSplit& x = epochs[e];
    const double pct = x.epoch_s > 0 ? 100.0 / x.epoch_s : 0;
    std::printf("epoch %zu: %.2f s; per rank, waiting for batches %.2f s (%.0f%%), compute %.2f s (%.0f%%), all-reduce %.2f s (%.0f%%)\n", e + 1, x.epoch_s,
                x.wait_s, x.wait_s * pct, x.compute_s, x.compute_s * pct, x.allreduce_s, x.allreduce_s * pct);
    epoch_rows.push_back(boost::json::object{{"epoch_s", x.epoch_s}, {"wait_s", x.wait_s}, {"compute_s", x.compute_s}, {"allreduce_s", x.allreduce_s}});
  }
  boost::json::array projections;
  if (!steps.empty() && stages.size() >= 2 && stages[1].run.status == 0) {
    const double node_gib = static_cast<double>(::sysconf(_SC_PHYS_PAGES)) * static_cast<double>(::sysconf(_SC_PAGESIZE)) / (1 << 30);
    const double epoch_s = epochs.empty() ? 0 : epochs.front().epoch_s;
    for (std::size_t i = 0; i < s.project_edges.size(); ++i) {
      const double edges = s.project_edges[i];
      std::printf("\nprojected: %.3g edges (%s) on nodes like this one (%.1f GiB), %d partition rank%s a node, from this run's step rates (bench scale\n"
                  " --help, docs/benchmarks.md): metis-ml's steps and the shard writer divided over the nodes, METIS on the coarsest graph (or a\n"
                  " partition in one process) whole on every rank, generation one process; the interconnect and shared storage as fast per node\n"
                  " as this box's memory and disk (not modelled)\n",
                  edges, i == 0 ? "this graph" : "--project-edges", node_gib, s.partition_ranks, s.partition_ranks == 1 ? "" : "s");
      std::printf("%6s %11s %12s %13s %14s %13s %14s  %s\n", "nodes", "generate s", "partition s", "gen+part min", "train epoch s", "generate GiB", "part GiB/node",
                  "largest partition step");
      boost::json::array rows_p;
      for (const int n : s.project_nodes) {
        const Projection p = project(s, edges, steps, epoch_s, n);
        const bool fits = p.partition_gib_per_node <= node_gib && p.generate_gib <= node_gib;
        std::printf("%6d %11.0f %12.0f %13.1f %14s %13.1f %14.1f  %s%s\n", n, p.generate_s, p.partition_s, (p.generate_s + p.partition_s) / 60,
                    epoch_s > 0 ? std::to_string(std::lround(p.train_s)).c_str() : "-", p.generate_gib, p.partition_gib_per_node, p.largest.c_str(),
                    fits ? "" : " (exceeds a node's memory)");
        rows_p.push_back(boost::json::object{{"nodes", n}, {"generate_s", p.generate_s}, {"partition_s", p.partition_s}, {"train_epoch_s", p.train_s},
                                             {"generate_gib", p.generate_gib}, {"partition_gib_per_node", p.partition_gib_per_node},
                                             {"largest_step", p.largest}, {"fits", fits}});
      }
      projections.push_back(boost::json::object{{"edges", edges}, {"rows", rows_p}});
    }
  }
  if (s.json)
    write_json_file(*s.json, boost::json::object{{"scale", s.scale}, {"edge_factor", s.edge_factor}, {"parts", s.parts}, {"method", s.method}, {"balance", s.balance}, {"partition_ranks", s.partition_ranks}, {"train_ranks", s.train_ranks}, {"feature_dtype", s.feature_dtype}, {"stages", rows}, {"steps", step_rows}, {"epochs", epoch_rows},
                                                  {"projections", projections}});
  return stages.size() == plan.size() && stages.back().run.status == 0 ? 0 : 1;
}

}  // namespace shardgnn::cli
