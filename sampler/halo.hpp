// The halo of a shard for whole-graph, layer by layer computation (full-neighbourhood inference):
// a table of rows, this rank's own nodes then the halo (neighbours owned elsewhere), each edge's
// neighbour as a row of that table, and the exchange that fills the halo rows from their owners
// once per layer. No torch: the trainer's full inference and the Python package share it.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "comm/communicator.hpp"
#include "partition/shard_loader.hpp"

namespace shardgnn {

struct HaloPlan {
  std::int64_t n_halo = 0;           // rows asked of other ranks (the shard's halo list, in its order)
  std::vector<std::int64_t> serve;   // owned rows (local ids) asked by other ranks, grouped by rank
  std::vector<std::int64_t> counts;  // rows asked by each rank
};

// Collective over `comm`: which rows each rank asks of which. The halo list is sorted by global id,
// hence grouped by owner in rank order (range book): it is the request buffer as is, and the
// replies come back in its order.
HaloPlan ask_halo(const Shard& shard, const comm::Communicator& comm);

// Each edge's neighbour as its row in a table of owned rows then halo rows: found once, for every
// layer. An InputError when the shard's halo list lacks a neighbour.
std::vector<std::int64_t> neighbour_rows(const Shard& shard);

// Collective over `comm`: the halo rows of `own` ([owned rows, width] row-major), fetched from
// their owners, [n_halo, width]. Every rank passes the same width.
std::vector<float> exchange_halo_rows(const HaloPlan& plan, std::span<const float> own, std::int64_t width, const comm::Communicator& comm);

}  // namespace shardgnn
