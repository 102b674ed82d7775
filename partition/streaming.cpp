// The one-pass partitioners: random hashing and two streaming heuristics that see each node once,
// with its adjacency row, and place it for good.
//  - LDG, linear deterministic greedy: I. Stanton and G. Kliot, "Streaming graph partitioning for
//    large distributed graphs", KDD 2012. v goes to argmax_i |N(v) ∩ P_i| * (1 - |P_i| / C).
//  - Fennel: C. E. Tsourakakis, C. Gkantsidis, B. Radunovic and M. Vojnovic, "FENNEL: streaming
//    graph partitioning for massive scale graphs", WSDM 2014. v goes to
//    argmax_i |N(v) ∩ P_i| - alpha * gamma * |P_i|^(gamma - 1), alpha = m * K^(gamma-1) / n^gamma
//    (the paper's choice; sqrt(K) * m / n^1.5 at its default gamma = 1.5), m = num_edges / 2.
//
// Choices of ours, beyond the papers:
//  - Arrival order is node id order, or a seeded Fisher-Yates shuffle (stream_shuffle). Only the
//    already placed neighbours in v's CSR row count; a directed graph contributes its out-edges
//    only. Neighbours are counted, not weighted: dataset and entropy edge weights are METIS's.
//  - Balance is multi-constraint. Every key of cfg.balance gives weights w(v, c) (balance_weights;
//    for 'cost', the subtree-only cost of partition/cost.hpp, as remote fetches need an assignment)
//    and a hard capacity cap_c = max(ceil((1 + imbalance) * total_c / K), max_v w(v, c)): the
//    second term so that any single node fits in an empty part. v may go to part i only if
//    load_i,c + w(v, c) <= cap_c for each c with w(v, c) != 0 (a constraint v does not weigh on
//    cannot be pushed over by it). Both methods respect it; Fennel's penalty alone does not bound
//    a part, and LDG's factor goes negative only past C.
//  - When no part can take v (possible with several constraints or uneven weights), v goes to the
//    part whose largest relative load max_c (load_i,c + w(v, c)) / cap_c is smallest afterwards.
//  - The |P_i| of both formulas is the part's normalised load n * max_c load_i,c / total_c, which
//    is |P_i| itself for the single constraint 'nodes'; LDG's C is (1 + imbalance) * n / K.
//  - Ties go to the part with the smaller normalised load, then the smaller id, so a node with no
//    placed neighbour fills the lightest part (round robin on an edgeless graph).
//
// Memory beyond the graph: the assignment (n x int32), the balance weights (n x ncon, from
// balance_weights), K x ncon loads and O(K) scratch; the shuffled order adds n x int64. Time
// O(m + n * K * c_v), c_v the number of constraints v weighs on (1 or 2 for the usual keys): the
// neighbour counts live in one K-sized array reset through the list of parts it touched, and each
// part's load term is recomputed only when that part grows, so no pow() runs per (node, part).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <numeric>
#include <span>
#include <string>
#include <vector>

#include "datasets/error.hpp"
#include "datasets/random.hpp"
#include "partition/cost.hpp"
#include "partition/methods.hpp"

