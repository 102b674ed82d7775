#include "model/convs.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>

#include "datasets/random.hpp"
#include "model/attention_sum.hpp"
#include "model/autocast.hpp"
#include "model/gemm.hpp"

namespace shardgnn {

namespace {

namespace F = torch::nn::functional;

torch::Tensor view_int64(const std::vector<std::int64_t>& v, const torch::Device& device) {
  if (v.empty()) return torch::empty({0}, torch::TensorOptions().dtype(torch::kLong).device(device));
  // from_blob wants a mutable pointer; the tensor is only ever read.
  auto t = torch::from_blob(const_cast<std::int64_t*>(v.data()), {static_cast<std::int64_t>(v.size())}, torch::kLong);
  return t.to(device);
}

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
  BlockTensors t = block_tensors(block.num_src, block.num_dst, view_int64(block.indptr, device), view_int64(block.indices, device));
  if (!block.relations.empty())
    t.relation = torch::from_blob(const_cast<std::int32_t*>(block.relations.data()), {static_cast<std::int64_t>(block.relations.size())}, torch::kInt32)
                     .to(device, torch::kInt64);
  return t;
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
  t.y = view_int64(target_values(mb.targets), device);
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

namespace {
// The neighbours' elementwise max per dst (0 for a dst without in-edges, as PyG's max).
torch::Tensor aggregate_max(const BlockTensors& b, const torch::Tensor& h_in) {
  const torch::Tensor h = h_in.scalar_type() == torch::kBFloat16 ? h_in.to(torch::kFloat) : h_in;
  auto shape = h.sizes().vec();
  shape[0] = b.num_dst;
  return torch::zeros(shape, h.options()).index_reduce(0, b.dst, h.index_select(0, b.src), "amax", /*include_self=*/false);
}
}  // namespace

// The neighbours' rows joined as the options say: mean (the sum scaled by 1 / in-degree), sum or max.
torch::Tensor SAGEConvImpl::neighbours(const BlockTensors& b, const torch::Tensor& h) const {
  switch (options.aggregation()) {
    case Aggregation::kMean: return aggregate_sum(b, h) * inverse_in_degree(b);
    case Aggregation::kSum: return aggregate_sum(b, h);
    case Aggregation::kMax: return aggregate_max(b, h);
  }
  return {};
}

torch::Tensor SAGEConvImpl::project(const torch::Tensor& h) { return torch::cat({linear_map(fc_neigh, h), linear_map(fc_self, h)}, /*dim=*/1); }

bool SAGEConvImpl::projects_first(std::int64_t edges, std::int64_t num_src, std::int64_t num_dst) const {
  return options.aggregation() != Aggregation::kMax && project_first(edges, num_src, num_dst, options.in(), options.out());
}

torch::Tensor SAGEConvImpl::aggregate(const BlockTensors& b, const torch::Tensor& h) { return torch::cat({h.slice(0, 0, b.num_dst), neighbours(b, h)}, /*dim=*/1); }

torch::Tensor SAGEConvImpl::apply(const torch::Tensor& a) {
  const std::int64_t in = options.in();
  return linear_map(fc_self, a.slice(1, 0, in)) + linear_map(fc_neigh, a.slice(1, in, 2 * in));
}

torch::Tensor SAGEConvImpl::forward(const BlockTensors& b, const torch::Tensor& h, bool projected) {
  const std::int64_t out = options.out();
  if (projected) return h.slice(0, 0, b.num_dst).slice(1, out, 2 * out) + neighbours(b, h.slice(1, 0, out));
  // The mean and the sum commute with the bias-free linear map: apply it on whichever side costs
  // less. The max does not: the map comes after it.
  torch::Tensor neigh = options.aggregation() != Aggregation::kMax && project_first(b, options.in(), out) ? neighbours(b, linear_map(fc_neigh, h))
                                                                                                          : linear_map(fc_neigh, neighbours(b, h));
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

bool GraphConvImpl::projects_first(std::int64_t edges, std::int64_t num_src, std::int64_t num_dst) const {
  return project_first(edges, num_src, num_dst, options.in(), options.out());
}

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

torch::Tensor GATConvImpl::project(const torch::Tensor& h) { return linear_map(fc, h); }

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

GATv2ConvImpl::GATv2ConvImpl(const GATv2ConvOptions& o) : options(o) {
  const std::int64_t HD = o.out() * o.heads();
  fc_src = register_module("fc_src", torch::nn::Linear(torch::nn::LinearOptions(o.in(), HD).bias(false)));
  fc_dst = register_module("fc_dst", torch::nn::Linear(torch::nn::LinearOptions(o.in(), HD).bias(false)));
  attn = register_parameter("attn", torch::empty({1, o.heads(), o.out()}));
  bias = register_parameter("bias", torch::zeros({o.heads(), o.out()}));
  // Glorot as PyG's GATv2Conv.reset_parameters.
  torch::NoGradGuard no_grad;
  torch::nn::init::xavier_uniform_(fc_src->weight);
  torch::nn::init::xavier_uniform_(fc_dst->weight);
  torch::nn::init::xavier_uniform_(attn);
}

torch::Tensor GATv2ConvImpl::conv(const LayerBlock& lb, const torch::Tensor& h) {
  const BlockTensors& b = lb.block;
  const std::int64_t H = options.heads(), D = options.out();
  const torch::Tensor xs = linear_map(fc_src, h).view({b.num_src, H, D});
  const torch::Tensor xd = linear_map(fc_dst, h.slice(0, 0, b.num_dst)).view({b.num_dst, H, D});
  torch::Tensor src = b.src, dst = b.dst;
  if (options.self_loop()) {
    src = torch::cat({b.src, self_ids(b)});
    dst = torch::cat({b.dst, self_ids(b)});
  }
  // The per-edge sum is E x heads x out: GATv2's scores need it (the nonlinearity sits between
  // the two sides), where GAT's split into a src and a dst score.
  const torch::Tensor m = F::leaky_relu(xs.index_select(0, src) + xd.index_select(0, dst), F::LeakyReLUFuncOptions().negative_slope(options.negative_slope()));
  torch::Tensor a = edge_softmax(b, (m * attn).sum(-1), options.self_loop());
  if (options.attn_dropout() > 0) a = F::dropout(a, F::DropoutFuncOptions().p(options.attn_dropout()).training(is_training()));
  torch::Tensor out = attention_sum(b, xs, a);
  if (options.self_loop()) out = out + xs.slice(0, 0, b.num_dst) * a.slice(0, b.src.size(0)).unsqueeze(-1);
  return out + bias;
}

GINConvImpl::GINConvImpl(const GINConvOptions& o) : options(o) {
  for (std::int64_t i = 0; i < o.mlp_layers(); ++i)
    mlp.push_back(register_module("mlp" + std::to_string(i), torch::nn::Linear(i == 0 ? o.in() : o.out(), o.out())));
  if (o.train_eps()) eps = register_parameter("eps", torch::zeros({1}));
  else eps = register_buffer("eps", torch::zeros({1}));
}

torch::Tensor GINConvImpl::aggregate(const BlockTensors& b, const torch::Tensor& h) {
  const torch::Tensor self = h.slice(0, 0, b.num_dst);
  return torch::cat({self.scalar_type() == torch::kFloat ? self : self.to(torch::kFloat), aggregate_sum(b, h)}, /*dim=*/1);
}

torch::Tensor GINConvImpl::apply(const torch::Tensor& a) {
  // eps trains: it is applied here, not in the sums that evaluation keeps across validations.
  const std::int64_t in = options.in();
  torch::Tensor x = a.slice(1, in, 2 * in) + (1 + eps) * a.slice(1, 0, in);
  for (std::size_t i = 0; i < mlp.size(); ++i) {
    x = linear_map(mlp[i], x);
    if (i + 1 < mlp.size()) x = torch::relu(x);
  }
  return x;
}

torch::Tensor Layer::project(const torch::Tensor&) { TORCH_CHECK(false, "this layer has no projected form (projected_width() 0)"); }
torch::Tensor Layer::forward_projected(const BlockTensors&, const torch::Tensor&) { TORCH_CHECK(false, "this layer has no projected form"); }
torch::Tensor Layer::aggregate(const BlockTensors&, const torch::Tensor&) { TORCH_CHECK(false, "this layer has no part without weights"); }
torch::Tensor Layer::apply(const torch::Tensor&) { TORCH_CHECK(false, "this layer has no part without weights"); }

}  // namespace shardgnn
