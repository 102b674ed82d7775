// Relational layers for typed graphs, on blocks split by relation:
//   RelGraphConv  R-GCN (Schlichtkrull et al., "Modeling Relational Data with Graph Convolutional
//                 Networks", ESWC 2018): h'_v = W_0 h_v + b + sum_r mean_{u in N_r(v)} W_r h_u, the
//                 per-relation weights optionally W_r = sum_b a_rb V_b (basis decomposition), as
//                 DGL's RelGraphConv with the mean per relation (c_{v,r} = |N_r(v)|).
//   RelGATConv    R-GAT as MLPerf's GNN reference builds it (DGL HeteroGraphConv over one GATConv per
//                 relation, summed per destination): per relation r and head, attention over v's
//                 in-edges of r only; plus a self term W_0 h_v (IGB-Het's cites relation carries
//                 self-loops, which give its papers their own row; the self term gives every type
//                 its own, and our graphs drop self-loops).
// Both are layers of the one model type (model/gnn.hpp), which encodes the node types first.
// A block's edge u -> v (v a dst, u a src) carries the relation from v's type to u's: rows hold
// the relation of their entries (datasets/schema.hpp), and the sampler draws a dst's neighbours
// from its row.
#pragma once

#include <torch/nn.h>

#include <cstdint>
#include <functional>
#include <vector>

#include "datasets/schema.hpp"
#include "model/convs.hpp"
#include "model/layer.hpp"

namespace shardgnn {

// A block split by relation: sub-blocks over the same src and dst nodes, one per relation of the
// schema, each holding that relation's edges in the block's order; and each also as a bipartite
// block over only the nodes its edges touch (compact[r]: its edges' dst among dst_rows[r], its src
// among src_rows[r], both positions in the block's src list), so that a per-relation projection
// (R-GAT's) maps only the rows of the relation's source type rather than every src row once per
// relation.
struct RelationBlocks {
  std::int64_t num_src = 0, num_dst = 0;
  std::vector<BlockTensors> relations, compact;
  std::vector<torch::Tensor> src_rows, dst_rows;
};
// `node_type`: int64 [num_src], the block's src nodes' types (its dst nodes are their prefix). An
// edge's relation is b.relation's where defined (a graph with relation ids), else the one joining
// its end types.
// `whole` and `compact` say which of the two forms to build (R-GCN reads the whole sub-blocks,
// R-GAT the compact ones); a form not built is left empty.
RelationBlocks split_by_relation(const BlockTensors& b, const torch::Tensor& node_type, const GraphSchema& schema, bool whole = true, bool compact = true);
// The same in torch ops, on any device (split_by_relation's path off the CPU; the CPU loops are
// tested against it).
RelationBlocks split_by_relation_ops(const BlockTensors& b, const torch::Tensor& node_type, const GraphSchema& schema, bool whole = true,
                                     bool compact = true);

struct RelGraphConvOptions {
  RelGraphConvOptions(std::int64_t in, std::int64_t out, std::int64_t relations) : in_(in), out_(out), relations_(relations) {}
  TORCH_ARG(std::int64_t, in);
  TORCH_ARG(std::int64_t, out);
  TORCH_ARG(std::int64_t, relations);
  TORCH_ARG(std::int64_t, bases) = 0;  // 0: a full weight per relation
  TORCH_ARG(bool, bias) = true;
};

class RelGraphConvImpl : public Layer {
 public:
  explicit RelGraphConvImpl(const RelGraphConvOptions& options);
  // h: [num_src, in] -> [num_dst, out].
  torch::Tensor forward(const RelationBlocks& b, const torch::Tensor& h);
  torch::Tensor conv(const LayerBlock& b, const torch::Tensor& h) override { return forward(*b.relations, h); }
  RelationForms relation_forms() const override { return {.whole = true}; }
  // W_r for every relation, [relations, in, out] (composed from the bases when there are).
  torch::Tensor relation_weights() const;
  RelGraphConvOptions options;
  torch::Tensor weight, basis, coefficients, loop_weight, bias;
};
TORCH_MODULE(RelGraphConv);

struct RelGATConvOptions {
  RelGATConvOptions(std::int64_t in, std::int64_t out, std::int64_t heads, std::int64_t relations)
      : in_(in), out_(out), heads_(heads), relations_(relations) {}
  TORCH_ARG(std::int64_t, in);
  TORCH_ARG(std::int64_t, out);  // per head
  TORCH_ARG(std::int64_t, heads);
  TORCH_ARG(std::int64_t, relations);
  TORCH_ARG(double, attn_dropout) = 0.0;
};

class RelGATConvImpl : public Layer {
 public:
  explicit RelGATConvImpl(const RelGATConvOptions& options);
  // h: [num_src, in] -> [num_dst, heads, out].
  torch::Tensor forward(const RelationBlocks& b, const torch::Tensor& h);
  torch::Tensor conv(const LayerBlock& b, const torch::Tensor& h) override { return forward(*b.relations, h); }
  RelationForms relation_forms() const override { return {.compact = true}; }
  RelGATConvOptions options;
  std::vector<GATConv> per_relation;
  torch::nn::Linear self_fc{nullptr};
  torch::Tensor bias;
};
TORCH_MODULE(RelGATConv);

}  // namespace shardgnn