namespace shardgnn {

namespace {

// derive_seed streams, so that the hash and the arrival order never share random numbers.
constexpr std::uint64_t kRandomHashStream = 0x52414e44;  // "RAND"
constexpr std::uint64_t kStreamOrderStream = 0x4f524452;  // "ORDR"

// The part of a node's score that depends on the part only through its load: LDG multiplies the
// neighbour count by it, Fennel subtracts it.
struct LdgScore {
  double capacity;  // C, in normalised load units
  double term(double load) const { return 1.0 - load / capacity; }
  double score(std::int64_t neighbours, double term) const { return static_cast<double>(neighbours) * term; }
};

struct FennelScore {
  double gamma, edges_per_node, parts, nodes;
  // alpha * gamma * L^(gamma-1) with alpha = m K^(gamma-1) / n^gamma, rewritten as
  // gamma * (m / n) * (K L / n)^(gamma-1): K L / n stays near 1, so no n^gamma overflows.
  double term(double load) const { return gamma * edges_per_node * std::pow(parts * load / nodes, gamma - 1.0); }
  double score(std::int64_t neighbours, double term) const { return static_cast<double>(neighbours) - term; }
};

template <class Score>
std::vector<PartId> stream_partition(const Dataset& ds, const PartitionConfig& cfg, const Score& rule) {
  const CsrGraph& g = ds.graph;
  const std::int64_t n = g.num_nodes();
  const auto k = static_cast<std::size_t>(cfg.parts);

  int ncon_int = 0;
  // --balance cost: the subtree-only cost (r = 0); a one-pass method has no assignment to
  // estimate remote fetches from until it is done.
  std::vector<std::int64_t> cost;
  if (std::find(cfg.balance.begin(), cfg.balance.end(), BalanceKey::kCost) != cfg.balance.end())
    cost = node_cost_weights(ds, cfg.cost_fanouts, cfg.cost_remote_weight);
  const std::vector<std::int64_t> weights = balance_weights(ds, cfg.balance, &ncon_int, cost);
  cost = {};
  const auto ncon = static_cast<std::size_t>(ncon_int);

  std::vector<std::int64_t> cap(ncon, 0);
  std::vector<double> scale(ncon, 0.0);  // n / total_c: load_c in units where 'nodes' reads |P_i|
  {
    std::vector<std::int64_t> total(ncon, 0), heaviest(ncon, 0);
    for (std::size_t i = 0; i < weights.size(); ++i) {
      total[i % ncon] += weights[i];
      heaviest[i % ncon] = std::max(heaviest[i % ncon], weights[i]);
    }
    for (std::size_t c = 0; c < ncon; ++c) {
      // The relative nudge keeps a product that is an integer in exact arithmetic (1.1 * 100 / 2)
      // from rounding up a whole unit; a few ulps of error are far below it.
      const double share = (1.0 + cfg.imbalance) * static_cast<double>(total[c]) / static_cast<double>(k);
      const double fair = std::ceil(share * (1.0 - 1e-12));
      cap[c] = std::max(static_cast<std::int64_t>(fair), heaviest[c]);
      if (total[c] > 0) scale[c] = static_cast<double>(n) / static_cast<double>(total[c]);
    }
  }

  std::vector<std::int64_t> load(k * ncon, 0);
  std::vector<double> norm_load(k, 0.0);
  std::vector<double> term(k, rule.term(0.0));
  std::vector<std::int64_t> count(k, 0);
  std::vector<std::size_t> touched;
  touched.reserve(k);
  std::vector<std::size_t> weighs_on;  // the constraints the current node has weight in
  weighs_on.reserve(ncon);

  std::vector<NodeId> order;
  if (cfg.stream_shuffle) {
    order.resize(static_cast<std::size_t>(n));
    std::iota(order.begin(), order.end(), NodeId{0});
    Rng rng(derive_seed(cfg.seed, kStreamOrderStream));
    seeded_shuffle(std::span<NodeId>(order), rng);
  }

  std::vector<PartId> part(static_cast<std::size_t>(n), -1);
  for (std::int64_t i = 0; i < n; ++i) {
    const NodeId v = cfg.stream_shuffle ? order[static_cast<std::size_t>(i)] : i;
    g.visit([&](const auto& view) {  // a branch per node, not per neighbour
      for (const NodeId u : view.neighbors(v)) {
        const PartId p = part[static_cast<std::size_t>(u)];
        if (p >= 0 && count[static_cast<std::size_t>(p)]++ == 0) touched.push_back(static_cast<std::size_t>(p));
      }
    });

    const std::int64_t* w = weights.data() + static_cast<std::size_t>(v) * ncon;
    weighs_on.clear();
    for (std::size_t c = 0; c < ncon; ++c)
      if (w[c] != 0) weighs_on.push_back(c);

    std::size_t best = k;
    double best_score = 0.0;
    for (std::size_t p = 0; p < k; ++p) {
      const std::int64_t* lp = load.data() + p * ncon;
      bool fits = true;
      for (std::size_t c : weighs_on) fits = fits && lp[c] + w[c] <= cap[c];
      if (!fits) continue;
      const double s = rule.score(count[p], term[p]);
      if (best == k || s > best_score || (s == best_score && norm_load[p] < norm_load[best])) {
        best = p;
        best_score = s;
      }
    }
    if (best == k) {
      double best_fill = std::numeric_limits<double>::infinity();
      for (std::size_t p = 0; p < k; ++p) {
        double fill = 0.0;
        for (std::size_t c = 0; c < ncon; ++c)
          if (cap[c] > 0)
            fill = std::max(fill, static_cast<double>(load[p * ncon + c] + w[c]) / static_cast<double>(cap[c]));
        if (fill < best_fill) {
          best = p;
          best_fill = fill;
        }
      }
    }

    part[static_cast<std::size_t>(v)] = static_cast<PartId>(best);
    std::int64_t* lb = load.data() + best * ncon;
    double nl = 0.0;
    for (std::size_t c = 0; c < ncon; ++c) {
      lb[c] += w[c];
      nl = std::max(nl, static_cast<double>(lb[c]) * scale[c]);
    }
    norm_load[best] = nl;
    term[best] = rule.term(nl);

    for (std::size_t p : touched) count[p] = 0;
    touched.clear();
  }
  return part;
}

}  // namespace

std::vector<PartId> RandomPartitioner::run(const Dataset& ds, const PartitionConfig& cfg) const {
  const std::int64_t n = ds.num_nodes();
  const std::uint64_t key = derive_seed(cfg.seed, kRandomHashStream);
  const auto k = static_cast<std::uint64_t>(cfg.parts);
  std::vector<PartId> part(static_cast<std::size_t>(n));
  // derive_seed(key, v) is SplitMix64's v-th output from state `key`: a well-mixed 64-bit hash of v,
  // so the modulo bias (K / 2^64) is nil and no state is kept between nodes.
  for (std::int64_t v = 0; v < n; ++v)
    part[static_cast<std::size_t>(v)] = static_cast<PartId>(derive_seed(key, static_cast<std::uint64_t>(v)) % k);
  return part;
}

std::vector<PartId> LdgPartitioner::run(const Dataset& ds, const PartitionConfig& cfg) const {
  const double n = static_cast<double>(ds.num_nodes());
  return stream_partition(ds, cfg, LdgScore{(1.0 + cfg.imbalance) * n / static_cast<double>(cfg.parts)});
}

std::vector<PartId> FennelPartitioner::run(const Dataset& ds, const PartitionConfig& cfg) const {
  // Below 1 the penalty would fall as a part grows, rewarding imbalance.
  const double n = static_cast<double>(ds.num_nodes());
  const double m = static_cast<double>(ds.graph.num_edges()) / 2.0;
  return stream_partition(ds, cfg, FennelScore{cfg.fennel_gamma, m / n, static_cast<double>(cfg.parts), n});
}

}  // namespace shardgnn
