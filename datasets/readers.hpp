// Readers for the formats users bring: numpy .npz (Planetoid / gnn-benchmark layout), METIS graph
// text, SNAP-style edge lists (plain or .gz), the OGB node-property-prediction raw layout and
// GraphSAINT's folder.
// Every reader throws InputError naming the file, the position and what was expected.
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "datasets/builder.hpp"
#include "datasets/dataset.hpp"

namespace shardgnn {

enum class InputFormat { kAuto, kNpz, kMetis, kEdgeList, kOgb, kGraphsaint, kIgbh };
// "auto", "npz", "metis", "edgelist", "ogb", "graphsaint", "igbh"
InputFormat parse_input_format(const std::string& name);
// Guesses from the path: a folder with raw/edge.csv.gz or raw/num-node-dict.csv.gz is OGB, one with
// adj_full.npz GraphSAINT's, one with processed/ (or <type>/node_feat.npy folders) IGB-Het's,
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
  // Typed inputs: add each relation's reverse (dst, rev_<name>, src), as DGL's and PyG's loaders of
  // ogbn-mag and IGB-Het do; a relation within one type becomes undirected. Symmetrises the graph.
  bool add_reverse = false;
  // Typed inputs: store a relation id per edge (GraphSchema::relation_ids()) even when each pair
  // of types has one relation. An input with several relations between one pair always does, and
  // there --add-reverse gives every relation its own reverse, a relation within one type included.
  bool relation_ids = false;
  std::string igb_labels = "19";     // IGB-Het: which label file, node_label_<this>.npy (19 or 2K)
  // npz and GraphSAINT inputs larger than memory: a step whose in-memory form would take bytes
  // that `wanted` refuses goes through files in `scratch` instead (the adjacency through
  // build_csr_external's bucket files within `memory` bytes, features that need converting into
  // a file), so that only per-node arrays are held. The dataset's arrays may then be views of
  // files in `scratch`, which must outlive it. Unset: everything is read into memory.
  struct Disk {
    std::string scratch;
    std::uint64_t memory = 0;
    std::function<bool(double in_memory_bytes, const char* what)> wanted;
  };
  std::optional<Disk> disk;
};

Dataset read_dataset(const std::string& path, const ReadOptions& options);

Dataset read_npz_dataset(const std::string& path, const ReadOptions& options);
Dataset read_metis_dataset(const std::string& path, const ReadOptions& options);
Dataset read_edge_list_dataset(const std::string& path, const ReadOptions& options);
Dataset read_ogb_dataset(const std::string& dir, const ReadOptions& options);
// OGB's heterogeneous raw layout (typed_readers.cpp): raw/num-node-dict.csv.gz (a header of type
// names, a row of counts), raw/relations/<src>___<rel>___<dst>/edge.csv.gz (type-local ids),
// raw/node-feat/<type>/node-feat.csv.gz, raw/node-label/<type>/node-label.csv.gz and
// split/<name>/<type>/{train,valid,test}.csv.gz. Types keep the file's order.
Dataset read_ogb_hetero_dataset(const std::string& dir, const ReadOptions& options);
// IGB-Het's numpy layout (typed_readers.cpp), under dir/processed or dir: <type>/node_feat.npy
// ([N, F] sets the type's count), <type>/node_label_<igb_labels>.npy, and
// <src>__<rel>__<dst>/edge_index.npy ([E, 2] type-local ids). Types in name order.
Dataset read_igbh_dataset(const std::string& dir, const ReadOptions& options);
// GraphSAINT's folder: adj_full.npz, feats.npy, class_map.json (one class, or a 0/1 list per node:
// multi-label), role.json (graphsaint.cpp).
Dataset read_graphsaint_dataset(const std::string& dir, const ReadOptions& options);

// read_edge_list_dataset for lists too big to hold: a first pass counts the edges and marks the ids
// that appear (a bit per id up to the largest), a second streams the relabelled edges through
// build_csr_external's bucket files in `scratch`, within about `memory` bytes. The graph's arrays
// are views of files in `scratch`, which must outlive the dataset. Ids needing a table larger than
// a quarter of `memory` (very sparse ids without --num-nodes) are an InputError saying what to do.
Dataset read_edge_list_dataset_bounded(const std::string& path, const ReadOptions& options, const std::string& scratch, std::uint64_t memory);

class NpzArchive;
// Sets ds.graph (and ds.cleaning) from a square n x n CSR adjacency in npz members (scipy's
// `indptr`/`indices`, the gnn-benchmark layout's `adj_indptr`/`adj_indices`): the offsets are
// held (8 bytes a node) and checked, the columns streamed from the archive into build_csr, or
// through bucket files when options.disk wants it. Errors name the member and element.
void read_npz_adjacency(Dataset& ds, const NpzArchive& z, const std::string& indptr_member, const std::string& indices_member, std::int64_t n,
                        const ReadOptions& options);

struct NpyBuffer;
struct NpyStream;
// Sets ds.features to one float32 row per node from the n x F numeric array `s`: a zero-copy view
// of `mapped` (the same array as a mapped file) when it is stored as float32, else converted in
// pieces into scratch/features.npy (options.disk) or memory. Every value must be finite; errors
// name `file` and `element_prefix` + the element. Returns F.
std::int64_t read_feature_matrix(Dataset& ds, const NpyStream& s, const NpyBuffer* mapped, std::int64_t n, const ReadOptions& options,
                                 const std::string& file, const std::string& element_prefix);

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
