// Writing a partitioned dataset: a partitioner's assignment relabelled into a range partition
// book, every shard's files and partition.json (partition/shards.hpp describes the layout).
#pragma once

#include <string>
#include <vector>

#include "datasets/dataset.hpp"
#include "datasets/feature_dtype.hpp"
#include "partition/book.hpp"
#include "comm/communicator.hpp"
#include "partition/config.hpp"
#include "partition/metrics.hpp"

namespace shardgnn {

struct PartitionResult {
  PartitionConfig config;
  std::vector<PartId> assignment;  // part of every dataset node
  double seconds = 0;              // time the partitioner took
};

// How write_partitioned writes; the defaults are what `shardgnn partition` does.
struct WriteOptions {
  bool overwrite = false;  // replace an existing out_dir
  // Whether the writer may carry each node's part in its new-id table where id and part bits fit
  // in 32. Off, it searches the partition book per entry, as it must for larger graphs: the tests
  // compare the two.
  bool pack_parts = true;
  // Whether the writer may look new ids up in a 32-bit table where they fit. Off, it uses the
  // 64-bit table, as it must for graphs of more than 2^32 nodes.
  bool narrow_ids = true;
  // How the shards store features (float16 and bfloat16 halve their bytes on disk, in the page
  // cache and on the wire; computation stays float32).
  FeatureDtype feature_dtype = FeatureDtype::kFloat32;
  // Ranks to spread the shards over (every rank calls write_partitioned with the same arguments;
  // the output folder must be on a filesystem they all see): rank r writes parts r, r + P, ...,
  // rank 0 partition.json, and only rank 0's return value holds the metrics. Null: this process
  // writes everything.
  const comm::Communicator* comm = nullptr;
};

// Writes the partitioned dataset atomically (nothing is left at `out_dir` on failure).
// `dataset_dir` is recorded (with its meta.json checksum) so a verifier can find the source.
// Returns the quality metrics it stores in partition.json: what compute_metrics gives for
// result.assignment and result.config, counted in the writer's own pass over the rows.
PartitionMetrics write_partitioned(const Dataset& ds, const std::string& dataset_dir, const PartitionResult& result, const std::string& out_dir,
                                   const WriteOptions& options);

}  // namespace shardgnn
