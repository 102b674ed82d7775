#include "model/gemm.hpp"

#include <ATen/record_function.h>
#include <dlfcn.h>
#include <torch/autograd.h>

#include <cstdint>

#include "model/autocast.hpp"

// oneDNN's row-major C = alpha op(A) op(B) + beta C (dnnl.h; its dev headers are not a dependency).
// Weak: null when no loaded library exports it.
extern "C" int dnnl_sgemm(char transa, char transb, std::int64_t M, std::int64_t N, std::int64_t K, float alpha, const float* A, std::int64_t lda,
                          const float* B, std::int64_t ldb, float beta, float* C, std::int64_t ldc) __attribute__((weak));

namespace shardgnn {

// oneDNN's sgemm runs x W^T faster as x times a row-major W^T than with W transposed in the call
// (docs/results/hetero.md), for a weight-sized copy.
torch::Tensor weight_rows(const torch::Tensor& w) { return w.t().contiguous(); }

namespace {

using SgemmFn = decltype(&dnnl_sgemm);

struct Sgemm {
  SgemmFn fn = nullptr;
  std::string name;
};

// The oneDNN sgemm to call: the one the libtorch in use exports (Debian's), or else the system's
// libdnnl.so.2 opened on its own. PyTorch's wheels link oneDNN statically without that entry point
// and run float32 products on MKL, which takes slow paths on AMD CPUs. RTLD_DEEPBIND keeps the
// opened library's calls inside itself: bound to the libtorch's copies of oneDNN's internals, its
// sgemm fails as unimplemented.
const Sgemm& cpu_sgemm() {
  static const Sgemm found = [] {
    if (dnnl_sgemm != nullptr) return Sgemm{dnnl_sgemm, "oneDNN sgemm"};
#if defined(RTLD_DEEPBIND)
    if (void* lib = dlopen("libdnnl.so.2", RTLD_NOW | RTLD_LOCAL | RTLD_DEEPBIND))
      if (void* fn = dlsym(lib, "dnnl_sgemm")) return Sgemm{reinterpret_cast<SgemmFn>(fn), "oneDNN sgemm (libdnnl.so.2)"};
#endif
    return Sgemm{};
  }();
  return found;
}

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// Row-major rows of contiguous columns (a column slice qualifies: its row stride is the lda).
torch::Tensor rows_of(const torch::Tensor& t) { return t.stride(1) == 1 && t.stride(0) >= t.size(1) ? t : t.contiguous(); }

// c = op(a) op(b), a and b as rows_of gives them.
void sgemm(bool ta, bool tb, const torch::Tensor& a, const torch::Tensor& b, torch::Tensor& c) {
  const std::int64_t M = c.size(0), N = c.size(1), K = ta ? a.size(0) : a.size(1);
  // Named for `train --profile-ops`, with the shapes that give its FLOPs.
  RECORD_FUNCTION(kSgemmOpName, std::vector<c10::IValue>({a, b, c}));
  if (M == 0 || N == 0) return;
  if (K == 0) {
    c.zero_();
    return;
  }
  const int status = cpu_sgemm().fn(ta ? 'T' : 'N', tb ? 'T' : 'N', M, N, K, 1.0f, a.data_ptr<float>(), std::max<std::int64_t>(1, a.stride(0)), b.data_ptr<float>(),
                                std::max<std::int64_t>(1, b.stride(0)), 0.0f, c.data_ptr<float>(), std::max<std::int64_t>(1, c.stride(0)));
  TORCH_CHECK(status == 0, "oneDNN sgemm failed (status ", status, ") on [", M, ", ", K, "] x [", K, ", ", N, "]");
}

// x W^T (the bias is added outside: custom functions take no undefined tensor).
struct DnnlLinear : torch::autograd::Function<DnnlLinear> {
  static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& x_in, const torch::Tensor& w_in) {
    const torch::Tensor x = rows_of(x_in), w = w_in.contiguous();
    ctx->save_for_backward({x, w});
    torch::Tensor y = torch::empty({x.size(0), w.size(0)}, x.options());
    sgemm(false, false, x, weight_rows(w), y);
    return y;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const torch::Tensor &x = saved[0], &w = saved[1];
    const torch::Tensor g = rows_of(grads[0]);
    torch::Tensor gx, gw;
    if (ctx->needs_input_grad(0)) {
      gx = torch::empty({x.size(0), x.size(1)}, g.options());
      sgemm(false, false, g, w, gx);  // g W
    }
    if (ctx->needs_input_grad(1)) {
      const std::int64_t out = w.size(0), in = w.size(1);
      if (in % 8 != 0 && out % 8 == 0) {
        // oneDNN's kernels run each result row in 8-wide vector pieces, so a ragged row (a
        // 100-wide input layer's) slows the whole product; its transpose has whole rows.
        torch::Tensor gwt = torch::empty({in, out}, g.options());
        sgemm(true, false, x, g, gwt);  // x^T g
        gw = gwt.t().contiguous();
      } else {
        gw = torch::empty({out, in}, g.options());
        sgemm(true, false, g, x, gw);  // g^T x
      }
    }
    return {gx, gw};
  }
};

bool on_dnnl(const torch::Tensor& x, const torch::Tensor& w) {
  return cpu_sgemm().fn != nullptr && x.dim() == 2 && x.is_cpu() && x.scalar_type() == torch::kFloat && w.scalar_type() == torch::kFloat &&
         !autocast::enabled(c10::kCPU);
}

}  // namespace

bool on_cpu_sgemm(const torch::Tensor& x) { return on_dnnl(x, x); }


void sgemm_into(bool transpose_a, bool transpose_b, const torch::Tensor& a, const torch::Tensor& b, torch::Tensor& c) {
  TORCH_CHECK(on_cpu_sgemm(a) && on_cpu_sgemm(b) && on_cpu_sgemm(c) && c.stride(1) == 1, "sgemm_into: CPU float32 matrices of contiguous rows");
  sgemm(transpose_a, transpose_b, rows_of(a), rows_of(b), c);
}

std::string cpu_gemm_backend() { return cpu_sgemm().fn != nullptr ? cpu_sgemm().name : "torch"; }

torch::Tensor linear_map(const torch::Tensor& x, const torch::Tensor& w, const torch::Tensor& b) {
  if (!on_dnnl(x, w)) return torch::nn::functional::linear(x, w, b);
  torch::Tensor y = DnnlLinear::apply(x, w);
  return b.defined() ? y.add_(b) : y;
}

}  // namespace shardgnn
