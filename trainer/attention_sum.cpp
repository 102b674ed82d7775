#include "trainer/attention_sum.hpp"

#include <ATen/Parallel.h>
#include <torch/autograd.h>

#include "trainer/models.hpp"

namespace shardgnn {

namespace {

// The sums of a dst row: out[h, :] = sum over its edges of a[e, h] * z[src[e], h, :].
void forward_rows(const std::int64_t* indptr, const std::int64_t* src, const float* z, const float* a, float* out, std::int64_t H, std::int64_t D,
                  std::int64_t v0, std::int64_t v1) {
  const std::int64_t W = H * D;
  for (std::int64_t v = v0; v < v1; ++v) {
    float* o = out + v * W;
    std::fill(o, o + W, 0.0F);
    for (std::int64_t e = indptr[v]; e < indptr[v + 1]; ++e) {
      const float* zs = z + src[e] * W;
      for (std::int64_t h = 0; h < H; ++h) {
        const float w = a[e * H + h];
        const float* x = zs + h * D;
        float* y = o + h * D;
        for (std::int64_t d = 0; d < D; ++d) y[d] += w * x[d];
      }
    }
  }
}

class AttentionSum : public torch::autograd::Function<AttentionSum> {
 public:
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& indptr, const torch::Tensor& src, const torch::Tensor& z,
                               const torch::Tensor& a) {
    const std::int64_t n_dst = indptr.size(0) - 1, H = z.size(1), D = z.size(2);
    torch::Tensor out = torch::empty({n_dst, H, D}, z.options());
    const std::int64_t *ip = indptr.data_ptr<std::int64_t>(), *s = src.data_ptr<std::int64_t>();
    const float *zp = z.data_ptr<float>(), *ap = a.data_ptr<float>();
    float* op = out.data_ptr<float>();
    at::parallel_for(0, n_dst, 64, [&](std::int64_t v0, std::int64_t v1) { forward_rows(ip, s, zp, ap, op, H, D, v0, v1); });
    ctx->save_for_backward({indptr, src, z, a});
    return out;
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx, torch::autograd::variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const torch::Tensor &indptr = saved[0], &src = saved[1], &z = saved[2], &a = saved[3];
    const torch::Tensor g = grads[0].contiguous();
    const std::int64_t n_dst = indptr.size(0) - 1, H = z.size(1), D = z.size(2), W = H * D;
    const std::int64_t *ip = indptr.data_ptr<std::int64_t>(), *s = src.data_ptr<std::int64_t>();
    const float *zp = z.data_ptr<float>(), *ap = a.data_ptr<float>(), *gp = g.data_ptr<float>();
    torch::Tensor dz = torch::zeros_like(z), da = torch::empty_like(a);
    float *dzp = dz.data_ptr<float>(), *dap = da.data_ptr<float>();
    // da[e, h] = z[src[e], h, :] . g[v, h, :]
    at::parallel_for(0, n_dst, 64, [&](std::int64_t v0, std::int64_t v1) {
      for (std::int64_t v = v0; v < v1; ++v)
        for (std::int64_t e = ip[v]; e < ip[v + 1]; ++e)
          for (std::int64_t h = 0; h < H; ++h) {
            const float *x = zp + s[e] * W + h * D, *y = gp + v * W + h * D;
            float sum = 0;
            for (std::int64_t d = 0; d < D; ++d) sum += x[d] * y[d];
            dap[e * H + h] = sum;
          }
    });
    // dz[src[e], h, :] += a[e, h] * g[v, h, :], each thread its own heads.
    at::parallel_for(0, H, 1, [&](std::int64_t h0, std::int64_t h1) {
      for (std::int64_t v = 0; v < n_dst; ++v)
        for (std::int64_t e = ip[v]; e < ip[v + 1]; ++e)
          for (std::int64_t h = h0; h < h1; ++h) {
            const float w = ap[e * H + h];
            const float* y = gp + v * W + h * D;
            float* x = dzp + s[e] * W + h * D;
            for (std::int64_t d = 0; d < D; ++d) x[d] += w * y[d];
          }
    });
    return {torch::Tensor(), torch::Tensor(), dz, da};
  }
};

}  // namespace

torch::Tensor attention_sum(const BlockTensors& b, const torch::Tensor& z, const torch::Tensor& a) {
  const std::int64_t E = b.src.size(0);
  if (z.device().is_cpu() && z.scalar_type() == torch::kFloat && a.scalar_type() == torch::kFloat)
    return AttentionSum::apply(b.indptr.contiguous(), b.src.contiguous(), z.contiguous(), a.slice(0, 0, E).contiguous());
  const torch::Tensor msgs = z.index_select(0, b.src) * a.slice(0, 0, E).unsqueeze(-1);
  return torch::zeros({b.num_dst, z.size(1), z.size(2)}, msgs.options()).index_add(0, b.dst, msgs);
}

}  // namespace shardgnn
