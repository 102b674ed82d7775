#include <cuda_runtime.h>

#include <algorithm>
#include <stdexcept>
#include <string>

#include "model/dropout_hash.hpp"

namespace shardgnn {

namespace {

__global__ void lanes(float* out, const float* in, std::uint32_t len, std::uint32_t k, std::uint32_t k2, std::uint32_t threshold, float keep) {
  for (std::uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < len; i += gridDim.x * blockDim.x) {
    const float m = keep * static_cast<float>(dropout_hash(i, k, k2) >= threshold);
    out[i] = in != nullptr ? m * in[i] : m;
  }
}

}  // namespace

void dropout_lanes_cuda(float* out, const float* in, std::uint32_t len, std::uint32_t k, std::uint32_t k2, std::uint32_t threshold, float keep,
                        void* stream) {
  if (len == 0) return;
  constexpr std::uint32_t kThreads = 256;
  // Enough blocks to fill the device; the grid-stride loop covers the rest.
  const std::uint32_t blocks = std::min<std::uint32_t>((len + kThreads - 1) / kThreads, 65535u);
  lanes<<<blocks, kThreads, 0, static_cast<cudaStream_t>(stream)>>>(out, in, len, k, k2, threshold, keep);
  const cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess) throw std::runtime_error(std::string("dropout kernel: ") + cudaGetErrorString(e));
}

}  // namespace shardgnn
