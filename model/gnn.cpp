#include "model/gnn.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>

#include "datasets/error.hpp"
#include "datasets/random.hpp"
#include "datasets/vector_clones.hpp"
#include "model/attention_sum.hpp"
#include "model/autocast.hpp"
#include "model/convs.hpp"
#include "model/dist_embedding.hpp"
#include "model/dropout_hash.hpp"
#include "model/gemm.hpp"
#include "model/relational.hpp"
#include "model/sync_batch_norm.hpp"

#ifdef SHARDGNN_CUDA
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include <optional>
#endif

namespace shardgnn {

namespace {

namespace F = torch::nn::functional;

// One chunk of dropout_mask on the CPU: lane i of `len` under the 32-bit key halves (k, k2).
// The mask is `keep`'s bits ANDed with all ones or all zeros (the same floats keep * 1 and keep * 0
// give): GCC turned the bool-to-float conversion into a branch, and the loop ran scalar.
template <bool kApply>
inline void dropout_lanes(float* out, const float* in, std::uint32_t len, std::uint32_t k, std::uint32_t k2, std::uint32_t threshold, float keep) {
  const auto keep_bits = std::bit_cast<std::uint32_t>(keep);
  for (std::uint32_t i = 0; i < len; ++i) {
    const std::uint32_t kept = 0U - static_cast<std::uint32_t>(dropout_hash(i, k, k2) >= threshold);
    const float m = std::bit_cast<float>(keep_bits & kept);
    if constexpr (kApply) {
      out[i] = m * in[i];
    } else {
      out[i] = m;
    }
  }
}

// Sets out[i] = keep * in[i] (in = null: keep) when a 32-bit hash of (key, i) is at least
// `threshold`, else 0: the mask itself, or, for an input that needs no gradient, the input with
// the mask applied in the same pass (no mask written and read again). A counter-based hash of
// 32-bit lanes (dropout_hash) and no branch, so the CPU loop vectorises: compiled for AVX-512,
// AVX2 and baseline x86-64, picked at load time. One 64-bit hash per element and a branch each
// (mispredicted half the time) was a large part of a GraphSAGE step. `stream`: the CUDA stream
// of a GPU's tensors, null for the CPU's.
SHARDGNN_VECTOR_CLONES
void dropout_mask(float* out, const float* in, std::uint64_t n, std::uint64_t key, std::uint32_t threshold, float keep, [[maybe_unused]] void* stream) {
  constexpr std::uint64_t kChunk = 1ULL << 30;  // a fresh 32-bit key per chunk: lanes never repeat
  for (std::uint64_t base = 0; base < n; base += kChunk) {
    const std::uint64_t chunk_key = derive_seed(key, base / kChunk);
    const auto k = static_cast<std::uint32_t>(chunk_key), k2 = static_cast<std::uint32_t>(chunk_key >> 32);
    const auto len = static_cast<std::uint32_t>(std::min(n - base, kChunk));
#ifdef SHARDGNN_CUDA
    if (stream != nullptr) {
      dropout_lanes_cuda(out + base, in != nullptr ? in + base : nullptr, len, k, k2, threshold, keep, stream);
      continue;
    }
#endif
    if (in != nullptr)
      dropout_lanes<true>(out + base, in + base, len, k, k2, threshold, keep);
    else
      dropout_lanes<false>(out + base, nullptr, len, k, k2, threshold, keep);
  }
}

// Dropout on the CPU as one node that keeps no mask: forward the input with the mask applied in
// one pass; backward the same mask (the same key's hashes) applied to the gradient. A mask
// written, then multiplied in forward and read again backward, took two more passes each way.
class HashDropout : public torch::autograd::Function<HashDropout> {
 public:
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& h, std::int64_t key, std::int64_t threshold, double keep) {
    ctx->saved_data["key"] = key;
    ctx->saved_data["threshold"] = threshold;
    ctx->saved_data["keep"] = keep;
    return apply_mask(h, key, threshold, keep);
  }
  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx, torch::autograd::variable_list grads) {
    return {apply_mask(grads[0].contiguous(), ctx->saved_data["key"].toInt(), ctx->saved_data["threshold"].toInt(), ctx->saved_data["keep"].toDouble()),
            torch::Tensor(), torch::Tensor(), torch::Tensor()};
  }

