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

}  // namespace shardgnn
