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

}  // namespace shardgnn