 private:
  static torch::Tensor apply_mask(const torch::Tensor& x, std::int64_t key, std::int64_t threshold, double keep) {
    torch::Tensor out = torch::empty_like(x);
    dropout_mask(out.data_ptr<float>(), x.data_ptr<float>(), static_cast<std::uint64_t>(x.numel()), static_cast<std::uint64_t>(key),
                 static_cast<std::uint32_t>(threshold), static_cast<float>(keep), nullptr);
    return out;
  }
};

// Matrix products in bfloat16 for a scope: torch's autocast on the device's type (CPU or CUDA),
// restored after; the autocast's cache of cast weights is dropped when the outermost scope ends,
// as Python's torch.autocast does.
class Bf16Scope {
 public:
  Bf16Scope(const torch::Device& device, bool on) : on_(on), type_(device.is_cpu() ? c10::kCPU : c10::kCUDA) {
    if (!on_) return;
    was_on_ = autocast::enabled(type_);
    was_dtype_ = autocast::dtype(type_);
    autocast::set_dtype(type_, at::kBFloat16);
    autocast::set_enabled(type_, true);
    at::autocast::increment_nesting();
  }
  ~Bf16Scope() {
    if (!on_) return;
    if (at::autocast::decrement_nesting() == 0) at::autocast::clear_cache();
    autocast::set_enabled(type_, was_on_);
    autocast::set_dtype(type_, was_dtype_);
  }
  Bf16Scope(const Bf16Scope&) = delete;
  Bf16Scope& operator=(const Bf16Scope&) = delete;

 private:
  bool on_;
  c10::DeviceType type_;
  bool was_on_ = false;
  at::ScalarType was_dtype_ = at::kBFloat16;
};

torch::Tensor activate(Activation a, const torch::Tensor& h) {
  switch (a) {
    case Activation::kNone: return h;
    case Activation::kRelu: return torch::relu(h);
    case Activation::kElu: return torch::elu(h);
    case Activation::kLeakyRelu: return F::leaky_relu(h, F::LeakyReLUFuncOptions().negative_slope(0.01));
    case Activation::kGelu: return torch::gelu(h);
    case Activation::kTanh: return torch::tanh(h);
  }
  return h;
}

// The layer a spec names, reading `in`-wide rows; `relations`: the typed graph's relation count.
std::shared_ptr<Layer> make_layer(const LayerSpec& l, std::int64_t in, std::int64_t relations) {
  // Concatenated heads split the width; averaged ones are each the width.
  const std::int64_t per_head = attention(l.kind) && l.concat ? l.width / l.heads : l.width;
  switch (l.kind) {
    case LayerKind::kSage: return SAGEConv(SAGEConvOptions(in, l.width).aggregation(l.aggregation)).ptr();
    case LayerKind::kGcn: return GraphConv(GraphConvOptions(in, l.width).self_loop(l.self_loop)).ptr();
    case LayerKind::kGat: return GATConv(GATConvOptions(in, per_head, l.heads).attn_dropout(l.attn_dropout).self_loop(l.self_loop)).ptr();
    case LayerKind::kGatV2: return GATv2Conv(GATv2ConvOptions(in, per_head, l.heads).attn_dropout(l.attn_dropout).self_loop(l.self_loop)).ptr();
    case LayerKind::kGin: return GINConv(GINConvOptions(in, l.width).mlp_layers(l.mlp_layers).train_eps(l.train_eps)).ptr();
    case LayerKind::kRgcn: return RelGraphConv(RelGraphConvOptions(in, l.width, relations).bases(l.bases)).ptr();
    case LayerKind::kRgat: return RelGATConv(RelGATConvOptions(in, per_head, l.heads, relations)).ptr();
  }
  return nullptr;
}

}  // namespace

GnnOptions::GnnOptions(const ModelConfig& model, std::int64_t in, std::int64_t out, std::int64_t layers)
    : spec_(model_spec(model, layers)), in_(in), out_(out), precision_(model.precision), spec_file_(model.spec) {}

void GnnOptions::check() {
  SpecContext ctx;
  ctx.in = in_;
  ctx.out = out_;
  ctx.hops = layers();
  ctx.typed = schema_.typed();
  ctx.precision = precision_;
  const std::string label = spec_file_.empty() ? "--model " + spec_.name : spec_file_;
  spec_ = check_spec(std::move(spec_), ctx, label);
}

