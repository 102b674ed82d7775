#include "model/attention_sum.hpp"

#include <ATen/Parallel.h>
#include <torch/autograd.h>
#include <torch/nn/functional.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "model/convs.hpp"
#include "datasets/vector_clones.hpp"

namespace shardgnn {

namespace {

// The sums of a dst row: out[h, :] = sum over its edges of a[e, h] * z[src[e], h, :].
// z's rows are zs floats apart (H * D, or more for a view of a wider product).
// The loops below run on the widest vector units there are: D floats a head (32 in MLPerf's
// R-GAT at hidden 128) are one or two AVX-512 operations, four or eight SSE ones.
SHARDGNN_VECTOR_CLONES
void forward_rows(const std::int64_t* indptr, const std::int64_t* src, const float* z, std::int64_t zs_stride, const float* a, float* __restrict out,
                  std::int64_t H, std::int64_t D, std::int64_t v0, std::int64_t v1) {
  const std::int64_t W = H * D;
  for (std::int64_t v = v0; v < v1; ++v) {
    float* o = out + v * W;
    std::fill(o, o + W, 0.0F);
    for (std::int64_t e = indptr[v]; e < indptr[v + 1]; ++e) {
      const float* zs = z + src[e] * zs_stride;
      for (std::int64_t h = 0; h < H; ++h) {
        const float w = a[e * H + h];
        const float* x = zs + h * D;
        float* y = o + h * D;
        for (std::int64_t d = 0; d < D; ++d) y[d] += w * x[d];
      }
    }
  }
}

// da[e, h] = z[src[e], h, :] . g[v, h, :] for dst rows [v0, v1).
SHARDGNN_VECTOR_CLONES
void attention_grad_rows(const std::int64_t* ip, const std::int64_t* s, const float* zp, std::int64_t zs, const float* gp, float* __restrict dap,
                         std::int64_t H, std::int64_t D, std::int64_t v0, std::int64_t v1) {
  const std::int64_t W = H * D;
  for (std::int64_t v = v0; v < v1; ++v)
    for (std::int64_t e = ip[v]; e < ip[v + 1]; ++e)
      for (std::int64_t h = 0; h < H; ++h) {
        const float *x = zp + s[e] * zs + h * D, *y = gp + v * W + h * D;
        float sum = 0;
        for (std::int64_t d = 0; d < D; ++d) sum += x[d] * y[d];
        dap[e * H + h] = sum;
      }
}

// dz[src[e], h, :] += a[e, h] * g[v, h, :] for heads [h0, h1).
SHARDGNN_VECTOR_CLONES
void attention_scatter_heads(const std::int64_t* ip, const std::int64_t* s, const float* ap, const float* gp, float* __restrict dzp, std::int64_t n_dst,
                             std::int64_t H, std::int64_t D, std::int64_t h0, std::int64_t h1) {
  const std::int64_t W = H * D;
  for (std::int64_t v = 0; v < n_dst; ++v)
    for (std::int64_t e = ip[v]; e < ip[v + 1]; ++e)
      for (std::int64_t h = h0; h < h1; ++h) {
        const float w = ap[e * H + h];
        const float* y = gp + v * W + h * D;
        float* x = dzp + s[e] * W + h * D;
        for (std::int64_t d = 0; d < D; ++d) x[d] += w * y[d];
      }
}

// out[idx[i], c] += src[i, c] for columns [c0, c1) of rows w floats wide.
SHARDGNN_VECTOR_CLONES
void scatter_columns(float* __restrict out, const std::int64_t* idx, const float* src, std::int64_t k, std::int64_t w, std::int64_t c0, std::int64_t c1) {
  for (std::int64_t i = 0; i < k; ++i) {
    float* o = out + idx[i] * w;
    const float* x = src + i * w;
    for (std::int64_t c = c0; c < c1; ++c) o[c] += x[c];
  }
}

class AttentionSum : public torch::autograd::Function<AttentionSum> {
 public:
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& indptr, const torch::Tensor& src, const torch::Tensor& z,
                               const torch::Tensor& a) {
    const std::int64_t n_dst = indptr.size(0) - 1, H = z.size(1), D = z.size(2), zs = z.stride(0);
    torch::Tensor out = torch::empty({n_dst, H, D}, z.options());
    const std::int64_t *ip = indptr.data_ptr<std::int64_t>(), *s = src.data_ptr<std::int64_t>();
    const float *zp = z.data_ptr<float>(), *ap = a.data_ptr<float>();
    float* op = out.data_ptr<float>();
    at::parallel_for(0, n_dst, 64, [&](std::int64_t v0, std::int64_t v1) { forward_rows(ip, s, zp, zs, ap, op, H, D, v0, v1); });
    ctx->save_for_backward({indptr, src, z, a});
    return out;
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx, torch::autograd::variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const torch::Tensor &indptr = saved[0], &src = saved[1], &z = saved[2], &a = saved[3];
    const torch::Tensor g = grads[0].contiguous();
    const std::int64_t n_dst = indptr.size(0) - 1, H = z.size(1), D = z.size(2), zs = z.stride(0);
    const std::int64_t *ip = indptr.data_ptr<std::int64_t>(), *s = src.data_ptr<std::int64_t>();
    const float *zp = z.data_ptr<float>(), *ap = a.data_ptr<float>(), *gp = g.data_ptr<float>();
    torch::Tensor dz = torch::zeros({z.size(0), H, D}, z.options()), da = torch::empty_like(a);
    float *dzp = dz.data_ptr<float>(), *dap = da.data_ptr<float>();
    at::parallel_for(0, n_dst, 64, [&](std::int64_t v0, std::int64_t v1) { attention_grad_rows(ip, s, zp, zs, gp, dap, H, D, v0, v1); });
    // Each thread its own heads of dz.
    at::parallel_for(0, H, 1, [&](std::int64_t h0, std::int64_t h1) { attention_scatter_heads(ip, s, ap, gp, dzp, n_dst, H, D, h0, h1); });
    return {torch::Tensor(), torch::Tensor(), dz, da};
  }
};

bool cpu_float(const torch::Tensor& t) { return t.device().is_cpu() && t.scalar_type() == torch::kFloat; }

class AttentionSoftmax : public torch::autograd::Function<AttentionSoftmax> {
 public:
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& indptr, const torch::Tensor& src, const torch::Tensor& el,
                               const torch::Tensor& er, double slope) {
    const std::int64_t n_dst = indptr.size(0) - 1, H = el.size(1);
    torch::Tensor a = torch::empty({src.size(0), H}, el.options());
    const std::int64_t *ip = indptr.data_ptr<std::int64_t>(), *s = src.data_ptr<std::int64_t>();
    const float *lp = el.data_ptr<float>(), *rp = er.data_ptr<float>();
    float* ap = a.data_ptr<float>();
    const auto fs = static_cast<float>(slope);
    at::parallel_for(0, n_dst, 256, [&](std::int64_t v0, std::int64_t v1) {
      for (std::int64_t v = v0; v < v1; ++v)
        for (std::int64_t h = 0; h < H; ++h) {
          const float r = rp[v * H + h];
          float most = -std::numeric_limits<float>::infinity();
          for (std::int64_t e = ip[v]; e < ip[v + 1]; ++e) {
            const float x = lp[s[e] * H + h] + r, y = x > 0 ? x : fs * x;
            ap[e * H + h] = y;
            most = std::max(most, y);
          }
          float sum = 0;
          for (std::int64_t e = ip[v]; e < ip[v + 1]; ++e) sum += ap[e * H + h] = std::exp(ap[e * H + h] - most);
          for (std::int64_t e = ip[v]; e < ip[v + 1]; ++e) ap[e * H + h] /= sum;
        }
    });
    ctx->save_for_backward({indptr, src, el, er, a});
    ctx->saved_data["slope"] = slope;
    return a;
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx, torch::autograd::variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const torch::Tensor &indptr = saved[0], &src = saved[1], &el = saved[2], &er = saved[3], &a = saved[4];
    const auto fs = static_cast<float>(ctx->saved_data["slope"].toDouble());
    const torch::Tensor g = grads[0].contiguous();
    const std::int64_t n_dst = indptr.size(0) - 1, H = el.size(1), E = src.size(0);
    const std::int64_t *ip = indptr.data_ptr<std::int64_t>(), *s = src.data_ptr<std::int64_t>();
    const float *lp = el.data_ptr<float>(), *rp = er.data_ptr<float>(), *ap = a.data_ptr<float>(), *gp = g.data_ptr<float>();
    torch::Tensor dpre = torch::empty({E, H}, el.options()), der = torch::empty_like(er), del = torch::zeros_like(el);
    float *dp = dpre.data_ptr<float>(), *drp = der.data_ptr<float>();
    // Softmax backward per dst and head, then leaky_relu's slope: the score's gradient per edge,
    // summed per dst for er.
    at::parallel_for(0, n_dst, 256, [&](std::int64_t v0, std::int64_t v1) {
      for (std::int64_t v = v0; v < v1; ++v)
        for (std::int64_t h = 0; h < H; ++h) {
          float dot = 0;
          for (std::int64_t e = ip[v]; e < ip[v + 1]; ++e) dot += ap[e * H + h] * gp[e * H + h];
          const float r = rp[v * H + h];
          float sum = 0;
          for (std::int64_t e = ip[v]; e < ip[v + 1]; ++e) {
            const float ds = ap[e * H + h] * (gp[e * H + h] - dot);
            const float d = lp[s[e] * H + h] + r > 0 ? ds : fs * ds;
            dp[e * H + h] = d;
            sum += d;
          }
          drp[v * H + h] = sum;
        }
    });
    scatter_add(del.data_ptr<float>(), s, dp, E, H);
    return {torch::Tensor(), torch::Tensor(), del, der, torch::Tensor()};
  }
};

