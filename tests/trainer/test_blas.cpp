// Choosing OpenBLAS's kernels from the CPU's feature flags (tools/blas_kernels.hpp).
#include <catch2/catch.hpp>

#include "tools/blas_kernels.hpp"

using namespace shardgnn::cli;

TEST_CASE("the strongest BLAS kernels the CPU runs replace weaker ones only", "[blas]") {
  const CpuVectorUnits sse{false, false, false}, avx2{true, false, false}, avx512{true, true, false}, bf16{true, true, true};
  // OpenBLAS's fallback on an unknown CPU model.
  CHECK(stronger_blas_core(avx512, "Prescott") == "SkylakeX");
  CHECK(stronger_blas_core(bf16, "Prescott") == "Cooperlake");
  CHECK(stronger_blas_core(avx2, "Prescott") == "Haswell");
  CHECK(stronger_blas_core(avx2, "Sandybridge") == "Haswell");
  CHECK(stronger_blas_core(avx512, "Haswell") == "SkylakeX");
  // Its own choice kept when it is as strong: the same family, or a tuned member of it.
  CHECK(stronger_blas_core(avx2, "Zen") == "");
  CHECK(stronger_blas_core(avx2, "Haswell") == "");
  CHECK(stronger_blas_core(avx512, "SkylakeX") == "");
  CHECK(stronger_blas_core(avx512, "SapphireRapids") == "");
  CHECK(stronger_blas_core(bf16, "Cooperlake") == "");
  // Nothing better to ask for.
  CHECK(stronger_blas_core(sse, "Prescott") == "");
  CHECK(blas_core_level("Cooperlake") == 2);
  CHECK(blas_core_level("Zen") == 1);
  CHECK(blas_core_level("Prescott") == 0);
}

TEST_CASE("the run's first line names the kernels and, when replaced, OpenBLAS's own choice", "[blas]") {
  unsetenv("SHARDGNN_BLAS_FALLBACK");
  const char* forced = std::getenv("OPENBLAS_CORETYPE");
  const std::string saved = forced ? forced : "";
  unsetenv("OPENBLAS_CORETYPE");
  const CpuVectorUnits avx512{true, true, false};
  CHECK(blas_core_description("Haswell", avx512) == "Haswell kernels");
  CHECK(blas_core_description("", avx512) == "");
  // A weaker choice the environment forces is kept, and said.
  setenv("OPENBLAS_CORETYPE", "Haswell", 1);
  CHECK(blas_core_description("Haswell", avx512) == "Haswell kernels as OPENBLAS_CORETYPE asks; this CPU runs SkylakeX");
  CHECK(blas_core_description("SkylakeX", avx512) == "SkylakeX kernels");
  if (forced) setenv("OPENBLAS_CORETYPE", saved.c_str(), 1); else unsetenv("OPENBLAS_CORETYPE");
  setenv("SHARDGNN_BLAS_FALLBACK", "Prescott", 1);
  CHECK(blas_core_description("SkylakeX") == "SkylakeX kernels, from the CPU's flags; OpenBLAS alone took Prescott");
  unsetenv("SHARDGNN_BLAS_FALLBACK");
}
