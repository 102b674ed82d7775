#include "model/relational.hpp"

#include "model/attention_sum.hpp"
#include "model/gemm.hpp"
#include "model/relgat_cpu.hpp"

#include <cmath>
#include <limits>

namespace shardgnn {

namespace F = torch::nn::functional;

RelationBlocks split_by_relation_ops(const BlockTensors& b, const torch::Tensor& node_type, const GraphSchema& schema, bool whole, bool compact) {
  const int T = schema.num_types();
  std::vector<std::int64_t> table(static_cast<std::size_t>(T * T), -1);
  for (int d = 0; d < T; ++d)
    for (int s = 0; s < T; ++s) table[static_cast<std::size_t>(d * T + s)] = schema.relation_between(d, s);
  const torch::Tensor lookup = torch::tensor(table, torch::TensorOptions().dtype(torch::kInt64)).to(b.src.device());
  const torch::Tensor types = node_type.to(torch::kInt64);
  const torch::Tensor rel = b.relation.defined() ? b.relation : lookup.index_select(0, types.index_select(0, b.dst) * T + types.index_select(0, b.src));
  RelationBlocks out;
  out.num_src = b.num_src;
  out.num_dst = b.num_dst;
  for (std::size_t r = 0; r < schema.relations().size(); ++r) {
    const torch::Tensor idx = (rel == static_cast<std::int64_t>(r)).nonzero().squeeze(1);
    const torch::Tensor dst = b.dst.index_select(0, idx);
    const torch::Tensor src = b.src.index_select(0, idx);
    if (whole) {
      const torch::Tensor counts = torch::bincount(dst, /*weights=*/{}, /*minlength=*/b.num_dst);
      const torch::Tensor indptr = torch::cat({torch::zeros({1}, counts.options()), counts.cumsum(0)});
      out.relations.push_back(block_tensors(b.num_src, b.num_dst, indptr, src));
    }
    if (!compact) continue;
    // The edges are grouped by dst (CSR order): runs of equal dst are its rows. The src nodes are
    // marked and numbered in one pass over the src list (no sort).
    const auto [dst_rows, dst_at, c_counts] = torch::unique_consecutive(dst, /*return_inverse=*/true, /*return_counts=*/true);
    const torch::Tensor mark = torch::zeros({b.num_src}, src.options()).index_fill_(0, src, 1);
    const torch::Tensor src_rows = mark.nonzero().squeeze(1);
    const torch::Tensor src_at = (mark.cumsum(0) - 1).index_select(0, src);
    const torch::Tensor c_indptr = torch::cat({torch::zeros({1}, c_counts.options()), c_counts.cumsum(0)});
    out.compact.push_back(block_tensors(src_rows.size(0), dst_rows.size(0), c_indptr, src_at));
    out.src_rows.push_back(src_rows);
    out.dst_rows.push_back(dst_rows);
  }
  return out;
}

namespace {

// The split on the CPU as loops over the block's CSR: the edges bucketed by relation in one pass
// (stable, so each relation's keep the block's dst order), then per relation its sub-block's arrays
// written directly, where the tensor composition (split_by_relation_ops) costs a dozen ops a
// relation (docs/results/hetero.md).
RelationBlocks split_on_cpu(const BlockTensors& b, const torch::Tensor& node_type, const GraphSchema& schema, bool whole, bool compact) {
  const auto R = static_cast<std::int64_t>(schema.relations().size());
  const torch::Tensor types = node_type.to(torch::kInt64).contiguous();
  const torch::Tensor indptr = b.indptr.contiguous(), src = b.src.contiguous();
  const std::int64_t *ip = indptr.data_ptr<std::int64_t>(), *s = src.data_ptr<std::int64_t>(), *ty = types.data_ptr<std::int64_t>();
  // Each relation's edges in block order (a counting sort); the relation is looked up again in
  // the second pass rather than kept per edge: the stored one, else the one joining the end types.
  const torch::Tensor stored = b.relation.defined() ? b.relation.contiguous() : torch::Tensor();
  const std::int64_t* rel = stored.defined() ? stored.data_ptr<std::int64_t>() : nullptr;
  const auto relation = [&](std::int64_t v, std::int64_t e) {
    return rel != nullptr ? static_cast<int>(rel[e]) : schema.relation_between(static_cast<int>(ty[v]), static_cast<int>(ty[s[e]]));
  };
  std::vector<std::int64_t> count(static_cast<std::size_t>(R + 1), 0);
  for (std::int64_t v = 0; v < b.num_dst; ++v)
    for (std::int64_t e = ip[v]; e < ip[v + 1]; ++e)
      if (const int r = relation(v, e); r >= 0) ++count[static_cast<std::size_t>(r + 1)];
  for (std::int64_t r = 0; r < R; ++r) count[static_cast<std::size_t>(r + 1)] += count[static_cast<std::size_t>(r)];
  // 32-bit positions: these two are the split's largest temporaries, and a block holds far fewer
  // than 2^31 edges.
  TORCH_CHECK(count.back() < std::numeric_limits<std::int32_t>::max(), "split_by_relation: a block of ", count.back(), " edges (at most 2^31 - 1)");
  const torch::Tensor order_t = torch::empty({count.back()}, torch::kInt32), dst_t = torch::empty({count.back()}, torch::kInt32);
  std::int32_t *order = order_t.data_ptr<std::int32_t>(), *dst_of = dst_t.data_ptr<std::int32_t>();
  {
    std::vector<std::int64_t> next(count.begin(), count.end() - 1);
    for (std::int64_t v = 0; v < b.num_dst; ++v)
      for (std::int64_t e = ip[v]; e < ip[v + 1]; ++e) {
        const int r = relation(v, e);
        if (r < 0) continue;
        const std::int64_t at = next[static_cast<std::size_t>(r)]++;
        order[static_cast<std::size_t>(at)] = static_cast<std::int32_t>(e);
        dst_of[static_cast<std::size_t>(at)] = static_cast<std::int32_t>(v);
      }
  }
  const auto i64 = torch::TensorOptions().dtype(torch::kInt64);
  const auto f32 = torch::TensorOptions().dtype(torch::kFloat);
  RelationBlocks out;
  out.num_src = b.num_src;
  out.num_dst = b.num_dst;
  // Src positions numbered per relation in ascending order; -1 between relations.
  const torch::Tensor number_t = torch::full({b.num_src}, -1, torch::kInt64);
  std::int64_t* number = number_t.data_ptr<std::int64_t>();
  for (std::int64_t r = 0; r < R; ++r) {
    const std::int64_t e0 = count[static_cast<std::size_t>(r)], n = count[static_cast<std::size_t>(r + 1)] - e0;
    const std::int32_t *edges = order + e0, *dsts = dst_of + e0;
    if (whole) {
      BlockTensors w;
      w.num_src = b.num_src;
      w.num_dst = b.num_dst;
      w.indptr = torch::zeros({b.num_dst + 1}, i64);
      w.src = torch::empty({n}, i64);
      w.dst = torch::from_blob(const_cast<std::int32_t*>(dsts), {n}, torch::kInt32).to(torch::kInt64);
      w.in_degree = torch::zeros({b.num_dst}, f32);
      std::int64_t *wp = w.indptr.data_ptr<std::int64_t>(), *ws = w.src.data_ptr<std::int64_t>();
      float* deg = w.in_degree.data_ptr<float>();
      for (std::int64_t i = 0; i < n; ++i) {
        ws[i] = s[edges[i]];
        ++wp[dsts[i] + 1];
        deg[dsts[i]] += 1;
      }
      for (std::int64_t v = 0; v < b.num_dst; ++v) wp[v + 1] += wp[v];
      out.relations.push_back(std::move(w));
    }
    if (!compact) continue;
    std::int64_t n_src = 0, n_dst = 0;
    for (std::int64_t i = 0; i < n; ++i) {
      number[s[edges[i]]] = 0;
      if (i == 0 || dsts[i] != dsts[i - 1]) ++n_dst;
    }
    for (std::int64_t u = 0; u < b.num_src; ++u)
      if (number[u] == 0) ++n_src;
    BlockTensors c;
    c.num_src = n_src;
    c.num_dst = n_dst;
    torch::Tensor src_rows = torch::empty({n_src}, i64), dst_rows = torch::empty({n_dst}, i64);
    c.indptr = torch::empty({n_dst + 1}, i64);
    c.src = torch::empty({n}, i64);
    c.dst = torch::empty({n}, i64);
    c.in_degree = torch::empty({n_dst}, f32);
    std::int64_t *sr = src_rows.data_ptr<std::int64_t>(), *dr = dst_rows.data_ptr<std::int64_t>(), *cp = c.indptr.data_ptr<std::int64_t>();
    std::int64_t *cs = c.src.data_ptr<std::int64_t>(), *cd = c.dst.data_ptr<std::int64_t>();
    float* deg = c.in_degree.data_ptr<float>();
    for (std::int64_t u = 0, k = 0; u < b.num_src; ++u)
      if (number[u] == 0) {
        sr[k] = u;
        number[u] = k++;
      }
    std::int64_t row = -1;
    cp[0] = 0;
    for (std::int64_t i = 0; i < n; ++i) {
      if (i == 0 || dsts[i] != dsts[i - 1]) {
        if (row >= 0) cp[row + 1] = i;
        dr[++row] = dsts[i];
      }
      cs[i] = number[s[edges[i]]];
      cd[i] = row;
    }
    if (row >= 0) cp[row + 1] = n;
    for (std::int64_t v = 0; v < n_dst; ++v) deg[v] = static_cast<float>(cp[v + 1] - cp[v]);
    for (std::int64_t k = 0; k < n_src; ++k) number[sr[k]] = -1;
    out.compact.push_back(std::move(c));
    out.src_rows.push_back(std::move(src_rows));
    out.dst_rows.push_back(std::move(dst_rows));
  }
  return out;
}

}  // namespace

RelationBlocks split_by_relation(const BlockTensors& b, const torch::Tensor& node_type, const GraphSchema& schema, bool whole, bool compact) {
  if (b.src.device().is_cpu() && node_type.device().is_cpu()) return split_on_cpu(b, node_type, schema, whole, compact);
  return split_by_relation_ops(b, node_type, schema, whole, compact);
}

RelGraphConvImpl::RelGraphConvImpl(const RelGraphConvOptions& o) : options(o) {
  // Glorot with the ReLU gain, as DGL's RelGraphConv initialises its weights; zero bias.
  const double gain = std::sqrt(2.0);
  if (o.bases() > 0) {
    basis = register_parameter("basis", torch::empty({o.bases(), o.in(), o.out()}));
    coefficients = register_parameter("coefficients", torch::empty({o.relations(), o.bases()}));
    torch::nn::init::xavier_uniform_(basis, gain);
    torch::nn::init::xavier_uniform_(coefficients, gain);
  } else {
    weight = register_parameter("weight", torch::empty({o.relations(), o.in(), o.out()}));
    torch::nn::init::xavier_uniform_(weight, gain);
  }
  loop_weight = register_parameter("loop_weight", torch::empty({o.in(), o.out()}));
  torch::nn::init::xavier_uniform_(loop_weight, gain);
  if (o.bias()) bias = register_parameter("bias", torch::zeros({o.out()}));
}

torch::Tensor RelGraphConvImpl::relation_weights() const {
  if (!basis.defined()) return weight;
  return torch::matmul(coefficients, basis.view({options.bases(), -1})).view({options.relations(), options.in(), options.out()});
}

torch::Tensor RelGraphConvImpl::forward(const RelationBlocks& b, const torch::Tensor& h) {
  // Products through linear_map (oneDNN's sgemm, model/gemm.hpp), which takes W^T.
  torch::Tensor out = linear_map(h.slice(0, 0, b.num_dst), loop_weight.t());
  const torch::Tensor W = relation_weights();
  for (std::size_t r = 0; r < b.relations.size(); ++r) {
    const BlockTensors& br = b.relations[r];
    if (br.src.size(0) == 0) continue;
    // The mean over v's in-edges of r (0 for none), then W_r: sums on the narrower side are what
    // project_first decides for the homogeneous layers; the mean first keeps one GEMM per relation
    // on the dst rows.
    const torch::Tensor mean = aggregate_sum(br, h) * br.in_degree.clamp_min(1).reciprocal().unsqueeze(1);
    out = out + linear_map(mean, W[static_cast<std::int64_t>(r)].t());
  }
  return bias.defined() ? out + bias : out;
}

RelGATConvImpl::RelGATConvImpl(const RelGATConvOptions& o) : options(o) {
  for (std::int64_t r = 0; r < o.relations(); ++r)
    per_relation.push_back(register_module("relation" + std::to_string(r),
                                           GATConv(GATConvOptions(o.in(), o.out(), o.heads()).self_loop(false).bias(false).attn_dropout(o.attn_dropout()))));
  // torch's default Linear initialisation, as the self term of the DGL peer (bench/peers/dgl_rgat.py).
  self_fc = register_module("self_fc", torch::nn::Linear(torch::nn::LinearOptions(o.in(), o.out() * o.heads()).bias(false)));
  bias = register_parameter("bias", torch::zeros({o.heads(), o.out()}));
}

torch::Tensor RelGATConvImpl::forward(const RelationBlocks& b, const torch::Tensor& h) {
  const std::int64_t H = options.heads(), HD = H * options.out();
  std::vector<std::size_t> active;
  for (std::size_t r = 0; r < b.compact.size(); ++r)
    if (b.compact[r].src.size(0) > 0) active.push_back(r);
  // The dst rows in one product: the self term's W_0 and each relation's [heads, in] attention
  // side (its er) stacked, rather than a product per relation only `heads` wide.
  std::vector<torch::Tensor> w = {self_fc->weight};
  for (const std::size_t r : active) w.push_back(per_relation[r]->attn_dst_weight());
  // Split, not sliced: backward, the parts' gradients join in one cat rather than a zero-filled
  // product-sized tensor per slice.
  std::vector<std::int64_t> widths = {HD};
  widths.resize(w.size(), H);
  const torch::Tensor wd = w.size() == 1 ? w.front() : torch::cat(w);
  if (on_cpu_sgemm(h) && (options.attn_dropout() == 0 || !is_training())) {
    std::vector<torch::Tensor> wr;
    for (const std::size_t r : active) wr.push_back(torch::cat({per_relation[r]->fc->weight, per_relation[r]->attn_src_weight()}));
    return rel_gat_cpu(h, wd, bias, wr, b, active, H, options.out(), per_relation.empty() ? 0.2 : per_relation.front()->options.negative_slope());
  }
  const std::vector<torch::Tensor> dst = linear_map(h.slice(0, 0, b.num_dst), wd).split_with_sizes(widths, 1);
  torch::Tensor out = dst.front().view({b.num_dst, H, options.out()}) + bias;
  if (active.empty()) return out;
  // Every relation's src rows in one gather, split into views: backward, the split's gradients
  // are concatenated and land in h's in one scatter, not in an h-sized tensor each.
  std::vector<torch::Tensor> rows;
  std::vector<std::int64_t> sizes;
  for (const std::size_t r : active) {
    rows.push_back(b.src_rows[r]);
    sizes.push_back(b.src_rows[r].size(0));
  }
  const std::vector<torch::Tensor> src = gather_rows(h, torch::cat(rows)).split_with_sizes(sizes);
  for (std::size_t i = 0; i < active.size(); ++i) {
    const std::size_t r = active[i];
    const torch::Tensor er = gather_rows(dst[i + 1].contiguous(), b.dst_rows[r]);
    // In place: `out` is this layer's own sum, which no other node of the graph reads.
    add_rows_(out, b.dst_rows[r], per_relation[r]->forward_bipartite(b.compact[r], src[i], er));
  }
  return out;
}

}  // namespace shardgnn
