// What a rank of `train` or `predict` works on: its shard of a partitioned dataset, or a whole
// dataset folder viewed as one shard.
#pragma once

#include <string>

#include "comm/communicator.hpp"
#include "datasets/dataset.hpp"
#include "partition/shards.hpp"

namespace shardgnn::cli {

// What a rank works on; `dataset` backs the shard's arrays in the single-process case.
struct Input {
  Dataset dataset;
  Shard shard;
  std::string name;
  std::string kind;  // "partitioned" or "dataset", and how parts were merged
};

// Loads this rank's part of `dir` (partition.json: one or more parts per rank; meta.json: one
// process), turning any failure into an error every rank reports. `verb` names the work in the
// refusal of a dataset folder on several ranks ("trains", "predicts").
void load_input(const comm::Communicator& world, const std::string& dir, const std::string& scratch, const std::string& verb, Input& in);

// Collective: every rank's peak resident memory (mapped shard pages it touched included); rank 0
// prints the largest and the mean.
void print_peak_memory(const comm::Communicator& world);
// "2026-12-04T02:01:02Z".
std::string utc_now();

}  // namespace shardgnn::cli
