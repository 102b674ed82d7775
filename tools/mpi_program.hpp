// How shardgnn's MPI jobs start (shardgnn-train, `bench sampler` in shardgnn-bench, and a
// `partition` of several ranks in the dispatcher itself): MPI start-up, then the command under
// run_guarded, so that every failure ends the job on every rank with a message, never a hang.
#pragma once

#include <string>
#include <vector>

#include "comm/communicator.hpp"
#include "tools/cli.hpp"

namespace shardgnn::cli {

using MpiCommand = int (*)(const std::vector<std::string>& args, const comm::Communicator& world);

// Refuses (on every rank) a launch whose tasks MPI did not join, srun without --mpi=pmi2 say:
// each task would run as a job of one rank.
inline void require_launch_joined(const comm::Communicator& world) {
  if (world.size() != launcher_ranks())
    throw comm::CollectiveError("started as one of " + std::to_string(launcher_ranks()) + " tasks, but MPI joined " + std::to_string(world.size()) +
                                " (under srun, pass --mpi=pmi2)");
}

// `command` names the command in messages ("train"); `threads` asks MPI for thread support (the
// prefetch thread communicates beside the training loop); `keep_heap` applies
// keep_freed_memory_in_heap (not for partitioning, which memory limits).
inline int run_mpi_program(int argc, char** argv, const std::string& command, bool threads, MpiCommand body, bool keep_heap = true) {
  g_command = "shardgnn " + command;
  const std::vector<std::string> args(argv + 1, argv + argc);
  comm::Environment env(argc, argv, threads, g_command);
  const auto world = comm::Communicator::world();
  if (keep_heap) keep_freed_memory_in_heap();
  const int status = comm::run_guarded(g_command, world, [&] {
    try {
      return body(args, world);
    } catch (const UsageError& e) {
      throw comm::CollectiveError(e.what());
    }
  });
  env.exit_status(status);  // should MPI_Finalize outlast its bound
  return status;
}

}  // namespace shardgnn::cli
