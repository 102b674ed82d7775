#include "model/relgat_cpu.hpp"

#include <ATen/Parallel.h>
#include <torch/autograd.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "model/attention_sum.hpp"
#include "model/gemm.hpp"
#include "datasets/vector_clones.hpp"

namespace shardgnn {

namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// One relation's compact block as the kernels read it. Its scores and messages sit in wider rows:
// z (H heads of D) in a row of zw floats from zl; er at column er_at of a row of ew floats; the
// output row of dst v is out row dst_rows[v]. The src scores el come apart, [num_src_r, H]: the
// softmax reads them edge by edge, and read from zl's rows each would be a cache miss of its own.
struct RelationView {
  const std::int64_t *indptr, *src, *dst_rows;
  std::int64_t num_dst;
  const float* zl;  // [num_src_r, zw]: z, then el
  std::int64_t zw;
  const float* el;  // [num_src_r, H]
  const float* er;  // [num_dst, ew]
  std::int64_t ew, er_at;
};

// The dst rows come scattered over the output (a relation's among all the layer's): the next
// one's row of `rows` (out forward, its gradient backward) and its scores are fetched while this
// one's edges run, rather than missed in turn.
inline void prefetch_dst(const RelationView& r, const float* rows, std::int64_t width, std::int64_t dv) {
  __builtin_prefetch(r.er + dv * r.ew + r.er_at);
  for (std::int64_t k = 0; k < width; k += 16) __builtin_prefetch(rows + dv * width + k);
}

// Softmax of leaky_relu(el[src] + er[v]) over dst rows [v0, v1)'s edges into a [E_r, H], and the
// attention sums added into out's rows (out [*, H * D]).
SHARDGNN_VECTOR_CLONES
void forward_rows(const RelationView& r, float* __restrict a, float* __restrict out, std::int64_t H, std::int64_t D, float slope, std::int64_t v0,
                  std::int64_t v1) {
  const std::int64_t HD = H * D;
  for (std::int64_t v = v0; v < v1; ++v) {
    const std::int64_t e0 = r.indptr[v], e1 = r.indptr[v + 1], dv = r.dst_rows[v];
    if (v + 1 < v1) prefetch_dst(r, out, HD, r.dst_rows[v + 1]);
    // Its src rows come scattered too: fetched while the softmax runs.
    for (std::int64_t e = e0; e < e1; ++e)
      for (std::int64_t k = 0; k < HD; k += 16) __builtin_prefetch(r.zl + r.src[e] * r.zw + k);
    for (std::int64_t h = 0; h < H; ++h) {
      const float er = r.er[dv * r.ew + r.er_at + h];
      float most = -std::numeric_limits<float>::infinity();
      for (std::int64_t e = e0; e < e1; ++e) {
        const float x = r.el[r.src[e] * H + h] + er, y = x > 0 ? x : slope * x;
        a[e * H + h] = y;
        most = std::max(most, y);
      }
      float sum = 0;
      for (std::int64_t e = e0; e < e1; ++e) sum += a[e * H + h] = std::exp(a[e * H + h] - most);
      for (std::int64_t e = e0; e < e1; ++e) a[e * H + h] /= sum;
    }
    float* o = out + dv * HD;
    for (std::int64_t e = e0; e < e1; ++e) {
      const float* z = r.zl + r.src[e] * r.zw;
      for (std::int64_t h = 0; h < H; ++h) {
        const float w = a[e * H + h];
        for (std::int64_t d = 0; d < D; ++d) o[h * D + d] += w * z[h * D + d];
      }
    }
  }
}

// A relation's edges in src order (a counting sort of the dst-major CSR): src row s's edges are
// edge[first[s] .. first[s + 1]), edge k's compact dst row dst[k]. Backward walks it so that each
// src row's gradient is summed in cache and written once, rather than added to edge by edge at
// scattered rows.
struct BySrc {
  std::vector<std::int64_t> first;
  std::vector<std::int32_t> edge, dst;
  std::vector<std::int64_t> next;  // the sort's scratch
};

// Fills t for r; its vectors are reused from relation to relation (one allocation each per backward:
// freed large blocks raise glibc's mmap threshold, and later ones then stay resident in its heap).
void by_src(const RelationView& r, std::int64_t num_src, BySrc& t) {
  const std::int64_t E = r.indptr[r.num_dst];
  TORCH_CHECK(E < std::numeric_limits<std::int32_t>::max(), "rel_gat_cpu: a relation block of ", E, " edges (at most 2^31 - 1)");
  t.first.assign(static_cast<std::size_t>(num_src + 1), 0);
  t.edge.resize(static_cast<std::size_t>(E));
  t.dst.resize(static_cast<std::size_t>(E));
  for (std::int64_t e = 0; e < E; ++e) ++t.first[static_cast<std::size_t>(r.src[e] + 1)];
  for (std::int64_t u = 0; u < num_src; ++u) t.first[static_cast<std::size_t>(u + 1)] += t.first[static_cast<std::size_t>(u)];
  t.next.assign(t.first.begin(), t.first.end() - 1);
  for (std::int64_t v = 0; v < r.num_dst; ++v)
    for (std::int64_t e = r.indptr[v]; e < r.indptr[v + 1]; ++e) {
      const auto k = static_cast<std::size_t>(t.next[static_cast<std::size_t>(r.src[e])]++);
      t.edge[k] = static_cast<std::int32_t>(e);
      t.dst[k] = static_cast<std::int32_t>(v);
    }
}

// Backward's first pass over src rows [s0, s1), given g = dL/dout [*, H * D]: each src row's z
// gradient (its edges' a g summed) into dzl's row, and each edge's da = z . g per head.
SHARDGNN_VECTOR_CLONES
void backward_src_rows(const RelationView& r, const BySrc& t, const float* a, const float* g, float* __restrict dzl, float* __restrict da, std::int64_t H,
                       std::int64_t D, std::int64_t s0, std::int64_t s1) {
  const std::int64_t HD = H * D;
  for (std::int64_t s = s0; s < s1; ++s) {
    const float* z = r.zl + s * r.zw;
    float* dz = dzl + s * r.zw;
    std::fill(dz, dz + HD, 0.0f);
    const std::int64_t k1 = t.first[static_cast<std::size_t>(s + 1)];
    for (std::int64_t k = t.first[static_cast<std::size_t>(s)]; k < k1; ++k) {
      // The dst rows come scattered: the next edge's is fetched while this one's runs.
      if (k + 1 < k1) {
        __builtin_prefetch(a + t.edge[static_cast<std::size_t>(k + 1)] * H);
        for (std::int64_t j = 0; j < HD; j += 16) __builtin_prefetch(g + r.dst_rows[t.dst[static_cast<std::size_t>(k + 1)]] * HD + j);
      }
      const std::int64_t e = t.edge[static_cast<std::size_t>(k)];
      const float* gv = g + r.dst_rows[t.dst[static_cast<std::size_t>(k)]] * HD;
      for (std::int64_t h = 0; h < H; ++h) {
        const float w = a[e * H + h];
        // z . g summed in 16 lanes and then across them: one ordered sum would be D dependent adds.
        float lanes[16] = {};
        std::int64_t d = h * D;
        for (; d + 16 <= (h + 1) * D; d += 16)
          for (int j = 0; j < 16; ++j) {
            lanes[j] += z[d + j] * gv[d + j];
            dz[d + j] += w * gv[d + j];
          }
        for (; d < (h + 1) * D; ++d) {
          lanes[0] += z[d] * gv[d];
          dz[d] += w * gv[d];
        }
        float acc = 0;
        for (const float x : lanes) acc += x;
        da[e * H + h] = acc;
      }
    }
  }
}

// The second pass, over dst rows [v0, v1): the softmax's and leaky_relu's gradients, da turned in
// place into each edge's score gradient, summed per dst into dp's er columns.
void backward_scores(const RelationView& r, const float* a, float* __restrict da, float* __restrict dp, std::int64_t dpw, std::int64_t H,
                     std::int64_t HD, float slope, std::int64_t v0, std::int64_t v1) {
  for (std::int64_t v = v0; v < v1; ++v) {
    const std::int64_t e0 = r.indptr[v], e1 = r.indptr[v + 1], dv = r.dst_rows[v];
    // The next dst row's scattered reads and write, fetched while this one runs.
    if (v + 1 < v1) {
      const std::int64_t next = r.dst_rows[v + 1];
      __builtin_prefetch(r.er + next * r.ew + r.er_at);
      __builtin_prefetch(dp + next * dpw + HD + r.er_at, 1);
      for (std::int64_t e = e1; e < r.indptr[v + 2]; ++e) __builtin_prefetch(r.el + r.src[e] * H);
    }
    for (std::int64_t h = 0; h < H; ++h) {
      float dot = 0;
      for (std::int64_t e = e0; e < e1; ++e) dot += a[e * H + h] * da[e * H + h];
      const float er = r.er[dv * r.ew + r.er_at + h];
      float sum = 0;
      for (std::int64_t e = e0; e < e1; ++e) {
        const float ds = a[e * H + h] * (da[e * H + h] - dot);
        const float dpre = r.el[r.src[e] * H + h] + er > 0 ? ds : slope * ds;
        da[e * H + h] = dpre;
        sum += dpre;
      }
      dp[dv * dpw + HD + r.er_at + h] = sum;
    }
  }
}

// The third pass, over src rows [s0, s1): the score gradients summed per src into dzl's el columns.
void backward_src_scores(const RelationView& r, const BySrc& t, const float* ds, float* __restrict dzl, std::int64_t H, std::int64_t HD, std::int64_t s0,
                         std::int64_t s1) {
  for (std::int64_t s = s0; s < s1; ++s) {
    float* del = dzl + s * r.zw + HD;
    std::fill(del, del + H, 0.0f);
    for (std::int64_t k = t.first[static_cast<std::size_t>(s)]; k < t.first[static_cast<std::size_t>(s + 1)]; ++k) {
      // Edges come scattered in src order: a few ahead are fetched.
      if (k + 8 < static_cast<std::int64_t>(t.edge.size())) __builtin_prefetch(ds + t.edge[static_cast<std::size_t>(k + 8)] * H);
      for (std::int64_t h = 0; h < H; ++h) del[h] += ds[t.edge[static_cast<std::size_t>(k)] * H + h];
    }
  }
}

// to[i, :] = from[i, :] for rows of `cols` floats, each side with its own row stride.
void copy_columns(const float* from, std::int64_t from_stride, float* to, std::int64_t to_stride, std::int64_t rows, std::int64_t cols) {
  for (std::int64_t i = 0; i < rows; ++i) std::copy(from + i * from_stride, from + i * from_stride + cols, to + i * to_stride);
}

const float* floats(const torch::Tensor& t) { return t.data_ptr<float>(); }
const std::int64_t* ints(const torch::Tensor& t) { return t.data_ptr<std::int64_t>(); }

// graph: [all src rows (every active relation's, end to end), then per active relation its
// compact indptr, src and dst_rows].
class RelGatCpu : public torch::autograd::Function<RelGatCpu> {
 public:
  static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& h, const torch::Tensor& wd, const torch::Tensor& bias, at::TensorList wr,
                               at::TensorList graph, const std::vector<std::int64_t>& sizes, std::int64_t nd, std::int64_t H, std::int64_t D,
                               double slope) {
    const std::int64_t A = static_cast<std::int64_t>(wr.size()), HD = H * D, zw = HD + H, pw = HD + H * A;
    const torch::Tensor& rows = graph[0];
    // The dst rows' self term and every relation's er in one product.
    torch::Tensor p = torch::empty({nd, pw}, h.options());
    sgemm_into(false, false, h.slice(0, 0, nd), weight_rows(wd), p);
    torch::Tensor out = (p.slice(1, 0, HD) + bias.reshape({1, HD})).contiguous();
    // Every relation's src rows in one gather, then its z and el in one product each.
    const torch::Tensor gathered = h.index_select(0, rows);
    torch::Tensor zl = torch::empty({rows.size(0), zw}, h.options()), el = torch::empty({rows.size(0), H}, h.options());
    std::vector<torch::Tensor> attention;
    std::int64_t off = 0;
    for (std::int64_t i = 0; i < A; ++i) {
      const torch::Tensor &indptr = graph[1 + 3 * i], &src = graph[2 + 3 * i], &dst_rows = graph[3 + 3 * i];
      const std::int64_t n = sizes[static_cast<std::size_t>(i)];
      torch::Tensor zl_i = zl.slice(0, off, off + n);
      sgemm_into(false, false, gathered.slice(0, off, off + n), weight_rows(wr[static_cast<std::size_t>(i)]), zl_i);
      float* el_i = el.data_ptr<float>() + off * H;
      copy_columns(floats(zl_i) + HD, zw, el_i, H, n, H);
      torch::Tensor a = torch::empty({src.size(0), H}, h.options());
      const RelationView r{ints(indptr), ints(src), ints(dst_rows), dst_rows.size(0), floats(zl_i), zw, el_i, floats(p) + HD, pw, H * i};
      float* ap = a.data_ptr<float>();
      float* op = out.data_ptr<float>();
      // Each dst row is one output row (dst_rows holds distinct rows), so threads split the rows.
      at::parallel_for(0, r.num_dst, 64, [&](std::int64_t v0, std::int64_t v1) { forward_rows(r, ap, op, H, D, static_cast<float>(slope), v0, v1); });
      attention.push_back(a);
      off += n;
    }
    // Of p only the scores are kept (backward reads them for leaky_relu's side).
    std::vector<torch::Tensor> saved = {h, wd, gathered, zl, p.slice(1, HD).contiguous(), el};
    saved.insert(saved.end(), wr.begin(), wr.end());
    saved.insert(saved.end(), graph.begin(), graph.end());
    saved.insert(saved.end(), attention.begin(), attention.end());
    ctx->save_for_backward(saved);
    ctx->saved_data["relations"] = A;
    ctx->saved_data["sizes"] = sizes;
    ctx->saved_data["heads"] = H;
    ctx->saved_data["out"] = D;
    ctx->saved_data["slope"] = slope;
    return out.view({nd, H, D});
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const auto s = ctx->get_saved_variables();
    const std::int64_t A = ctx->saved_data["relations"].toInt(), H = ctx->saved_data["heads"].toInt(), D = ctx->saved_data["out"].toInt();
    const auto slope = static_cast<float>(ctx->saved_data["slope"].toDouble());
    const torch::Tensor &h = s[0], &wd = s[1], &gathered = s[2], &zl = s[3], &er = s[4], &el = s[5];
    const auto wr = [&](std::int64_t i) -> const torch::Tensor& { return s[static_cast<std::size_t>(6 + i)]; };
    const auto graph = [&](std::int64_t k) -> const torch::Tensor& { return s[static_cast<std::size_t>(6 + A + k)]; };
    const auto attention = [&](std::int64_t i) -> const torch::Tensor& { return s[static_cast<std::size_t>(6 + A + 1 + 3 * A + i)]; };
    const std::int64_t HD = H * D, zw = zl.size(1), pw = HD + H * A, nd = er.size(0), in = h.size(1);
    const torch::Tensor g = grads[0].reshape({nd, HD}).contiguous();
    const float* gp = floats(g);
    // dL/dp: the output's gradient beside the er columns each relation fills (0 where a dst row
    // has no edge of it).
    torch::Tensor dp = torch::empty({nd, pw}, g.options());
    dp.slice(1, 0, HD).copy_(g);
    dp.slice(1, HD).zero_();
    // The src passes below write each of dzl's rows whole (z part, then el part).
    torch::Tensor dzl = torch::empty_like(zl);
    const std::vector<std::int64_t> sizes = ctx->saved_data["sizes"].toIntVector();
    // Sized for the largest relation up front, and reused.
    std::int64_t most_src = 0, most_edges = 0;
    for (std::int64_t i = 0; i < A; ++i) {
      most_src = std::max(most_src, sizes[static_cast<std::size_t>(i)]);
      most_edges = std::max(most_edges, graph(2 + 3 * i).size(0));
    }
    BySrc t;
    t.first.reserve(static_cast<std::size_t>(most_src + 1));
    t.next.reserve(static_cast<std::size_t>(most_src));
    t.edge.reserve(static_cast<std::size_t>(most_edges));
    t.dst.reserve(static_cast<std::size_t>(most_edges));
    torch::Tensor da_t = torch::empty({most_edges, H}, g.options());
    float* da = da_t.data_ptr<float>();
    std::int64_t off = 0;
    for (std::int64_t i = 0; i < A; ++i) {
      const torch::Tensor &indptr = graph(1 + 3 * i), &src = graph(2 + 3 * i), &dst_rows = graph(3 + 3 * i);
      const std::int64_t n = sizes[static_cast<std::size_t>(i)];
      const RelationView r{ints(indptr), ints(src), ints(dst_rows), dst_rows.size(0), floats(zl) + off * zw, zw, floats(el) + off * H, floats(er), H * A, H * i};
      by_src(r, n, t);
      const float* ap = floats(attention(i));
      float* dzp = dzl.data_ptr<float>() + off * zw;
      float* dpp = dp.data_ptr<float>();
      // Threads split src rows in the src passes and dst rows in the dst pass: every write is one
      // row's.
      at::parallel_for(0, n, 64, [&](std::int64_t s0, std::int64_t s1) { backward_src_rows(r, t, ap, gp, dzp, da, H, D, s0, s1); });
      at::parallel_for(0, r.num_dst, 64, [&](std::int64_t v0, std::int64_t v1) { backward_scores(r, ap, da, dpp, pw, H, HD, slope, v0, v1); });
      at::parallel_for(0, n, 256, [&](std::int64_t s0, std::int64_t s1) { backward_src_scores(r, t, da, dzp, H, HD, s0, s1); });
      off += n;
    }
    // A gradient per input: h, wd, bias, each wr, then none for graph's tensors and the 5 numbers.
    variable_list out(static_cast<std::size_t>(3 + A + 1 + 3 * A + 5));
    // h: the dst rows' product's share, then each relation's src rows' added in one scatter.
    torch::Tensor dh = torch::empty({h.size(0), in}, g.options());
    torch::Tensor dh_dst = dh.slice(0, 0, nd);
    sgemm_into(false, false, dp, wd, dh_dst);
    dh.slice(0, nd).zero_();
    torch::Tensor dgathered = torch::empty({gathered.size(0), in}, g.options());
    off = 0;
    for (std::int64_t i = 0; i < A; ++i) {
      const std::int64_t n = sizes[static_cast<std::size_t>(i)];
      torch::Tensor dg_i = dgathered.slice(0, off, off + n);
      const torch::Tensor dzl_i = dzl.slice(0, off, off + n);
      sgemm_into(false, false, dzl_i, wr(i), dg_i);
      torch::Tensor dw = torch::empty({HD + H, in}, g.options());
      sgemm_into(true, false, dzl_i, gathered.slice(0, off, off + n), dw);
      out[static_cast<std::size_t>(3 + i)] = dw;
      off += n;
    }
    const torch::Tensor& rows = graph(0);
    if (rows.size(0) > 0) scatter_add(dh.data_ptr<float>(), ints(rows), floats(dgathered), rows.size(0), in);
    torch::Tensor dwd = torch::empty({pw, in}, g.options());
    sgemm_into(true, false, dp, h.slice(0, 0, nd), dwd);
    out[0] = dh;
    out[1] = dwd;
    out[2] = g.sum(0).view({H, D});
    return out;
  }
};

}  // namespace

