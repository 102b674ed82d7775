// Embedding rows spread over 1, 2 and 4 ranks (ctest runs this under mpiexec at each count)
// against one table holding every row: gathers return the table's rows, and a step's gradient
// rows from every rank, sent to their owners, update the rows as the one table's update of all of
// them together would. Only CHECK after the first collective.
#include "trainer/torch_catch.hpp"  // torch, then Catch
#include "comm/communicator.hpp"
#include "datasets/random.hpp"
#include "model/dist_embedding.hpp"

using namespace shardgnn;

namespace {
// Rank r's ids and gradient rows at step k: keyed, so every rank can make every rank's.
std::pair<std::vector<NodeId>, torch::Tensor> batch_of(int rank, int step, std::int64_t rows, std::int64_t dim) {
  Rng rng(derive_seed(derive_seed(7, static_cast<std::uint64_t>(step)), static_cast<std::uint64_t>(rank)));
  std::vector<NodeId> ids;
  for (int i = 0; i < 9; ++i) ids.push_back(static_cast<NodeId>(rng() % static_cast<std::uint64_t>(rows)));  // repeats and remote rows alike
  torch::manual_seed(1000 * step + rank);
  return {ids, torch::randn({static_cast<std::int64_t>(ids.size()), dim})};
}
}  // namespace

TEST_CASE("distributed embedding rows gather and update as one table does", "[embedding][mpi]") {
  const comm::Communicator world = comm::Communicator::world();
  const comm::Communicator comm = world.dup();
  const int P = world.size();
  const std::int64_t rows = 23, dim = 3;
  std::vector<NodeId> offsets;
  for (int r = 0; r <= P; ++r) offsets.push_back(rows * r / P);
  for (const SparseOptimizer opt : {SparseOptimizer::kAdam, SparseOptimizer::kAdagrad}) {
    SparseEmbeddingOptions o;
    o.optimizer = opt;
    o.lr = 0.1;
    // Keys run backwards, so a row's values follow its key, not its position.
    std::vector<NodeId> keys(static_cast<std::size_t>(rows));
    for (std::int64_t i = 0; i < rows; ++i) keys[static_cast<std::size_t>(i)] = 1000 - i;
    const auto me = static_cast<std::size_t>(world.rank());
    DistEmbedding dist(PartitionBook(offsets), std::span<const NodeId>(keys).subspan(static_cast<std::size_t>(offsets[me]), static_cast<std::size_t>(offsets[me + 1] - offsets[me])),
                       dim, o, 11, comm);
    SparseEmbedding whole(keyed_embedding_rows(11, keys, dim, o.init_scale), o);
    for (int step = 0; step < 3; ++step) {
      const auto [ids, grad] = batch_of(world.rank(), step, rows, dim);
      const torch::Tensor got = dist.gather(ids);
      CHECK(got.requires_grad());
      CHECK(torch::equal(got.detach(), whole.rows().index_select(0, torch::tensor(ids, torch::kInt64))));
      dist.apply(ids, grad);
      // The one table takes every rank's rows of the step at once.
      std::vector<NodeId> all;
      std::vector<torch::Tensor> grads;
      for (int r = 0; r < P; ++r) {
        auto [i, g] = batch_of(r, step, rows, dim);
        all.insert(all.end(), i.begin(), i.end());
        grads.push_back(g);
      }
      whole.apply(torch::tensor(all, torch::kInt64), torch::cat(grads));
    }
    const NodeId first = offsets[static_cast<std::size_t>(world.rank())], n = offsets[static_cast<std::size_t>(world.rank()) + 1] - first;
    CHECK(torch::allclose(dist.local().rows(), whole.rows().slice(0, first, first + n), 1e-6, 1e-7));
  }
}