class GatherRows : public torch::autograd::Function<GatherRows> {
 public:
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& x, const torch::Tensor& idx) {
    ctx->save_for_backward({idx});
    ctx->saved_data["sizes"] = x.sizes();
    return x.index_select(0, idx);
  }
  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx, torch::autograd::variable_list grads) {
    const torch::Tensor idx = ctx->get_saved_variables()[0];
    const torch::Tensor g = grads[0].contiguous();
    torch::Tensor dx = torch::zeros(ctx->saved_data["sizes"].toIntVector(), g.options());
    const std::int64_t k = idx.size(0);
    if (k > 0) scatter_add(dx.data_ptr<float>(), idx.data_ptr<std::int64_t>(), g.data_ptr<float>(), k, g.numel() / k);
    return {dx, torch::Tensor()};
  }
};

class AddRows : public torch::autograd::Function<AddRows> {
 public:
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, torch::Tensor out, const torch::Tensor& idx, const torch::Tensor& src) {
    const torch::Tensor x = src.contiguous();
    const std::int64_t k = idx.size(0);
    if (k > 0) scatter_add(out.data_ptr<float>(), idx.data_ptr<std::int64_t>(), x.data_ptr<float>(), k, x.numel() / k);
    ctx->mark_dirty({out});
    ctx->save_for_backward({idx});
    return out;
  }
  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx, torch::autograd::variable_list grads) {
    const torch::Tensor idx = ctx->get_saved_variables()[0];
    return {grads[0], torch::Tensor(), grads[0].index_select(0, idx)};
  }
};

}  // namespace

