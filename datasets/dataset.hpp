// A node-classification dataset: graph, dense float32 features, labels (one class per node, or a
// set of labels per node), train/val/test splits,
// and the on-disk dataset directory (meta.json + one .npy per array), memory-mapped on load.
#pragma once

#include <bit>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "datasets/array.hpp"
#include "datasets/feature_dtype.hpp"
#include "datasets/builder.hpp"
#include "datasets/graph.hpp"
#include "datasets/int_array.hpp"
#include "datasets/npy.hpp"
#include "datasets/schema.hpp"

namespace shardgnn {

// Version 2 may store ids as int32 (datasets/graph.hpp), version 3 labels in the smallest type
// that holds the classes (label_dtype), version 4 split ids as int32 where every id fits; older
// folders load as they are.
inline constexpr int kDatasetFormatVersion = 4;
// More classes than nodes is refused, beyond this many (a corrupt count would size per-class tables).
inline constexpr std::int64_t kMaxClassesAnyGraph = 1 << 16;

// The smallest signed type that holds -1 (unlabelled) and every class: what labels.npy is stored
// as (int8 up to 127 classes, int16 up to 32,767, else int32).
inline DType label_dtype(std::int64_t classes) {
  return classes <= 127 ? DType::kInt8 : classes <= 32767 ? DType::kInt16 : DType::kInt32;
}

// Bytes of one node's row of a multi-label dataset's label_bits.
inline std::int64_t label_row_bytes(std::int64_t classes) { return (classes + 7) / 8; }
// Whether label `c` is set in a label_bits row.
inline bool has_label(const std::uint8_t* row, std::int64_t c) { return (row[c / 8] >> (c % 8)) & 1; }
// Sets label `c` in a label_bits row.
inline void set_label(std::uint8_t* row, std::int64_t c) { row[c / 8] |= static_cast<std::uint8_t>(1u << (c % 8)); }

struct Dataset {
  std::string name;
  std::string source;              // where it came from (file and format), for provenance
  CsrGraph graph;
  std::int64_t feature_dim = 0;    // 0: no features
  Array<float> features;           // num_nodes x feature_dim, row-major (float32 datasets)
  // A dataset stored with 2-byte features (data convert/generate --feature-dtype): their bits in
  // `features16`, `features` then empty. feature_row_f32 reads either.
  FeatureDtype feature_dtype = FeatureDtype::kFloat32;
  Array<std::uint16_t> features16;
  std::int64_t num_classes = 0;    // 0: no labels
  IntArray labels;                 // num_nodes entries, -1 = unlabelled; empty if num_classes == 0 or multilabel
  // Multi-label datasets: any number of the num_classes labels per node, each node's set a row of
  // label_row_bytes(num_classes) bytes whose bit c % 8 of byte c / 8 is label c (numpy:
  // np.unpackbits(a, axis=1, count=C, bitorder='little')); `labels` is then empty.
  bool multilabel = false;
  Array<std::uint8_t> label_bits;
  IntArray train_idx, val_idx, test_idx;  // int32 where every node id fits, else int64
  Array<std::int64_t> node_ids;    // original id of each node when the input was relabelled; else empty
  Array<std::int64_t> node_weights;  // num_nodes x node_weight_dim (METIS vertex weights); else empty
  std::int64_t node_weight_dim = 0;
  Array<std::int64_t> edge_weights;  // aligned with graph.indices() (METIS edge weights); else empty
  CleanReport cleaning;            // what conversion changed
  // Link prediction's held-out pairs (data split-edges, edge_split.hpp), flattened rows (u, v),
  // u < v: the validation and test edges (absent from `graph` in both directions), as many
  // non-edges each (AUC/AP), and eval_negatives non-neighbours w of each positive's u (MRR and
  // Hits@K, OGB's protocol), [P, eval_negatives]. Empty unless edge_split.
  bool edge_split = false;
  std::int64_t eval_negatives = 0;
  Array<NodeId> val_pos, val_neg, test_pos, test_neg, val_neg_dst, test_neg_dst;

