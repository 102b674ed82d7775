// `mpiexec -n P shardgnn partition ...` (or srun): the dispatcher execs this program when an MPI
// launcher started it with more than one rank, so that a single process never loads MPI. The
// ranks share the partitioning and the writing through MpiCollective.
#include "tools/cli.hpp"
#include "tools/mpi_collective.hpp"
#include "tools/mpi_program.hpp"

int main(int argc, char** argv) {
  using namespace shardgnn;
  return cli::run_mpi_program(argc, argv, "partition", /*threads=*/false, [](const std::vector<std::string>& args, const comm::Communicator& world) {
    cli::require_launch_joined(world);  // else each task would write the same output alone
    return cli::partition_main(args, MpiCollective(world));
  }, /*keep_heap=*/false);
}
