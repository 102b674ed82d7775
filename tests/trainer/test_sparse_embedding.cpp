// The sparse embedding optimizers against torch's dense ones.
#include "trainer/torch_catch.hpp"  // torch, then Catch
#include "model/sparse_embedding.hpp"

using namespace shardgnn;

namespace {
// The same gradient sequence for both sides: step k's gradient of the rows `ids`.
torch::Tensor grad_at(int k, std::int64_t rows, std::int64_t dim) {
  torch::manual_seed(100 + k);
  return torch::randn({rows, dim});
}
}  // namespace

TEST_CASE("sparse Adam equals torch's Adam when every row is in every batch", "[embedding]") {
  torch::manual_seed(1);
  SparseEmbeddingOptions o;
  o.lr = 0.05;
  SparseEmbedding emb(6, 3, o);
  torch::Tensor dense = emb.rows().clone().requires_grad_(true);
  torch::optim::Adam adam({dense}, torch::optim::AdamOptions(o.lr).betas({o.beta1, o.beta2}).eps(o.eps));
  const torch::Tensor ids = torch::tensor({5, 3, 1, 0, 2, 4}, torch::kInt64);
  for (int k = 0; k < 5; ++k) {
    const torch::Tensor g = grad_at(k, 6, 3);
    emb.apply(ids, g);
    adam.zero_grad();
    dense.mutable_grad() = torch::zeros_like(dense).index_copy(0, ids, g);
    adam.step();
  }
  CHECK(torch::allclose(emb.rows(), dense.detach(), 1e-5, 1e-6));
}

TEST_CASE("sparse Adagrad equals torch's Adagrad on the rows a batch touches, and leaves the others", "[embedding]") {
  torch::manual_seed(2);
  SparseEmbeddingOptions o;
  o.optimizer = SparseOptimizer::kAdagrad;
  o.lr = 0.1;
  SparseEmbedding emb(8, 4, o);
  const torch::Tensor start = emb.rows().clone();
  torch::Tensor dense = emb.rows().clone().requires_grad_(true);
  torch::optim::Adagrad adagrad({dense}, torch::optim::AdagradOptions(o.lr));
  const std::vector<torch::Tensor> batches = {torch::tensor({1, 4}, torch::kInt64), torch::tensor({4, 6, 0}, torch::kInt64), torch::tensor({1}, torch::kInt64)};
  for (std::size_t k = 0; k < batches.size(); ++k) {
    const torch::Tensor g = grad_at(static_cast<int>(k), batches[k].size(0), 4);
    emb.apply(batches[k], g);
    adagrad.zero_grad();
    dense.mutable_grad() = torch::zeros_like(dense).index_copy(0, batches[k], g);
    adagrad.step();
  }
  CHECK(torch::allclose(emb.rows(), dense.detach(), 1e-5, 1e-6));
  for (const std::int64_t untouched : {2, 3, 5, 7}) CHECK(torch::equal(emb.rows()[untouched], start[untouched]));
}

TEST_CASE("a gathered row's repeats add up, and lazy Adam leaves rows outside the batch as they were", "[embedding]") {
  torch::manual_seed(3);
  SparseEmbedding a(4, 2, {});
  torch::manual_seed(3);
  SparseEmbedding c(4, 2, {});
  // a: row 0 twice; c: row 0 once with the summed gradient. Through gather and backward.
  const torch::Tensor ids = torch::tensor({0, 0, 2}, torch::kInt64);
  const torch::Tensor x = a.gather(ids);
  (x * torch::tensor({{1.0f, 2.0f}, {3.0f, 4.0f}, {5.0f, 6.0f}})).sum().backward();
  a.apply(ids, x.grad());
  c.apply(torch::tensor({0, 2}, torch::kInt64), torch::tensor({{4.0f, 6.0f}, {5.0f, 6.0f}}));
  CHECK(torch::allclose(a.rows(), c.rows()));
  torch::manual_seed(3);
  const SparseEmbedding fresh(4, 2, {});
  CHECK(torch::equal(a.rows()[1], fresh.rows()[1]));
  CHECK(torch::equal(a.rows()[3], fresh.rows()[3]));
  CHECK_FALSE(torch::equal(a.rows()[0], fresh.rows()[0]));
  CHECK(a.steps()[0].item<std::int64_t>() == 1);
  CHECK(a.steps()[1].item<std::int64_t>() == 0);
}
