// Readers for the formats users bring: numpy .npz (Planetoid / gnn-benchmark layout), METIS graph
// text, SNAP-style edge lists (plain or .gz), the OGB node-property-prediction raw layout and
// GraphSAINT's folder.
// Every reader throws InputError naming the file, the position and what was expected.
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "datasets/builder.hpp"
#include "datasets/dataset.hpp"

namespace shardgnn {

enum class InputFormat { kAuto, kNpz, kMetis, kEdgeList, kOgb, kGraphsaint };
InputFormat parse_input_format(const std::string& name);   // "auto", "npz", "metis", "edgelist", "ogb", "graphsaint"
// Guesses from the path: a folder with raw/edge.csv.gz is OGB, one with adj_full.npz GraphSAINT's,
// *.npz, *.graph[.gz]/*.metis, else an edge list.
InputFormat detect_format(const std::string& path);

struct ReadOptions {
  InputFormat format = InputFormat::kAuto;
  CleanOptions clean;
  std::string name;                  // dataset name; default: derived from the path
  // Edge lists: number of nodes when ids are already 0-based and dense (no relabelling); 0 = relabel
  // the distinct ids that appear to 0..n-1 in increasing id order, keeping the mapping.
  std::int64_t num_nodes = 0;
  std::string ogb_split;             // OGB: split folder name under split/ (default: the only one)
};

Dataset read_dataset(const std::string& path, const ReadOptions& options);

Dataset read_npz_dataset(const std::string& path, const ReadOptions& options);
Dataset read_metis_dataset(const std::string& path, const ReadOptions& options);
Dataset read_edge_list_dataset(const std::string& path, const ReadOptions& options);
Dataset read_ogb_dataset(const std::string& dir, const ReadOptions& options);
// GraphSAINT's folder: adj_full.npz, feats.npy, class_map.json (one class, or a 0/1 list per node:
// multi-label), role.json (graphsaint.cpp).
Dataset read_graphsaint_dataset(const std::string& dir, const ReadOptions& options);

// read_edge_list_dataset for lists too big to hold: a first pass counts the edges and marks the ids
// that appear (a bit per id up to the largest), a second streams the relabelled edges through
// build_csr_external's bucket files in `scratch`, within about `memory` bytes. The graph's arrays
// are views of files in `scratch`, which must outlive the dataset. Ids needing a table larger than
// a quarter of `memory` (very sparse ids without --num-nodes) are an InputError saying what to do.
Dataset read_edge_list_dataset_bounded(const std::string& path, const ReadOptions& options, const std::string& scratch, std::uint64_t memory);

// Lower-level edge-list parsing (exposed for the benchmark): "u v" lines of a plain or gzip text
// file; '#' and '%' start comment lines; blank lines are skipped; separators are spaces,
// tabs or commas; CRLF line ends are accepted; extra columns after the two ids are ignored.
struct RawEdges {
  std::vector<std::int64_t> src, dst;
  std::uint64_t bytes = 0;   // uncompressed bytes parsed
  std::uint64_t lines = 0;
};
// Parses an in-memory text buffer (used by the file reader and the benchmark); ids must be below
// `id_limit`, else the error names the line.
void parse_edge_list_text(std::string_view text, const std::string& origin, std::uint64_t first_line, RawEdges& out,
                          std::int64_t id_limit = std::numeric_limits<std::int64_t>::max());

}  // namespace shardgnn
