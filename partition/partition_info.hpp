// partition.json, the partitioned dataset's root file, as one struct with its Boost.JSON
// conversions: the writer fills a PartitionInfo and writes value_from of it, and every reader
// goes through load_partition_info, which parses the file once (the shards keep what it parsed).
#pragma once

#include <boost/json/conversion.hpp>
#include <boost/json/object.hpp>
#include <boost/json/value.hpp>
#include <cstdint>
#include <string>
#include <vector>

#include "partition/book.hpp"
#include "partition/config.hpp"
#include "datasets/dataset_meta.hpp"
#include "datasets/feature_dtype.hpp"
#include "partition/metrics.hpp"

namespace shardgnn {

// Version 2 may store a shard's neighbour ids as int32, version 3 its labels in the smallest type
// that holds the classes (label_dtype) and its arrays placed to be mapped end to end
// (shard_writer.cpp), version 4 its split and halo ids as int32 where every id fits, version 5 a
// relation id per entry (edge_relations.npy, rows ordered by (relation, neighbour), which an older
// build must refuse rather than read as sorted rows). A partition without relation ids is still
// written as version 4; older partitions load as they are.
inline constexpr int kPartitionFormatVersion = 5;
inline constexpr int kPartitionFormatVersionWithoutRelationIds = 4;
inline constexpr const char* kPartitionFormatName = "shardgnn-partition";

// One entry of "parts": part k's folder and the files in it.
struct PartEntry {
  std::string dir;  // relative to the partition's folder ("part-3")
  std::int64_t nodes = 0, edges = 0, halo = 0;
  // A typed graph's part: its owned nodes and its halo per node type ("type_nodes", "type_halo";
  // absent for one node type). The owned nodes of each type are one run of the part's ids, in
  // type order (relabelling keeps dataset order, and types are dataset id ranges).
  std::vector<std::int64_t> type_nodes, type_halo;
  boost::json::object arrays;  // {name: {file, dtype, shape, crc32}}, the listing datasets/array_dir reads and checks
  std::string path;            // not in the file: `dir` inside the partition's folder, checked by load_partition_info to be a folder
};

struct PartitionInfo {
  std::string dir;  // not in the file: the folder it was read from
  // "dataset": the source's folder, its meta.json's CRC-32 ("" when it had none), and its
  // description (meta.json's, less source, node weights and cleaning): its sizes, how the shards
  // store features and labels, its edge split (each shard holds the held-out rows whose first node
  // it owns, ids as the shard's) and a typed graph's schema (counts the dataset's).
  std::string dataset_dir, meta_crc32;
  DatasetMeta dataset;
  std::string method;
  PartitionConfig parameters;  // "parameters"; coarse_nodes, scratch_dir and memory_limit are not recorded
  double partition_seconds = 0;
  PartitionBook book;  // "num_parts" and "offsets"
  PartitionMetrics metrics;
  // Not written: "metrics" as read, for printing it verbatim (`partition report --json`), since
  // Boost 1.81 parses a double only to within an ulp and re-serialising `metrics` could change it.
  boost::json::object metrics_as_written;
  std::vector<PartEntry> parts;

  std::string json_path() const;  // dir/partition.json, the file error messages name
};

// Reads and checks `dir`/partition.json; throws InputError naming the file and the key.
PartitionInfo load_partition_info(const std::string& dir);

// The JSON forms; the keys and their order are the file's format. Reading checks every field and
// throws InputError without the file ("key 'num_parts': ..."): load_partition_info adds it.
// Files from before the cost model lack parameters.cost_fanouts and cost_remote_weight, which then
// keep PartitionConfig's defaults.
void tag_invoke(boost::json::value_from_tag, boost::json::value& v, const PartEntry& e);
PartEntry tag_invoke(boost::json::value_to_tag<PartEntry>, const boost::json::value& v);
void tag_invoke(boost::json::value_from_tag, boost::json::value& v, const PartitionInfo& info);
PartitionInfo tag_invoke(boost::json::value_to_tag<PartitionInfo>, const boost::json::value& v);

}  // namespace shardgnn
