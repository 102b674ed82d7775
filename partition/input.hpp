// What a rank of `train`, `predict` or a Python job works on: its shard of a partitioned dataset,
// or a whole dataset folder viewed as one shard.
#pragma once

#include <string>

#include "comm/communicator.hpp"
#include "datasets/dataset.hpp"
#include "datasets/dataset_meta.hpp"
#include "partition/shard_loader.hpp"

namespace shardgnn {

// What a rank works on; `dataset` backs the shard's arrays in the single-process case.
struct Input {
  Dataset dataset;
  Shard shard;
  DatasetMeta meta;  // the dataset's description: meta.json's, or partition.json's "dataset"
  std::string name;
  std::string kind;  // "partitioned" or "dataset", and how parts were merged
};

// Collective over `world`: loads this rank's part of `dir` (partition.json: one or more parts per
// rank; meta.json: one process), turning any failure into an error every rank reports. `verb`
// names the work in the refusal of a dataset folder on several ranks ("trains", "predicts").
void load_input(const comm::Communicator& world, const std::string& dir, const std::string& scratch, const std::string& verb, Input& in);

}  // namespace shardgnn
