// A static cost model of one training step per seed, for balancing the sampler's work across
// shards at partition time (`--balance cost`). Node counts or training-node counts balance the
// seeds, but a seed's mini-batch cost grows with its sampled neighbourhood, which varies by orders
// of magnitude with degree, and with how much of that neighbourhood lives on other shards.
//
// Hops are numbered from the seeds outward, h = 0 .. L-1, with fanouts f_h (-1 = all
// neighbours), as in the sampler. For a node v with deg(v) CSR neighbours let
//   k_h(v) = min(deg v, f_h)   (deg v when f_h = -1)
// be the number of neighbours it samples at hop h (uniform, without replacement).
//
// Expected sampled edges of v's L-hop sampled subtree (each sampled neighbour is marginally
// uniform over N(v), so the expectation over k_h draws is k_h times the mean over N(v)):
//   s_L(v) = 0,   s_h(v) = k_h(v) * (1 + mean_{u in N(v)} s_{h+1}(u)),   s(v) = s_0(v).
// Expected remote fetches of that subtree under an assignment part[]:
//   r_L(v) = 0,   r_h(v) = k_h(v) * mean_{u in N(v)} ([part u != part v] + r_{h+1}(u)),   r(v) = r_0(v).
// This is an approximation: at deeper hops an edge (v, u) counts as remote when u's part differs
// from v's own part, not from the seed's (the sampler fetches what the seed's rank does not own).
// It keeps the model a per-node recursion computable for all nodes at once. Nodes of degree 0
// sample nothing (s = r = 0). Subtrees are counted as trees: a node reached twice counts twice.
//
// Cost of a training node v: round(s(v) + remote_weight * r(v)), at least 1; every other node 0.
// remote_weight is the cost of one remote row relative to one sampled edge (default 2: a remote
// feature row costs a network transfer on top of the edge's sampling work).
//
// Time O(L * m), memory O(n) doubles (two per-hop arrays, computed from the outermost hop
// inwards).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "datasets/dataset.hpp"
#include "partition/book.hpp"
#include "partition/config.hpp"

namespace shardgnn {

// Values are clamped here so that -1 fanouts on hub-heavy graphs stay finite.
inline constexpr double kMaxNodeCostValue = 1e30;

// s(v) for every node of g (size num_nodes).
std::vector<double> expected_subtree_edges(const CsrGraph& g, std::span<const int> fanouts);

// r(v) for every node of g under `part` (size num_nodes).
std::vector<double> expected_remote_fetches(const CsrGraph& g, std::span<const int> fanouts, std::span<const PartId> part);

// The cost weight of every node (size num_nodes): round(s + remote_weight * r) >= 1 for the
// training nodes of ds, 0 for the rest. With an empty `part`, r = 0 (the subtree-only cost, used
// before any assignment exists). Each weight is clamped so that the sum over training nodes stays
// below 2^62 (no int64 overflow in any total).
std::vector<std::int64_t> node_cost_weights(const Dataset& ds, std::span<const int> fanouts, double remote_weight,
                                            std::span<const PartId> part = {});

// Throws InputError unless fanouts is non-empty with every item >= 0 or -1, and remote_weight is
// finite and >= 0.
void validate_cost_model(std::span<const int> fanouts, double remote_weight);

}  // namespace shardgnn
