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
// Aggregation runs on whatever device the tensors live on: sums with at most one weight per edge
// (SAGE, GCN) as an embedding bag over the block's CSR, which never materialises the E x F
// messages; per-head weights (GAT) as index_select (gather the messages) + index_add (sum them per
// dst). SAGE and GCN apply their linear map before or after the sum, whichever costs less
// (project_first).
#pragma once

#include <torch/nn.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "datasets/schema.hpp"
#include "sampler/minibatch.hpp"
#include "trainer/config.hpp"

namespace shardgnn {

// A block as tensors on one device. On the CPU the index tensors alias the Block's vectors (no
// copy), so the Block must outlive the tensors, backward included.
struct BlockTensors {
  std::int64_t num_src = 0, num_dst = 0;
  torch::Tensor indptr;     // int64 [num_dst + 1]
  torch::Tensor src;        // int64 [E]: src position of each edge (Block::indices)
  torch::Tensor dst;        // int64 [E]: dst row of each edge
  torch::Tensor in_degree;  // float [num_dst]: sampled in-edges per dst
  // Optional float [num_src]: the src nodes' degrees in the whole graph, without self-loops (a
  // block sees only the batch's edges of a src, and only the sampled ones of a dst; the graph is
  // taken as symmetric). Undefined: GraphConv counts degrees within the block.
  torch::Tensor src_degree;
};

// A block's tensors from its CSR arrays (int64, on the device they are to be used on).
BlockTensors block_tensors(std::int64_t num_src, std::int64_t num_dst, torch::Tensor indptr, torch::Tensor indices);
BlockTensors to_tensors(const Block& block, const torch::Device& device);
std::vector<BlockTensors> to_tensors(const std::vector<Block>& blocks, const torch::Device& device);
// The tensors would outlive a temporary's storage.
BlockTensors to_tensors(Block&& block, const torch::Device& device) = delete;
std::vector<BlockTensors> to_tensors(std::vector<Block>&& blocks, const torch::Device& device) = delete;

// A whole batch: its blocks, input features [num_input, F] and seed labels [num_seeds] (int64,
// -1 = unlabelled), aliasing the MiniBatch's vectors on the CPU as above.
struct BatchTensors {
  std::vector<BlockTensors> blocks;
  torch::Tensor x, y;
  // A typed graph's batch (MiniBatch::typed): the input nodes' types (int64 [num_input]) and per
  // node type its rows (float [n_t, F_t]; undefined for a type without features, whose rows come
  // from its embedding table) and their positions among the input nodes (int64 [n_t]); `type_ids`
  // the batch's embedding rows per type (MiniBatch::type_ids).
  torch::Tensor node_type;
  std::vector<torch::Tensor> xs, at;
  const std::vector<std::vector<NodeId>>* type_ids = nullptr;
  bool typed() const noexcept { return node_type.defined(); }
};
BatchTensors to_tensors(const MiniBatch& mb, const torch::Device& device);
BatchTensors to_tensors(MiniBatch&& mb, const torch::Device& device) = delete;

// out[v] = sum over v's in-edges (u, v) of weight_e * h[u]; weight is [E] or [E, H] (undefined:
// all 1); h is [num_src, ...] and out [num_dst, ...]. Sums are float32 (bfloat16 h is widened).
torch::Tensor aggregate_sum(const BlockTensors& b, const torch::Tensor& h, const torch::Tensor& weight = {});

// What one byte of a random-row gather costs in sgemm FLOPs, for choosing where a layer's
// linear map goes: the ratio of the two rates `train --profile-ops` measures on a CPU core
// (docs/design.md, "Training").
inline constexpr double kGemmFlopsPerGatheredByte = 12;

// Whether a layer mapping in -> out features over this block should apply its linear map to every
// src row before the sum over in-edges (GEMM on num_src rows, gather of out-wide rows) rather than
// to every dst row after it (GEMM on num_dst rows, gather of in-wide rows): whichever costs less.
// On a whole graph (num_src = num_dst) that is "when it narrows the rows", DGL's rule; on a sampled
// block, whose src rows far outnumber its dst rows, summing first often wins even when in > out.
bool project_first(const BlockTensors& b, std::int64_t in, std::int64_t out);
bool project_first(std::int64_t edges, std::int64_t num_src, std::int64_t num_dst, std::int64_t in, std::int64_t out);

// Softmax of edge scores [E', H] over each dst's in-edges, for edges laid out as the block's CSR
// (dst 0's edges first, ...) followed, when `self_loops`, by one edge (v, v) per dst v.
torch::Tensor edge_softmax(const BlockTensors& b, const torch::Tensor& scores, bool self_loops);

struct SAGEConvOptions {
  SAGEConvOptions(std::int64_t in, std::int64_t out) : in_(in), out_(out) {}
  TORCH_ARG(std::int64_t, in);
  TORCH_ARG(std::int64_t, out);
  TORCH_ARG(bool, bias) = true;
};

class SAGEConvImpl : public torch::nn::Module {
 public:
  explicit SAGEConvImpl(const SAGEConvOptions& options);
  // h: [num_src, in] -> [num_dst, out]; with `projected`, h holds project() of the src rows.
  torch::Tensor forward(const BlockTensors& b, const torch::Tensor& h, bool projected = false);
  // Rows -> [fc_neigh(h), fc_self(h)], [n, 2 out]: the layer's maps applied before any sum.
  torch::Tensor project(const torch::Tensor& h);
  // The part without weights: [h_dst, mean over in-edges of h_src], [num_dst, 2 in]; then
  // apply() of it equals forward().
  torch::Tensor aggregate(const BlockTensors& b, const torch::Tensor& h);
  torch::Tensor apply(const torch::Tensor& aggregated);
  SAGEConvOptions options;
  torch::nn::Linear fc_self{nullptr}, fc_neigh{nullptr};
};
TORCH_MODULE(SAGEConv);

struct GraphConvOptions {
  GraphConvOptions(std::int64_t in, std::int64_t out) : in_(in), out_(out) {}
  TORCH_ARG(std::int64_t, in);
  TORCH_ARG(std::int64_t, out);
  TORCH_ARG(bool, bias) = true;
  TORCH_ARG(bool, self_loop) = true;
};

class GraphConvImpl : public torch::nn::Module {
 public:
  explicit GraphConvImpl(const GraphConvOptions& options);
  // h: [num_src, in] -> [num_dst, out]; with `projected`, h holds project() of the src rows.
  torch::Tensor forward(const BlockTensors& b, const torch::Tensor& h, bool projected = false);
  torch::Tensor project(const torch::Tensor& h);  // fc(h), the map without its bias
  // The part without weights: the normalised sum over in-edges (and self-loop), [num_dst, in];
  // then apply() of it equals forward().
  torch::Tensor aggregate(const BlockTensors& b, const torch::Tensor& h);
  torch::Tensor apply(const torch::Tensor& aggregated);
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

class GATConvImpl : public torch::nn::Module {
 public:
  explicit GATConvImpl(const GATConvOptions& options);
  // h: [num_src, in] -> [num_dst, heads, out]. If `attention` is given it receives the attention
  // weights [E', heads] (E' = E + num_dst with self-loops, laid out as edge_softmax says). With
  // `projected`, h holds fc(h) of the src rows.
  torch::Tensor forward(const BlockTensors& b, const torch::Tensor& h, torch::Tensor* attention = nullptr, bool projected = false);
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

struct GnnOptions {
  // The model's choices (config.hpp), and the widths and depth the data and the fanouts give.
  GnnOptions(const ModelConfig& model, std::int64_t in, std::int64_t out, std::int64_t layers) : model_(model), in_(in), out_(out), layers_(layers) {}
  // The model's fields, as the layers read them. kBFloat16: each convolution
  // runs under torch's autocast (matrix products in bfloat16), and its output returns to float32,
  // so activations, dropout, aggregation sums, the loss, the weights and their gradients stay float32.
  ModelKind kind() const noexcept { return model_.kind; }
  std::int64_t hidden() const noexcept { return model_.hidden; }  // GAT: heads x hidden/heads, concatenated
  std::int64_t heads() const noexcept { return model_.heads; }
  double dropout() const noexcept { return model_.dropout; }
  Precision precision() const noexcept { return model_.precision; }
  TORCH_ARG(ModelConfig, model);
  TORCH_ARG(std::int64_t, in);      // feature width
  TORCH_ARG(std::int64_t, out);     // output width (the task's head: classes)
  TORCH_ARG(std::int64_t, layers);  // = number of fanouts
  // R-GCN and R-GAT: the typed graph's schema (its types' feature widths, its relations).
  TORCH_ARG(GraphSchema, schema);
};

class RelGnnImpl;
class TypedEmbeddings;

// `layers` convolutions; between them ReLU (GAT: ELU, as in the paper); dropout on every layer's
// input (as Kipf & Welling and the GAT paper do). The output layer gives logits; GAT averages its
// heads there.
class GnnImpl : public torch::nn::Module {
 public:
  explicit GnnImpl(const GnnOptions& options);
  // blocks[0] is the input layer; x: [blocks[0].num_src, in] -> [blocks.back().num_dst, out]
  torch::Tensor forward(const std::vector<BlockTensors>& blocks, torch::Tensor x);
  // A batch's output rows: the blocks and x above, or a typed batch through R-GCN / R-GAT (its
  // types' rows, and embedding rows gathered from their owners for types without features:
  // collective then, see use_embeddings).
  torch::Tensor forward(const BatchTensors& t);
  // R-GCN, R-GAT: also the seeds' rows after `keep_layer` layers into `kept` (predict's embeddings).
  torch::Tensor forward(const BatchTensors& t, std::int64_t keep_layer, torch::Tensor* kept);
  bool relational() const noexcept { return rel_ != nullptr; }
  // Learnable rows for the types without features. With them every forward(BatchTensors) is
  // collective over the tables' communicator: every rank calls forward or skip_batch for each
  // batch of a schedule, and during training step_embeddings after each step's backward.
  void use_embeddings(std::shared_ptr<TypedEmbeddings> tables) { embeddings_ = std::move(tables); }
  TypedEmbeddings* embeddings() const noexcept { return embeddings_.get(); }
  // A batch this rank does not compute (no seeds): the tables' collectives of a forward, empty.
  void skip_batch();
  // Collective with embeddings (nothing without): the last forward's gradient rows, times `scale`
  // (the dense gradients' average over all ranks' examples), to their owners.
  void step_embeddings(double scale = 1);
  // Layer `l` alone (dropout, convolution, activation unless last), for layer-wise inference.
  // With `projected` (eval mode only), h holds project_layer(l, ...) of the src rows.
  torch::Tensor forward_layer(std::int64_t l, const BlockTensors& b, torch::Tensor h, bool projected = false);
  std::int64_t layer_out_dim(std::int64_t l) const;
  // Layer-wise inference over a whole graph of these sizes: whether layer `l` should project the
  // table of node rows once (project_layer, float32, projected_width(l) wide) before the sums of
  // its blocks, so that the blocks gather projected rows.
  bool projects_table(std::int64_t l, std::int64_t edges, std::int64_t num_src, std::int64_t num_dst) const;
  std::int64_t projected_width(std::int64_t l) const;
  torch::Tensor project_layer(std::int64_t l, const torch::Tensor& h);
  // GraphSAGE and GCN in eval mode: the first layer's part without weights (its sums over the
  // input rows), and the forward pass from it. Evaluation on fixed batches computes the first once.
  torch::Tensor aggregate_input(const BlockTensors& b, const torch::Tensor& x);
  torch::Tensor forward_aggregated(const std::vector<BlockTensors>& blocks, const torch::Tensor& aggregated);
  // Restarts the dropout masks' random stream (the trainer does it per epoch and rank, so a
  // resumed run draws the masks an uninterrupted one would).
  void reseed_dropout(std::uint64_t seed) noexcept {
    dropout_seed_ = seed;
    dropout_calls_ = 0;
  }
  // Inverted dropout on layer inputs. The mask comes from a keyed counter hash per element
  // (dropout_hash.hpp), the same on the CPU (a vectorised loop; torch 1.13's CPU bernoulli draws
  // every element through its generator one at a time) and on a CUDA GPU (a kernel, in a build
  // with a CUDA libtorch), so a seed gives one mask on either. Elsewhere torch's dropout. The
  // stream: call c of a seed hashes element i under derive_seed(derive_seed(seed, c), i / 2^30).
  torch::Tensor dropout(const torch::Tensor& h);
  GnnOptions options;

 private:
  std::vector<SAGEConv> sage_;
  std::vector<GraphConv> gcn_;
  std::vector<GATConv> gat_;
  torch::nn::Dropout dropout_{nullptr};
  std::shared_ptr<RelGnnImpl> rel_;  // R-GCN, R-GAT (registered as "rgnn")
  std::shared_ptr<TypedEmbeddings> embeddings_;
  torch::Tensor finish_layer(std::int64_t l, torch::Tensor h) const;  // float32, then the activation
  std::uint64_t dropout_seed_ = 0, dropout_calls_ = 0;
};
TORCH_MODULE(Gnn);

}  // namespace shardgnn
