// Human-readable views of a partitioned dataset's quality metrics: a terminal table and a
// self-contained SVG figure (per-shard sizes, training nodes, halo fractions, label mixes).
#pragma once

#include <string>

#include "partition/shards.hpp"

namespace shardgnn {

std::string render_report_table(const PartitionInfo& info);
std::string render_report_svg(const PartitionInfo& info);

}  // namespace shardgnn
