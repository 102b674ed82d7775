// SHARDGNN_VECTOR_CLONES before a CPU loop's function: compiled for AVX-512, AVX2 and baseline
// x86-64 and picked at load time (GCC's target_clones), so a portable build still runs the
// loops on the widest vector units the machine has. Nothing elsewhere.
#pragma once

#if defined(__x86_64__) && defined(__GLIBC__) && defined(__has_attribute)
#if __has_attribute(target_clones)
#define SHARDGNN_VECTOR_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#endif
#endif
#ifndef SHARDGNN_VECTOR_CLONES
#define SHARDGNN_VECTOR_CLONES
#endif
