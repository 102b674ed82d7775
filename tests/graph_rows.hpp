// Tests read a CSR's ids at either width (datasets loaded from disk hold them as int32) as
// vectors of 64-bit ids: a copy, which tests can afford and the library's walks avoid.
#pragma once

#include <vector>

#include "datasets/graph.hpp"

namespace shardgnn {

// Node u's neighbours.
inline std::vector<NodeId> row_of(const CsrGraph& g, NodeId u) {
  return g.visit([&](const auto& v) {
    const auto row = v.neighbors(u);
    return std::vector<NodeId>(row.begin(), row.end());
  });
}

// Every id of the CSR, in order.
inline std::vector<NodeId> ids_of(const CsrGraph& g) {
  return g.visit([](const auto& v) { return std::vector<NodeId>(v.indices().begin(), v.indices().end()); });
}

}  // namespace shardgnn
