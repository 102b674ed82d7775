// `shardgnn partition <dataset-dir> ...`, `shardgnn partition report <dir>`,
// `shardgnn partition verify <dir>`
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <optional>

#include "datasets/error.hpp"
#include "datasets/step_log.hpp"
#include "datasets/feature_dtype.hpp"
#include "datasets/fileio.hpp"
#include "datasets/json_util.hpp"
#include "datasets/names.hpp"
#include "partition/cost.hpp"
#include "partition/partitioner.hpp"
#include "partition/report.hpp"
#include "partition/shards.hpp"
#include "tools/cli.hpp"

namespace fs = std::filesystem;

namespace shardgnn::cli {

namespace {

using Clock = std::chrono::steady_clock;

int report(const std::vector<std::string>& args) {
  g_command = "shardgnn partition report";
  po::options_description o("options");
  o.add_options()
      ("svg", po::value<std::string>(), "write the figure here (default: <dir>/report.svg)")
      ("json", "print the metrics as JSON instead of the table");
  po::variables_map vm;
  if (!parse(args, "shardgnn partition report <partitioned-dir> [--svg FILE] [--json]", o, {"dir"}, vm)) return 0;
  const PartitionInfo info = load_partition_info(vm["dir"].as<std::string>());
  if (vm.count("json")) {
    std::cout << pretty_json(info.metrics_as_written);
    return 0;
  }
  std::cout << render_report_table(info);
  const std::string svg = vm.count("svg") ? vm["svg"].as<std::string>() : (fs::path(info.dir) / "report.svg").string();
  write_text_file_atomic(svg, render_report_svg(info));
  std::cout << "\nfigure: " << svg << "\n";
  return 0;
}

int verify(const std::vector<std::string>& args) {
  g_command = "shardgnn partition verify";
  po::options_description o("options");
  o.add_options()("dataset", po::value<std::string>(), "the source dataset folder (default: the one recorded in partition.json)");
  po::variables_map vm;
  if (!parse(args, "shardgnn partition verify <partitioned-dir> [--dataset DIR]\n\n"
                   "Checks a partitioned dataset against its source: every edge exactly once, features, labels and\n"
                   "splits identical after relabelling, halos exact, checksums. Exit 0 when it holds.",
             o, {"dir"}, vm))
    return 0;
  const std::string dir = vm["dir"].as<std::string>();
  const std::string dataset = vm.count("dataset") ? vm["dataset"].as<std::string>() : load_partition_info(dir).dataset_dir;
  const ValidationResult r = verify_partition(dataset, dir);
  for (const auto& e : r.errors) std::fprintf(stderr, "%s: error: %s\n", g_command.c_str(), e.c_str());
  if (r.ok()) std::printf("%s: matches %s\n", dir.c_str(), dataset.c_str());
  return r.ok() ? 0 : 1;
}

}  // namespace

int partition_main(const std::vector<std::string>& args, const comm::Communicator& comm) {
  if (!args.empty() && args[0] == "report") return report({args.begin() + 1, args.end()});
  if (!args.empty() && args[0] == "verify") return verify({args.begin() + 1, args.end()});
  g_command = "shardgnn partition";
  po::options_description o("options");
  o.add_options()("out,o", po::value<std::string>()->required(), "output folder (partition.json + part-<k>/)")("force", "replace an existing output folder that holds a shardgnn dataset or partitioned dataset")(
      "verify", "check the result against the dataset afterwards (serial verifier)");
  std::optional<FeatureDtype> feature_dtype;  // default: the dataset's
  o.add_options()("feature-dtype", po::value<std::string>()->notifier([&feature_dtype](const std::string& v) {
    feature_dtype = parse_feature_dtype_option(v);
  }), "how the shards store features (default: as the dataset does): float16 or bfloat16 halve their bytes on disk, in the page cache and on the wire (training computes in float32)");
  PartitionConfig cfg;
  add_partition_options(o, cfg);
  add_collective_timeout_option(o);
  po::variables_map vm;
  const bool first = comm.rank() == 0;
  if (!parse(args,
             "[mpiexec -n P] shardgnn partition <dataset-dir> --parts K --method metis|metis-ml|random|ldg|fennel|labels --out <dir> [options]\n"
             "       shardgnn partition report <partitioned-dir>\n"
             "       shardgnn partition verify <partitioned-dir>\n\n"
             "Cuts a dataset into K shards, relabels nodes so part k owns a contiguous id range, and writes\n"
             "partition.json (book, parameters, quality metrics, checksums) and part-<k>/ with each shard's\n"
             "CSR, features, labels, splits and halo. Under mpiexec or srun the ranks share the work: metis-ml\n"
             "(and metis where it goes the multilevel way) coarsens and refines a node range per rank, and\n"
             "rank r writes parts r, r + P, ...; the dataset and the output folder must be on a filesystem\n"
             "every rank sees.",
             o, {"dataset"}, vm))
    return 0;
  check_partition_config(cfg);
  // The ranks wait on one another's uneven shares of the work, and on rank 0's serial steps
  // (METIS on the coarsest graph, the book): the long deadline throughout.
  const comm::LongWaits partitioning(comm::kLongWaitFactor);
  comm::set_position("partitioning");
  const std::string dataset_dir = vm["dataset"].as<std::string>(), out = vm["out"].as<std::string>();
  const bool force = vm.count("force") > 0;
  std::optional<Dataset> ds;
  agree(comm, [&] {
    // Refused before the work, not after it.
    if (first) check_output_dir(out, force);
    steps::begin("partition: dataset mapped and checked");
    ds = load_dataset(dataset_dir);
  });
  // A one-pass method balancing nodes alone can give one part most of a power law's edges.
  if (vm["balance"].defaulted() && (cfg.method == PartitionMethod::kLdg || cfg.method == PartitionMethod::kFennel)) {
    double cv = 0;
    if (degrees_skewed(ds->graph, &cv)) {
      cfg.balance.push_back(BalanceKey::kEdges);
      if (first)
        std::fprintf(stderr, "%s: skewed degrees (coefficient of variation %.1f): balancing nodes and edges (--balance nodes for nodes alone)\n",
                     method_name(cfg.method).c_str(), cv);
    }
  }
  PartitionResult result;
  result.config = cfg;
  const auto t0 = Clock::now();
  steps::begin("partition: " + method_name(cfg.method));
  result.assignment = make_partitioner(cfg.method)->partition(*ds, cfg, comm);
  result.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  const auto t1 = Clock::now();
  steps::begin("partition: shards written and measured");
  write_partitioned(*ds, dataset_dir, result, out, {.overwrite = force, .feature_dtype = feature_dtype.value_or(ds->feature_dtype), .comm = &comm});
  steps::end();
  const double t_write = std::chrono::duration<double>(Clock::now() - t1).count();
  bool ok = true;
  agree(comm, [&] {
    if (!first) return;
    const PartitionInfo info = load_partition_info(out);
    std::cout << render_report_table(info);
    std::printf("\ntime: partition %.2f s, write and measure %.2f s%s\n", result.seconds, t_write,
                comm.size() > 1 ? (" (" + std::to_string(comm.size()) + " ranks)").c_str() : "");
    if (vm.count("verify")) {
      const ValidationResult r = verify_partition(dataset_dir, out);
      for (const auto& e : r.errors) std::fprintf(stderr, "%s: error: %s\n", g_command.c_str(), e.c_str());
      ok = r.ok();
      if (ok) std::printf("verified: every edge once, features, labels, splits and halos match the dataset\n");
    }
    std::fflush(stdout);
  });
  return comm.all(ok) ? 0 : 1;
}

}  // namespace shardgnn::cli
