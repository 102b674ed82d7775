// Writing a dataset's feature rows in a chosen dtype, a chunk of rows at a time: what
// save_dataset and the shard writer share.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "datasets/dataset.hpp"
#include "datasets/feature_dtype.hpp"
#include "datasets/npy.hpp"

namespace shardgnn {

// Kept between calls, so that a writer of many parts allocates once.
struct FeatureRowScratch {
  std::vector<float> wide, row;
  std::vector<std::uint16_t> narrow;
};

// The features of nodes node(0), ..., node(count - 1) to `out` as `as`, `chunk` rows at a time:
// 2-byte rows of the dataset's own dtype as they are, the others through float32. A finite value
// `as` cannot hold is an InputError naming `where` and the node.
template <class NodeOf>
void write_feature_rows(const Dataset& ds, FeatureDtype as, NodeId count, NodeOf node, NodeId chunk, FeatureRowScratch& s, const NpySink& out,
                        const std::string& where) {
  const std::int64_t F = ds.feature_dim;
  s.row.resize(static_cast<std::size_t>(F));
  for (NodeId i = 0; i < count; i += chunk) {
    const NodeId rows = std::min(chunk, count - i);
    const auto values = static_cast<std::size_t>(rows * F);
    s.narrow.resize(values);
    if (as == ds.feature_dtype && as != FeatureDtype::kFloat32) {
      for (NodeId j = 0; j < rows; ++j) std::copy_n(ds.features16.data() + node(i + j) * F, F, s.narrow.data() + j * F);
      out(s.narrow.data(), values * sizeof(std::uint16_t));
      continue;
    }
    s.wide.resize(values);
    for (NodeId j = 0; j < rows; ++j) std::copy_n(ds.feature_row_f32(node(i + j), s.row.data()), F, s.wide.data() + j * F);
    if (as == FeatureDtype::kFloat32) {
      out(s.wide.data(), values * sizeof(float));
      continue;
    }
    if (const std::size_t bad = narrow_values(as, s.wide.data(), values, s.narrow.data()); bad < values)
      throw_feature_overflow(as, where + "node " + std::to_string(node(i + static_cast<NodeId>(bad) / F)), s.wide[bad]);
    out(s.narrow.data(), values * sizeof(std::uint16_t));
  }
}

// Rows [first, first + count) of type t's features (a typed dataset) to `out` as `as`, a chunk
// at a time: rows of the dataset's own 2-byte dtype as they are, the others through float32.
inline void write_type_rows(const Dataset& ds, int t, FeatureDtype as, std::int64_t first, std::int64_t count, const NpySink& out, const std::string& where,
                            const std::int64_t* rows_of = nullptr) {
  const std::int64_t F = ds.schema.types()[static_cast<std::size_t>(t)].feature_dim;
  const std::int64_t chunk = std::max<std::int64_t>(1, (std::int64_t{1} << 16) / std::max<std::int64_t>(F, 1));
  std::vector<float> wide, row(static_cast<std::size_t>(F));
  std::vector<std::uint16_t> narrow;
  // Row i of the run: `rows_of` picks rows by index (a shard's rows), else first + i.
  auto at = [&](std::int64_t i) { return rows_of ? rows_of[i] : first + i; };
  for (std::int64_t i = 0; i < count; i += chunk) {
    const std::int64_t rows = std::min(chunk, count - i);
    const auto values = static_cast<std::size_t>(rows * F);
    if (as == ds.feature_dtype && as != FeatureDtype::kFloat32) {
      narrow.resize(values);
      for (std::int64_t j = 0; j < rows; ++j) std::copy_n(ds.type_features16[static_cast<std::size_t>(t)].data() + at(i + j) * F, F, narrow.data() + j * F);
      out(narrow.data(), values * sizeof(std::uint16_t));
      continue;
    }
    wide.resize(values);
    for (std::int64_t j = 0; j < rows; ++j) std::copy_n(ds.type_row_f32(t, at(i + j), row.data()), F, wide.data() + j * F);
    if (as == FeatureDtype::kFloat32) {
      out(wide.data(), values * sizeof(float));
      continue;
    }
    narrow.resize(values);
    if (const std::size_t bad = narrow_values(as, wide.data(), values, narrow.data()); bad < values)
      throw_feature_overflow(as, where + "row " + std::to_string(at(i + static_cast<std::int64_t>(bad) / F)), wide[bad]);
    out(narrow.data(), values * sizeof(std::uint16_t));
  }
}

}  // namespace shardgnn
