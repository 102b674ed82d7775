// Catch2's implementation lives in one file (catch_session.cpp), compiled once for every test
// binary; each binary's own main runs the tests through this.
#pragma once

namespace shardgnn::test {

// Catch::Session().run(argc, argv): the command line applied, then every selected test case.
int run_catch(int argc, char** argv);

}  // namespace shardgnn::test
