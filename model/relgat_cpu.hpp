// R-GAT's layer (RelGATConv) as one autograd node on the CPU in float32: the dst rows' product, one
// gather of every relation's src rows, a product per relation, and the attention written straight
// into the output rows; backward, each gradient written once into its own buffer. The composition
// of ops it replaces (RelGATConv's general path) concatenates split gradients, expands sliced ones
// to h's size and copies strided columns (docs/results/hetero.md).
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <vector>

#include "model/relational.hpp"

namespace shardgnn {

// For h that on_cpu_sgemm (model/gemm.hpp) takes.
// h [num_src, in]; wd [H*D + H*A, in]: the self term's weight, then each active relation's dst
// score weight (fc and attn_r folded); bias [H, D]; wr[i] [H*D + H, in]: active relation i's fc
// weight, then its src score weight (fc and attn_l folded); active[i]: its index in b.compact.
// -> [num_dst, H, D]: the self term, the bias and each relation's attention sum over its edges.
// Differentiable in h, wd, bias and wr.
torch::Tensor rel_gat_cpu(const torch::Tensor& h, const torch::Tensor& wd, const torch::Tensor& bias, const std::vector<torch::Tensor>& wr,
                          const RelationBlocks& b, const std::vector<std::size_t>& active, std::int64_t H, std::int64_t D, double negative_slope);

}  // namespace shardgnn