// Each thread owns a range of columns when the rows are wide enough to split, so no two threads
// write one float.
void scatter_add(float* out, const std::int64_t* idx, const float* src, std::int64_t k, std::int64_t w) {
  const std::int64_t grain = w >= 64 ? 16 : w;
  at::parallel_for(0, w, grain, [&](std::int64_t c0, std::int64_t c1) { scatter_columns(out, idx, src, k, w, c0, c1); });
}

torch::Tensor attention_softmax(const BlockTensors& b, const torch::Tensor& el, const torch::Tensor& er, double negative_slope) {
  const std::int64_t E = b.src.size(0);
  if (cpu_float(el) && cpu_float(er))
    return AttentionSoftmax::apply(b.indptr.contiguous(), b.src.contiguous(), el.contiguous(), er.contiguous(), negative_slope);
  const torch::Tensor e = torch::nn::functional::leaky_relu(el.index_select(0, b.src) + er.index_select(0, b.dst.slice(0, 0, E)),
                                                           torch::nn::functional::LeakyReLUFuncOptions().negative_slope(negative_slope));
  return edge_softmax(b, e, /*self_loops=*/false);
}

torch::Tensor gather_rows(const torch::Tensor& x, const torch::Tensor& idx) {
  if (cpu_float(x) && x.is_contiguous() && idx.scalar_type() == torch::kInt64 && idx.is_contiguous()) return GatherRows::apply(x, idx);
  return x.index_select(0, idx);
}

void add_rows_(torch::Tensor& out, const torch::Tensor& idx, const torch::Tensor& src) {
  if (cpu_float(out) && cpu_float(src) && out.is_contiguous() && idx.scalar_type() == torch::kInt64 && idx.is_contiguous()) {
    AddRows::apply(out, idx, src);
    return;
  }
  out.index_add_(0, idx, src);
}

torch::Tensor attention_sum(const BlockTensors& b, const torch::Tensor& z, const torch::Tensor& a) {
  const std::int64_t E = b.src.size(0);
  if (cpu_float(z) && cpu_float(a)) {
    // Rows of contiguous heads read in place, whatever their distance (a view of a wider product).
    const bool rows = z.stride(2) == 1 && z.stride(1) == z.size(2) && z.stride(0) >= z.size(1) * z.size(2);
    return AttentionSum::apply(b.indptr.contiguous(), b.src.contiguous(), rows ? z : z.contiguous(), a.slice(0, 0, E).contiguous());
  }
  const torch::Tensor msgs = z.index_select(0, b.src) * a.slice(0, 0, E).unsqueeze(-1);
  return torch::zeros({b.num_dst, z.size(1), z.size(2)}, msgs.options()).index_add(0, b.dst, msgs);
}

}  // namespace shardgnn
