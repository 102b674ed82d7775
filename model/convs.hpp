// GNN layers on sampled blocks and the models built from them, in the PyTorch C++ frontend's
// style (XxxOptions + XxxImpl + TORCH_MODULE). Every layer maps the rows of a block's src nodes to
// the rows of its dst nodes; the dst nodes are the first num_dst src nodes (the sampler's
// dst-prefix), which is how a layer finds a node's own previous representation.
//   SAGEConv   GraphSAGE, mean aggregator (Hamilton et al. 2017), as DGL SAGEConv('mean'):
//              fc_self(h_v) + fc_neigh(mean_{u->v} h_u). (Equal to one linear layer over the
//              concatenation [h_v, mean h_u], the paper's form, with the weight split in two.)
//   GraphConv  GCN (Kipf & Welling 2017), as DGL GraphConv(norm='both') on blocks:
//              sum_{u->v} h_u / sqrt(d_out(u) d_in(v)), then W and bias. With self_loop (the
//              default) every dst v also receives from itself (src v, by the dst-prefix), and the
//              self-loop counts in both degrees: A + I of the paper, without touching the graph.
//              With full-graph degrees on the block (what training and inference give it) the
//              normalisation is the whole graph's, and a dst that sampled k of its d in-edges
//              scales their sum by d / k: over the draws of k neighbours its expected sum is
//              the full one (node-wise sampling's unbiased estimate). Without them, degrees
//              are counted within the block, as DGL GraphConv does on sampled blocks.
//   GATConv    GAT (Velickovic et al. 2018), as DGL GATConv: per head, e_uv = LeakyReLU_0.2(
//              a_l.Wh_u + a_r.Wh_v), softmax over each dst's in-edges (segment max for range,
//              index_add for the sums), sum of attention * Wh_u. With self_loop (the default)
//              every dst attends to itself too, so no dst is left without an in-edge.
//   GATv2Conv  GATv2 (Brody et al. 2022), as PyG GATv2Conv (share_weights=False): per head,
//              e_uv = a.LeakyReLU_0.2(W_s h_u + W_d h_v), softmax as GAT's, sum of attention *
//              W_s h_u; the nonlinearity before the product makes the attention dynamic.
//   GINConv    GIN (Xu et al. 2019), as PyG GINConv(train_eps=True) with an MLP of Linear and
//              ReLU: MLP((1 + eps) h_v + sum_{u->v} h_u).
// Aggregation runs on whatever device the tensors live on: sums with at most one weight per edge
// (SAGE, GCN) as an embedding bag over the block's CSR, which never materialises the E x F
// messages; per-head weights (GAT) as index_select (gather the messages) + index_add (sum them per
// dst). SAGE and GCN apply their linear map before or after the sum, whichever costs less
// (project_first).
#pragma once

#include <torch/nn.h>

#include <cstdint>
#include <vector>

#include "model/layer.hpp"
#include "model/spec.hpp"

namespace shardgnn {

struct SAGEConvOptions {
  SAGEConvOptions(std::int64_t in, std::int64_t out) : in_(in), out_(out) {}
  TORCH_ARG(std::int64_t, in);
  TORCH_ARG(std::int64_t, out);
  TORCH_ARG(bool, bias) = true;
  // How the neighbours' rows are joined: mean (the paper's and DGL's 'mean'), sum, or the
  // elementwise max (PyG's aggr='max': the max of the rows, then fc_neigh; 0 for no neighbour).
  TORCH_ARG(Aggregation, aggregation) = Aggregation::kMean;
};

class SAGEConvImpl : public Layer {
 public:
  explicit SAGEConvImpl(const SAGEConvOptions& options);
  // h: [num_src, in] -> [num_dst, out]; with `projected`, h holds project() of the src rows.
  torch::Tensor forward(const BlockTensors& b, const torch::Tensor& h, bool projected = false);
  torch::Tensor conv(const LayerBlock& b, const torch::Tensor& h) override { return forward(b.block, h); }
  // Rows -> [fc_neigh(h), fc_self(h)], [n, 2 out]: the layer's maps applied before any sum (not
  // for max, which does not commute with them).
  torch::Tensor project(const torch::Tensor& h) override;
  torch::Tensor forward_projected(const BlockTensors& b, const torch::Tensor& p) override { return forward(b, p, true); }
  std::int64_t projected_width() const override { return options.aggregation() == Aggregation::kMax ? 0 : 2 * options.out(); }
  bool projects_first(std::int64_t edges, std::int64_t num_src, std::int64_t num_dst) const override;
  // The part without weights: [h_dst, mean (sum, max) over in-edges of h_src], [num_dst, 2 in];
  // then apply() of it equals forward().
  bool aggregates() const override { return true; }
  torch::Tensor aggregate(const BlockTensors& b, const torch::Tensor& h) override;
  torch::Tensor apply(const torch::Tensor& aggregated) override;
  SAGEConvOptions options;
  torch::nn::Linear fc_self{nullptr}, fc_neigh{nullptr};