GnnImpl::GnnImpl(GnnOptions o) : options(std::move(o)) {
  options.check();
  const ModelSpec& s = options.spec();
  typed_ = options.schema().typed();
  // Registered in this order (encoders, layers, then what only declared models have), so that a
  // built-in draws its initial weights as it always has and names them as before.
  if (typed_) {
    for (std::size_t t = 0; t < options.schema().types().size(); ++t) {
      const std::int64_t d = options.schema().types()[t].feature_dim;
      type_encoders_.push_back(d == 0 ? torch::nn::Linear(nullptr) : register_module("encoder" + std::to_string(t), torch::nn::Linear(d, s.encoder.width)));
    }
  } else if (s.encoder.linear) {
    encoder_ = register_module("encoder", torch::nn::Linear(options.in(), s.encoder.width));
  }
  const auto relations = static_cast<std::int64_t>(options.schema().relations().size());
  for (std::size_t l = 0; l < s.layers.size(); ++l)
    layers_.push_back(register_module("conv" + std::to_string(l), make_layer(s.layers[l], layer_in_dim(static_cast<std::int64_t>(l)), relations)));
  for (std::size_t l = 0; l < s.layers.size(); ++l) {
    const LayerSpec& ls = s.layers[l];
    const std::string at = std::to_string(l);
    if (ls.norm == Norm::kBatch) norms_.emplace_back(register_module("norm" + at, torch::nn::BatchNorm1d(ls.width)));
    else if (ls.norm == Norm::kLayer) norms_.emplace_back(register_module("norm" + at, torch::nn::LayerNorm(torch::nn::LayerNormOptions({ls.width}))));
    else norms_.emplace_back();
    const std::int64_t in = layer_in_dim(static_cast<std::int64_t>(l));
    residuals_.push_back(ls.residual == Residual::kAdd && in != ls.width
                             ? register_module("residual" + at, torch::nn::Linear(torch::nn::LinearOptions(in, ls.width).bias(false)))
                             : torch::nn::Linear(nullptr));
  }
  const std::int64_t rw = readout_width(s);
  if (s.head.kind == HeadKind::kLinear) head_.push_back(register_module("head0", torch::nn::Linear(rw, options.out())));
  if (s.head.kind == HeadKind::kMlp)
    for (std::int64_t i = 0; i < s.head.layers; ++i)
      head_.push_back(register_module("head" + std::to_string(i), torch::nn::Linear(i == 0 ? rw : s.head.width, i + 1 == s.head.layers ? options.out() : s.head.width)));
}

std::int64_t GnnImpl::input_width() const { return options.spec().encoder.linear ? options.spec().encoder.width : options.in(); }
std::int64_t GnnImpl::layer_in_dim(std::int64_t l) const { return layer_in_width(options.spec(), options.in(), static_cast<std::size_t>(l)); }
std::int64_t GnnImpl::layer_out_dim(std::int64_t l) const { return options.spec().layers[static_cast<std::size_t>(l)].width; }
bool GnnImpl::reads_every_layer() const noexcept { return options.spec().jumping_knowledge != JumpingKnowledge::kNone; }

torch::Tensor GnnImpl::encode(const torch::Tensor& x) {
  TORCH_CHECK(!typed_, "a typed graph's rows are encoded per type (forward(BatchTensors))");
  return encoder_.is_empty() ? x : linear_map(encoder_, x);
}

