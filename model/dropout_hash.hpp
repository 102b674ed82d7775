// The dropout mask's hash, one definition for the CPU loop (models.cpp) and the CUDA kernel
// (dropout_cuda.cu), so that both devices draw the same mask from the same key: a run moves
// between them, checkpoints included, without its dropout changing. Plain C++17 for nvcc.
#pragma once

#include <cstdint>

#if defined(__CUDACC__)
#define SHARDGNN_HOST_DEVICE __host__ __device__
#else
#define SHARDGNN_HOST_DEVICE
#endif

namespace shardgnn {

// Lane i's 32-bit hash under the key halves (k, k2): lowbias32 (by Chris Wellons) with the key's
// high half mixed in after the first multiply, so that masks of two keys are not re-indexings of
// one another. No branch: the CPU loop over lanes vectorises.
SHARDGNN_HOST_DEVICE inline std::uint32_t dropout_hash(std::uint32_t i, std::uint32_t k, std::uint32_t k2) {
  std::uint32_t h = i ^ k;
  h ^= h >> 16;
  h *= 0x7feb352dU;
  h ^= k2;
  h ^= h >> 15;
  h *= 0x846ca68bU;
  h ^= h >> 16;
  return h;
}

// Lanes of one 2^30-element chunk on a CUDA device, on `stream` (a cudaStream_t): out[i] =
// keep * in[i] (in = null: keep) where dropout_hash(i, k, k2) >= threshold, else 0. In the build
// with a CUDA libtorch only.
void dropout_lanes_cuda(float* out, const float* in, std::uint32_t len, std::uint32_t k, std::uint32_t k2, std::uint32_t threshold, float keep,
                        void* stream);

}  // namespace shardgnn
