// shardgnn: train graph neural networks on graphs partitioned across MPI ranks.
// This is only the dispatcher; every subcommand is a thin main over library code.
#include <dlfcn.h>

#include <cstdio>
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

#include "comm/communicator.hpp"
#include "datasets/error.hpp"
#include "tools/cli.hpp"

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

namespace fs = std::filesystem;

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
  // Distributed commands: MPI up first, and every failure ends the job on every rank, never a hang.
  if (cmd == "bench" && !args.empty() && args[0] == "sampler") {
    // The benchmark times one batch at a time on the calling thread: no thread-safe MPI needed.
    comm::Environment env(argc, argv, /*threads=*/false);
    int rc;
    {
      const auto world = comm::Communicator::world();
      rc = comm::run_guarded("shardgnn bench sampler", world, [&] {
        try {
          return cli::bench_sampler_main({args.begin() + 1, args.end()}, world);
        } catch (const cli::UsageError& e) {
          throw comm::CollectiveError(e.what());
        }
      });
    }
    return rc;
  }
  if (cmd == "train") {
    comm::Environment env(argc, argv);
    const auto world = comm::Communicator::world();
    // Training is a module loaded on demand (see tools/CMakeLists.txt): libtorch costs every
    // other command ~160 MB of memory and a fifth of a second to start.
    const fs::path exe_dir = fs::read_symlink("/proc/self/exe").parent_path();
    std::string tried;
    void* module = nullptr;
    for (const fs::path& candidate : {exe_dir / "libshardgnn_train.so", exe_dir / "../lib/shardgnn/libshardgnn_train.so"}) {
      module = dlopen(candidate.c_str(), RTLD_NOW | RTLD_LOCAL);
      if (module) break;
      tried += std::string(tried.empty() ? "" : "; ") + dlerror();
    }
    // Every rank must agree before any collective: a node without libtorch must not leave the
    // others waiting in the trainer's first check.
    try {
      world.check_all(module != nullptr, "cannot load the training module (" + tried + "); this build may lack libtorch (-DSHARDGNN_WITH_TORCH=ON)");
    } catch (const comm::CollectiveError& e) {
      std::fprintf(stderr, "shardgnn train: error: rank %d/%d: %s\n", world.rank(), world.size(), e.what());
      return 1;
    }
    using Entry = int (*)(const std::vector<std::string>*, const comm::Communicator*);
    auto entry = reinterpret_cast<Entry>(dlsym(module, "shardgnn_train_entry"));
    try {
      world.check_all(entry != nullptr, "the training module lacks its entry point shardgnn_train_entry");
    } catch (const comm::CollectiveError& e) {
      std::fprintf(stderr, "shardgnn train: error: rank %d/%d: %s\n", world.rank(), world.size(), e.what());
      return 1;
    }
    // Never dlclose: libtorch registers exit-time handlers that must find their code.
    return entry(&args, &world);
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
