#include "trainer/models.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>

#include "datasets/random.hpp"
#include "trainer/attention_sum.hpp"
#include "trainer/autocast.hpp"
#include "trainer/dist_embedding.hpp"
#include "trainer/relational.hpp"
#include "trainer/dropout_hash.hpp"
#include "trainer/gemm.hpp"
#include "datasets/vector_clones.hpp"

#ifdef SHARDGNN_CUDA
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include <optional>
#endif

namespace shardgnn {

namespace {

namespace F = torch::nn::functional;

torch::Tensor view_int64(const std::vector<std::int64_t>& v, const torch::Device& device) {
  if (v.empty()) return torch::empty({0}, torch::TensorOptions().dtype(torch::kLong).device(device));
  // from_blob wants a mutable pointer; the tensor is only ever read.
  auto t = torch::from_blob(const_cast<std::int64_t*>(v.data()), {static_cast<std::int64_t>(v.size())}, torch::kLong);
  return t.to(device);
}

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

// dst positions 0..num_dst-1, the self-loop edges' src and dst alike (the dst-prefix).
torch::Tensor self_ids(const BlockTensors& b) { return torch::arange(b.num_dst, b.src.options()); }

}  // namespace

BlockTensors block_tensors(std::int64_t num_src, std::int64_t num_dst, torch::Tensor indptr, torch::Tensor indices) {
  BlockTensors t;
  t.num_src = num_src;
  t.num_dst = num_dst;
  t.indptr = std::move(indptr);
  t.src = std::move(indices);
  const torch::Tensor degree = t.indptr.slice(0, 1) - t.indptr.slice(0, 0, -1);
  // With its length given, no device-to-host read of the degrees' sum on a GPU.
  t.dst = torch::repeat_interleave(torch::arange(num_dst, t.indptr.options()), degree, /*dim=*/0, /*output_size=*/t.src.size(0));
  t.in_degree = degree.to(torch::kFloat);
  return t;
}

BlockTensors to_tensors(const Block& block, const torch::Device& device) {
  return block_tensors(block.num_src, block.num_dst, view_int64(block.indptr, device), view_int64(block.indices, device));
}

std::vector<BlockTensors> to_tensors(const std::vector<Block>& blocks, const torch::Device& device) {
  std::vector<BlockTensors> out;
  out.reserve(blocks.size());
  for (const Block& b : blocks) out.push_back(to_tensors(b, device));
  return out;
}

BatchTensors to_tensors(const MiniBatch& mb, const torch::Device& device) {
  BatchTensors t;
  t.blocks = to_tensors(mb.blocks, device);
  const auto n = static_cast<std::int64_t>(mb.input_nodes().size());
  if (!mb.degrees.empty()) {
    // Every block's src list is a prefix of the input nodes, so one degree vector serves all.
    const torch::Tensor deg = view_int64(mb.degrees, device).to(torch::kFloat);
    for (BlockTensors& b : t.blocks) b.src_degree = deg.slice(0, 0, b.num_src);
  }
  if (n == 0 || mb.feature_dim == 0)
    t.x = torch::zeros({n, mb.feature_dim}, torch::TensorOptions().device(device));
  else
    t.x = torch::from_blob(const_cast<float*>(mb.features.data()), {n, mb.feature_dim}, torch::kFloat).to(device);
  t.y = view_int64(mb.labels, device);
  if (mb.typed()) {
    t.node_type = view_int64(mb.node_types, device);
    t.type_ids = &mb.type_ids;
    for (std::size_t ty = 0; ty < mb.type_at.size(); ++ty) {
      const auto n_t = static_cast<std::int64_t>(mb.type_at[ty].size());
      t.at.push_back(view_int64(mb.type_at[ty], device));
      const FeatureRows& rows = mb.type_features[ty];
      if (rows.empty()) t.xs.emplace_back();  // no features (embedding rows) or no node of the type
      else t.xs.push_back(torch::from_blob(const_cast<float*>(rows.data()), {n_t, static_cast<std::int64_t>(rows.size()) / n_t}, torch::kFloat).to(device));
    }
  }
  return t;
}

torch::Tensor aggregate_sum(const BlockTensors& b, const torch::Tensor& h_in, const torch::Tensor& weight) {
  // Long sums lose too much in bfloat16 (and torch 1.13's CPU embedding bag takes none).
  const torch::Tensor h = h_in.scalar_type() == torch::kBFloat16 ? h_in.to(torch::kFloat) : h_in;
  if (h.dim() == 2 && (!weight.defined() || weight.dim() == 1)) {
    // A (weighted) sum of rows per dst is an embedding bag over the block's CSR: it never
    // materialises the E x F messages (the gather below does, which dominates the memory traffic
    // of wide layers).
    auto options = F::EmbeddingBagFuncOptions().offsets(b.indptr).mode(torch::kSum).include_last_offset(true);
    if (weight.defined()) options.per_sample_weights(weight);
    return F::embedding_bag(b.src, h, options);
  }
  torch::Tensor msgs = h.index_select(/*dim=*/0, b.src);
  if (weight.defined()) {
    torch::Tensor w = weight;
    while (w.dim() < msgs.dim()) w = w.unsqueeze(-1);
    msgs = msgs * w;
  }
  auto shape = h.sizes().vec();
  shape[0] = b.num_dst;
  return torch::zeros(shape, h.options()).index_add(/*dim=*/0, b.dst, msgs);
}

bool project_first(const BlockTensors& b, std::int64_t in, std::int64_t out) { return project_first(b.src.numel(), b.num_src, b.num_dst, in, out); }

bool project_first(std::int64_t edges, std::int64_t num_src, std::int64_t num_dst, std::int64_t in, std::int64_t out) {
  const auto E = static_cast<double>(edges), S = static_cast<double>(num_src), D = static_cast<double>(num_dst);
  const auto i = static_cast<double>(in), o = static_cast<double>(out);
  const double before = 2 * S * i * o + kGemmFlopsPerGatheredByte * 4 * E * o;
  const double after = 2 * D * i * o + kGemmFlopsPerGatheredByte * 4 * E * i;
  return before < after;
}

torch::Tensor edge_softmax(const BlockTensors& b, const torch::Tensor& scores, bool self_loops) {
  const std::int64_t E = b.src.size(0);
  // The per-dst maximum only keeps exp() in range: any per-dst shift gives the same softmax, so
  // it needs no gradient.
  torch::Tensor shift;
  {
    torch::NoGradGuard no_grad;
    const torch::Tensor s = scores.detach();
    auto rest = s.sizes().vec();
    rest[0] = b.num_dst;
    if (E > 0)
      shift = torch::segment_reduce(s.slice(0, 0, E), "max", /*lengths=*/b.indptr.slice(0, 1) - b.indptr.slice(0, 0, -1));
    else
      shift = torch::full(rest, -std::numeric_limits<float>::infinity(), s.options());
    if (self_loops) shift = torch::maximum(shift, s.slice(0, E, E + b.num_dst));
    // A dst without in-edges keeps -inf; no edge reads it.
  }
  const torch::Tensor dst = self_loops ? torch::cat({b.dst, self_ids(b)}) : b.dst;
  const torch::Tensor ex = torch::exp(scores - shift.index_select(0, dst));
  auto rest = ex.sizes().vec();
  rest[0] = b.num_dst;
  const torch::Tensor denom = torch::zeros(rest, ex.options()).index_add(0, dst, ex);
  return ex / denom.index_select(0, dst);
}

SAGEConvImpl::SAGEConvImpl(const SAGEConvOptions& o) : options(o) {
  fc_self = register_module("fc_self", torch::nn::Linear(torch::nn::LinearOptions(o.in(), o.out()).bias(o.bias())));
  fc_neigh = register_module("fc_neigh", torch::nn::Linear(torch::nn::LinearOptions(o.in(), o.out()).bias(false)));
  // DGL's SAGEConv.reset_parameters: Glorot (Xavier) uniform with the ReLU gain, zero bias.
  // (torch::nn::Linear's own default, Kaiming uniform with a = sqrt(5), starts several times
  // smaller on wide bag-of-words inputs.)
  torch::NoGradGuard no_grad;
  const double gain = std::sqrt(2.0);
  torch::nn::init::xavier_uniform_(fc_self->weight, gain);
  torch::nn::init::xavier_uniform_(fc_neigh->weight, gain);
  if (o.bias()) fc_self->bias.zero_();
}

namespace {
torch::Tensor inverse_in_degree(const BlockTensors& b) { return b.in_degree.clamp_min(1).reciprocal().unsqueeze(1); }  // mean of nothing = 0, as DGL
}  // namespace

torch::Tensor SAGEConvImpl::project(const torch::Tensor& h) { return torch::cat({linear_map(fc_neigh, h), linear_map(fc_self, h)}, /*dim=*/1); }

torch::Tensor SAGEConvImpl::aggregate(const BlockTensors& b, const torch::Tensor& h) {
  return torch::cat({h.slice(0, 0, b.num_dst), aggregate_sum(b, h) * inverse_in_degree(b)}, /*dim=*/1);
}

torch::Tensor SAGEConvImpl::apply(const torch::Tensor& a) {
  const std::int64_t in = options.in();
  return linear_map(fc_self, a.slice(1, 0, in)) + linear_map(fc_neigh, a.slice(1, in, 2 * in));
}

torch::Tensor SAGEConvImpl::forward(const BlockTensors& b, const torch::Tensor& h, bool projected) {
  const std::int64_t out = options.out();
  if (projected) return h.slice(0, 0, b.num_dst).slice(1, out, 2 * out) + aggregate_sum(b, h.slice(1, 0, out)) * inverse_in_degree(b);
  // The mean commutes with the bias-free linear map: apply it on whichever side costs less.
  torch::Tensor neigh = project_first(b, options.in(), out) ? aggregate_sum(b, linear_map(fc_neigh, h)) * inverse_in_degree(b)
                                                            : linear_map(fc_neigh, aggregate_sum(b, h) * inverse_in_degree(b));
  return linear_map(fc_self, h.slice(0, 0, b.num_dst)) + neigh;
}

GraphConvImpl::GraphConvImpl(const GraphConvOptions& o) : options(o) {
  fc = register_module("fc", torch::nn::Linear(torch::nn::LinearOptions(o.in(), o.out()).bias(false)));
  if (o.bias()) bias = register_parameter("bias", torch::zeros({o.out()}));
  // Glorot (Xavier) uniform as Kipf & Welling and DGL's GraphConv.reset_parameters.
  torch::NoGradGuard no_grad;
  torch::nn::init::xavier_uniform_(fc->weight);
}

GraphConvImpl::Norms GraphConvImpl::norms(const BlockTensors& b) const {
  const float loop = options.self_loop() ? 1.0f : 0.0f;
  Norms n;
  if (b.src_degree.defined()) {
    // Full-graph degrees: A + I's normalisation, and each dst's sampled sum scaled up by its
    // degree over its sampled in-edges, the sum over all its neighbours in expectation (1 when
    // every neighbour is there). The block's own counts would give a batch that sampled k of a
    // node's d neighbours about sqrt(d / k) times the scale full-graph inference gives it.
    n.src = (b.src_degree + loop).clamp_min(1).rsqrt().unsqueeze(1);
    const torch::Tensor dst_degree = b.src_degree.slice(0, 0, b.num_dst);  // the dst-prefix
    n.dst = (dst_degree + loop).clamp_min(1).rsqrt().unsqueeze(1);
    n.neigh = (dst_degree / b.in_degree.clamp_min(1)).unsqueeze(1);
    return n;
  }
  torch::Tensor out_deg = torch::bincount(b.src, /*weights=*/{}, /*minlength=*/b.num_src).to(torch::kFloat);
  if (options.self_loop()) out_deg.slice(0, 0, b.num_dst).add_(1);
  n.src = out_deg.clamp_min(1).rsqrt().unsqueeze(1);
  n.dst = (b.in_degree + loop).clamp_min(1).rsqrt().unsqueeze(1);
  return n;
}

torch::Tensor GraphConvImpl::project(const torch::Tensor& h) { return linear_map(fc, h); }

torch::Tensor GraphConvImpl::aggregate(const BlockTensors& b, const torch::Tensor& h) {
  const Norms n = norms(b);
  // The normalisations ride on the sum as per-edge weights: no scaled copy of the wide rows.
  torch::Tensor w = n.src.squeeze(1).index_select(0, b.src);
  if (n.neigh.defined()) w = w * n.neigh.squeeze(1).index_select(0, b.dst);
  torch::Tensor agg = aggregate_sum(b, h, w);
  if (options.self_loop()) agg = agg + h.slice(0, 0, b.num_dst) * n.src.slice(0, 0, b.num_dst);
  return agg * n.dst;
}

torch::Tensor GraphConvImpl::apply(const torch::Tensor& a) {
  const torch::Tensor out = linear_map(fc, a);
  return bias.defined() ? out + bias : out;
}

torch::Tensor GraphConvImpl::forward(const BlockTensors& b, const torch::Tensor& h, bool projected) {
  if (!projected && !project_first(b, options.in(), options.out())) return apply(aggregate(b, h));
  // The row scaling commutes with the bias-free linear map: scale the narrower rows.
  const Norms n = norms(b);
  const torch::Tensor x = (projected ? h : linear_map(fc, h)) * n.src;
  torch::Tensor agg = aggregate_sum(b, x);
  if (n.neigh.defined()) agg = agg * n.neigh;
  if (options.self_loop()) agg = agg + x.slice(0, 0, b.num_dst);
  agg = agg * n.dst;
  return bias.defined() ? agg + bias : agg;
}

GATConvImpl::GATConvImpl(const GATConvOptions& o) : options(o) {
  fc = register_module("fc", torch::nn::Linear(torch::nn::LinearOptions(o.in(), o.out() * o.heads()).bias(false)));
  // Glorot as DGL (gain for ReLU) on the weight and the attention vectors.
  const double gain = std::sqrt(2.0);
  torch::nn::init::xavier_normal_(fc->weight, gain);
  attn_l = register_parameter("attn_l", torch::empty({1, o.heads(), o.out()}));
  attn_r = register_parameter("attn_r", torch::empty({1, o.heads(), o.out()}));
  torch::nn::init::xavier_normal_(attn_l, gain);
  torch::nn::init::xavier_normal_(attn_r, gain);
  if (o.bias()) bias = register_parameter("bias", torch::zeros({o.heads(), o.out()}));
}

torch::Tensor GATConvImpl::forward(const BlockTensors& b, const torch::Tensor& h, torch::Tensor* attention, bool projected) {
  const std::int64_t H = options.heads(), D = options.out();
  const torch::Tensor z = (projected ? h : linear_map(fc, h)).view({b.num_src, H, D});
  const torch::Tensor el = (z * attn_l).sum(-1);                      // [num_src, H]
  const torch::Tensor er = (z.slice(0, 0, b.num_dst) * attn_r).sum(-1);  // [num_dst, H]
  torch::Tensor src = b.src, dst = b.dst;
  if (options.self_loop()) {
    src = torch::cat({b.src, self_ids(b)});
    dst = torch::cat({b.dst, self_ids(b)});
  }
  const torch::Tensor e = F::leaky_relu(el.index_select(0, src) + er.index_select(0, dst), F::LeakyReLUFuncOptions().negative_slope(options.negative_slope()));
  torch::Tensor a = edge_softmax(b, e, options.self_loop());
  if (attention) *attention = a;
  if (options.attn_dropout() > 0) a = F::dropout(a, F::DropoutFuncOptions().p(options.attn_dropout()).training(is_training()));
  // The block's edges in one pass (attention_sum), the self-loops (the last num_dst scores) apart.
  torch::Tensor out = attention_sum(b, z, a);
  if (options.self_loop()) out = out + z.slice(0, 0, b.num_dst) * a.slice(0, b.src.size(0)).unsqueeze(-1);
  return bias.defined() ? out + bias : out;
}

namespace {
// er = ((h W^T) viewed [n, H, D] * attn).sum(-1) = h ((W viewed [H, D, in] * attn).sum(1))^T: the
// scores of a side as a product with fc's rows folded by its attention vector, [H, in].
torch::Tensor folded(const torch::Tensor& weight, const torch::Tensor& attn, std::int64_t H, std::int64_t D) {
  return (weight.view({H, D, -1}) * attn.view({H, D, 1})).sum(1);
}
}  // namespace

torch::Tensor GATConvImpl::attn_dst_weight() const { return folded(fc->weight, attn_r, options.heads(), options.out()); }
torch::Tensor GATConvImpl::attn_src_weight() const { return folded(fc->weight, attn_l, options.heads(), options.out()); }

torch::Tensor GATConvImpl::forward_bipartite(const BlockTensors& b, const torch::Tensor& h_src, const torch::Tensor& er) {
  const std::int64_t H = options.heads(), D = options.out();
  // z and the src scores el in one product (fc's rows, then its rows folded by attn_l): no
  // [num_src, H, D] product with attn_l forward or backward. z stays a view of it, rows apart by
  // H more floats, which attention_sum reads as they are.
  const std::vector<torch::Tensor> zl = linear_map(h_src, torch::cat({fc->weight, attn_src_weight()})).split_with_sizes({H * D, H}, 1);
  const torch::Tensor z = zl[0].view({b.num_src, H, D}), el = zl[1];
  torch::Tensor a = attention_softmax(b, el, er, options.negative_slope());
  if (options.attn_dropout() > 0) a = F::dropout(a, F::DropoutFuncOptions().p(options.attn_dropout()).training(is_training()));
  const torch::Tensor out = attention_sum(b, z, a);
  return bias.defined() ? out + bias : out;
}

GnnImpl::GnnImpl(const GnnOptions& o) : options(o) {
  dropout_ = register_module("dropout", torch::nn::Dropout(o.dropout()));
  if (shardgnn::relational(o.kind())) {
    // Each type's feature width; a type without features gets embedding rows at the hidden width.
    std::vector<std::int64_t> dims;
    for (const NodeType& t : o.schema().types()) dims.push_back(t.feature_dim);
    RelGnnOptions ro(o.kind() == ModelKind::kRgcn ? RelModelKind::kRgcn : RelModelKind::kRgat, std::move(dims),
                     static_cast<std::int64_t>(o.schema().relations().size()), o.hidden(), o.out(), o.layers());
    ro.heads(o.heads()).bases(o.model().bases).dropout(o.dropout());
    rel_ = register_module("rgnn", RelGnn(ro).ptr());
    return;
  }
  for (std::int64_t l = 0; l < o.layers(); ++l) {
    const std::int64_t in = l == 0 ? o.in() : o.hidden();
    const bool last = l + 1 == o.layers();
    const std::string name = "conv" + std::to_string(l);
    switch (o.kind()) {
      case ModelKind::kSage: sage_.push_back(register_module(name, SAGEConv(SAGEConvOptions(in, last ? o.out() : o.hidden())))); break;
      case ModelKind::kGcn: gcn_.push_back(register_module(name, GraphConv(GraphConvOptions(in, last ? o.out() : o.hidden())))); break;
      case ModelKind::kGat:
        gat_.push_back(register_module(
            name, GATConv(GATConvOptions(in, last ? o.out() : o.hidden() / o.heads(), o.heads()).attn_dropout(o.dropout()))));
        break;
      case ModelKind::kRgcn:
      case ModelKind::kRgat: break;  // above
    }
  }
}

std::int64_t GnnImpl::layer_out_dim(std::int64_t l) const { return l + 1 == options.layers() ? options.out() : options.hidden(); }

torch::Tensor GnnImpl::dropout(const torch::Tensor& h) {
  const double p = options.dropout();
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
  if ((!h.device().is_cpu() && stream == nullptr) || h.scalar_type() != torch::kFloat || !h.is_contiguous()) return dropout_(h);
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

torch::Tensor GnnImpl::finish_layer(std::int64_t l, torch::Tensor h) const {
  const bool last = l + 1 == options.layers();
  if (h.scalar_type() != torch::kFloat) h = h.to(torch::kFloat);
  if (options.kind() == ModelKind::kGat) return last ? h.mean(/*dim=*/1) : torch::elu(h.flatten(/*start_dim=*/1));
  return last ? h : torch::relu(h);
}

torch::Tensor GnnImpl::forward_layer(std::int64_t l, const BlockTensors& b, torch::Tensor h, bool projected) {
  TORCH_CHECK(!projected || !is_training(), "projected rows are for inference (no dropout)");
  if (!projected) h = dropout(h);
  const auto i = static_cast<std::size_t>(l);
  {
    const Bf16Scope bf16(h.device(), options.precision() == Precision::kBFloat16);
    switch (options.kind()) {
      case ModelKind::kSage: h = sage_[i](b, h, projected); break;
      case ModelKind::kGcn: h = gcn_[i](b, h, projected); break;
      case ModelKind::kGat: h = gat_[i](b, h, nullptr, projected); break;
      case ModelKind::kRgcn:
      case ModelKind::kRgat: TORCH_CHECK(false, "R-GCN and R-GAT run whole batches (forward(BatchTensors))");
    }
  }
  return finish_layer(l, h);
}

bool GnnImpl::projects_table(std::int64_t l, std::int64_t edges, std::int64_t num_src, std::int64_t num_dst) const {
  if (attention(options.kind())) return true;  // attention scores need every projected src row anyway
  return project_first(edges, num_src, num_dst, l == 0 ? options.in() : options.hidden(), layer_out_dim(l));
}

std::int64_t GnnImpl::projected_width(std::int64_t l) const {
  const auto i = static_cast<std::size_t>(l);
  switch (options.kind()) {
    case ModelKind::kSage: return 2 * sage_[i]->options.out();
    case ModelKind::kGcn: return gcn_[i]->options.out();
    case ModelKind::kGat: return gat_[i]->options.out() * gat_[i]->options.heads();
    case ModelKind::kRgcn:
    case ModelKind::kRgat: break;
  }
  return 0;
}

torch::Tensor GnnImpl::project_layer(std::int64_t l, const torch::Tensor& h) {
  TORCH_CHECK(!is_training(), "projected rows are for inference (no dropout)");
  const auto i = static_cast<std::size_t>(l);
  torch::Tensor p;
  {
    const Bf16Scope bf16(h.device(), options.precision() == Precision::kBFloat16);
    switch (options.kind()) {
      case ModelKind::kSage: p = sage_[i]->project(h); break;
      case ModelKind::kGcn: p = gcn_[i]->project(h); break;
      case ModelKind::kGat: p = linear_map(gat_[i]->fc, h); break;
      case ModelKind::kRgcn:
      case ModelKind::kRgat: TORCH_CHECK(false, "R-GCN and R-GAT run whole batches (forward(BatchTensors))");
    }
  }
  return p.scalar_type() == torch::kFloat ? p : p.to(torch::kFloat);
}

torch::Tensor GnnImpl::aggregate_input(const BlockTensors& b, const torch::Tensor& x) {
  TORCH_CHECK(!is_training() && (options.kind() == ModelKind::kSage || options.kind() == ModelKind::kGcn), "aggregate_input: GraphSAGE or GCN, in eval mode");
  return options.kind() == ModelKind::kSage ? sage_[0]->aggregate(b, x) : gcn_[0]->aggregate(b, x);
}

torch::Tensor GnnImpl::forward_aggregated(const std::vector<BlockTensors>& blocks, const torch::Tensor& a) {
  TORCH_CHECK(static_cast<std::int64_t>(blocks.size()) == options.layers(), "the model has ", options.layers(), " layers, the batch ", blocks.size(),
              " blocks");
  TORCH_CHECK(!is_training() && (options.kind() == ModelKind::kSage || options.kind() == ModelKind::kGcn), "forward_aggregated: GraphSAGE or GCN, in eval mode");
  torch::Tensor x;
  {
    const Bf16Scope bf16(a.device(), options.precision() == Precision::kBFloat16);
    x = options.kind() == ModelKind::kSage ? sage_[0]->apply(a) : gcn_[0]->apply(a);
  }
  x = finish_layer(0, x);
  for (std::size_t l = 1; l < blocks.size(); ++l) x = forward_layer(static_cast<std::int64_t>(l), blocks[l], x);
  return x;
}

torch::Tensor GnnImpl::forward(const std::vector<BlockTensors>& blocks, torch::Tensor x) {
  TORCH_CHECK(static_cast<std::int64_t>(blocks.size()) == options.layers(), "the model has ", options.layers(), " layers, the batch ", blocks.size(),
              " blocks");
  for (std::size_t l = 0; l < blocks.size(); ++l) x = forward_layer(static_cast<std::int64_t>(l), blocks[l], x);
  return x;
}

torch::Tensor GnnImpl::forward(const BatchTensors& t) { return forward(t, -1, nullptr); }

torch::Tensor GnnImpl::forward(const BatchTensors& t, std::int64_t keep_layer, torch::Tensor* kept) {
  if (!rel_) return forward(t.blocks, t.x);
  TORCH_CHECK(t.typed(), "R-GCN and R-GAT train on typed graphs: the batch has no node types");
  TORCH_CHECK(static_cast<std::int64_t>(t.blocks.size()) == options.layers(), "the model has ", options.layers(), " layers, the batch ", t.blocks.size(),
              " blocks");
  std::vector<RelationBlocks> blocks;
  const bool rgcn = options.kind() == ModelKind::kRgcn;
  for (const BlockTensors& b : t.blocks) blocks.push_back(split_by_relation(b, t.node_type, options.schema(), /*whole=*/rgcn, /*compact=*/!rgcn));
  std::vector<torch::Tensor> xs = t.xs;
  if (embeddings_) {
    std::vector<torch::Tensor> rows = embeddings_->gather(*t.type_ids);
    for (const int ty : embeddings_->types()) xs[static_cast<std::size_t>(ty)] = rows[static_cast<std::size_t>(ty)].to(t.node_type.device());
  }
  return rel_->forward(blocks, xs, t.at, t.blocks.front().num_src, [this](const torch::Tensor& h) { return dropout(h); }, keep_layer, kept);
}

void GnnImpl::skip_batch() {
  if (embeddings_) embeddings_->gather_nothing();
}

void GnnImpl::step_embeddings(double scale) {
  if (embeddings_) embeddings_->step(scale);
}

}  // namespace shardgnn