torch::Tensor GnnImpl::dropout(const torch::Tensor& h, double p) {
  if (!is_training() || p <= 0) return h;
  if (p >= 1) return torch::zeros_like(h);
  void* stream = nullptr;
#ifdef SHARDGNN_CUDA
  // The kernel launches on the current device: h's.
  std::optional<c10::cuda::CUDAGuard> on_device;
  if (h.is_cuda()) {
    on_device.emplace(h.device().index());
    stream = c10::cuda::getCurrentCUDAStream(h.device().index()).stream();
  }
#endif
  if ((!h.device().is_cpu() && stream == nullptr) || h.scalar_type() != torch::kFloat || !h.is_contiguous())
    return F::dropout(h, F::DropoutFuncOptions().p(p).training(true));
  const auto n = static_cast<std::uint64_t>(h.numel());
  const auto keep = static_cast<float>(1.0 / (1.0 - p));
  // P(drop) = p, to 2^-32.
  const auto threshold = static_cast<std::uint32_t>(std::min(p * 4294967296.0, 4294967295.0));
  const std::uint64_t key = derive_seed(dropout_seed_, ++dropout_calls_);
  // Without a gradient to carry (the input features) the rows are dropped in one pass; on the CPU
  // with one, HashDropout; only a GPU's gradient keeps a mask.
  const bool fused = !(torch::GradMode::is_enabled() && h.requires_grad());
  if (!fused && stream == nullptr)
    return HashDropout::apply(h, static_cast<std::int64_t>(key), static_cast<std::int64_t>(threshold), static_cast<double>(keep));
  torch::Tensor out = torch::empty_like(h);
  dropout_mask(out.data_ptr<float>(), fused ? h.data_ptr<float>() : nullptr, n, key, threshold, keep, stream);
  return fused ? out : h * out;
}

torch::Tensor GnnImpl::finish_layer(std::int64_t l, torch::Tensor y, const torch::Tensor& x) {
  const auto i = static_cast<std::size_t>(l);
  const LayerSpec& ls = options.spec().layers[i];
  if (y.scalar_type() != torch::kFloat) y = y.to(torch::kFloat);
  if (y.dim() == 3) y = ls.concat ? y.flatten(/*start_dim=*/1) : y.mean(/*dim=*/1);
  if (ls.norm == Norm::kBatch && is_training() && bn_comm_ != nullptr) {
    y = synced_batch_norm(y, *std::dynamic_pointer_cast<torch::nn::BatchNorm1dImpl>(norms_[i].ptr()), *bn_comm_);
  } else if (!norms_[i].is_empty()) {
    // Batch statistics of one row are undefined (torch refuses them): such a batch (a rank's last
    // seed) is normalised with the running statistics, as in evaluation.
    const std::shared_ptr<torch::nn::Module> norm = norms_[i].ptr();
    const bool one_row = is_training() && ls.norm == Norm::kBatch && y.size(0) < 2;
    if (one_row) norm->eval();
    y = norms_[i].forward(y);
    if (one_row) norm->train();
  }
  y = activate(ls.activation, y);
  if (ls.residual == Residual::kAdd) y = y + (residuals_[i].is_empty() ? x : linear_map(residuals_[i], x));
  return y;
}

torch::Tensor GnnImpl::forward_layer(std::int64_t l, const BlockTensors& b, torch::Tensor h, bool projected) {
  const auto i = static_cast<std::size_t>(l);
  TORCH_CHECK(!layers_[i]->relation_forms().any(), layer_kind_name(options.spec().layers[i].kind), " reads a typed batch's relations (forward(BatchTensors))");
  return run_layer(l, LayerBlock{b}, std::move(h), projected);
}

torch::Tensor GnnImpl::run_layer(std::int64_t l, const LayerBlock& b, torch::Tensor h, bool projected) {
  TORCH_CHECK(!projected || !is_training(), "projected rows are for inference (no dropout)");
  const auto i = static_cast<std::size_t>(l);
  const LayerSpec& ls = options.spec().layers[i];
  TORCH_CHECK(!projected || ls.residual == Residual::kNone, "a residual layer reads its input rows, not projected ones");
  const torch::Tensor x = ls.residual == Residual::kAdd ? h.slice(0, 0, b.block.num_dst) : torch::Tensor();
  if (!projected) h = dropout(h, ls.dropout);
  torch::Tensor y;
  {
    const Bf16Scope bf16(h.device(), options.precision() == Precision::kBFloat16);
    y = projected ? layers_[i]->forward_projected(b.block, h) : layers_[i]->conv(b, h);
  }
  return finish_layer(l, y, x);
}

