// Embedding rows of a featureless node type spread over the ranks as its nodes are: each row lives
// with the rank owning its node, numbered as TypedFeatureStore numbers a type's rows (part k's run
// of the type after the runs of the parts before it, `book`). A batch gathers its rows from their
// owners in one exchange, and sends its gradient rows back in one more, where the owner's
// SparseEmbedding applies them: DistDGL's DistEmbedding with its sparse optimizers. A row's
// initial values depend only on the seed and its id, so any partitioning starts from the same
// table.
#pragma once

#include <torch/types.h>

#include <cstdint>
#include <span>

#include "comm/communicator.hpp"
#include "partition/book.hpp"
#include "trainer/sparse_embedding.hpp"

namespace shardgnn {

// Rows [first, first + n) of a table of `dim` columns, uniform in [-scale, scale], from a keyed
// hash of (seed, id, column): the same values whichever rank makes them.
torch::Tensor keyed_embedding_rows(std::uint64_t seed, std::int64_t first, std::int64_t n, std::int64_t dim, double scale);

class DistEmbedding {
 public:
  // `comm` (this table's own: give it a dup()) must outlive it; rank r owns part r of `book`.
  DistEmbedding(PartitionBook book, std::int64_t dim, SparseEmbeddingOptions options, std::uint64_t seed, const comm::Communicator& comm);

  // Collective: the rows of `ids` (any rank's, repeats allowed) as a leaf tensor [k, dim] that
  // requires grad.
  torch::Tensor gather(std::span<const NodeId> ids);
  // Collective: each gradient row of `grad` ([k, dim], aligned with `ids`) to its row's owner, which
  // sums every rank's rows for one row and applies them once (SparseEmbedding::apply).
  void apply(std::span<const NodeId> ids, const torch::Tensor& grad);

  const SparseEmbedding& local() const noexcept { return local_; }  // this rank's rows and optimizer state
  const PartitionBook& book() const noexcept { return book_; }

 private:
  // The owner of each id, and `ids` grouped by owner (order[i]: where ids[i] went) with per-owner counts.
  void group(std::span<const NodeId> ids);

  PartitionBook book_;
  std::int64_t dim_;
  const comm::Communicator& comm_;
  SparseEmbedding local_;
  std::vector<NodeId> grouped_;
  std::vector<std::int64_t> counts_, order_;
};

}  // namespace shardgnn
