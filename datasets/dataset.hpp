// A node-classification dataset: graph, dense float32 features, labels (one class per node, or a
// set of labels per node), train/val/test splits,
// and the on-disk dataset directory (meta.json + one .npy per array), memory-mapped on load.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "datasets/array.hpp"
#include "datasets/feature_dtype.hpp"
#include "datasets/builder.hpp"
#include "datasets/dataset_meta.hpp"
#include "datasets/graph.hpp"
#include "datasets/int_array.hpp"
#include "datasets/npy.hpp"
#include "datasets/parts.hpp"
#include "datasets/schema.hpp"

namespace shardgnn {

// Version 2 may store ids as int32 (datasets/graph.hpp), version 3 labels in the smallest type
// that holds the classes (label_dtype), version 4 split ids as int32 where every id fits, version 5
// a relation id per edge (GraphSchema::relation_ids(): rows ordered by relation first, which an
// older build must refuse rather than read as sorted rows). A folder without relation ids is still
// written as version 4; older folders load as they are.
inline constexpr int kDatasetFormatVersion = 5;
inline constexpr int kDatasetFormatVersionWithoutRelationIds = 4;

// The smallest signed type that holds -1 (unlabelled) and every class: what labels.npy is stored
// as (int8 up to 127 classes, int16 up to 32,767, else int32).
inline DType label_dtype(std::int64_t classes) {
  return classes <= 127 ? DType::kInt8 : classes <= 32767 ? DType::kInt16 : DType::kInt32;
}

// The parts (datasets/parts.hpp): FeatureTable's rows are num_nodes x feature_dim; NodeLabels
// has num_nodes entries; HeldOutEdges' pairs are in dataset ids; TypedRows' features are per type
// (feature_dim then 0), stored as FeatureTable::feature_dtype says; EdgeArrays' are aligned with
// graph.indices().
struct Dataset : FeatureTable, NodeLabels, HeldOutEdges, TypedRows, EdgeArrays {
  std::string name;
  std::string source;              // where it came from (file and format), for provenance
  CsrGraph graph;
  IntArray train_idx, val_idx, test_idx;  // int32 where every node id fits, else int64
  Array<std::int64_t> node_ids;    // original id of each node when the input was relabelled; else empty
  Array<std::int64_t> node_weights;  // num_nodes x node_weight_dim (METIS vertex weights); else empty
  std::int64_t node_weight_dim = 0;
  CleanReport cleaning;            // what conversion changed

  NodeId num_nodes() const noexcept { return graph.num_nodes(); }
  // Row i of type t's features as float32: the row itself, or widened into `scratch`.
  const float* type_row_f32(int t, std::int64_t i, float* scratch) const {
    const std::int64_t F = schema.types()[static_cast<std::size_t>(t)].feature_dim;
    if (feature_dtype == FeatureDtype::kFloat32) return type_features[static_cast<std::size_t>(t)].data() + i * F;
    widen_values(feature_dtype, type_features16[static_cast<std::size_t>(t)].data() + i * F, static_cast<std::size_t>(F), scratch);
    return scratch;
  }
};

// Scales every feature row to sum 1 (rows of zeros stay zero): the preprocessing of Kipf &
// Welling's GCN on the Planetoid citation graphs. Needs owned (not mapped) features.
void normalize_feature_rows(Dataset& ds);

// Keeps the largest weakly connected component (ties: the one holding the smallest id), as Shchur
// et al. evaluate their benchmark graphs: nodes renumbered in their old order, features, labels,
// weights and splits kept for the nodes that stay, node_ids mapping to the input's ids. Returns
// the number of components the graph had.
std::int64_t keep_largest_component(Dataset& ds);

// The description meta.json holds of `ds` (its features' dtype as held).
DatasetMeta meta_of(const Dataset& ds);

// Writes `ds` as a dataset directory, atomically (nothing is left at `dir` on failure).
// An existing non-empty `dir` is an error unless `overwrite` is set.
// `features_as` stores the features in that dtype (converted a chunk at a time as they are
// written), else in the dataset's own.
void save_dataset(const Dataset& ds, const std::string& dir, bool overwrite = false, std::optional<FeatureDtype> features_as = {});

// Loads a dataset directory: parses meta.json and memory-maps every array read-only, checking
// file sizes, dtypes and shapes against meta.json. With Contents::check (for every caller that
// will walk the graph) it also reads the arrays once to check what a walk relies on: the CSR's
// offsets and ids, labels in [-1, num_classes), split ids in range, weights positive. With
// Contents::trust it costs O(1) in the dataset's size (validate_dataset checks more, and reports
// every problem instead of the first).
enum class Contents { check, trust };
Dataset load_dataset(const std::string& dir, Contents contents = Contents::check);

// Full check of a dataset directory: every file's checksum, the CSR invariants, ids in range,
// finite features, labels in [-1, num_classes), split indices in range, unique and disjoint.
// Returns the problems found (empty = valid), each one line naming the file and position.
struct ValidationResult {
  std::vector<std::string> errors;
  std::vector<std::string> warnings;
  bool ok() const { return errors.empty(); }
};
ValidationResult validate_dataset(const std::string& dir);

}  // namespace shardgnn
