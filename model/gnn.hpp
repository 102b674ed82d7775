// The model: an input encoder, a list of message-passing layers (model/layer.hpp), jumping
// knowledge and a head, built from a spec (model/spec.hpp). Whether the graph is typed is decided
// once, when the model is built: a typed graph's node types are encoded to one width (a linear
// map of each type's features, or learnable embedding rows for a type without features), and its
// blocks are split by relation for the layers that read relations.
#pragma once

#include <torch/nn.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "comm/communicator.hpp"
#include "datasets/schema.hpp"
#include "model/layer.hpp"
#include "model/spec.hpp"

namespace shardgnn {

struct GnnOptions {
  // A checked spec (check_spec) and the widths the data and the task give.
  GnnOptions(ModelSpec spec, std::int64_t in, std::int64_t out) : spec_(std::move(spec)), in_(in), out_(out) {}
  // A built-in or a spec file as the run's options name it (model_spec), checked here against an
  // untyped graph (schema() then check() for a typed one).
  GnnOptions(const ModelConfig& model, std::int64_t in, std::int64_t out, std::int64_t layers);
  std::int64_t layers() const noexcept { return static_cast<std::int64_t>(spec_.layers.size()); }
  // Checks the spec against in, out, the schema and the precision (check_spec), resolving its
  // widths; the model's constructor does it again.
  void check();
  TORCH_ARG(ModelSpec, spec);
  TORCH_ARG(std::int64_t, in);   // feature width (a typed graph: each type's comes from the schema)
  TORCH_ARG(std::int64_t, out);  // output width (the task's: classes, labels, the embedding)
  // A typed graph's schema (its types' feature widths, its relations); untyped when left out.
  TORCH_ARG(GraphSchema, schema);
  // kBFloat16: each convolution runs under torch's autocast (matrix products in bfloat16) and its
  // output returns to float32, so activations, dropout, sums, the loss and the weights stay float32.
  TORCH_ARG(Precision, precision) = Precision::kFloat32;
  TORCH_ARG(std::string, spec_file);  // the spec's file, for messages ("" for a built-in)
};

class TypedEmbeddings;

// Per layer: dropout on its input (a keyed hash, below), the convolution, the heads joined
// (concatenated or averaged), normalisation, activation, residual; then jumping knowledge over the
// layers' seed rows and the head.
class GnnImpl : public torch::nn::Module {
 public:
  explicit GnnImpl(GnnOptions options);
  // blocks[0] is the input layer; x: [blocks[0].num_src, in] -> [blocks.back().num_dst, out]
  // (an untyped graph's batch).
  torch::Tensor forward(const std::vector<BlockTensors>& blocks, torch::Tensor x);
  // A batch's output rows: its blocks and features, or a typed batch's types' rows (and embedding
  // rows gathered from their owners for types without features: collective then, see
  // use_embeddings).
  torch::Tensor forward(const BatchTensors& t);
  // Also the seeds' rows after `keep_layer` layers into `kept` (0: the encoded inputs; predict's
  // embeddings).
  torch::Tensor forward(const BatchTensors& t, std::int64_t keep_layer, torch::Tensor* kept);
  bool typed() const noexcept { return typed_; }
  // Learnable rows for the types without features, input_width() wide. With them every
  // forward(BatchTensors) is collective over the tables' communicator: every rank calls forward or
  // skip_batch for each batch of a schedule, and during training step_embeddings after each step's
  // backward.
  void use_embeddings(std::shared_ptr<TypedEmbeddings> tables) { embeddings_ = std::move(tables); }
  TypedEmbeddings* embeddings() const noexcept { return embeddings_.get(); }
  void skip_batch();
  void step_embeddings(double scale = 1);
  // Batch-normalised layers in training take the statistics of every rank's batch together
  // (sync_batch_norm.hpp): forward and skip_batch are then collective over `comm` in training
  // mode. Null: each rank's own batch (one rank, or ranks training apart, as --personalize does).
  void synchronise_batch_norm(const comm::Communicator* comm) noexcept { bn_comm_ = comm; }
  // The width the first layer reads (the encoder's, else the features').
  std::int64_t input_width() const;
  // An untyped graph's feature rows through the input encoder (as they are without one).
  torch::Tensor encode(const torch::Tensor& x);
  // Layer `l` alone (dropout, convolution, heads, norm, activation, residual), for layer-wise
  // inference. With `projected` (eval mode only), h holds project_layer(l, ...) of the src rows.
  torch::Tensor forward_layer(std::int64_t l, const BlockTensors& b, torch::Tensor h, bool projected = false);
  std::int64_t layer_in_dim(std::int64_t l) const;
  std::int64_t layer_out_dim(std::int64_t l) const;
  // Jumping knowledge and the head over the layers' outputs (each's first `rows` rows; only the
  // last one's without jumping knowledge): the model's output rows.
  torch::Tensor readout(const std::vector<torch::Tensor>& outputs, std::int64_t rows);
  // Whether readout() reads every layer's output (jumping knowledge), not just the last's.
  bool reads_every_layer() const noexcept;
  // Layer-wise inference over a whole graph of these sizes: whether layer `l` should project the
  // table of node rows once (project_layer, float32, projected_width(l) wide) before the sums of
  // its blocks, so that the blocks gather projected rows.
  bool projects_table(std::int64_t l, std::int64_t edges, std::int64_t num_src, std::int64_t num_dst) const;
  std::int64_t projected_width(std::int64_t l) const;
  torch::Tensor project_layer(std::int64_t l, const torch::Tensor& h);
  // Bytes per edge that full-neighbour inference's blocks hold (indices and messages).
  std::int64_t edge_bytes() const;
  // Evaluation on fixed batches computes the first layer's part without weights once, where the
  // first layer has one and nothing comes before it (no encoder): its sums over the input rows,
  // and the forward pass from them (eval mode).
  bool aggregates_input() const;
  torch::Tensor aggregate_input(const BlockTensors& b, const torch::Tensor& x);
  torch::Tensor forward_aggregated(const std::vector<BlockTensors>& blocks, const torch::Tensor& aggregated);
  // Restarts the dropout masks' random stream (the trainer does it per epoch and rank, so a
  // resumed run draws the masks an uninterrupted one would).
  void reseed_dropout(std::uint64_t seed) noexcept {
    dropout_seed_ = seed;
    dropout_calls_ = 0;
  }
  // Inverted dropout with probability p. The mask comes from a keyed counter hash per element
  // (dropout_hash.hpp), the same on the CPU (a vectorised loop; torch 1.13's CPU bernoulli draws
  // every element through its generator one at a time) and on a CUDA GPU (a kernel, in a build
  // with a CUDA libtorch), so a seed gives one mask on either. Elsewhere torch's dropout. The
  // stream: call c of a seed (counting calls with p > 0) hashes element i under
  // derive_seed(derive_seed(seed, c), i / 2^30).
  torch::Tensor dropout(const torch::Tensor& h, double p);
  GnnOptions options;

