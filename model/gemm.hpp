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

// Whether float32 products of x's take oneDNN's sgemm (as linear_map's would).
bool on_cpu_sgemm(const torch::Tensor& x);
// c = op(a) op(b) in place on oneDNN's sgemm (on_cpu_sgemm), for float32 matrices of contiguous
// rows as they are (a slice of rows or of columns qualifies); not differentiable.
void sgemm_into(bool transpose_a, bool transpose_b, const torch::Tensor& a, const torch::Tensor& b, torch::Tensor& c);
// w [N, K] -> W^T [K, N] contiguous: x W^T is faster on oneDNN's sgemm as x times these rows.
torch::Tensor weight_rows(const torch::Tensor& w);

}  // namespace shardgnn
