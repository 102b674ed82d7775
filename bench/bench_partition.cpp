// `shardgnn bench partition`: every method x K on one dataset, each run in its own process so its
// time and peak memory are its own, side by side with Debian's gpmetis on the same graph, K,
// seed and imbalance. One table (and JSON) of time, peak memory, cut, volume, halo factor,
// balance and label entropy.
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <boost/json.hpp>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <future>
#include <iostream>
#include <optional>
#include <sstream>

#include "datasets/error.hpp"
#include "datasets/fileio.hpp"
#include "datasets/json_util.hpp"
#include "datasets/writers.hpp"
#include "partition/parallel.hpp"
#include "partition/partitioner.hpp"
#include "partition/shards.hpp"
#include "bench/bench.hpp"
#include "tools/cli.hpp"
#include "bench/process.hpp"

namespace fs = std::filesystem;

namespace shardgnn::cli {

namespace {

using Clock = std::chrono::steady_clock;

double peak_rss_mb_self() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return static_cast<double>(ru.ru_maxrss) / 1024.0;  // Linux reports KiB
}

}  // namespace

// Hidden worker: one partitioning run, its results as one JSON object in the --result file.
int bench_partition_one_main(const std::vector<std::string>& args) {
  g_command = "shardgnn bench partition-one";
  po::options_description o("options");
  PartitionConfig cfg;
  add_partition_options(o, cfg);
  o.add_options()("result", po::value<std::string>()->required(), "write the results here (JSON)")
      ("write-to", po::value<std::string>(), "also time writing the shards here, against a plain write of the same bytes")
      ("threads", po::value<unsigned>()->default_value(0), "threads for the per-shard work after partitioning (0: one per core)");
  po::variables_map vm;
  if (!parse(args, "shardgnn bench partition-one <dataset> [partition options]  (used by bench partition)", o, {"dataset"}, vm)) return 0;
  check_partition_config(cfg);
  part_threads_limit() = vm["threads"].as<unsigned>();
  const auto t_load = Clock::now();
  const Dataset ds = load_dataset(vm["dataset"].as<std::string>());
  require_untyped(ds.schema, vm["dataset"].as<std::string>(), "bench partition");
  const double load_s = std::chrono::duration<double>(Clock::now() - t_load).count();
  const double cpu0 = process_cpu_seconds(), metis0 = metis_call_cpu_seconds();
  const auto t0 = Clock::now();
  const std::vector<PartId> parts = make_partitioner(cfg.method)->partition(ds, cfg);
  const double seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  const double cpu_s = process_cpu_seconds() - cpu0, metis_call_s = metis_call_cpu_seconds() - metis0;
  const double peak_mb = peak_rss_mb_self();
  const PartitionMetrics m = compute_metrics(ds, parts, cfg);
  boost::json::object result{{"load_s", load_s}, {"partition_s", seconds}, {"partition_cpu_s", cpu_s}, {"metis_call_cpu_s", metis_call_s}, {"partition_peak_mb", peak_mb}, {"metrics", metrics_to_json(m)}};
  if (vm.count("write-to")) {
    // Shard writing against the disk's own pace: the same number of bytes written and fsynced
    // as one plain file, in the same place. Dirty pages are flushed before each timing, so no
    // write pays for the writeback of the one before it.
    const fs::path dir = vm["write-to"].as<std::string>();
    PartitionResult pr;
    pr.config = cfg;
    pr.assignment = parts;
    pr.seconds = seconds;
    std::vector<char> block(8 << 20, 1);
    auto raw_write = [&](std::uint64_t bytes) {
      ::sync();
      const auto tr = Clock::now();
      write_file_atomic((dir / "raw.bin").string(), [&](std::FILE* f) {
        for (std::uint64_t left = bytes; left > 0;) {
          const std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(left, block.size()));
          if (std::fwrite(block.data(), 1, n, f) != n) throw InputError((dir / "raw.bin").string(), "", "write failed");
          left -= n;
        }
      });
      const double s = std::chrono::duration<double>(Clock::now() - tr).count();
      fs::remove(dir / "raw.bin");
      return s;
    };
    auto shards_write = [&] {
      ::sync();
      const auto tw = Clock::now();
      write_partitioned(ds, vm["dataset"].as<std::string>(), pr, (dir / "shards").string(), {.overwrite = true});
      return std::chrono::duration<double>(Clock::now() - tw).count();
    };
    // Shards, raw, shards, raw: the faster of each pair (the first shard write also sizes the
    // raw ones).
    const double shards_first = shards_write();
    std::uint64_t bytes = 0;
    for (const auto& e : fs::recursive_directory_iterator(dir / "shards"))
      if (e.is_regular_file()) bytes += e.file_size();
    fs::remove_all(dir / "shards");
    const double raw_first = raw_write(bytes);
    const double write_s = std::min(shards_first, shards_write());
    fs::remove_all(dir / "shards");
    const double raw_s = std::min(raw_first, raw_write(bytes));
    result["write"] = {{"bytes", bytes}, {"shards_s", write_s}, {"raw_s", raw_s}};
  }
  write_json_file(vm["result"].as<std::string>(), result);
  return 0;
}

