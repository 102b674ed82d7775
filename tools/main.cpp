// shardgnn: train graph neural networks on graphs partitioned across MPI ranks.
// This is only the dispatcher; every subcommand is a thin main over library code.
#include <dlfcn.h>

#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

#include "datasets/error.hpp"
#include "tools/cli.hpp"
#include "tools/module.hpp"

namespace {

constexpr const char* kUsage =
    "usage: shardgnn <command> [<args>]\n"
    "\n"
    "commands:\n"
    "  data convert    convert a graph (npz, METIS, edge list, OGB) into a dataset folder\n"
    "  data generate   generate a synthetic dataset (R-MAT, stochastic block model)\n"
    "  data info       print a dataset's statistics\n"
    "  data validate   check a dataset folder completely\n"
    "  partition       cut a dataset into K shards (METIS, random, LDG, Fennel); report, verify\n"
    "  bench data      benchmark edge-list parsing and dataset loading\n"
    "  bench partition benchmark partitioning methods (time, memory, cut, balance, entropy)\n"
    "  bench sampler   benchmark the distributed sampler and feature fetch (under mpiexec)\n"
    "  bench train     benchmark data-parallel training (epoch time and split), beside DGL\n"
    "  bench balance   benchmark rebalancing on heterogeneous shards and ranks\n"
    "  train           train a GNN (GraphSAGE, GCN, GAT) on a dataset or, under mpiexec, its shards\n"
    "  report          per-rank time, traffic and imbalance of a training run (its metrics file)\n"
    "  version         print the version\n"
    "\n"
    "Run 'shardgnn <command> --help' for a command's options.\n";

}  // namespace


int main(int argc, char** argv) {
  using namespace shardgnn;
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty() || args[0] == "--help" || args[0] == "-h" || args[0] == "help") {
    std::cout << kUsage;
    return args.empty() ? 2 : 0;
  }
  const std::string cmd = args[0];
  args.erase(args.begin());
  cli::g_command = "shardgnn " + cmd;
  // The distributed commands live in a module loaded on demand (tools/dist_main.cpp), so that no
  // other command loads MPI. It initialises MPI itself; from there on every failure ends the job on
  // every rank, never a hang. A module that cannot be loaded is a broken installation, the same on
  // every rank, and fails before MPI starts, as a missing shared library would.
  const bool bench_sampler = cmd == "bench" && !args.empty() && args[0] == "sampler";
  if (bench_sampler || cmd == "train") {
    if (bench_sampler) cli::g_command = "shardgnn bench sampler";
    std::string tried;
    void* module = cli::load_module("libshardgnn_dist.so", tried);
    using Entry = int (*)(const char*, int, char**, const std::vector<std::string>*);
    auto entry = module ? reinterpret_cast<Entry>(dlsym(module, "shardgnn_dist_entry")) : nullptr;
    if (!entry) {
      std::fprintf(stderr, "%s: error: cannot load the distributed commands' module (%s)\n", cli::g_command.c_str(),
                   module ? "it lacks shardgnn_dist_entry" : tried.c_str());
      return 1;
    }
    if (bench_sampler) args.erase(args.begin());
    // Never dlclose: MPI and libtorch register exit-time handlers that must find their code.
    return entry(bench_sampler ? "bench sampler" : "train", argc, argv, &args);
  }
  try {
    if (cmd == "data") return cli::data_main(args);
    if (cmd == "bench") return cli::bench_main(args);
    if (cmd == "partition") return cli::partition_main(args);
    if (cmd == "report") return cli::report_main(args);
    if (cmd == "version" || cmd == "--version") {
      std::cout << "shardgnn 0.1.0\n";
      return 0;
    }
    std::cerr << "shardgnn: error: unknown command '" << cmd << "' (see 'shardgnn --help')\n";
    return 2;
  } catch (const cli::UsageError& e) {
    std::cerr << cli::g_command << ": error: " << e.what() << " (see '" << cli::g_command << " --help')\n";
    return 2;
  } catch (const InputError& e) {
    std::cerr << cli::g_command << ": error: " << e.what() << "\n";
    return 1;
  } catch (const std::bad_alloc&) {
    std::cerr << cli::g_command << ": error: out of memory\n";
    return 1;
  } catch (const std::exception& e) {
    std::cerr << cli::g_command << ": error: " << e.what() << "\n";
    return 1;
  }
}
