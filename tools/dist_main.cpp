// The distributed commands, `shardgnn bench sampler` and `shardgnn train`: a module the dispatcher
// loads with dlopen (see tools/CMakeLists.txt), so that only these commands load MPI. Linking
// MPICH (and through it UCX, hwloc, libnuma) costs every process ~2.4 MB resident and its start-up
// time before main runs, whether or not MPI is ever initialised; `shardgnn partition` on a small
// mesh measured 1.3-2.2x gpmetis's peak memory largely from that fixed baseline.
#include <dlfcn.h>

#include <cstdio>
#include <string>
#include <vector>

#include "comm/communicator.hpp"
#include "tools/cli.hpp"
#include "tools/module.hpp"

using namespace shardgnn;

namespace {

int bench_sampler(int argc, char** argv, const std::vector<std::string>& args) {
  // The benchmark times one batch at a time on the calling thread: no thread-safe MPI needed.
  comm::Environment env(argc, argv, /*threads=*/false);
  const auto world = comm::Communicator::world();
  return comm::run_guarded("shardgnn bench sampler", world, [&] {
    try {
      return cli::bench_sampler_main(args, world);
    } catch (const cli::UsageError& e) {
      throw comm::CollectiveError(e.what());
    }
  });
}

int train(int argc, char** argv, const std::vector<std::string>& args) {
  comm::Environment env(argc, argv);
  const auto world = comm::Communicator::world();
  // Training is a module of its own (libtorch costs ~160 MB of memory and a fifth of a second to
  // start), next to this one.
  // Every rank must agree before any collective: a node without libtorch must not leave the
  // others waiting in the trainer's first check. False (after every rank said why) unless `ok`
  // holds on every rank.
  auto agreed = [&](bool ok, const std::string& message_if_not) {
    try {
      world.check_all(ok, message_if_not);
      return true;
    } catch (const comm::CollectiveError& e) {
      std::fprintf(stderr, "shardgnn train: error: rank %d/%d: %s\n", world.rank(), world.size(), e.what());
      return false;
    }
  };
  std::string tried;
  void* module = cli::load_module("libshardgnn_train.so", tried);
  if (!agreed(module != nullptr, "cannot load the training module (" + tried + "); this build may lack libtorch (-DSHARDGNN_WITH_TORCH=ON)")) return 1;
  using Entry = int (*)(const std::vector<std::string>*, const comm::Communicator*, int);
  auto entry = reinterpret_cast<Entry>(dlsym(module, "shardgnn_train_entry"));
  if (!agreed(entry != nullptr, "the training module lacks its entry point shardgnn_train_entry")) return 1;
  // Never dlclose: libtorch registers exit-time handlers that must find their code.
  return entry(&args, &world, static_cast<int>(comm::wait_mode()));
}

}  // namespace

// `command` is "train" or "bench sampler"; `args` are the command's own arguments (after its
// name); argc/argv are the process's, for MPI_Init.
extern "C" int shardgnn_dist_entry(const char* command, int argc, char** argv, const std::vector<std::string>* args) {
  const std::string cmd = command;
  cli::g_command = "shardgnn " + cmd;
  if (cmd == "bench sampler") return bench_sampler(argc, argv, *args);
  if (cmd == "train") return train(argc, argv, *args);
  std::fprintf(stderr, "shardgnn: error: the distributed module has no command '%s'\n", command);
  return 2;
}
