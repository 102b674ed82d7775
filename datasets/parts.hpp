// The parts a Dataset and a Shard both hold: a feature matrix with its dtype, node labels
// (classes or sets), an edge split's held-out pairs, a typed graph's per-type rows, and the
// arrays aligned with the edges. Each is
// one struct the two derive from, so that a field added to a part reaches both, and code that
// reads a part (a feature row, a node's labels, the held-out arrays) is written once for both.
#pragma once

#include <bit>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "datasets/array.hpp"
#include "datasets/feature_dtype.hpp"
#include "datasets/graph.hpp"
#include "datasets/int_array.hpp"
#include "datasets/schema.hpp"

namespace shardgnn {

// A view of `a`'s elements (no copy): the caller keeps `a` alive.
template <class T>
Array<T> view_of(const Array<T>& a) {
  return Array<T>(nullptr, a.data(), a.size());
}

// What was done to the features before they were stored (`data convert --normalize-features`):
// a model trained on them needs the same done to a new node's features.
enum class FeatureNorm { kNone, kRow };
std::string feature_norm_name(FeatureNorm n);
std::optional<FeatureNorm> feature_norm_named(const std::string& s);

// Bytes of one node's row of a multi-label part's label_bits.
inline std::int64_t label_row_bytes(std::int64_t classes) { return (classes + 7) / 8; }
// Whether label `c` is set in a label_bits row.
inline bool has_label(const std::uint8_t* row, std::int64_t c) { return (row[c / 8] >> (c % 8)) & 1; }
// Sets label `c` in a label_bits row.
inline void set_label(std::uint8_t* row, std::int64_t c) { row[c / 8] |= static_cast<std::uint8_t>(1u << (c % 8)); }

// The node feature matrix, [rows, feature_dim] row-major, as stored: float32 rows in `features`,
// or 2-byte ones (float16 or bfloat16 bits) in `features16`, the other then empty.
struct FeatureTable {
  std::int64_t feature_dim = 0;  // 0: no features (and for a typed graph, whose rows are per type)
  FeatureDtype feature_dtype = FeatureDtype::kFloat32;
  FeatureNorm feature_norm = FeatureNorm::kNone;
  Array<float> features;
  Array<std::uint16_t> features16;

  // Row i as stored (feature_row_bytes() of them).
  const void* feature_row(std::int64_t i) const noexcept {
    return feature_dtype == FeatureDtype::kFloat32 ? static_cast<const void*>(features.data() + i * feature_dim)
                                                   : static_cast<const void*>(features16.data() + i * feature_dim);
  }
  std::size_t feature_row_bytes() const noexcept { return static_cast<std::size_t>(feature_dim) * feature_value_bytes(feature_dtype); }
  // Row i as float32: the row itself, or widened into `scratch` (feature_dim floats).
  const float* feature_row_f32(std::int64_t i, float* scratch) const {
    if (feature_dtype == FeatureDtype::kFloat32) return features.data() + i * feature_dim;
    widen_values(feature_dtype, features16.data() + i * feature_dim, static_cast<std::size_t>(feature_dim), scratch);
    return scratch;
  }
  FeatureTable view() const { return {feature_dim, feature_dtype, feature_norm, view_of(features), view_of(features16)}; }
};

// The nodes' labels: one class per node in `labels` (-1 = unlabelled, stored at label_dtype's
// width), or with `multilabel` a set per node as label_bits rows of label_row_bytes(num_classes)
// bytes whose bit c % 8 of byte c / 8 is label c (numpy: np.unpackbits(a, axis=1, count=C,
// bitorder='little')), `labels` then empty.
struct NodeLabels {
  std::int64_t num_classes = 0;  // 0: no labels
  IntArray labels;
  bool multilabel = false;
  Array<std::uint8_t> label_bits;

  NodeLabels view() const { return {num_classes, view_of(labels), multilabel, view_of(label_bits)}; }
};

// Calls f(c) for each label of row i: its class (none when unlabelled), or each label of its set.
// What counts labels (the partition report's label entropy, the labels balance constraint) counts
// each label a node has once.
template <class F>
void for_each_label(const NodeLabels& l, std::int64_t i, F&& f) {
  if (l.num_classes == 0) return;
  if (!l.multilabel) {
    if (const std::int64_t y = l.labels[static_cast<std::size_t>(i)]; y >= 0) f(y);
    return;
  }
  const std::int64_t row = label_row_bytes(l.num_classes);
  const std::uint8_t* bits = l.label_bits.data() + i * row;
  for (std::int64_t b = 0; b < row; ++b)
    for (std::uint8_t x = bits[b]; x != 0; x &= static_cast<std::uint8_t>(x - 1)) f(b * 8 + std::countr_zero(x));
}

// Link prediction's held-out pairs (data split-edges, edge_split.hpp), flattened rows (u, v),
// u < v: the validation and test edges (absent from the graph in both directions), as many
// non-edges each (AUC/AP), and eval_negatives non-neighbours w of each positive's u (MRR and
// Hits@K, OGB's protocol), [P, eval_negatives]. A shard holds the rows whose first node it owns,
// in its global ids. Empty unless edge_split.
struct HeldOutEdges {
  bool edge_split = false;
  std::int64_t eval_negatives = 0;
  Array<NodeId> val_pos, val_neg, test_pos, test_neg, val_neg_dst, test_neg_dst;

  HeldOutEdges view() const {
    return {edge_split, eval_negatives, view_of(val_pos), view_of(val_neg), view_of(test_pos), view_of(test_neg), view_of(val_neg_dst), view_of(test_neg_dst)};
  }
};

// Calls f(name, rows, cols, lead, positive) for each held-out array (none unless edge_split): its
// file name without .npy, its rows of `cols` ids, the array whose row i's first node says whose
// row i is (the split's positives for ranking destinations, else the rows themselves), and
// whether it holds positives. H is HeldOutEdges or a const one (or what derives from it).
template <class H, class F>
void for_each_held_out(H& d, F&& f) {
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

// A typed graph's node types and relations (empty: one node type, FeatureTable's rows) and its
// per-type features: type_features[t] is type t's rows [count, feature_dim] as float32, or
// type_features16[t] as 2-byte ones when FeatureTable::feature_dtype says so (the other vector
// then empty; a type without features has an empty array). A shard holds its own nodes' rows.
struct TypedRows {
  GraphSchema schema;
  std::vector<Array<float>> type_features;
  std::vector<Array<std::uint16_t>> type_features16;

  TypedRows view() const {
    TypedRows v{schema, {}, {}};
    for (const Array<float>& x : type_features) v.type_features.push_back(view_of(x));
    for (const Array<std::uint16_t>& x : type_features16) v.type_features16.push_back(view_of(x));
    return v;
  }
};

// What is stored per adjacency entry, aligned with graph.indices() (each empty when absent): METIS
// edge weights, and each entry's relation when schema.relation_ids() (rows then ordered by
// (relation, neighbour), GraphSchema), at relation_dtype's width.
struct EdgeArrays {
  Array<std::int64_t> edge_weights;
  IntArray edge_relations;

  EdgeArrays view() const { return {view_of(edge_weights), view_of(edge_relations)}; }
};

// Makes `to`'s part P a view of `from`'s (no copy): share_part<NodeLabels>(shard, dataset).
template <class P>
void share_part(P& to, const P& from) {
  to = from.view();
}

}  // namespace shardgnn