  // A typed graph's node types and relations (empty: one node type, the paths above). Features
  // are then per type: type_features[t] is type t's [count, feature_dim] rows (empty for a type
  // without features) and feature_dim is 0. Stored as `feature_dtype` says: float32 rows in
  // type_features, or 2-byte ones in type_features16 (type_features then empty); type_row_f32
  // reads either.
  GraphSchema schema;
  std::vector<Array<float>> type_features;
  std::vector<Array<std::uint16_t>> type_features16;

  NodeId num_nodes() const noexcept { return graph.num_nodes(); }
  // Row i of type t's features as float32: the row itself, or widened into `scratch`.
  const float* type_row_f32(int t, std::int64_t i, float* scratch) const {
    const std::int64_t F = schema.types()[static_cast<std::size_t>(t)].feature_dim;
    if (feature_dtype == FeatureDtype::kFloat32) return type_features[static_cast<std::size_t>(t)].data() + i * F;
    widen_values(feature_dtype, type_features16[static_cast<std::size_t>(t)].data() + i * F, static_cast<std::size_t>(F), scratch);
    return scratch;
  }
  // Node u's features as float32: the row itself, or widened into `scratch` (feature_dim floats).
  const float* feature_row_f32(NodeId u, float* scratch) const {
    if (feature_dtype == FeatureDtype::kFloat32) return features.data() + u * feature_dim;
    widen_values(feature_dtype, features16.data() + u * feature_dim, static_cast<std::size_t>(feature_dim), scratch);
    return scratch;
  }
};

// Calls f(name, rows, cols, lead, positive) for each held-out array of an edge split (a Dataset's
// or a Shard's; none unless edge_split): its file name without .npy, its rows of `cols` ids, the
// array whose row i's first node says whose row i is (the split's positives for ranking
// destinations, else the rows themselves), and whether it holds positives.
template <class T, class F>
void for_each_held_out(T& d, F&& f) {
  if (!d.edge_split) return;
  f("val_pos_edges", d.val_pos, std::int64_t{2}, d.val_pos, true);
  f("val_neg_edges", d.val_neg, std::int64_t{2}, d.val_neg, false);
  f("test_pos_edges", d.test_pos, std::int64_t{2}, d.test_pos, true);
  f("test_neg_edges", d.test_neg, std::int64_t{2}, d.test_neg, false);
  if (d.eval_negatives > 0) {
    f("val_neg_dst", d.val_neg_dst, d.eval_negatives, d.val_pos, false);
    f("test_neg_dst", d.test_neg_dst, d.eval_negatives, d.test_pos, false);
  }
}

// Calls f(c) for each label of node v: its class (none when unlabelled), or each label of its set
// in a multi-label dataset. What counts labels (the partition report's label entropy, the labels
// balance constraint) counts each label a node has once.
template <class F>
void for_each_label(const Dataset& ds, NodeId v, F&& f) {
  if (ds.num_classes == 0) return;
  if (!ds.multilabel) {
    if (const std::int64_t y = ds.labels[static_cast<std::size_t>(v)]; y >= 0) f(y);
    return;
  }
  const std::int64_t row = label_row_bytes(ds.num_classes);
  const std::uint8_t* bits = ds.label_bits.data() + v * row;
  for (std::int64_t b = 0; b < row; ++b)
    for (std::uint8_t x = bits[b]; x != 0; x &= static_cast<std::uint8_t>(x - 1)) f(b * 8 + std::countr_zero(x));
}

// Scales every feature row to sum 1 (rows of zeros stay zero): the preprocessing of Kipf &
// Welling's GCN on the Planetoid citation graphs. Needs owned (not mapped) features.
void normalize_feature_rows(Dataset& ds);

// Keeps the largest weakly connected component (ties: the one holding the smallest id), as Shchur
// et al. evaluate their benchmark graphs: nodes renumbered in their old order, features, labels,
// weights and splits kept for the nodes that stay, node_ids mapping to the input's ids. Returns
// the number of components the graph had.
std::int64_t keep_largest_component(Dataset& ds);

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
