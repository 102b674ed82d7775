// Batch normalisation synchronised over 1, 2 and 4 ranks (ctest runs this under mpiexec at each
// count) against torch's BatchNorm1d on the whole batch: each rank holds a slice of one batch (a
// rank may hold none), and its outputs, its rows' gradients, the summed weight gradients and the
// running statistics are the whole batch's. Only CHECK after the first collective.
#include "trainer/torch_catch.hpp"  // torch, then Catch
#include "comm/communicator.hpp"
#include "model/sync_batch_norm.hpp"

using namespace shardgnn;

TEST_CASE("batch norm over every rank's batch gives one batch's outputs, gradients and running statistics", "[batchnorm][mpi]") {
  const comm::Communicator world = comm::Communicator::world();
  const comm::Communicator comm = world.dup();
  const int P = world.size(), me = world.rank();
  const std::int64_t C = 5;
  // Rank r's rows: none on rank 1 (of several), else 3 + r.
  std::vector<std::int64_t> first{0};
  for (int r = 0; r < P; ++r) first.push_back(first.back() + (P > 1 && r == 1 ? 0 : 3 + r));
  const std::int64_t total = first.back(), begin = first[static_cast<std::size_t>(me)], end = first[static_cast<std::size_t>(me) + 1];
  torch::manual_seed(42);
  const torch::Tensor X = torch::randn({total, C}) * 2 + 1, G = torch::randn({total, C});
  const torch::Tensor w = torch::rand({C}) + 0.5, b = torch::randn({C});
  const auto make = [&] {
    torch::nn::BatchNorm1d bn(C);
    torch::NoGradGuard no_grad;
    bn->weight.copy_(w);
    bn->bias.copy_(b);
    return bn;
  };
  torch::nn::BatchNorm1d ref = make(), mine = make();
  for (int step = 0; step < 2; ++step) {  // twice: the running statistics move twice
    const torch::Tensor xr = X.clone().requires_grad_(true);
    const torch::Tensor yr = ref->forward(xr);
    (yr * G).sum().backward();
    const torch::Tensor x = X.slice(0, begin, end).clone().requires_grad_(true);
    torch::Tensor y;
    if (end > begin) {
      y = synced_batch_norm(x, *mine, comm);
      (y * G.slice(0, begin, end)).sum().backward();
    } else {
      synced_batch_norm_nothing({mine.get()}, comm);
    }
    // Each rank's share of the weights' gradients, summed as the gradient all-reduce does.
    std::vector<float> grads(static_cast<std::size_t>(2 * C), 0.0f);
    if (mine->weight.grad().defined()) {
      std::copy_n(mine->weight.grad().data_ptr<float>(), C, grads.begin());
      std::copy_n(mine->bias.grad().data_ptr<float>(), C, grads.begin() + C);
    }
    comm.allreduce_inplace(std::span<float>(grads), comm::Op::kSum);
    INFO("rank " << me << " of " << P << ", step " << step);
    if (end > begin) {
      CHECK(torch::allclose(y, yr.slice(0, begin, end), 1e-5, 1e-5));
      CHECK(torch::allclose(x.grad(), xr.grad().slice(0, begin, end), 1e-4, 1e-5));
    }
    CHECK(torch::allclose(torch::tensor(grads).slice(0, 0, C), ref->weight.grad(), 1e-4, 1e-5));
    CHECK(torch::allclose(torch::tensor(grads).slice(0, C, 2 * C), ref->bias.grad(), 1e-4, 1e-5));
    CHECK(torch::allclose(mine->running_mean, ref->running_mean, 1e-5, 1e-6));
    CHECK(torch::allclose(mine->running_var, ref->running_var, 1e-5, 1e-6));
    CHECK(mine->num_batches_tracked.item<std::int64_t>() == step + 1);
    ref->zero_grad();
    mine->zero_grad();
  }
}
