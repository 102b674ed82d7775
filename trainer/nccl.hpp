// Gradient sums between the ranks' GPUs over NCCL, the library GPU clusters run all-reduces on:
// the sum runs on the device's stream, with no trip through host memory. The communicator's
// unique id travels over the job's MPI communicator, so NCCL needs no store, address or port of
// its own. Built when the libtorch has CUDA and NCCL's header and library are found (PyTorch's
// wheels bring them as nvidia-nccl); otherwise no rank connects and gradients go through MPI.
#pragma once

#include <torch/torch.h>

#include <memory>

#include "comm/communicator.hpp"

namespace shardgnn {

class NcclComm;

struct NcclDeleter {
  void operator()(NcclComm* c) const noexcept;
};
using NcclHandle = std::unique_ptr<NcclComm, NcclDeleter>;

// Collective over `comm`: a NCCL communicator between the ranks' `device`s when every rank trains
// on a CUDA device of its own (`own_gpu`: NCCL takes one rank per GPU) and this build has NCCL,
// else null on every rank. A failure on any rank fails every rank; one inside NCCL's own set-up
// (ncclCommInitRank, collective) may leave the others waiting there.
NcclHandle nccl_connect(const comm::Communicator& comm, const torch::Device& device, bool own_gpu);

// Sums a contiguous float32 CUDA tensor over the ranks, in place, on the current stream.
void nccl_sum(NcclComm& nccl, torch::Tensor& flat);

}  // namespace shardgnn
