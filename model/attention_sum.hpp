// GAT's weighted sum over each dst's in-edges, out[v, h, :] = sum over v's CSR edges e of
// a[e, h] * z[src[e], h, :], with its backward. The composition of torch ops (index_select of the
// messages, a product, index_add) materialises the E x H x D messages forward and three more such
// tensors backward, which is most of an R-GAT or GAT step's memory traffic; on the CPU in float32
// this runs as one pass over the block's CSR each way and never builds them: forward and the
// attention's gradient in parallel over dst rows, the src rows' gradient in parallel over heads
// (each thread owns its columns, so the scatter needs no atomics). Elsewhere the torch ops.
// Beside it the attention weights themselves, and the row gathers and sums the relational layers
// make, for the same reason.
#pragma once

#include <torch/types.h>

namespace shardgnn {

struct BlockTensors;

// z: [num_src, H, D], a: [E, H] (the block's edges in CSR order) -> [num_dst, H, D];
// differentiable in z and a.
torch::Tensor attention_sum(const BlockTensors& b, const torch::Tensor& z, const torch::Tensor& a);

// GAT's attention over each dst's in-edges of a block without self-loops:
// a[e, h] = softmax over v's edges of leaky_relu(el[src[e], h] + er[v, h]), from el [num_src, H]
// and er [num_dst, H] -> [E, H], differentiable in el and er. The torch composition (two gathers,
// a sum, leaky_relu, a segment max, exp, a scatter of the sums and a division) makes a dozen
// E x H tensors and scatters row by row backward, where these rows are H floats wide; on the CPU
// in float32 this is one pass over the CSR each way. Elsewhere the torch ops.
torch::Tensor attention_softmax(const BlockTensors& b, const torch::Tensor& el, const torch::Tensor& er, double negative_slope);

// Rows idx of x ([n, ...] -> [k, ...]), differentiable in x; backward, the rows' gradients add up
// into x's in one loop over idx (torch's CPU index_add runs a tensor iterator per row).
torch::Tensor gather_rows(const torch::Tensor& x, const torch::Tensor& idx);
// out[idx[i]] += src[i] in place on `out` (a tensor autograd may track), src [k, ...] with out's
// row shape; backward, src's gradient is the rows idx of out's.
void add_rows_(torch::Tensor& out, const torch::Tensor& idx, const torch::Tensor& src);
// out[idx[i], :] += src[i, :] for i < k, rows w floats wide (threads split the columns).
void scatter_add(float* out, const std::int64_t* idx, const float* src, std::int64_t k, std::int64_t w);

}  // namespace shardgnn