namespace {

struct PartitionBenchOptions {
  std::string dataset;  // absolute, as the workers get it
  std::vector<std::string> methods, ks;
  std::string balance, objective, edge_weights;
  double imbalance = 0;
  std::uint64_t seed = 0;
  std::string gpmetis;  // auto, on or off
  fs::path work;
  bool time_write = true;
  std::optional<std::string> json;
};

// The options, checked before any work starts, or nothing when --help was given.
std::optional<PartitionBenchOptions> parse_options(const std::vector<std::string>& args) {
  po::options_description o("options");
  o.add_options()
      ("parts", po::value<std::string>()->default_value("2,4,8"), "comma-separated K values")
      ("methods", po::value<std::string>()->default_value("metis,random,ldg,fennel"), "comma-separated methods")
      ("balance", po::value<std::string>()->default_value("nodes"), "balance keys (as for partition)")
      ("objective", po::value<std::string>()->default_value("cut"), "cut or vol")
      ("edge-weights", po::value<std::string>()->default_value("none"), "none or entropy")
      ("imbalance", po::value<double>()->default_value(0.03), "allowed imbalance")
      ("seed", po::value<std::uint64_t>()->default_value(1), "seed (METIS seed 0 means 'random' in gpmetis, so the default is 1)")
      ("gpmetis", po::value<std::string>()->default_value("auto"), "run Debian's gpmetis at the same time as our METIS path, a core each (memory for both): auto, on, off")
      ("workdir", po::value<std::string>()->default_value((fs::temp_directory_path() / "shardgnn-bench-partition").string()), "scratch folder")
      ("json", po::value<std::string>(), "also write all rows as JSON to this file")
      ("no-write", "skip timing the shard writer (done once, at the largest K, for the first method that does not run beside gpmetis)");
  po::variables_map vm;
  if (!parse(args, "shardgnn bench partition <dataset-dir> [--parts 2,4,8] [--methods metis,random,ldg,fennel] [options]", o, {"dataset"}, vm)) return std::nullopt;
  PartitionBenchOptions opt;
  opt.dataset = fs::absolute(vm["dataset"].as<std::string>()).string();
  opt.methods = split_list(vm["methods"].as<std::string>(), "--methods");
  for (const int k : split_int_list(vm["parts"].as<std::string>(), "--parts", 1)) opt.ks.push_back(std::to_string(k));
  for (const auto& m : opt.methods) try { parse_method(m); } catch (const InputError& e) { throw UsageError(e.what()); }
  opt.balance = vm["balance"].as<std::string>();
  opt.objective = vm["objective"].as<std::string>();
  opt.edge_weights = vm["edge-weights"].as<std::string>();
  opt.imbalance = vm["imbalance"].as<double>();
  opt.seed = vm["seed"].as<std::uint64_t>();
  opt.gpmetis = vm["gpmetis"].as<std::string>();
  opt.work = vm["workdir"].as<std::string>();
  opt.time_write = !vm.count("no-write");
  if (vm.count("json")) opt.json = vm["json"].as<std::string>();
  return opt;
}

// Whether gpmetis runs beside our METIS, on which graph file, and the note when it does not.
struct GpmetisPlan {
  bool run = false;
  std::string graph;
  std::string note;
};

// gpmetis runs only where it is comparable: a METIS run among the methods, and neither balance
// constraints nor edge weights that it cannot take. Writes its graph file into the workdir.
GpmetisPlan plan_gpmetis(const PartitionBenchOptions& opt, const Dataset& probe) {
  GpmetisPlan plan;
  plan.graph = (opt.work / "graph.metis").string();
  const std::string& gp = opt.gpmetis;
  const bool has_metis = std::find(opt.methods.begin(), opt.methods.end(), "metis") != opt.methods.end();
  const bool gp_found = system("command -v gpmetis >/dev/null 2>&1") == 0;
  if (gp == "on" && !gp_found) throw InputError("--gpmetis on: gpmetis not found (apt-get install metis)");
  if ((gp == "on" || (gp == "auto" && gp_found)) && has_metis) {
    if (opt.balance != "nodes" || opt.edge_weights != "none") {
      plan.note = "gpmetis skipped: it takes neither our balance constraints nor entropy weights";
    } else {
      fs::create_directories(opt.work);
      try {
        write_metis_graph(probe, plan.graph);
        plan.run = true;
      } catch (const InputError& e) {
        plan.note = std::string("gpmetis skipped: ") + e.what();
      }
    }
  } else if (has_metis && gp != "off") {
    plan.note = "gpmetis not found: install Debian's metis package for the side-by-side comparison";
  }
  return plan;
}

// The method whose run at the largest K also times the shard writer: the first one other than a
// metis paired with gpmetis, whose core the writer would share. Empty when none is (noted).
std::string shard_writer_method(const PartitionBenchOptions& opt, GpmetisPlan& plan) {
  if (!opt.time_write) return "";
  for (const auto& m : opt.methods)
    if (!(plan.run && m == "metis")) return m;
  plan.note += std::string(plan.note.empty() ? "" : "; ") + "shard writer not timed: add a method besides metis (it runs beside gpmetis)";
  return "";
}

struct Row {
  std::string method;
  std::string k;
  double seconds = 0, cpu = 0, metis_call = 0, wall = 0, peak = 0, partition_peak = 0;
  boost::json::object metrics;
  std::string note;
};

// The shard writer's timing as the worker reported it, and the run it came from.
struct WriteTiming {
  boost::json::object report;
  std::string label;
};

// One method at one K in a worker process, with gpmetis at the same time when it is paired.
struct CaseRun {
  Row row;
  std::optional<ProcessResult> gpmetis;
  std::optional<WriteTiming> write;
};

std::vector<std::string> worker_argv(const PartitionBenchOptions& opt, const std::string& exe, const std::string& k, const std::string& m) {
  return {exe, "bench", "partition-one", opt.dataset, "--result", (opt.work / "partition-one.json").string(), "--parts", k, "--method", m,
          "--balance", opt.balance, "--objective", opt.objective,
          "--edge-weights", opt.edge_weights,
          "--imbalance", std::to_string(opt.imbalance), "--seed", std::to_string(opt.seed)};
}

std::vector<std::string> gpmetis_argv(const PartitionBenchOptions& opt, const std::string& graph, const std::string& k) {
  const std::string obj = opt.objective == "vol" ? "vol" : "cut";
  return {"gpmetis", "-seed=" + std::to_string(opt.seed), "-ufactor=" + std::to_string(static_cast<long>(std::lround(opt.imbalance * 1000))), "-objtype=" + obj,
          graph, k};
}

// Our METIS run and gpmetis's run at the same time, a core each (both are single-threaded), so
// a busy spell on this shared machine slows both alike.
CaseRun run_case(const PartitionBenchOptions& opt, const std::string& exe, const GpmetisPlan& plan, const std::string& k, const std::string& m,
                 bool time_write) {
  std::vector<std::string> argv = worker_argv(opt, exe, k, m);
  const fs::path write_dir = opt.work / "write";
  if (time_write) {
    fs::create_directories(write_dir);
    argv.insert(argv.end(), {"--write-to", write_dir.string()});
  }
  std::future<ProcessResult> gp_run;
  if (plan.run && m == "metis") {
    argv.insert(argv.end(), {"--threads", "1"});  // gpmetis has the other core
    std::fprintf(stderr, "  metis K=%s and gpmetis K=%s, side by side ...\n", k.c_str(), k.c_str());
    gp_run = std::async(std::launch::async, [&, gp_args = gpmetis_argv(opt, plan.graph, k)] { return run_process(gp_args, opt.work.string()); });
  } else {
    std::fprintf(stderr, "  %s K=%s ...\n", m.c_str(), k.c_str());
  }
  fs::remove(opt.work / "partition-one.json");  // a failed run leaves none to be read
  const ProcessResult pr = run_process(argv);
  CaseRun c;
  if (gp_run.valid()) c.gpmetis = gp_run.get();  // both done before the next run starts
  Row& row = c.row;
  row.method = m;
  row.k = k;
  row.wall = pr.wall_s;
  row.peak = pr.peak_rss_mb;
  if (pr.status != 0) {
    row.note = "failed (exit " + std::to_string(pr.status) + ")";
  } else {
    auto v = read_json_file((opt.work / "partition-one.json").string()).as_object();
    row.seconds = v.at("partition_s").to_number<double>();
    row.cpu = v.at("partition_cpu_s").to_number<double>();
    row.metis_call = v.at("metis_call_cpu_s").to_number<double>();
    row.partition_peak = v.at("partition_peak_mb").to_number<double>();
    row.metrics = v.at("metrics").as_object();
    if (auto* w = v.if_contains("write")) c.write = WriteTiming{w->as_object(), m + " K=" + k};
  }
  if (time_write) fs::remove_all(write_dir);
  return c;
}

// gpmetis's row from what it prints: "Partitioning: 1.234 sec" and "Edgecut: N, communication
// volume: M."
Row gpmetis_row(const std::string& k, const ProcessResult& pr) {
  Row row;
  row.method = "gpmetis";
  row.k = k;
  row.wall = pr.wall_s;
  row.peak = pr.peak_rss_mb;
  auto number_after = [&](const std::string& label) -> std::string {
    const auto at = pr.out.find(label);
    if (at == std::string::npos) return "";
    auto b = pr.out.find_first_of("0123456789", at + label.size());
    auto e = pr.out.find_first_not_of("0123456789.", b);
    return b == std::string::npos ? "" : pr.out.substr(b, e - b);
  };
  const std::string part_s = number_after("Partitioning:");
  if (pr.status == 0 && !part_s.empty()) row.seconds = row.cpu = row.metis_call = std::stod(part_s);  // GKlib's timer: CPU time, METIS's call alone
  else row.note = "failed (exit " + std::to_string(pr.status) + ")";
  row.partition_peak = row.peak;
  boost::json::object met;
  if (const std::string cut = number_after("Edgecut:"), vol = number_after("communication volume:"); !cut.empty() && !vol.empty()) {
    met["edge_cut"] = std::stoll(cut);
    met["comm_volume"] = std::stoll(vol);
  }
  row.metrics = met;
  return row;
}

struct CaseResults {
  std::vector<Row> rows;  // per K: each method in order, then gpmetis
  WriteTiming write;
};

// Every method at every K, each in a process of its own. The shard writer is timed in a run of
// its own: `write_method` at the largest K.
CaseResults run_cases(const PartitionBenchOptions& opt, const GpmetisPlan& plan, const std::string& write_method) {
  const std::string exe = shardgnn_exe();
  fs::create_directories(opt.work);  // where each worker leaves its --result file
  CaseResults res;
  for (const auto& k : opt.ks) {
    ProcessResult gp_result;
    for (const auto& m : opt.methods) {
      CaseRun c = run_case(opt, exe, plan, k, m, k == opt.ks.back() && m == write_method);
      if (c.gpmetis) gp_result = std::move(*c.gpmetis);
      if (c.write) res.write = std::move(*c.write);
      res.rows.push_back(std::move(c.row));
    }
    if (plan.run) res.rows.push_back(gpmetis_row(k, gp_result));
  }
  return res;
}

// The number at `path` in a JSON object; NaN where it is missing.
double number_at(const boost::json::object& o, std::initializer_list<const char*> path) {
  const boost::json::value* v = nullptr;
  const boost::json::object* cur = &o;
  for (const char* key : path) {
    v = cur->if_contains(key);
    if (!v) return std::nan("");
    if (v->is_object()) cur = &v->get_object();
  }
  return v->is_number() ? v->to_number<double>() : std::nan("");
}

void print_table(const std::vector<Row>& rows) {
  std::printf("%-8s %3s %9s %9s %9s %12s %12s %7s %7s %7s %7s %8s %8s\n", "method", "K", "part s", "proc s", "peak MB", "edge cut", "comm vol",
              "halo x", "nodes", "train", "edges", "H(lab)", "max KL");
  for (const Row& r : rows) {
    const auto& m = r.metrics;
    std::printf("%-8s %3s %9.3f %9.3f %9.1f %12.0f %12.0f %7.3f %7.3f %7.3f %7.3f %8.3f %8.4f %s\n", r.method.c_str(), r.k.c_str(), r.seconds, r.wall,
                r.method == "gpmetis" ? r.peak : r.partition_peak, number_at(m, {"edge_cut"}), number_at(m, {"comm_volume"}), number_at(m, {"halo_factor"}),
                number_at(m, {"imbalance", "nodes", "max_over_mean"}), number_at(m, {"imbalance", "train", "max_over_mean"}),
                number_at(m, {"imbalance", "edges", "max_over_mean"}), number_at(m, {"mean_label_entropy_bits"}), number_at(m, {"max_label_kl_bits"}),
                r.note.c_str());
  }
  std::printf("\npart s: the partitioner alone, wall time (gpmetis: its own 'Partitioning' time, which GKlib takes in CPU time); proc s: the whole process,\n"
              "load to exit; peak MB: resident memory at the end of partitioning (gpmetis: the whole process). Balance columns are max/mean.\n");
}

// Ours vs gpmetis, per K.
void print_gpmetis_comparison(const std::vector<std::string>& ks, const std::vector<Row>& rows) {
  for (const auto& k : ks) {
    const Row *ours = nullptr, *theirs = nullptr;
    for (const Row& r : rows)
      if (r.k == k) {
        if (r.method == "metis") ours = &r;
        if (r.method == "gpmetis") theirs = &r;
      }
    if (ours && theirs && theirs->seconds > 0)
      std::printf("K=%s metis vs gpmetis (run side by side): partition CPU time %.2fx (wall %.2fx; the METIS call alone %.2fx), process time %.2fx, "
                  "peak memory %.2fx, edge cut %.3fx\n",
                  k.c_str(), ours->cpu / theirs->cpu, ours->seconds / theirs->seconds, ours->metis_call / theirs->metis_call, ours->wall / theirs->wall,
                  ours->partition_peak / theirs->peak, number_at(ours->metrics, {"edge_cut"}) / number_at(theirs->metrics, {"edge_cut"}));
  }
}

void print_write_timing(const WriteTiming& write) {
  if (write.report.empty()) return;
  const double mb = write.report.at("bytes").to_number<double>() / 1e6;
  const double ts = write.report.at("shards_s").to_number<double>(), tr = write.report.at("raw_s").to_number<double>();
  std::printf("shard writing, metrics counted in the same pass (%s): %.1f MB in %.2f s = %.0f MB/s; a plain write+fsync of the same bytes: %.0f MB/s; ratio %.2f\n",
              write.label.c_str(), mb, ts, mb / ts, mb / tr, tr / ts);
}

boost::json::array rows_json(const std::vector<Row>& rows) {
  boost::json::array out;
  for (const Row& r : rows)
    out.push_back(boost::json::object{{"method", r.method}, {"parts", std::stoll(r.k)}, {"partition_s", r.seconds}, {"partition_cpu_s", r.cpu}, {"metis_call_cpu_s", r.metis_call}, {"process_s", r.wall},
                                      {"process_peak_mb", r.peak}, {"partition_peak_mb", r.partition_peak}, {"metrics", r.metrics}, {"note", r.note}});
  return out;
}

}  // namespace

int bench_partition_main(const std::vector<std::string>& args) {
  g_command = "shardgnn bench partition";
  const std::optional<PartitionBenchOptions> opt = parse_options(args);
  if (!opt) return 0;
  const Dataset probe = load_dataset(opt->dataset);  // fail early, and describe the graph
  require_untyped(probe.schema, opt->dataset, "bench partition");
  std::fprintf(stderr, "dataset %s: %lld nodes, %lld directed edges\n", probe.name.c_str(), static_cast<long long>(probe.num_nodes()),
               static_cast<long long>(probe.graph.num_edges()));
  GpmetisPlan plan = plan_gpmetis(*opt, probe);
  const std::string write_method = shard_writer_method(*opt, plan);
  const CaseResults res = run_cases(*opt, plan, write_method);
  if (plan.run) fs::remove_all(opt->work);
  print_table(res.rows);
  print_gpmetis_comparison(opt->ks, res.rows);
  if (!plan.note.empty()) std::printf("%s\n", plan.note.c_str());
  print_write_timing(res.write);
  if (opt->json) write_json_file(*opt->json, boost::json::object{{"dataset", opt->dataset}, {"rows", rows_json(res.rows)}, {"write", res.write.report}});
  return 0;
}

}  // namespace shardgnn::cli
