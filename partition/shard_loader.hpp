// Loading a partitioned dataset's shards (memory-mapped) from its parsed partition.json, and
// the whole-dataset shard of single-process runs.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>

#include "datasets/dataset.hpp"
#include "datasets/feature_dtype.hpp"
#include "partition/book.hpp"
#include "partition/partition_info.hpp"

namespace shardgnn {

// One shard, memory-mapped (what a rank loads). Its parts (datasets/parts.hpp) hold its own
// rows: FeatureTable's as the partition stores them (PartitionInfo's feature_dtype), NodeLabels'
// at the width stored (label_dtype), HeldOutEdges' pairs whose first node it owns (relabelled to
// global ids), TypedRows' rows of its own nodes of each featured type, in type_nodes' order, and
// EdgeArrays' entries of its own rows.
struct Shard : FeatureTable, NodeLabels, HeldOutEdges, TypedRows, EdgeArrays {
  std::string dir;  // the partitioned dataset's folder (empty for shard_from_dataset)
  PartId part = 0;
  PartitionBook book;
  CsrGraph graph;  // local rows, global neighbour ids
  IntArray train_idx, val_idx, test_idx;  // int32 where every node id fits, else int64
  IntArray halo_nodes;  // int32 where every node id fits, else int64
  Array<PartId> halo_owner;
  IntArray orig_ids;  // int32 where every dataset id fits, else int64
  // A typed graph's part: its owned nodes per type, each type one run of its ids in type order (a
  // merged shard: one run per part and type, its parts' in order).
  std::vector<std::int64_t> type_nodes;
  // How many of the partition's parts this shard joins (load_shard_for_rank with fewer ranks than
  // parts): `part` and `book` are then the rank's, not the partition.json's.
  int merged_parts = 1;
  // The partition.json it was loaded from, so that ShardView maps the node-local ranks' parts
  // without reading the file again; null for shard_from_dataset and load_shard_rows.
  std::shared_ptr<const PartitionInfo> info;
};

// Part `part` with every file partition.json lists for it, each checked against its listed shape
// and its ids against the book. The first form keeps a copy of `info` in the shard (O(parts)); a
// loop over many parts shares one through the second.
Shard load_shard(const PartitionInfo& info, PartId part);
Shard load_shard(std::shared_ptr<const PartitionInfo> info, PartId part);
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
// labels and degrees itself: its CSR, relation ids, dataset ids, features and labels (each checked
// against partition.json's listing and shape); its split indices, halo and edge weights stay
// unmapped.
Shard load_shard_rows(const PartitionInfo& info, PartId part);
// Part `part`'s label_bits.npy of a multi-label partition, mapped and checked (for LabelSets: every
// rank reads every part's label sets).
Array<std::uint8_t> load_part_label_bits(const PartitionInfo& info, PartId part);
// Reads every file of one part and compares its CRC-32 with partition.json's; throws InputError
// naming the first file that differs. O(shard size): what a rank runs once at start-up.
void verify_shard_checksums(const PartitionInfo& info, PartId part);

// The whole dataset as part 0 of a one-part partition (global ids = dataset ids, no halo), for
// single-process runs on a dataset folder. The arrays are views of `ds`'s (no copy), so `ds` must
// outlive the shard; only orig_ids (the identity) is allocated.
Shard shard_from_dataset(const Dataset& ds);

}  // namespace shardgnn
