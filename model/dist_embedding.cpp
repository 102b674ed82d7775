#include "model/dist_embedding.hpp"

#include <torch/torch.h>

#include "datasets/random.hpp"

namespace shardgnn {

torch::Tensor keyed_embedding_rows(std::uint64_t seed, std::span<const NodeId> keys, std::int64_t dim, double scale) {
  const auto n = static_cast<std::int64_t>(keys.size());
  torch::Tensor rows = torch::empty({n, dim});
  float* x = rows.data_ptr<float>();
  for (std::int64_t i = 0; i < n; ++i)
    for (std::int64_t j = 0; j < dim; ++j) {
      // 53 random bits to a double in [0, 1), then to [-scale, scale].
      const std::uint64_t h = derive_seed(derive_seed(seed, static_cast<std::uint64_t>(keys[static_cast<std::size_t>(i)])), static_cast<std::uint64_t>(j));
      x[i * dim + j] = static_cast<float>(scale * (2.0 * static_cast<double>(h >> 11) * 0x1p-53 - 1.0));
    }
  return rows;
}

DistEmbedding::DistEmbedding(PartitionBook book, std::span<const NodeId> keys, std::int64_t dim, SparseEmbeddingOptions options, std::uint64_t seed,
                             const comm::Communicator& comm)
    : book_(std::move(book)), dim_(dim), comm_(comm) {
  if (book_.parts() != comm.size()) throw std::logic_error("DistEmbedding: a part per rank expected");
  if (static_cast<std::int64_t>(keys.size()) != book_.size(comm.rank())) throw std::logic_error("DistEmbedding: a key per owned row expected");
  local_ = SparseEmbedding(keyed_embedding_rows(seed, keys, dim, options.init_scale), options);
}

void DistEmbedding::group(std::span<const NodeId> ids) {
  const auto P = static_cast<std::size_t>(comm_.size());
  counts_.assign(P, 0);
  for (const NodeId v : ids) ++counts_[static_cast<std::size_t>(book_.owner(v))];
  std::vector<std::int64_t> at(P, 0);
  for (std::size_t r = 1; r < P; ++r) at[r] = at[r - 1] + counts_[r - 1];
  grouped_.resize(ids.size());
  order_.resize(ids.size());
  for (std::size_t i = 0; i < ids.size(); ++i) {
    const auto slot = at[static_cast<std::size_t>(book_.owner(ids[i]))]++;
    grouped_[static_cast<std::size_t>(slot)] = ids[i];
    order_[i] = slot;
  }
}

torch::Tensor DistEmbedding::gather(std::span<const NodeId> ids) {
  torch::NoGradGuard no_grad;
  group(ids);
  const auto asked = comm_.alltoallv<NodeId>(grouped_, counts_);
  const NodeId first = book_.begin(comm_.rank());
  std::vector<std::int64_t> local(asked.data.size());
  for (std::size_t i = 0; i < local.size(); ++i) local[i] = asked.data[i] - first;
  const torch::Tensor rows = local_.rows().index_select(0, torch::tensor(local, torch::kInt64)).contiguous();
  std::vector<std::int64_t> row_counts(asked.counts.size());
  for (std::size_t r = 0; r < row_counts.size(); ++r) row_counts[r] = asked.counts[r] * dim_;
  const auto got = comm_.alltoallv<float>(std::span<const float>(rows.data_ptr<float>(), static_cast<std::size_t>(rows.numel())), row_counts);
  // Received in grouped order; row i of the batch is grouped row order_[i].
  const torch::Tensor grouped = torch::from_blob(const_cast<float*>(got.data.data()), {static_cast<std::int64_t>(ids.size()), dim_}, torch::kFloat);
  return grouped.index_select(0, torch::tensor(order_, torch::kInt64)).requires_grad_(true);
}

void DistEmbedding::apply(std::span<const NodeId> ids, const torch::Tensor& grad) {
  torch::NoGradGuard no_grad;
  group(ids);
  // The gradient rows in grouped order: row order_[i] is ids[i]'s.
  torch::Tensor send = torch::empty({static_cast<std::int64_t>(ids.size()), dim_});
  if (!ids.empty()) send.index_copy_(0, torch::tensor(order_, torch::kInt64), grad.to(torch::kCPU).to(torch::kFloat).contiguous());
  std::vector<std::int64_t> row_counts(counts_.size());
  for (std::size_t r = 0; r < row_counts.size(); ++r) row_counts[r] = counts_[r] * dim_;
  const auto rows = comm_.alltoallv<NodeId>(grouped_, counts_);
  const auto grads = comm_.alltoallv<float>(std::span<const float>(send.data_ptr<float>(), static_cast<std::size_t>(send.numel())), row_counts);
  if (rows.data.empty()) return;
  const NodeId first = book_.begin(comm_.rank());
  std::vector<std::int64_t> local(rows.data.size());
  for (std::size_t i = 0; i < local.size(); ++i) local[i] = rows.data[i] - first;
  local_.apply(torch::tensor(local, torch::kInt64),
               torch::from_blob(const_cast<float*>(grads.data.data()), {static_cast<std::int64_t>(local.size()), dim_}, torch::kFloat));
}

TypedEmbeddings::TypedEmbeddings(const TypedFeatureStore& store, const GraphSchema& schema, std::int64_t dim, SparseEmbeddingOptions options,
                                 std::uint64_t seed, const comm::Communicator& comm)
    : dim_(dim), comm_(std::make_unique<comm::Communicator>(comm.dup())) {
  tables_.resize(static_cast<std::size_t>(schema.num_types()));
  dataset_ids_.resize(tables_.size());
  for (int t = 0; t < schema.num_types(); ++t)
    if (schema.types()[static_cast<std::size_t>(t)].feature_dim == 0) {
      types_.push_back(t);
      dataset_ids_[static_cast<std::size_t>(t)] = store.owned_dataset_ids(t);
      tables_[static_cast<std::size_t>(t)] = std::make_unique<DistEmbedding>(store.type_book(t), dataset_ids_[static_cast<std::size_t>(t)], dim, options,
                                                                             derive_seed(seed, static_cast<std::uint64_t>(t)), *comm_);
    }
}

std::vector<torch::Tensor> TypedEmbeddings::gather(const std::vector<std::vector<NodeId>>& ids) {
  std::vector<torch::Tensor> rows(tables_.size());
  const bool keep = torch::GradMode::is_enabled();
  kept_ids_.assign(tables_.size(), {});
  kept_rows_.assign(tables_.size(), {});
  for (const int t : types_) {
    const auto ti = static_cast<std::size_t>(t);
    const std::span<const NodeId> mine = ti < ids.size() ? std::span<const NodeId>(ids[ti]) : std::span<const NodeId>();
    rows[ti] = tables_[ti]->gather(mine);
    if (keep) {
      kept_ids_[ti].assign(mine.begin(), mine.end());
      kept_rows_[ti] = rows[ti];
    }
  }
  return rows;
}

void TypedEmbeddings::gather_nothing() { gather({}); }

void TypedEmbeddings::step(double scale) {
  kept_ids_.resize(tables_.size());
  kept_rows_.resize(tables_.size());
  for (const int t : types_) {
    const auto ti = static_cast<std::size_t>(t);
    const torch::Tensor& leaf = kept_rows_[ti];
    // A leaf autograd never reached (its rows fed no seed) has no gradient: zero rows.
    const torch::Tensor grad = !leaf.defined() ? torch::zeros({0, dim_}) : leaf.grad().defined() ? leaf.grad() : torch::zeros_like(leaf);
    tables_[ti]->apply(kept_ids_[ti], scale == 1 ? grad : grad * scale);
  }
  kept_ids_.assign(tables_.size(), {});
  kept_rows_.assign(tables_.size(), {});
}

}  // namespace shardgnn
