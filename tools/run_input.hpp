// What `train` and `predict` share around their input: peak memory, the time.
#pragma once

#include <string>

#include "comm/communicator.hpp"
#include "partition/input.hpp"

namespace shardgnn::cli {

// Collective: every rank's peak resident memory (mapped shard pages it touched included); rank 0
// prints the largest and the mean.
void print_peak_memory(const comm::Communicator& world);
// "2026-12-04T02:01:02Z".
std::string utc_now();

}  // namespace shardgnn::cli
