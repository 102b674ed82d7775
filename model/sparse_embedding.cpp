#include "model/sparse_embedding.hpp"

#include <torch/torch.h>

namespace shardgnn {

SparseEmbedding::SparseEmbedding(std::int64_t n, std::int64_t dim, SparseEmbeddingOptions options)
    : SparseEmbedding(torch::empty({n, dim}).uniform_(-options.init_scale, options.init_scale), options) {}

SparseEmbedding::SparseEmbedding(torch::Tensor rows, SparseEmbeddingOptions options) : options_(options), rows_(std::move(rows)) {
  const std::int64_t n = rows_.size(0), dim = rows_.size(1);
  v_ = torch::zeros({n, dim});
  if (options.optimizer == SparseOptimizer::kAdam) {
    m_ = torch::zeros({n, dim});
    step_ = torch::zeros({n}, torch::kInt64);
  }
}

torch::Tensor SparseEmbedding::gather(const torch::Tensor& ids) const { return rows_.index_select(0, ids).detach().requires_grad_(true); }

void SparseEmbedding::apply(const torch::Tensor& ids, const torch::Tensor& grad) {
  torch::NoGradGuard no_grad;
  if (ids.numel() == 0) return;
  // One gradient row per distinct row: the sum of its repeats' (torch's coalesce of a sparse grad).
  const auto [unique, inverse] = torch::_unique(ids, /*sorted=*/true, /*return_inverse=*/true);
  const torch::Tensor g = torch::zeros({unique.size(0), rows_.size(1)}, grad.options()).index_add_(0, inverse, grad);
  if (options_.optimizer == SparseOptimizer::kAdagrad) {
    const torch::Tensor sum = v_.index_select(0, unique) + g * g;
    v_.index_copy_(0, unique, sum);
    rows_.index_copy_(0, unique, rows_.index_select(0, unique) - options_.lr * g / (sum.sqrt() + 1e-10));
    return;
  }
  const double b1 = options_.beta1, b2 = options_.beta2;
  const torch::Tensor step = step_.index_select(0, unique) + 1;
  step_.index_copy_(0, unique, step);
  const torch::Tensor m = m_.index_select(0, unique) * b1 + g * (1 - b1);
  const torch::Tensor v = v_.index_select(0, unique) * b2 + g * g * (1 - b2);
  m_.index_copy_(0, unique, m);
  v_.index_copy_(0, unique, v);
  // torch.optim.Adam's update, with each row's own step in the bias corrections.
  const torch::Tensor s = step.to(torch::kDouble).unsqueeze(1);
  const torch::Tensor c1 = (1 - torch::pow(b1, s)).to(rows_.scalar_type()), c2 = (1 - torch::pow(b2, s)).to(rows_.scalar_type());
  const torch::Tensor denom = (v / c2).sqrt() + options_.eps;
  rows_.index_copy_(0, unique, rows_.index_select(0, unique) - options_.lr * (m / c1) / denom);
}

bool SparseEmbedding::restore(const torch::Tensor& rows, const torch::Tensor& first, const torch::Tensor& second, const torch::Tensor& steps) {
  // An empty tensor and an undefined one are the same state (a rank owning no row of the type).
  const auto empty = [](const torch::Tensor& t) { return !t.defined() || t.numel() == 0; };
  const auto same = [&](const torch::Tensor& have, const torch::Tensor& got) {
    return empty(have) ? empty(got) : got.defined() && got.sizes() == have.sizes();
  };
  if (!same(rows_, rows) || !same(m_, first) || !same(v_, second) || !same(step_, steps)) return false;
  torch::NoGradGuard no_grad;
  for (const auto& [have, got] : {std::pair{rows_, rows}, std::pair{m_, first}, std::pair{v_, second}, std::pair{step_, steps}})
    if (!empty(have)) have.copy_(got);
  return true;
}

bool SparseEmbedding::restore_rows(const torch::Tensor& at, const torch::Tensor& rows, const torch::Tensor& first, const torch::Tensor& second,
                                   const torch::Tensor& steps) {
  const std::int64_t k = at.numel();
  const auto empty = [](const torch::Tensor& t) { return !t.defined() || t.numel() == 0; };
  // Each state tensor: k rows of the own one's shape past its first dimension, or absent as it is.
  const auto fits = [&](const torch::Tensor& have, const torch::Tensor& got) {
    if (!have.defined()) return empty(got);
    return got.defined() && got.dim() == have.dim() && got.size(0) == k && got.sizes().slice(1) == have.sizes().slice(1);
  };
  if (k == 0) return true;
  if (!fits(rows_, rows) || !fits(m_, first) || !fits(v_, second) || !fits(step_, steps)) return false;
  torch::NoGradGuard no_grad;
  for (const auto& [have, got] : {std::pair{rows_, rows}, std::pair{m_, first}, std::pair{v_, second}, std::pair{step_, steps}})
    if (have.defined()) have.index_copy_(0, at, got.to(have.scalar_type()));
  return true;
}

}  // namespace shardgnn
