// GAT's weighted sum over each dst's in-edges, out[v, h, :] = sum over v's CSR edges e of
// a[e, h] * z[src[e], h, :], with its backward. The composition of torch ops (index_select of the
// messages, a product, index_add) materialises the E x H x D messages forward and three more such
// tensors backward, which is most of an R-GAT or GAT step's memory traffic; on the CPU in float32
// this runs as one pass over the block's CSR each way and never builds them: forward and the
// attention's gradient in parallel over dst rows, the src rows' gradient in parallel over heads
// (each thread owns its columns, so the scatter needs no atomics). Elsewhere the torch ops.
#pragma once

#include <torch/types.h>

namespace shardgnn {

struct BlockTensors;

// z: [num_src, H, D], a: [E, H] (the block's edges in CSR order) -> [num_dst, H, D];
// differentiable in z and a.
torch::Tensor attention_sum(const BlockTensors& b, const torch::Tensor& z, const torch::Tensor& a);

}  // namespace shardgnn
