#include "partition/cost.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include "datasets/error.hpp"

namespace shardgnn {

namespace {

double sampled_count(std::int64_t degree, int fanout) {
  return static_cast<double>(fanout < 0 ? degree : std::min<std::int64_t>(degree, fanout));
}

// One hop of either recursion, over all nodes: next(v) = k_h(v) * mean_{u in N(v)} (edge(v, u) + prev(u)).
template <class EdgeTerm>
void hop(const CsrGraph& graph, int fanout, const std::vector<double>& prev, std::vector<double>& next, EdgeTerm edge) {
  graph.visit([&](const auto& g) {
  const std::int64_t n = g.num_nodes();
  for (NodeId v = 0; v < n; ++v) {
    const auto nb = g.neighbors(v);
    if (nb.empty()) {
      next[static_cast<std::size_t>(v)] = 0.0;
      continue;
    }
    double sum = 0.0;
    for (NodeId u : nb) sum += edge(v, u) + prev[static_cast<std::size_t>(u)];
    const double k = sampled_count(static_cast<std::int64_t>(nb.size()), fanout);
    next[static_cast<std::size_t>(v)] = std::min(kMaxNodeCostValue, k * (sum / static_cast<double>(nb.size())));
  }
  });
}

template <class EdgeTerm>
std::vector<double> recurse(const CsrGraph& g, std::span<const int> fanouts, EdgeTerm edge) {
  const auto n = static_cast<std::size_t>(g.num_nodes());
  std::vector<double> prev(n, 0.0), next(n, 0.0);  // prev = hop h + 1, starting at h = L
  for (std::size_t h = fanouts.size(); h-- > 0;) {
    hop(g, fanouts[h], prev, next, edge);
    prev.swap(next);
  }
  return prev;
}

}  // namespace

void validate_cost_model(std::span<const int> fanouts, double remote_weight) {
  if (fanouts.empty()) throw InputError("--fanouts is empty, expected comma-separated neighbour counts such as 15,10,5 (-1 = all)");
  for (std::size_t i = 0; i < fanouts.size(); ++i)
    if (fanouts[i] < -1)
      throw InputError("--fanouts item " + std::to_string(i + 1) + " is " + std::to_string(fanouts[i]) + ", expected an integer >= 0 or -1 (all)");
  if (!std::isfinite(remote_weight) || remote_weight < 0)
    throw InputError("--cost-remote-weight must be a finite number >= 0, got " + std::to_string(remote_weight));
}

std::vector<double> expected_subtree_edges(const CsrGraph& g, std::span<const int> fanouts) {
  return recurse(g, fanouts, [](NodeId, NodeId) { return 1.0; });
}

std::vector<double> expected_remote_fetches(const CsrGraph& g, std::span<const int> fanouts, std::span<const PartId> part) {
  if (static_cast<std::int64_t>(part.size()) != g.num_nodes()) throw std::logic_error("expected_remote_fetches: assignment size differs from the graph's");
  return recurse(g, fanouts, [part](NodeId v, NodeId u) {
    return part[static_cast<std::size_t>(u)] != part[static_cast<std::size_t>(v)] ? 1.0 : 0.0;
  });
}

std::vector<std::int64_t> node_cost_weights(const Dataset& ds, std::span<const int> fanouts, double remote_weight, std::span<const PartId> part) {
  validate_cost_model(fanouts, remote_weight);
  const std::int64_t n = ds.num_nodes();
  std::vector<std::int64_t> w(static_cast<std::size_t>(n), 0);
  if (ds.train_idx.empty()) return w;
  const std::vector<double> s = expected_subtree_edges(ds.graph, fanouts);
  std::vector<double> r;
  if (!part.empty() && remote_weight > 0) r = expected_remote_fetches(ds.graph, fanouts, part);
  // Any single weight at most 2^62 / |train|, so no sum over training nodes overflows int64.
  const double cap = std::ldexp(1.0, 62) / static_cast<double>(ds.train_idx.size());
  for (NodeId v : ds.train_idx) {
    const auto i = static_cast<std::size_t>(v);
    const double c = s[i] + (r.empty() ? 0.0 : remote_weight * r[i]);
    w[i] = static_cast<std::int64_t>(std::max(1.0, std::min(cap, std::round(c))));
  }
  return w;
}

}  // namespace shardgnn
