// Data parallelism over MPI ranks: every rank holds a full replica of the model, starts from rank
// 0's weights, and applies the same averaged gradient each step, so the replicas stay identical.
// Gradients travel in buckets of ~25 MB of float32 (PyTorch DDP's default bucket size), flattened
// on the CPU; the per-rank example counts ride in the last bucket, so weighting the average by
// samples costs no extra collective. With a NCCL communicator (GPUs) the buckets are summed on the
// device instead, and the counts, which the host knows, take a small MPI all-reduce of their own.
#pragma once

#include <torch/nn.h>

#include <cstdint>
#include <vector>

#include "comm/communicator.hpp"
#include "trainer/nccl.hpp"

namespace shardgnn {

// A model's state: its parameters, then its buffers (batch normalisation's statistics).
std::vector<torch::Tensor> state_tensors(const torch::nn::Module& model);

// Collective: overwrites every rank's parameters and buffers with rank 0's.
void broadcast_parameters(torch::nn::Module& model, const comm::Communicator& comm);

// A hash of the exact bytes of every parameter (rank-local; allgather it to compare replicas).
std::uint64_t parameters_checksum(const torch::nn::Module& model);

class GradientAllreducer {
 public:
  static constexpr std::size_t kDefaultBucketBytes = 25u << 20;

  // `comm` must outlive this object and be used by this thread alone (not the sampler's).
  // `nccl` (may be null) must outlive this object too.
  GradientAllreducer(const torch::nn::Module& model, const comm::Communicator& comm, NcclComm* nccl = nullptr,
                     std::size_t bucket_bytes = kDefaultBucketBytes);

  // Collective. The gradients hold the gradient of a SUM of per-example losses over this rank's
  // `examples` examples (undefined gradients count as 0). Afterwards every rank's gradients are
  // the gradient of the mean loss over all ranks' examples. `extras` (e.g. the loss sum and the
  // correct count) are summed across ranks on the way. Returns the total example count; with 0
  // the gradients are left at 0.
  // The model's floating-point buffers (batch normalisation's running statistics) are averaged
  // over the ranks on the way, so every rank evaluates, checkpoints and saves one model.
  double average(double examples, std::vector<double>& extras);

  // Time spent in average(), cumulative; with NCCL, queueing the sums, which run on the device's stream.
  double seconds() const noexcept { return seconds_; }
  // "NCCL", "MPI" or, on one rank, "none".
  const char* path() const noexcept { return comm_.size() == 1 ? "none" : nccl_ != nullptr ? "NCCL" : "MPI"; }

 private:
  double sum_on_devices(double examples, std::vector<double>& extras);    // NCCL; the counts over MPI
  double sum_through_host(double examples, std::vector<double>& extras);  // MPI, buckets staged in buffer_

  std::vector<torch::Tensor> params_;
  std::vector<torch::Tensor> stats_;  // the floating-point buffers
  std::vector<std::vector<std::size_t>> buckets_;  // parameter indices per bucket
  const comm::Communicator& comm_;
  NcclComm* nccl_;
  std::vector<float> buffer_;
  double seconds_ = 0;
};

}  // namespace shardgnn
