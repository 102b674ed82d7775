// Batch normalisation in training over every rank's batch together, as PyTorch's SyncBatchNorm:
// each rank's rows are one slice of a global batch, so the statistics are the global batch's.
// Without it, a rank normalises with its own batch's statistics, and a METIS part's nodes are a
// community, not a sample of the graph (docs/results/models.md: 1.4 points lost at 4 ranks).
//
// The statistics travel as one all-reduce of [sum x, sum x^2, rows] per layer in the forward pass
// and one of their gradients in the backward pass (the gradient of every rank's loss reaches every
// rank's rows through the global statistics). Collective: every rank normalises the same layers
// the same number of times, a rank without a batch through synced_batch_norm_nothing.
#pragma once

#include <torch/torch.h>

#include "comm/communicator.hpp"

namespace shardgnn {

// `bn` (training mode) on x [rows, width], with the statistics of every rank's rows; updates its
// running statistics from them as torch's BatchNorm1d does (momentum, unbiased variance). Fewer
// than two rows over all ranks: the running statistics normalise, as in evaluation.
torch::Tensor synced_batch_norm(const torch::Tensor& x, torch::nn::BatchNorm1dImpl& bn, const comm::Communicator& comm);

// What a rank without rows contributes to a forward pass through `layers` (the batch-normalised
// layers, in order): nothing to the statistics, and nothing to their gradients in the backward
// pass that follows on the other ranks; its running statistics move with the global batch's as
// every rank's do.
void synced_batch_norm_nothing(const std::vector<torch::nn::BatchNorm1dImpl*>& layers, const comm::Communicator& comm);

}  // namespace shardgnn
