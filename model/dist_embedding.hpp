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
#include <memory>
#include <span>
#include <vector>

#include "comm/communicator.hpp"
#include "partition/book.hpp"
#include "sampler/typed_features.hpp"
#include "model/sparse_embedding.hpp"

namespace shardgnn {

// One row of `dim` columns for each of `keys`, uniform in [-scale, scale], from a keyed hash of
// (seed, key, column): the same values whichever rank makes them.
torch::Tensor keyed_embedding_rows(std::uint64_t seed, std::span<const NodeId> keys, std::int64_t dim, double scale);

class DistEmbedding {
 public:
  // `comm` (this table's own: give it a dup()) must outlive it; rank r owns part r of `book`.
  // `keys` name this rank's rows for their first values (keyed_embedding_rows), one a row: the
  // dataset's node ids, so that a node starts from the same row however the graph was cut.
  DistEmbedding(PartitionBook book, std::span<const NodeId> keys, std::int64_t dim, SparseEmbeddingOptions options, std::uint64_t seed,
                const comm::Communicator& comm);

  // Collective: the rows of `ids` (any rank's, repeats allowed) as a leaf tensor [k, dim] that
  // requires grad.
  torch::Tensor gather(std::span<const NodeId> ids);
  // Collective: each gradient row of `grad` ([k, dim], aligned with `ids`) to its row's owner, which
  // sums every rank's rows for one row and applies them once (SparseEmbedding::apply).
  void apply(std::span<const NodeId> ids, const torch::Tensor& grad);

  const SparseEmbedding& local() const noexcept { return local_; }  // this rank's rows and optimizer state
  SparseEmbedding& local() noexcept { return local_; }
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

// The embedding tables of a typed graph: one DistEmbedding per node type without features, its
// rows numbered as the TypedFeatureStore numbers the type (MiniBatch::type_ids), over one
// communicator of their own (a dup() of the one given), collectives in type order.
class TypedEmbeddings {
 public:
  // Collective on `comm`. Rows of `dim` columns; type t's table starts from derive_seed(seed, t).
  TypedEmbeddings(const TypedFeatureStore& store, const GraphSchema& schema, std::int64_t dim, SparseEmbeddingOptions options, std::uint64_t seed,
                  const comm::Communicator& comm);

  // Collective: per node type the rows of ids[t] ([n_t, dim] leaves on the CPU) for a type with a
  // table, undefined for the others. With autograd on, the leaves are kept for step().
  std::vector<torch::Tensor> gather(const std::vector<std::vector<NodeId>>& ids);
  // Collective: gather of no rows (a rank with nothing to compute).
  void gather_nothing();
  // Collective: the kept leaves' gradients times `scale` to their rows' owners, applied there;
  // then forgets them (a rank that kept none sends none).
  void step(double scale = 1);

  std::int64_t dim() const noexcept { return dim_; }
  const std::vector<int>& types() const noexcept { return types_; }  // the types with a table, in order
  DistEmbedding& table(int t) { return *tables_[static_cast<std::size_t>(t)]; }
  const DistEmbedding& table(int t) const { return *tables_[static_cast<std::size_t>(t)]; }
  // The dataset ids of this rank's rows of type t's table, in its order (what a checkpoint keys
  // them by).
  const std::vector<NodeId>& dataset_ids(int t) const { return dataset_ids_[static_cast<std::size_t>(t)]; }

 private:
  std::int64_t dim_;
  std::unique_ptr<comm::Communicator> comm_;
  std::vector<int> types_;
  std::vector<std::unique_ptr<DistEmbedding>> tables_;  // per node type; null for a type with features
  std::vector<std::vector<NodeId>> dataset_ids_;        // per node type with a table
  std::vector<std::vector<NodeId>> kept_ids_;
  std::vector<torch::Tensor> kept_rows_;
};

}  // namespace shardgnn
