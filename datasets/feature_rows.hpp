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

// Rows row(0), ..., row(count - 1) of one feature matrix of width F stored as `stored` (float32
// rows in `wide`, else 2-byte rows in `bits`) to `out` as `as`, `chunk` rows at a time: rows of
// the stored 2-byte dtype as they are, the others through float32. A finite value `as` cannot
// hold is an InputError naming `where` and the row.
template <class RowOf>
void write_rows_as(FeatureDtype stored, const float* wide, const std::uint16_t* bits, std::int64_t F, FeatureDtype as, std::int64_t count, RowOf row,
                   std::int64_t chunk, FeatureRowScratch& s, const NpySink& out, const std::string& where) {
  s.row.resize(static_cast<std::size_t>(F));
  for (std::int64_t i = 0; i < count; i += chunk) {
    const std::int64_t rows = std::min(chunk, count - i);
    const auto values = static_cast<std::size_t>(rows * F);
    s.narrow.resize(values);
    if (as == stored && as != FeatureDtype::kFloat32) {
      for (std::int64_t j = 0; j < rows; ++j) std::copy_n(bits + row(i + j) * F, F, s.narrow.data() + j * F);
      out(s.narrow.data(), values * sizeof(std::uint16_t));
      continue;
    }
    s.wide.resize(values);
    for (std::int64_t j = 0; j < rows; ++j) {
      if (stored == FeatureDtype::kFloat32) std::copy_n(wide + row(i + j) * F, F, s.wide.data() + j * F);
      else widen_values(stored, bits + row(i + j) * F, static_cast<std::size_t>(F), s.wide.data() + j * F);
    }
    if (as == FeatureDtype::kFloat32) {
      out(s.wide.data(), values * sizeof(float));
      continue;
    }
    if (const std::size_t bad = narrow_values(as, s.wide.data(), values, s.narrow.data()); bad < values)
      throw_feature_overflow(as, where + std::to_string(row(i + static_cast<std::int64_t>(bad) / F)), s.wide[bad]);
    out(s.narrow.data(), values * sizeof(std::uint16_t));
  }
}

// The features of nodes node(0), ..., node(count - 1) to `out` as `as` (write_rows_as; `where`
// then "node N").
template <class NodeOf>
void write_feature_rows(const Dataset& ds, FeatureDtype as, NodeId count, NodeOf node, NodeId chunk, FeatureRowScratch& s, const NpySink& out,
                        const std::string& where) {
  write_rows_as(ds.feature_dtype, ds.features.data(), ds.features16.data(), ds.feature_dim, as, count, node, chunk, s, out, where + "node ");
}

// Rows row(0), ..., row(count - 1) of type t's features (a typed dataset) to `out` as `as`.
template <class RowOf>
void write_type_rows(const Dataset& ds, int t, FeatureDtype as, std::int64_t count, RowOf row, FeatureRowScratch& s, const NpySink& out,
                     const std::string& where) {
  const std::int64_t F = ds.schema.types()[static_cast<std::size_t>(t)].feature_dim;
  const auto k = static_cast<std::size_t>(t);
  write_rows_as(ds.feature_dtype, ds.type_features.empty() ? nullptr : ds.type_features[k].data(),
                ds.type_features16.empty() ? nullptr : ds.type_features16[k].data(), F, as, count, row,
                std::max<std::int64_t>(1, (std::int64_t{1} << 16) / std::max<std::int64_t>(F, 1)), s, out, where + "row ");
}

}  // namespace shardgnn
