// The METIS k-way call itself, shared by --method metis (the whole graph) and the multilevel path
// (its coarsest graph). Internal to partition/.
#pragma once

#include <metis.h>

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "datasets/builder.hpp"
#include "datasets/dataset.hpp"
#include "partition/config.hpp"

namespace shardgnn {

// METIS_PartGraphKway on a simple undirected graph (METIS may reorder nothing but reads the arrays
// as non-const): node_weights is empty (every node 1) or n x ncon, scaled into idx_t's range as
// needed; adjwgt is empty or aligned with adjncy. Objective, seed and imbalance from cfg; METIS's
// errors become exceptions naming `name`.
std::vector<idx_t> metis_kway(std::vector<idx_t>& xadj, std::vector<idx_t>& adjncy, std::vector<idx_t>& adjwgt, std::span<const std::int64_t> node_weights,
                              int ncon, const PartitionConfig& cfg, const std::string& name);

// The dataset's graph made simple and undirected (symmetrised, self-loops and duplicates
// dropped, `weights` carried along), or nullopt when it already is (its cleaning report says so,
// or a check finds it): what METIS requires of its input.
std::optional<BuiltGraph> simple_copy_if_needed(const Dataset& ds, const std::vector<std::int64_t>& weights);

}  // namespace shardgnn