torch::Tensor rel_gat_cpu(const torch::Tensor& h, const torch::Tensor& wd, const torch::Tensor& bias, const std::vector<torch::Tensor>& wr,
                          const RelationBlocks& b, const std::vector<std::size_t>& active, std::int64_t H, std::int64_t D, double negative_slope) {
  TORCH_CHECK(wr.size() == active.size(), "rel_gat_cpu: a weight per active relation");
  std::vector<torch::Tensor> rows;
  std::vector<torch::Tensor> graph = {torch::Tensor()};
  std::vector<std::int64_t> sizes;
  for (const std::size_t r : active) {
    rows.push_back(b.src_rows[r]);
    sizes.push_back(b.src_rows[r].size(0));
    graph.push_back(b.compact[r].indptr.contiguous());
    graph.push_back(b.compact[r].src.contiguous());
    graph.push_back(b.dst_rows[r].contiguous());
  }
  graph[0] = rows.empty() ? torch::empty({0}, torch::kInt64) : torch::cat(rows);
  std::vector<torch::Tensor> weights;
  for (const torch::Tensor& w : wr) weights.push_back(w.contiguous());
  return RelGatCpu::apply(h.contiguous(), wd.contiguous(), bias, at::TensorList(weights), at::TensorList(graph), sizes, b.num_dst, H, D, negative_slope);
}

}  // namespace shardgnn