 private:
  torch::Tensor neighbours(const BlockTensors& b, const torch::Tensor& h) const;
};
TORCH_MODULE(SAGEConv);

struct GraphConvOptions {
  GraphConvOptions(std::int64_t in, std::int64_t out) : in_(in), out_(out) {}
  TORCH_ARG(std::int64_t, in);
  TORCH_ARG(std::int64_t, out);
  TORCH_ARG(bool, bias) = true;
  TORCH_ARG(bool, self_loop) = true;
};

class GraphConvImpl : public Layer {
 public:
  explicit GraphConvImpl(const GraphConvOptions& options);
  // h: [num_src, in] -> [num_dst, out]; with `projected`, h holds project() of the src rows.
  torch::Tensor forward(const BlockTensors& b, const torch::Tensor& h, bool projected = false);
  torch::Tensor conv(const LayerBlock& b, const torch::Tensor& h) override { return forward(b.block, h); }
  torch::Tensor project(const torch::Tensor& h) override;  // fc(h), the map without its bias
  torch::Tensor forward_projected(const BlockTensors& b, const torch::Tensor& p) override { return forward(b, p, true); }
  std::int64_t projected_width() const override { return options.out(); }
  bool projects_first(std::int64_t edges, std::int64_t num_src, std::int64_t num_dst) const override;
  // The part without weights: the normalised sum over in-edges (and self-loop), [num_dst, in];
  // then apply() of it equals forward().
  bool aggregates() const override { return true; }
  torch::Tensor aggregate(const BlockTensors& b, const torch::Tensor& h) override;
  torch::Tensor apply(const torch::Tensor& aggregated) override;
  GraphConvOptions options;
  torch::nn::Linear fc{nullptr};
  torch::Tensor bias;

