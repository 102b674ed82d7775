// shardgnn: train graph neural networks on graphs partitioned across MPI ranks.
// This is only the dispatcher; every subcommand is a thin main over library code.
#include <pthread.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

#include "datasets/error.hpp"
#include "tools/cli.hpp"
#include "tools/mpi_program.hpp"
#include "trainer/stop.hpp"

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
    "  bench strategies  which partitioning trains best: accuracy and epoch time per strategy\n"
    "  train           train a GNN (GraphSAGE, GCN, GAT) on a dataset or, under mpiexec, its shards\n"
    "  predict         write every node's embedding and prediction with a trained model\n"
    "  report          per-rank time, traffic and imbalance of a training run (its metrics file)\n"
    "  version         print the version\n"
    "\n"
    "Run 'shardgnn <command> --help' for a command's options.\n";

// Replaces this process with the MPI program `name` (so mpiexec and srun see it as their rank):
// from the installed libexec folder, else next to this binary (the build tree); never a program
// of another installation that shares the bin folder. Returns only when no candidate could be
// executed, with `tried` saying why for each.
void exec_program(const std::string& name, const std::vector<std::string>& args, std::string& tried) {
  namespace fs = std::filesystem;
  const fs::path exe_dir = fs::read_symlink("/proc/self/exe").parent_path();
  for (const fs::path& candidate : {exe_dir / SHARDGNN_LIBEXEC_FROM_BIN / name, exe_dir / name}) {
    std::vector<char*> argv{const_cast<char*>(candidate.c_str())};
    for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    execv(candidate.c_str(), argv.data());
    tried += (tried.empty() ? "" : "; ") + candidate.lexically_normal().string() + ": " + std::strerror(errno);
  }
}

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
  // Training and the benchmarks are programs of their own, so that no other command loads libtorch
  // or the lab. A program that cannot be started is a broken installation, the same on every rank,
  // and fails before MPI starts.
  // Under a launcher with several ranks, partitioning is an MPI job: every rank runs it here (MPI
  // starts only then), sharing the work and the writing.
  if (cmd == "partition" && cli::launcher_ranks() > 1 && !(!args.empty() && (args[0] == "report" || args[0] == "verify")))
    return cli::run_mpi_program(argc - 1, argv + 1, "partition", /*threads=*/false, [](const std::vector<std::string>& a, const comm::Communicator& world) {
      cli::require_launch_joined(world);  // else each task would write the same output alone
      return cli::partition_main(a, world);
    }, /*keep_heap=*/false);
  if (cmd == "train" || cmd == "bench" || cmd == "predict") {
    if (cmd == "bench" && !args.empty() && args[0] == "sampler") cli::g_command = "shardgnn bench sampler";
    if (cmd == "train") {
      // Training takes its stop signals in a thread of its own, which needs them blocked in every
      // other thread; a mask survives exec, so threads its libraries start as they load inherit it.
      const sigset_t set = stop_signal_set();
      pthread_sigmask(SIG_BLOCK, &set, nullptr);
    }
    // The benchmarks run this command (train, partition) as child processes: this build's.
    setenv("SHARDGNN_EXE", std::filesystem::read_symlink("/proc/self/exe").c_str(), 1);
    std::string tried;
    exec_program("shardgnn-" + cmd, args, tried);
    std::fprintf(stderr, "%s: error: cannot start its program (%s)%s\n", cli::g_command.c_str(), tried.c_str(),
                 cmd == "bench" ? "" : "; this build may lack libtorch (-DSHARDGNN_WITH_TORCH=ON)");
    return 1;
  }
  return cli::report_errors([&] {
    if (cmd == "data") return cli::data_main(args);
    if (cmd == "partition") return cli::partition_main(args, comm::Communicator::one_rank());
    if (cmd == "report") return cli::report_main(args);
    if (cmd == "version" || cmd == "--version") {
      std::cout << "shardgnn 0.1.0\n";
      return 0;
    }
    std::cerr << "shardgnn: error: unknown command '" << cmd << "' (see 'shardgnn --help')\n";
    return 2;
  });
}
