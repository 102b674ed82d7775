// Writers for exchange formats, so other tools (gpmetis, DGL, networkx) can read our datasets.
#pragma once

#include <string>

#include "datasets/dataset.hpp"

namespace shardgnn {

// METIS graph text ("n m [fmt ncon]", 1-based neighbours, edge and vertex weights when the
// dataset has them). METIS requires a simple undirected graph: a dataset that is not symmetric or
// has self-loops or duplicate entries is an error naming the first offending node.
void write_metis_graph(const Dataset& ds, const std::string& path);

// "u\tv" per directed entry, with the dataset's original ids when it was relabelled.
void write_edge_list_file(const Dataset& ds, const std::string& path);

// A typed dataset in IGB-Het's numpy layout, the folder MLPerf's GNN reference and DGL's IGB
// loaders read: dir/processed/<type>/node_feat.npy (float32 [count, F]; [count, 0] for a type
// without features), <type>/node_label_<classes>.npy (int64, -1 unlabelled) for labelled types,
// and <src>__<name>__<dst>/edge_index.npy (int64 [E, 2], type-local ids) per relation, reverses
// included. Splits are not part of the layout. Written atomically; `dir` must not exist.
void write_igbh_layout(const Dataset& ds, const std::string& dir);

}  // namespace shardgnn
