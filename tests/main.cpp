// The main of the test binaries that run as one process.
#include "catch_session.hpp"

int main(int argc, char** argv) { return shardgnn::test::run_catch(argc, argv); }
