// The partitioned dataset on disk: partition.json (method, parameters, the range partition book,
// quality metrics, a checksum per file) plus part-<k>/ per shard holding, as .npy:
//   indptr      int64 [n_k + 1]   CSR over the shard's owned nodes (local row = global - offset)
//   indices     int64 [m_k]       neighbours, as new global ids (rows sorted)
//   features    float32 [n_k, F]  labels int64 [n_k]
//   train_idx, val_idx, test_idx  int64, new global ids of owned nodes
//   halo_nodes  int64 [h_k]       the remote nodes the shard's edges reach (sorted global ids)
//   halo_owner  int32 [h_k]       their owning part
//   orig_ids    int64 [n_k]       each owned node's id in the source dataset
//   edge_weights int64 [m_k]      when the dataset has them
#pragma once

#include <boost/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "datasets/dataset.hpp"
#include "partition/book.hpp"
#include "partition/collective.hpp"
#include "partition/config.hpp"
#include "partition/metrics.hpp"

namespace shardgnn {

inline constexpr int kPartitionFormatVersion = 1;

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
  // Ranks to spread the shards over (every rank calls write_partitioned with the same arguments;
  // the output folder must be on a filesystem they all see): rank r writes parts r, r + P, ...,
  // rank 0 partition.json, and only rank 0's return value holds the metrics. Null: this process
  // writes everything.
  const PartitionCollective* comm = nullptr;
};

// Writes the partitioned dataset atomically (nothing is left at `out_dir` on failure).
// `dataset_dir` is recorded (with its meta.json checksum) so a verifier can find the source.
// Returns the quality metrics it stores in partition.json: what compute_metrics gives for
// result.assignment and result.config, counted in the writer's own pass over the rows.
PartitionMetrics write_partitioned(const Dataset& ds, const std::string& dataset_dir, const PartitionResult& result, const std::string& out_dir,
                                   const WriteOptions& options);

// partition.json, parsed and checked.
struct PartitionInfo {
  std::string dir;
  boost::json::object json;
  PartitionBook book;
  std::string method;
  std::string dataset_name, dataset_dir;
  std::int64_t num_nodes = 0, num_edges = 0, feature_dim = 0, num_classes = 0;
  PartitionMetrics metrics;
  std::vector<std::string> part_dirs;  // part k's folder, checked to lie inside `dir`
};
PartitionInfo load_partition_info(const std::string& dir);

// One shard, memory-mapped (what a rank loads).
struct Shard {
  std::string dir;  // the partitioned dataset's folder (empty for shard_from_dataset)
  PartId part = 0;
  PartitionBook book;
  CsrGraph graph;  // local rows, global neighbour ids
  std::int64_t feature_dim = 0, num_classes = 0;
  Array<float> features;
  Array<std::int64_t> labels;
  Array<NodeId> train_idx, val_idx, test_idx;
  Array<NodeId> halo_nodes;
  Array<PartId> halo_owner;
  Array<NodeId> orig_ids;
  Array<std::int64_t> edge_weights;
  // How many of the partition's parts this shard joins (load_shard_for_rank with fewer ranks than
  // parts): `part` and `book` are then the rank's, not the partition.json's.
  int merged_parts = 1;
};
Shard load_shard(const PartitionInfo& info, PartId part);
// The parts [first, last) that rank `rank` of `ranks` serves when a partition has `parts` >= ranks:
// contiguous, as even in number as they can be.
std::pair<PartId, PartId> parts_of_rank(int parts, int rank, int ranks);
// What a rank of a `ranks`-rank job loads, after checking each part's files against their
// checksums: with one part per rank, part `rank` as written; with more parts than ranks, its
// parts_of_rank merged into one shard of a book with one part per rank (its arrays in spill files
// in `scratch`, default the system's temporary folder, so that they are page cache as mapped
// shards are). Fewer parts than ranks is an error. Throws InputError; not collective (the caller
// makes the failure every rank's).
Shard load_shard_for_rank(const PartitionInfo& info, int rank, int ranks, const std::string& scratch = "");
// Part `part` as a node-local rank (another rank on its node) reads it, to draw its rows and serve its feature rows,
// labels and degrees itself: its CSR, dataset ids, features and labels (each checked against
// partition.json's listing and shape); its split indices, halo and edge weights stay unmapped.
Shard load_shard_rows(const PartitionInfo& info, PartId part);
// Reads every file of one part and compares its CRC-32 with partition.json's; throws InputError
// naming the first file that differs. O(shard size): what a rank runs once at start-up.
void verify_shard_checksums(const PartitionInfo& info, PartId part);

// The whole dataset as part 0 of a one-part partition (global ids = dataset ids, no halo), for
// single-process runs on a dataset folder. The arrays are views of `ds`'s (no copy), so `ds` must
// outlive the shard; only orig_ids (the identity) is allocated.
Shard shard_from_dataset(const Dataset& ds);

// Serial verifier: checks a partitioned dataset against its source dataset. Every edge present
// exactly once across shards; features, labels and splits identical after relabelling; halo lists
// exact; the partition book consistent; every file's checksum. Returns the problems found.
ValidationResult verify_partition(const std::string& dataset_dir, const std::string& partition_dir);

}  // namespace shardgnn
