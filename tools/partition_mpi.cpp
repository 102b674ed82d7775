// `mpiexec -n P shardgnn partition ...` (or srun): the dispatcher execs this program when an MPI
// launcher started it with more than one rank, so that a single process never loads MPI. The
// ranks share the partitioning and the writing through MpiCollective.
#include "tools/cli.hpp"
#include "tools/mpi_collective.hpp"
#include "tools/mpi_program.hpp"

int main(int argc, char** argv) {
  using namespace shardgnn;
  return cli::run_mpi_program(argc, argv, "partition", /*threads=*/false, [](const std::vector<std::string>& args, const comm::Communicator& world) {
    // Each task of a launch that MPI did not join (srun without --mpi=pmi2, say) would write the
    // same output alone.
    if (world.size() != cli::launcher_ranks())
      throw comm::CollectiveError("started as one of " + std::to_string(cli::launcher_ranks()) + " tasks, but MPI joined " + std::to_string(world.size()) +
                                  " (under srun, pass --mpi=pmi2)");
    return cli::partition_main(args, MpiCollective(world));
  }, /*keep_heap=*/false);
}
