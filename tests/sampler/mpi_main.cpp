// The main of the tests that run under mpiexec: every rank runs every test case in the same
// order (so collectives line up) and all ranks exit with the same status.
#include <cstdint>

#include "catch_session.hpp"
#include "comm/communicator.hpp"

int main(int argc, char** argv) {
  shardgnn::comm::Environment env(argc, argv);
  int failed = 0;
  {
    auto world = shardgnn::comm::Communicator::world();
    failed = shardgnn::test::run_catch(argc, argv);
    failed = world.allreduce<std::int32_t>(failed, shardgnn::comm::Op::kMax);
  }
  return failed;
}
