// Catch2 main for tests that run under mpiexec: every rank runs every test case in the same
// order (so collectives line up) and all ranks exit with the same status.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include "comm/communicator.hpp"

int main(int argc, char** argv) {
  shardgnn::comm::Environment env(argc, argv);
  int failed = 0;
  {
    auto world = shardgnn::comm::Communicator::world();
    Catch::Session session;
    if (int rc = session.applyCommandLine(argc, argv); rc != 0) return rc;
    failed = session.run();
    failed = world.allreduce<std::int32_t>(failed, shardgnn::comm::Op::kMax);
  }
  return failed;
}
