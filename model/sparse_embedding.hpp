// Learnable rows for a node type without features, updated sparsely: a step touches only the rows
// its batch gathered, as DistDGL's DistEmbedding with its SparseAdam / SparseAdagrad and
// torch.optim.SparseAdam do. The rows are a plain tensor [n, dim] (a rank holds its own nodes');
// a batch gathers rows (with autograd through the gathered copy), and apply() takes the gathered
// rows' gradient back: duplicates summed per row, then the optimizer's update on those rows alone.
// Adam here is the lazy variant: each row keeps its own step count for the bias correction, and a
// row absent from a batch keeps its moments (so it equals dense Adam whenever every row is in
// every batch). Adagrad's accumulator is untouched by a zero gradient, so sparse Adagrad equals
// dense Adagrad always.
#pragma once

#include <torch/types.h>

#include <cstdint>

#include "model/spec.hpp"

namespace shardgnn {


struct SparseEmbeddingOptions {
  SparseOptimizer optimizer = SparseOptimizer::kAdam;
  double lr = 0.01;
  double beta1 = 0.9, beta2 = 0.999;  // Adam
  double eps = 1e-8;                  // Adam; Adagrad uses 1e-10, as torch's
  double init_scale = 0.1;            // rows start uniform in [-init_scale, init_scale] (DGL's embedding examples)
};

class SparseEmbedding {
 public:
  SparseEmbedding() = default;
  // `n` rows of `dim`, drawn from torch's generator (seed it first for a reproducible table).
  SparseEmbedding(std::int64_t n, std::int64_t dim, SparseEmbeddingOptions options);
  // Starting from `rows` [n, dim] (float32, on the CPU).
  SparseEmbedding(torch::Tensor rows, SparseEmbeddingOptions options);

  // Rows `ids` (int64 [k], any order, repeats allowed) as a new leaf tensor that requires grad:
  // the batch's input rows; its .grad() after backward is what apply() takes.
  torch::Tensor gather(const torch::Tensor& ids) const;
  // The update of rows `ids` by `grad` ([k, dim], aligned with ids; repeats summed).
  void apply(const torch::Tensor& ids, const torch::Tensor& grad);

  const torch::Tensor& rows() const noexcept { return rows_; }
  // The optimizer's state, for checkpoints: Adam's first and second moments and per-row steps, or
  // Adagrad's accumulator (in `second`; `first` and `steps` then undefined).
  const torch::Tensor& first() const noexcept { return m_; }
  const torch::Tensor& second() const noexcept { return v_; }
  const torch::Tensor& steps() const noexcept { return step_; }
  const SparseEmbeddingOptions& options() const noexcept { return options_; }
  // A checkpoint's rows and state put back (the tensors as rows(), first(), second() and steps()
  // gave them; undefined where those are). False, with nothing changed, when a shape differs.
  bool restore(const torch::Tensor& rows, const torch::Tensor& first, const torch::Tensor& second, const torch::Tensor& steps);
  // The same for rows `at` (int64 [k]) alone, from tensors of k rows each (a checkpoint written
  // by another partition or rank count holds them among other ranks' rows).
  bool restore_rows(const torch::Tensor& at, const torch::Tensor& rows, const torch::Tensor& first, const torch::Tensor& second, const torch::Tensor& steps);

 private:
  SparseEmbeddingOptions options_;
  torch::Tensor rows_, m_, v_, step_;
};

}  // namespace shardgnn
