// shardgnn-bench: the `shardgnn bench ...` benchmarks, one program the dispatcher execs, so that
// the product's commands carry none of the lab. Each benchmark prints the machine line first.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>
#include <thread>

#include "bench/bench.hpp"
#include "datasets/error.hpp"
#include "tools/mpi_program.hpp"

namespace shardgnn::cli {

int bench_sampler_main(const std::vector<std::string>& args, const comm::Communicator& world);

std::string machine_description() {
  std::string model = "unknown CPU", flags;
  std::ifstream cpuinfo("/proc/cpuinfo");
  for (std::string line; std::getline(cpuinfo, line) && (model == "unknown CPU" || flags.empty());) {
    const auto colon = line.find(':');
    if (colon == std::string::npos || colon + 2 > line.size()) continue;
    if (line.rfind("model name", 0) == 0) model = line.substr(colon + 2);
    if (line.rfind("flags", 0) == 0) {
      flags = line.substr(colon + 1);  // keeps the space after the colon, so every flag has one before it
      flags += ' ';
    }
  }
  std::string units;
  for (const char* unit : {"avx2", "fma", "avx512f", "avx512bw", "avx512dq", "avx512vl", "avx512_bf16", "amx_tile", "amx_bf16"})
    if (flags.find(std::string(" ") + unit + " ") != std::string::npos) {
      if (!units.empty()) units += ' ';
      units += unit;
    }
  std::ostringstream out;
  out << "machine: " << model << ", " << std::thread::hardware_concurrency() << " cores, vector units " << (units.empty() ? "none of AVX2/AVX-512" : units);
  if (const char* core = std::getenv("OPENBLAS_CORETYPE")) out << "; OPENBLAS_CORETYPE=" << core << " (set in the environment)";
  return out.str();
}

std::string shardgnn_exe() {
  namespace fs = std::filesystem;
  if (const char* exe = std::getenv("SHARDGNN_EXE"); exe != nullptr && *exe != '\0') return exe;
  // Started directly from the build tree, where the dispatcher lies beside this program.
  const fs::path beside = fs::read_symlink("/proc/self/exe").parent_path() / "shardgnn";
  if (fs::exists(beside)) return beside.string();
  throw InputError("cannot find the shardgnn command: run benchmarks as 'shardgnn bench ...'");
}

namespace {

int bench_main(int argc, char** argv) {
  const std::vector<std::string> args(argv + 1, argv + argc);
  const std::string usage =
      "usage: shardgnn bench <data|partition|sampler|train|balance|strategies|scale> [<args>]\n"
      "  data        edge-list parsing and dataset loading\n"
      "  partition   partitioning methods x K: time, peak memory, cut, volume, halo, balance, label entropy\n"
      "  sampler     the distributed sampler and feature fetch (under mpiexec)\n"
      "  train       epoch time of data-parallel training on a generated graph, beside DGL\n"
      "  hetero      MLPerf's GNN protocol scaled: R-GAT on the hetero generator's graph to a target accuracy, beside DGL's R-GAT\n"
      "  balance     rebalancing on heterogeneous shards and ranks (4 ranks): without vs with\n"
      "  strategies  partitioning strategies x K x seed sampling, trained end to end: micro/macro-F1, epoch time, label entropy\n"
      "  scale       generate, partition and train an R-MAT graph: each stage's time, memory and disk\n";
  if (args.empty() || args[0] == "--help" || args[0] == "-h") {
    std::cout << usage;
    return args.empty() ? 2 : 0;
  }
  const std::vector<std::string> rest(args.begin() + 1, args.end());
  // The sampler's benchmark is an MPI program (under mpiexec, every rank runs it); the others
  // start no MPI and run `shardgnn` as child processes.
  if (args[0] == "sampler") return run_mpi_program(argc - 1, argv + 1, "bench sampler", /*threads=*/false, bench_sampler_main);
  using Main = int (*)(const std::vector<std::string>&);
  const std::map<std::string, Main> benchmarks = {{"data", bench_data_main},         {"partition", bench_partition_main},   {"partition-one", bench_partition_one_main},
                                                  {"train", bench_train_main},       {"hetero", bench_hetero_main},         {"balance", bench_balance_main},       {"strategies", bench_strategies_main},
                                                  {"scale", bench_scale_main}};
  const auto it = benchmarks.find(args[0]);
  if (it == benchmarks.end()) throw UsageError("unknown benchmark '" + args[0] + "'");
  g_command = "shardgnn bench " + args[0];
  const bool help = std::find_if(rest.begin(), rest.end(), [](const std::string& a) { return a == "--help" || a == "-h"; }) != rest.end();
  if (args[0] != "partition-one" && !help) std::printf("%s\n", machine_description().c_str());  // once, not per worker run
  return it->second(rest);
}

}  // namespace

}  // namespace shardgnn::cli

int main(int argc, char** argv) {
  using namespace shardgnn;
  cli::g_command = "shardgnn bench";
  return cli::report_errors([&] { return cli::bench_main(argc, argv); });
}
