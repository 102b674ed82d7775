// Sampled blocks as tensors, and the one interface every message-passing layer has (Layer): a
// model (model/gnn.hpp) is a list of them. Every layer maps the rows of a block's src nodes to the
// rows of its dst nodes; the dst nodes are the first num_dst src nodes (the sampler's dst-prefix),
// which is how a layer finds a node's own previous representation.
#pragma once

#include <torch/nn.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "datasets/schema.hpp"
#include "sampler/minibatch.hpp"

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
  // Optional int64 [E]: each edge's relation (Block::relations), on a graph with relation ids.
  // Undefined: a typed graph's relation follows from the end types.
  torch::Tensor relation;
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

struct RelationBlocks;  // relational.hpp

// What a layer reads of a block: its tensors, and on a typed graph the block split by relation
// (built for the layers that ask, in the forms they ask for).
struct LayerBlock {
  const BlockTensors& block;
  const RelationBlocks* relations = nullptr;
};

// The forms of a relation split a layer reads (relational.hpp's split_by_relation): none for a
// homogeneous layer.
struct RelationForms {
  bool whole = false, compact = false;
  bool any() const noexcept { return whole || compact; }
};

// One message-passing layer. conv() is the convolution alone: [num_src, in] rows to [num_dst,
// width] (or [num_dst, heads, width per head] for a layer with heads), possibly in bfloat16 under
// autocast; the model adds dropout, the heads' join, normalisation, activation and residual around
// it. The hooks below are the fast paths of the built-ins, each off unless a layer has it.
class Layer : public torch::nn::Module {
 public:
  virtual torch::Tensor conv(const LayerBlock& b, const torch::Tensor& h) = 0;
  virtual RelationForms relation_forms() const { return {}; }
  // Projection first (layer-wise inference): the layer's maps applied to every row once,
  // projected_width() wide (0: the layer has no such form), then forward_projected() on a block of
  // those rows equals conv() on the rows. projects_first: whether that costs less on these sizes.
  virtual std::int64_t projected_width() const { return 0; }
  virtual bool projects_first(std::int64_t /*edges*/, std::int64_t /*num_src*/, std::int64_t /*num_dst*/) const { return false; }
  virtual torch::Tensor project(const torch::Tensor& h);
  virtual torch::Tensor forward_projected(const BlockTensors& b, const torch::Tensor& projected);
  // The part without weights (evaluation keeps a first layer's sums): aggregate(), then apply()
  // of it equals conv(). aggregates(): whether the layer has that split.
  virtual bool aggregates() const { return false; }
  virtual torch::Tensor aggregate(const BlockTensors& b, const torch::Tensor& h);
  virtual torch::Tensor apply(const torch::Tensor& aggregated);
};

}  // namespace shardgnn
