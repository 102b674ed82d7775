// The layers' linear maps, y = x W^T + b. On the CPU in float32 they run on oneDNN's sgemm when
// the libtorch in use exports it (Debian's links oneDNN as a shared library) or the system has
// libdnnl.so.2 beside a libtorch that does not (PyTorch's wheels): oneDNN picks its
// kernels from the CPU's feature flags itself, so neither a CPU model masked by a hypervisor nor
// an OPENBLAS_CORETYPE leaves them on older vector units, and on the CPUs measured it outruns
// OpenBLAS's best kernels for the tall, narrow products of GNN layers (docs/design.md, "Training").
// Elsewhere (a GPU, bfloat16 autocast, a libtorch without the symbol) they are torch's own.
#pragma once

#include <torch/nn.h>

#include <string>

namespace shardgnn {

// What the profiler records for each of these products (arguments A, B and C of C = op(A) op(B)).
inline constexpr const char* kSgemmOpName = "shardgnn::sgemm";

// "oneDNN sgemm" when float32 CPU products take that path, else "torch".
std::string cpu_gemm_backend();

// x [M, K], w [N, K], b [N] or undefined -> [M, N], differentiable in x, w and b.
torch::Tensor linear_map(const torch::Tensor& x, const torch::Tensor& w, const torch::Tensor& b = {});
inline torch::Tensor linear_map(const torch::nn::Linear& fc, const torch::Tensor& x) { return linear_map(x, fc->weight, fc->bias); }

}  // namespace shardgnn
