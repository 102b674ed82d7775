// Where a rank's torch work runs: its device and its threads, decided the same way by every
// program that links libtorch (training and prediction).
#pragma once

#include <torch/types.h>

#include <string>

#include "comm/communicator.hpp"

namespace shardgnn {

// "cpu", "cuda" (the GPU of the node-local rank `local_rank`) or "cuda:N"; made the current device.
// An InputError when no such GPU is visible.
torch::Device resolve_device(const std::string& name, int local_rank);

// Sets torch's (and OpenBLAS's) threads: `threads` when > 0, else OMP_NUM_THREADS's, else the
// rank's share of the cores its binding allows (never above torch's own default). Returns what
// decided it, for the start-of-run line.
std::string set_rank_threads(int threads, const comm::Communicator::CoreShare& cores);

// "2 torch threads per rank (what decided it)".
std::string threads_text(const std::string& decided_by);

}  // namespace shardgnn