torch::Tensor GnnImpl::readout(const std::vector<torch::Tensor>& outputs, std::int64_t rows) {
  const ModelSpec& s = options.spec();
  TORCH_CHECK(!outputs.empty(), "readout of no layer");
  if (s.jumping_knowledge == JumpingKnowledge::kNone && head_.empty()) return outputs.back();
  torch::Tensor z;
  if (s.jumping_knowledge == JumpingKnowledge::kNone) {
    z = outputs.back().slice(0, 0, rows);
  } else {
    TORCH_CHECK(outputs.size() == layers_.size(), "jumping knowledge reads every layer's output");
    std::vector<torch::Tensor> parts;
    for (const torch::Tensor& o : outputs) parts.push_back(o.slice(0, 0, rows));
    z = s.jumping_knowledge == JumpingKnowledge::kCat ? torch::cat(parts, 1) : std::get<0>(torch::stack(parts).max(0));
  }
  for (std::size_t i = 0; i < head_.size(); ++i) {
    const bool last = i + 1 == head_.size();
    if (s.head.kind == HeadKind::kMlp) z = dropout(z, s.head.dropout);
    z = linear_map(head_[i], z);
    if (!last) z = activate(s.head.activation, z);
  }
  return z;
}

bool GnnImpl::projects_table(std::int64_t l, std::int64_t edges, std::int64_t num_src, std::int64_t num_dst) const {
  const auto i = static_cast<std::size_t>(l);
  if (options.spec().layers[i].residual != Residual::kNone || layers_[i]->projected_width() == 0) return false;
  return layers_[i]->projects_first(edges, num_src, num_dst);
}

std::int64_t GnnImpl::projected_width(std::int64_t l) const { return layers_[static_cast<std::size_t>(l)]->projected_width(); }

torch::Tensor GnnImpl::project_layer(std::int64_t l, const torch::Tensor& h) {
  TORCH_CHECK(!is_training(), "projected rows are for inference (no dropout)");
  torch::Tensor p;
  {
    const Bf16Scope bf16(h.device(), options.precision() == Precision::kBFloat16);
    p = layers_[static_cast<std::size_t>(l)]->project(h);
  }
  return p.scalar_type() == torch::kFloat ? p : p.to(torch::kFloat);
}

std::int64_t GnnImpl::edge_bytes() const {
  // Two int64 indices per edge, and the per-edge messages of attention: GAT's [E, heads]
  // weights times its rows; GATv2's [E, heads, width per head] tensors, about four of them
  // (the two gathered sides, their nonlinearity, its product with the attention vector).
  std::int64_t messages = 0;
  for (const LayerSpec& ls : options.spec().layers) {
    if (ls.kind == LayerKind::kGat || ls.kind == LayerKind::kRgat) messages = std::max(messages, 4 * ls.width);
    if (ls.kind == LayerKind::kGatV2) messages = std::max(messages, 4 * 4 * ls.width * (ls.concat ? 1 : ls.heads));
  }
  return 16 + messages;
}

bool GnnImpl::aggregates_input() const {
  return !typed_ && !options.spec().encoder.linear && layers_.front()->aggregates() && options.spec().layers.front().residual == Residual::kNone;
}

torch::Tensor GnnImpl::aggregate_input(const BlockTensors& b, const torch::Tensor& x) {
  TORCH_CHECK(!is_training() && aggregates_input(), "aggregate_input: a first layer with a part without weights, in eval mode");
  return layers_.front()->aggregate(b, x);
}

torch::Tensor GnnImpl::forward_aggregated(const std::vector<BlockTensors>& blocks, const torch::Tensor& a) {
  TORCH_CHECK(static_cast<std::int64_t>(blocks.size()) == options.layers(), "the model has ", options.layers(), " layers, the batch ", blocks.size(),
              " blocks");
  TORCH_CHECK(!is_training() && aggregates_input(), "forward_aggregated: a first layer with a part without weights, in eval mode");
  torch::Tensor x;
  {
    const Bf16Scope bf16(a.device(), options.precision() == Precision::kBFloat16);
    x = layers_.front()->apply(a);
  }
  x = finish_layer(0, x, {});
  std::vector<torch::Tensor> outs;
  if (reads_every_layer()) outs.push_back(x);
  for (std::size_t l = 1; l < blocks.size(); ++l) {
    x = forward_layer(static_cast<std::int64_t>(l), blocks[l], x);
    if (reads_every_layer()) outs.push_back(x);
  }
  if (outs.empty()) outs.push_back(x);
  return readout(outs, blocks.back().num_dst);
}

