// A dataset's description, the one struct behind meta.json and partition.json's "dataset": its
// name and provenance, its counts, how its features and labels are stored, its edge split and a
// typed graph's schema. The Boost.JSON conversions are the format (keys and their order).
#pragma once

#include <boost/json/conversion.hpp>
#include <boost/json/value.hpp>
#include <cstdint>
#include <string>

#include "datasets/builder.hpp"
#include "datasets/feature_dtype.hpp"
#include "datasets/parts.hpp"
#include "datasets/schema.hpp"

namespace shardgnn {

struct DatasetMeta {
  std::string name;
  std::string source;  // where it came from (file and format), for provenance
  std::int64_t num_nodes = 0, num_edges = 0;
  std::int64_t feature_dim = 0;  // 0 for a typed graph (its features are per type) or none
  // How the features are stored ("feature_dtype", absent for float32 so that folders from before
  // it read as they were) and what was done to them before ("feature_norm", absent for none).
  FeatureDtype feature_dtype = FeatureDtype::kFloat32;
  FeatureNorm feature_norm = FeatureNorm::kNone;
  std::int64_t num_classes = 0;
  bool multilabel = false;  // label_bits (a set of labels per node), not labels
  bool edge_split = false;  // "edge_split": {"eval_negatives": K}, absent without one
  std::int64_t eval_negatives = 0;
  std::int64_t node_weight_dim = 0;
  GraphSchema schema;     // "node_types" and "relations", absent for one node type
  CleanReport cleaning;
  // Not in the file: whether the JSON form writes source, node_weight_dim and cleaning (meta.json
  // does; partition.json's "dataset" does not).
  bool full = true;
};

// More classes than nodes is refused, beyond this many (a corrupt count would size per-class tables).
inline constexpr std::int64_t kMaxClassesAnyGraph = 1 << 16;

// The fields of a Dataset's or a Shard's parts that a meta describes, copied between a meta and
// the parts either way (the fields have the same names on both; the arrays are not touched):
// copy_described(meta, dataset) describes the parts, copy_described(shard, meta) shapes them.
template <class To, class From>
void copy_described(To& to, const From& from) {
  to.feature_dim = from.feature_dim;
  to.feature_dtype = from.feature_dtype;
  to.feature_norm = from.feature_norm;
  to.num_classes = from.num_classes;
  to.multilabel = from.multilabel;
  to.edge_split = from.edge_split;
  to.eval_negatives = from.eval_negatives;
  to.schema = from.schema;
}

// Reading checks every field (counts non-negative, no more classes than the graph can hold, a
// typed graph's counts adding up, feature_dim 0 for it) and throws InputError without the file
// ("key 'num_classes': ..."): the file's reader adds it. Unknown keys are left to the caller.
void tag_invoke(boost::json::value_from_tag, boost::json::value& v, const DatasetMeta& m);
DatasetMeta tag_invoke(boost::json::value_to_tag<DatasetMeta>, const boost::json::value& v);
// The same from the object itself (meta.json's root, partition.json's "dataset"), without a copy.
DatasetMeta dataset_meta_from_json(const boost::json::object& o);

}  // namespace shardgnn