 private:
  bool typed_ = false;
  std::vector<std::shared_ptr<Layer>> layers_;
  std::vector<torch::nn::AnyModule> norms_;        // per layer; empty for none
  std::vector<torch::nn::Linear> residuals_;       // per layer; empty for none or the identity
  torch::nn::Linear encoder_{nullptr};             // an untyped graph's linear encoder
  std::vector<torch::nn::Linear> type_encoders_;   // a typed graph's, per type; empty for an embedding's type
  std::vector<torch::nn::Linear> head_;            // the head's linear layers
  std::shared_ptr<TypedEmbeddings> embeddings_;
  const comm::Communicator* bn_comm_ = nullptr;  // synchronise_batch_norm
  // The layer's output from its convolution's: float32, heads joined, norm, activation, residual
  // (the input's dst rows `x`, undefined when the layer has none).
  torch::Tensor finish_layer(std::int64_t l, torch::Tensor y, const torch::Tensor& x);
  // Layer `l` on a block (split by relation where the layer reads relations): forward_layer's steps.
  torch::Tensor run_layer(std::int64_t l, const LayerBlock& b, torch::Tensor h, bool projected = false);
  torch::Tensor encode_typed(const BatchTensors& t);
  std::uint64_t dropout_seed_ = 0, dropout_calls_ = 0;
};
TORCH_MODULE(Gnn);

}  // namespace shardgnn
