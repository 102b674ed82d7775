// The serial verifier of a partitioned dataset against its source dataset.
#pragma once

#include <string>

#include "datasets/dataset.hpp"

namespace shardgnn {

// Every edge present exactly once across shards; features, labels and splits identical after
// relabelling; halo lists exact; the partition book consistent; every file's checksum. Returns
// the problems found.
ValidationResult verify_partition(const std::string& dataset_dir, const std::string& partition_dir);

}  // namespace shardgnn