 private:
  struct Norms {
    torch::Tensor src, dst;  // [num_src, 1] and [num_dst, 1]
    torch::Tensor neigh;     // [num_dst, 1]: full degree / sampled in-edges; undefined without full-graph degrees
  };
  Norms norms(const BlockTensors& b) const;
};
TORCH_MODULE(GraphConv);

struct GATConvOptions {
  GATConvOptions(std::int64_t in, std::int64_t out, std::int64_t heads) : in_(in), out_(out), heads_(heads) {}
  TORCH_ARG(std::int64_t, in);
  TORCH_ARG(std::int64_t, out);  // per head
  TORCH_ARG(std::int64_t, heads);
  TORCH_ARG(double, negative_slope) = 0.2;
  TORCH_ARG(double, attn_dropout) = 0.0;
  TORCH_ARG(bool, bias) = true;
  TORCH_ARG(bool, self_loop) = true;
};

class GATConvImpl : public Layer {
 public:
  explicit GATConvImpl(const GATConvOptions& options);
  // h: [num_src, in] -> [num_dst, heads, out]. If `attention` is given it receives the attention
  // weights [E', heads] (E' = E + num_dst with self-loops, laid out as edge_softmax says). With
  // `projected`, h holds fc(h) of the src rows.
  torch::Tensor forward(const BlockTensors& b, const torch::Tensor& h, torch::Tensor* attention = nullptr, bool projected = false);
  torch::Tensor conv(const LayerBlock& b, const torch::Tensor& h) override { return forward(b.block, h); }
  // Attention scores need every projected src row anyway: layer-wise inference projects the table.
  torch::Tensor project(const torch::Tensor& h) override;
  torch::Tensor forward_projected(const BlockTensors& b, const torch::Tensor& p) override { return forward(b, p, nullptr, true); }
  std::int64_t projected_width() const override { return options.out() * options.heads(); }
  bool projects_first(std::int64_t, std::int64_t, std::int64_t) const override { return true; }
  // A bipartite block (no dst prefix, no self-loops): src rows h_src [b.num_src, in] send to dst
  // rows whose attention scores are er [b.num_dst, heads] -> [num_dst, heads, out]. The dst rows
  // enter only through er = h_dst attn_dst_weight()^T, never the full projection (so a caller can
  // join that narrow product to a wider one on the same rows).
  torch::Tensor forward_bipartite(const BlockTensors& b, const torch::Tensor& h_src, const torch::Tensor& er);
  // fc and attn_r folded, [heads, in]: a dst row's scores are its features times its transpose.
  torch::Tensor attn_dst_weight() const;
  // fc and attn_l folded, [heads, in]: the same for a src row's scores.
  torch::Tensor attn_src_weight() const;
  GATConvOptions options;
  torch::nn::Linear fc{nullptr};
  torch::Tensor attn_l, attn_r, bias;
};
TORCH_MODULE(GATConv);

struct GATv2ConvOptions {
  GATv2ConvOptions(std::int64_t in, std::int64_t out, std::int64_t heads) : in_(in), out_(out), heads_(heads) {}
  TORCH_ARG(std::int64_t, in);
  TORCH_ARG(std::int64_t, out);  // per head
  TORCH_ARG(std::int64_t, heads);
  TORCH_ARG(double, negative_slope) = 0.2;
  TORCH_ARG(double, attn_dropout) = 0.0;
  TORCH_ARG(bool, self_loop) = true;
};

class GATv2ConvImpl : public Layer {
 public:
  explicit GATv2ConvImpl(const GATv2ConvOptions& options);
  // h: [num_src, in] -> [num_dst, heads, out].
  torch::Tensor conv(const LayerBlock& b, const torch::Tensor& h) override;
  GATv2ConvOptions options;
  torch::nn::Linear fc_src{nullptr}, fc_dst{nullptr};
  torch::Tensor attn, bias;
};
TORCH_MODULE(GATv2Conv);

struct GINConvOptions {
  GINConvOptions(std::int64_t in, std::int64_t out) : in_(in), out_(out) {}
  TORCH_ARG(std::int64_t, in);
  TORCH_ARG(std::int64_t, out);
  TORCH_ARG(std::int64_t, mlp_layers) = 2;  // Linear layers, ReLU between them, `out` wide
  TORCH_ARG(bool, train_eps) = true;
};

class GINConvImpl : public Layer {
 public:
  explicit GINConvImpl(const GINConvOptions& options);
  torch::Tensor conv(const LayerBlock& b, const torch::Tensor& h) override { return apply(aggregate(b.block, h)); }
  // [h_v, sum h_u], then apply(): the MLP of (1 + eps) h_v + sum h_u (eps outside the kept sums).
  bool aggregates() const override { return true; }
  torch::Tensor aggregate(const BlockTensors& b, const torch::Tensor& h) override;
  torch::Tensor apply(const torch::Tensor& aggregated) override;
  GINConvOptions options;
  std::vector<torch::nn::Linear> mlp;
  torch::Tensor eps;  // a parameter with train_eps, else a buffer at 0
};
TORCH_MODULE(GINConv);

}  // namespace shardgnn
