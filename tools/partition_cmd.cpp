// `shardgnn partition <dataset-dir> ...`, `shardgnn partition report <dir>`,
// `shardgnn partition verify <dir>`
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <optional>

#include "datasets/error.hpp"
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
constexpr EnumName<bool> kStreamOrders[] = {{false, "natural"}, {true, "random"}};

std::string balance_text(const std::vector<BalanceKey>& keys) {
  std::string out;
  for (BalanceKey k : keys) {
    if (!out.empty()) out += ',';
    out += balance_name(k);
  }
  return out;
}
}  // namespace

void add_partition_options(po::options_description& o, PartitionConfig& c) {
  o.add_options()
      ("parts,k", bound(c.parts), "number of parts K (one per MPI rank)")
      ("method,m", bound(c.method, parse_method, method_name), "metis, metis-ml (multilevel: label-propagation coarsening, METIS on the coarsest graph), random, ldg or fennel")
      ("balance", bound(c.balance, parse_balance, balance_text),
       "what every part gets its share of, comma-separated: nodes, train, val, test, edges, labels (one constraint per class), "
       "cost (expected sampling cost of the training nodes, see --fanouts); by default nodes, and with ldg or fennel "
       "nodes,edges on a graph whose degrees are skewed (coefficient of variation above 1)")
      ("objective", bound(c.objective, parse_objective, objective_name),
       "METIS objective: cut or vol (communication volume)")
      ("edge-weights", bound(c.edge_weights, parse_edge_weighting, edge_weighting_name),
       "none, or entropy (feature similarity and degree, Deshmukh et al. 2023)")
      ("memory-limit", po::value<std::string>()->notifier([&c](const std::string& text) { c.memory_limit = parse_byte_size(text, "--memory-limit"); }),
       "metis: the memory METIS may take on the whole graph, e.g. 8G (default: what this process may use); a graph needing more goes the "
       "multilevel way (metis-ml)")
      ("imbalance", bound(c.imbalance), "allowed imbalance per constraint (0.03: max part <= 1.03 x mean)")
      ("seed", bound(c.seed), "random seed")
      ("coarse-nodes", bound(c.coarse_nodes), "metis-ml: coarsen until at most N nodes, then METIS (0: 4096 per part)")
      ("scratch", po::value<std::string>(&c.scratch_dir), "metis-ml: folder for the coarse graphs' spill files, unlinked as they are made (default: $TMPDIR or /tmp)")
      ("stream-order", bound(c.stream_shuffle, kStreamOrders, "--stream-order"),
       "LDG/Fennel node order: natural or random")
      ("fanouts", bound(c.cost_fanouts, parse_fanouts, fanouts_text), "cost model: the sampler's fanouts by hop from the seeds outward (-1 = all neighbours)")
      ("cost-remote-weight", bound(c.cost_remote_weight), "cost model: cost of one remote feature row relative to one sampled edge");
}

void check_partition_config(const PartitionConfig& c) {
  try {
    validate_cost_model(c.cost_fanouts, c.cost_remote_weight);
  } catch (const InputError& e) {
    throw UsageError(e.what());
  }
  if (c.parts < 1) throw UsageError("--parts must be at least 1, got " + std::to_string(c.parts));
  if (c.coarse_nodes < 0) throw UsageError("--coarse-nodes must be 0 (the default) or positive, got " + std::to_string(c.coarse_nodes));
}

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
    std::cout << pretty_json(info.json.at("metrics"));
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

int partition_main(const std::vector<std::string>& args, const PartitionCollective& comm) {
  if (!args.empty() && args[0] == "report") return report({args.begin() + 1, args.end()});
  if (!args.empty() && args[0] == "verify") return verify({args.begin() + 1, args.end()});
  g_command = "shardgnn partition";
  po::options_description o("options");
  o.add_options()("out,o", po::value<std::string>()->required(), "output folder (partition.json + part-<k>/)")("force", "replace an existing output folder that holds a shardgnn dataset or partitioned dataset")(
      "verify", "check the result against the dataset afterwards (serial verifier)");
  PartitionConfig cfg;
  add_partition_options(o, cfg);
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
  const std::string dataset_dir = vm["dataset"].as<std::string>(), out = vm["out"].as<std::string>();
  const bool force = vm.count("force") > 0;
  std::optional<Dataset> ds;
  comm.agree([&] {
    // Refused before the work, not after it.
    if (first) check_output_dir(out, force);
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
  result.assignment = make_partitioner(cfg.method)->partition(*ds, cfg, comm);
  result.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  const auto t1 = Clock::now();
  write_partitioned(*ds, dataset_dir, result, out, {.overwrite = force, .comm = &comm});
  const double t_write = std::chrono::duration<double>(Clock::now() - t1).count();
  bool ok = true;
  comm.agree([&] {
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
  return comm.all_true(ok) ? 0 : 1;
}

int partition_main(const std::vector<std::string>& args) { return partition_main(args, SerialCollective{}); }

}  // namespace shardgnn::cli
