// OpenBLAS (Debian's BLAS behind libtorch) picks its kernels from the CPU model when it loads, and
// on a model it does not know, as virtual machines and containers often present, it falls back to
// its oldest SSE3 kernels ("Prescott") whatever vector units the CPU has. shardgnn-train asks it
// which kernels it took and, when the CPU's own feature flags allow stronger ones and the user
// has not chosen (OPENBLAS_CORETYPE), starts itself again with them, before MPI starts.
#pragma once

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "trainer/train.hpp"

namespace shardgnn::cli {

// The vector units OpenBLAS's x86-64 kernel families need.
struct CpuVectorUnits {
  bool avx2_fma = false;
  bool avx512 = false;  // F, BW, DQ and VL: what OpenBLAS's SkylakeX kernels use
  bool avx512_bf16 = false;
};

inline CpuVectorUnits this_cpu_vector_units() {
  CpuVectorUnits u;
#if defined(__x86_64__)
  __builtin_cpu_init();
  u.avx2_fma = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  u.avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512dq") &&
             __builtin_cpu_supports("avx512vl");
  u.avx512_bf16 = u.avx512 && __builtin_cpu_supports("avx512bf16");
#endif
  return u;
}

// 2: AVX-512 kernels, 1: AVX2 kernels, 0: older or unknown (OpenBLAS's core names).
inline int blas_core_level(std::string_view core) {
  for (std::string_view c : {"SkylakeX", "Cooperlake", "SapphireRapids"})
    if (core == c) return 2;
  for (std::string_view c : {"Haswell", "Zen"})
    if (core == c) return 1;
  return 0;
}

// The core to ask OpenBLAS for, or "" to keep `current`: the strongest family `cpu` runs, when
// `current` is a weaker one.
inline std::string stronger_blas_core(const CpuVectorUnits& cpu, std::string_view current) {
  const std::string best = cpu.avx512 ? (cpu.avx512_bf16 ? "Cooperlake" : "SkylakeX") : cpu.avx2_fma ? "Haswell" : "";
  return !best.empty() && blas_core_level(best) > blas_core_level(current) ? best : "";
}

// Re-executes this program with OPENBLAS_CORETYPE set when stronger_blas_core says so (and notes
// what OpenBLAS had picked in SHARDGNN_BLAS_FALLBACK, for the run's first line). Returns when
// nothing is to change or the re-execution failed (the run goes on with OpenBLAS's choice).
inline void use_strongest_blas_kernels(char** argv) {
  const std::string current = blas_core();
  if (current.empty() || std::getenv("OPENBLAS_CORETYPE")) return;
  const std::string core = stronger_blas_core(this_cpu_vector_units(), current);
  if (core.empty()) return;
  setenv("OPENBLAS_CORETYPE", core.c_str(), 1);
  setenv("SHARDGNN_BLAS_FALLBACK", current.c_str(), 1);
  execv("/proc/self/exe", argv);
  std::fprintf(stderr, "shardgnn: warning: cannot restart with OpenBLAS's %s kernels; running with its %s kernels\n", core.c_str(), current.c_str());
  unsetenv("OPENBLAS_CORETYPE");
  unsetenv("SHARDGNN_BLAS_FALLBACK");
}

// How the run's first line names `core` (what OpenBLAS computes with): with the kernels OpenBLAS
// had picked alone when use_strongest_blas_kernels replaced them, and with the stronger ones the
// CPU runs when OPENBLAS_CORETYPE holds it to weaker ones (kept: the user's choice).
inline std::string blas_core_description(const std::string& core, const CpuVectorUnits& cpu = this_cpu_vector_units()) {
  if (core.empty()) return "";
  if (const char* fallback = std::getenv("SHARDGNN_BLAS_FALLBACK")) return core + " kernels, from the CPU's flags; OpenBLAS alone took " + fallback;
  if (std::getenv("OPENBLAS_CORETYPE"))
    if (const std::string best = stronger_blas_core(cpu, core); !best.empty())
      return core + " kernels as OPENBLAS_CORETYPE asks; this CPU runs " + best;
  return core + " kernels";
}

}  // namespace shardgnn::cli
