// Data-parallel training over MPI ranks (SPMD: every rank runs the same program): each rank
// trains a replica of the model on batches of its own training nodes, sampled by the distributed
// sampler and prefetched by the pipeline's thread, and every step applies the gradient of the
// mean loss over all ranks' examples (see data_parallel.hpp). All ranks run the same number of
// steps (DistSampler::steps_in_epoch), validate together, keep the best model by validation
// accuracy, stop early after `patience` validations without improvement, and checkpoint at epoch
// boundaries. The loop follows pytorch/examples cpp/mnist: plain steps, evaluation under
// NoGradGuard.
//
// This header has no torch includes (the tool that runs training compiles without them).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "comm/communicator.hpp"
#include "partition/shards.hpp"
#include "sampler/config.hpp"
#include "trainer/config.hpp"
#include "trainer/metrics.hpp"
#include "trainer/op_profile.hpp"

namespace shardgnn {

class FeatureStore;

namespace detail {
struct TrainerParts;  // the model, optimiser, sampler and the rest (train.cpp)
}

struct TrainResult {
  std::vector<EpochRecord> history;  // the epochs run by this call
  int start_epoch = 0;               // > 0 when resumed from a checkpoint
  int best_epoch = -1;
  double best_val = -1;
  std::string score = "accuracy";    // what best_val is: the task's selection score (Task::selection_name)
  bool last_model = false;           // the last epoch's model was scored and saved, not the best one (embedding tables)
  bool stopped_early = false;
  int stop_signal = 0;               // > 0: stopped by this signal (nothing evaluated after)
  bool checkpointed = false;         // when stopped: a checkpoint holds where it stood
  std::string stop_message;          // when stopped: what happened and how to go on
  SplitMetrics sampled;              // the best model, through the sampler
  bool sampled_is_full = false;      // every fanout -1: `sampled` is `full`, not scored twice
  bool has_full = false;
  bool tested = false;               // the test set was scored (TrainConfig::final_test)
  SplitMetrics full;                 // the best model, full neighbourhoods (TrainConfig::final_full_eval)
  double sampled_s = 0, full_s = 0;  // wall time of those two evaluations
  // After TrainConfig::personalize_epochs of per-rank fine-tuning: the test nodes, each scored by
  // its owner's copy (full neighbourhoods with --eval full, else the training fanouts).
  std::optional<SplitMetrics> personalized;
  bool personalized_full = false;
  double train_s = 0;                // wall time of the epochs
  std::optional<OpProfile> op_profile;  // this rank's profiled steps (TrainConfig::profile_steps)
};

// The kernels OpenBLAS computes with on this rank (its core name, e.g. "Haswell"); "" with
// another BLAS.
std::string blas_core();

class Trainer {
 public:
  // Collective over `world`. Checks the configuration, the device and any checkpoint on every
  // rank before any collective work (a problem anywhere is a comm::CollectiveError on every
  // rank), builds the model from rank 0's weights and the sampler, and resumes when asked.
  // `shard` and `world` must outlive the trainer; the sampler and the gradient all-reduce get
  // their own dup()s of `world`. `dataset` names the data in checkpoints.
  Trainer(const Shard& shard, const std::string& dataset, const comm::Communicator& world, TrainConfig config, SamplerConfig sampler);
  ~Trainer();
  Trainer(const Trainer&) = delete;
  Trainer& operator=(const Trainer&) = delete;

  // Collective. Trains up to config.epochs epochs (from the checkpoint's epoch when resumed),
  // then restores the best model, evaluates it and writes the weights file (rank 0).
  TrainResult fit();

  // Collective. The current model on the val/test sets of all ranks.
  SplitMetrics evaluate_sampled();

  // Whether the validation batches were kept after the first validation (and are scored again
  // without sampling): false before it, or when they did not fit the budget on some rank.
  bool validation_batches_kept() const noexcept;

  // A hash of the exact parameter bytes (compare across ranks with allgather).
  std::uint64_t weights_checksum() const;
  std::int64_t num_parameters() const;
  std::string device_name() const;
  // "2 torch threads per rank (4 CPUs in the binding, shared by 2 of the node's 2 ranks)": what
  // rank 0 uses and what decided it.
  std::string threads_text() const;
  // What runs the layers' matrix products: "oneDNN sgemm" (float32 on the CPU, where this libtorch
  // or the system exports it) or "torch".
  std::string gemm_backend() const;
  // What sums the gradients: "NCCL" (GPUs, where built), "MPI" or, on one rank, "none".
  std::string gradient_path() const;
  // The feature store: its cache as built, and its counters.
  const FeatureStore& features() const noexcept;

 private:
  std::unique_ptr<detail::TrainerParts> s_;
};

}  // namespace shardgnn