torch::Tensor GnnImpl::forward(const std::vector<BlockTensors>& blocks, torch::Tensor x) {
  TORCH_CHECK(static_cast<std::int64_t>(blocks.size()) == options.layers(), "the model has ", options.layers(), " layers, the batch ", blocks.size(),
              " blocks");
  x = encode(x);
  std::vector<torch::Tensor> outs;
  for (std::size_t l = 0; l < blocks.size(); ++l) {
    x = forward_layer(static_cast<std::int64_t>(l), blocks[l], x);
    if (reads_every_layer()) outs.push_back(x);
  }
  if (outs.empty()) outs.push_back(x);
  return readout(outs, blocks.back().num_dst);
}

torch::Tensor GnnImpl::forward(const BatchTensors& t) { return forward(t, -1, nullptr); }

torch::Tensor GnnImpl::encode_typed(const BatchTensors& t) {
  TORCH_CHECK(t.typed(), "a model of a typed graph: the batch has no node types");
  const std::int64_t num_input = t.blocks.front().num_src;
  std::vector<torch::Tensor> xs = t.xs;
  if (embeddings_) {
    std::vector<torch::Tensor> rows = embeddings_->gather(*t.type_ids);
    for (const int ty : embeddings_->types()) xs[static_cast<std::size_t>(ty)] = rows[static_cast<std::size_t>(ty)].to(t.node_type.device());
  }
  // Each type's encoded rows end to end, then put in input order by one gather (its backward one
  // scatter), rather than an input-sized copy per type forward and backward (index_copy).
  std::vector<torch::Tensor> rows, where;
  for (std::size_t ty = 0; ty < xs.size(); ++ty) {
    if (!xs[ty].defined() || xs[ty].size(0) == 0) continue;
    rows.push_back(type_encoders_[ty].is_empty() ? xs[ty] : linear_map(type_encoders_[ty], xs[ty]));
    where.push_back(t.at[ty]);
  }
  if (rows.empty()) throw std::invalid_argument("Gnn: a batch without input rows");
  const torch::Tensor positions = torch::cat(where);
  if (positions.size(0) != num_input) throw std::invalid_argument("Gnn: the types' rows do not cover the batch's input nodes");
  const torch::Tensor order = torch::empty({num_input}, positions.options()).index_put_({positions}, torch::arange(num_input, positions.options()));
  return gather_rows(torch::cat(rows), order);
}

torch::Tensor GnnImpl::forward(const BatchTensors& t, std::int64_t keep_layer, torch::Tensor* kept) {
  TORCH_CHECK(static_cast<std::int64_t>(t.blocks.size()) == options.layers(), "the model has ", options.layers(), " layers, the batch ", t.blocks.size(),
              " blocks");
  TORCH_CHECK(typed_ || !t.typed(), "a model of an untyped graph: the batch is a typed graph's");
  const std::int64_t seeds = t.blocks.back().num_dst;
  torch::Tensor h = typed_ ? encode_typed(t) : encode(t.x);
  if (kept && keep_layer == 0) *kept = h.slice(0, 0, seeds);
  std::vector<torch::Tensor> outs;
  for (std::size_t l = 0; l < t.blocks.size(); ++l) {
    const auto i = static_cast<std::int64_t>(l);
    // A layer that reads relations gets the block split in the forms it asks for.
    const RelationForms forms = layers_[l]->relation_forms();
    RelationBlocks rb;
    if (forms.any()) rb = split_by_relation(t.blocks[l], t.node_type, options.schema(), forms.whole, forms.compact);
    h = run_layer(i, LayerBlock{t.blocks[l], forms.any() ? &rb : nullptr}, h);
    if (reads_every_layer()) outs.push_back(h);
    if (kept && keep_layer == i + 1) *kept = h.slice(0, 0, seeds);
  }
  if (outs.empty()) outs.push_back(h);
  return readout(outs, seeds);
}

void GnnImpl::skip_batch() {
  if (embeddings_) embeddings_->gather_nothing();
  if (bn_comm_ == nullptr || !is_training()) return;
  std::vector<torch::nn::BatchNorm1dImpl*> layers;
  for (std::size_t i = 0; i < norms_.size(); ++i)
    if (options.spec().layers[i].norm == Norm::kBatch) layers.push_back(std::dynamic_pointer_cast<torch::nn::BatchNorm1dImpl>(norms_[i].ptr()).get());
  synced_batch_norm_nothing(layers, *bn_comm_);
}

void GnnImpl::step_embeddings(double scale) {
  if (embeddings_) embeddings_->step(scale);
}

}  // namespace shardgnn
