// Human-readable views of a partitioned dataset's quality metrics: a terminal table and a
// self-contained SVG figure (per-shard sizes, training nodes, halo fractions, label mixes).
#pragma once

#include <string>

#include "partition/shards.hpp"

namespace shardgnn {

std::string render_report_table(const PartitionInfo& info);
std::string render_report_svg(const PartitionInfo& info);
// A typed graph's part sizes and halos per node type (the table's last section).
std::string render_type_table(const PartitionInfo& info);

// Small pieces shared with the other renderers (tools/run_report.cpp), so tables and figures look
// alike.
namespace render {
std::string fmt(const char* f, double v);               // one number through snprintf
std::string pad(const std::string& s, std::size_t w);  // right-aligned in w columns
std::string xml_escape(const std::string& s);           // for SVG text and attributes
extern const char* const kColors[10];                   // Tableau 10
}  // namespace render

}  // namespace shardgnn
