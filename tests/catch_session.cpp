#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include "catch_session.hpp"

int shardgnn::test::run_catch(int argc, char** argv) { return Catch::Session().run(argc, argv); }
