#include "partition/partitioner.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <optional>

#include "datasets/error.hpp"
#include "datasets/names.hpp"
#include "partition/cost.hpp"
#include "partition/methods.hpp"

namespace shardgnn {

namespace {
constexpr EnumName<PartitionMethod> kMethods[] = {
    {PartitionMethod::kMetis, "metis"}, {PartitionMethod::kMetisMl, "metis-ml"}, {PartitionMethod::kRandom, "random"}, {PartitionMethod::kLdg, "ldg"}, {PartitionMethod::kFennel, "fennel"},
    {PartitionMethod::kLabels, "labels"}};
constexpr EnumName<BalanceKey> kBalanceKeys[] = {{BalanceKey::kNodes, "nodes"}, {BalanceKey::kTrain, "train"}, {BalanceKey::kVal, "val"},
                                                 {BalanceKey::kTest, "test"},   {BalanceKey::kEdges, "edges"}, {BalanceKey::kLabels, "labels"}, {BalanceKey::kNtypes, "ntypes"},
                                                 {BalanceKey::kCost, "cost"}};
constexpr EnumName<PartitionObjective> kObjectives[] = {
    {PartitionObjective::kCut, "cut"}, {PartitionObjective::kVolume, "vol"}, {PartitionObjective::kVolume, "volume"}};
constexpr EnumName<EdgeWeighting> kEdgeWeightings[] = {{EdgeWeighting::kNone, "none"}, {EdgeWeighting::kEntropy, "entropy"}};
}  // namespace

std::string method_name(PartitionMethod m) { return enum_name(kMethods, m); }
PartitionMethod parse_method(const std::string& name) { return parse_enum(kMethods, name, "partitioning method"); }
std::string balance_name(BalanceKey k) { return enum_name(kBalanceKeys, k); }

std::vector<BalanceKey> parse_balance(const std::string& list) {
  std::vector<BalanceKey> keys;
  std::size_t start = 0;
  while (start <= list.size()) {
    const std::size_t end = std::min(list.find(',', start), list.size());
    const BalanceKey k = parse_enum(kBalanceKeys, std::string_view(list).substr(start, end - start), "--balance key");
    if (std::find(keys.begin(), keys.end(), k) != keys.end()) throw InputError("--balance lists '" + balance_name(k) + "' twice");
    keys.push_back(k);
    start = end + 1;
  }
  return keys;
}

PartitionObjective parse_objective(const std::string& name) { return parse_enum(kObjectives, name, "--objective"); }
std::string objective_name(PartitionObjective o) { return enum_name(kObjectives, o); }
EdgeWeighting parse_edge_weighting(const std::string& name) { return parse_enum(kEdgeWeightings, name, "--edge-weights"); }
std::string edge_weighting_name(EdgeWeighting w) { return enum_name(kEdgeWeightings, w); }

std::vector<int> parse_fanouts(const std::string& text) {
  if (text.empty()) throw InputError("--fanouts is empty, expected comma-separated neighbour counts such as 15,10,5 (-1 = all)");
  std::vector<int> out;
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t end = std::min(text.find(',', start), text.size());
    const std::string item = text.substr(start, end - start);
    int v = 0;
    auto [p, ec] = std::from_chars(item.data(), item.data() + item.size(), v);
    if (item.empty() || ec != std::errc() || p != item.data() + item.size())
      throw InputError("--fanouts item " + std::to_string(out.size() + 1) + " is " + quote_token(item) + ", expected an integer >= 0 or -1 (all)");
    if (v < -1)
      throw InputError("--fanouts item " + std::to_string(out.size() + 1) + " is " + std::to_string(v) + ", expected an integer >= 0 or -1 (all)");
    out.push_back(v);
    start = end + 1;
  }
  return out;
}

namespace {

// What every method checks before it starts (InputError for what the dataset cannot satisfy).
void check_config(const Dataset& ds, const PartitionConfig& cfg) {
  const std::int64_t n = ds.num_nodes();
  if (cfg.parts < 1) throw InputError("--parts must be at least 1, got " + std::to_string(cfg.parts));
  if (cfg.parts > n)
    throw InputError("--parts " + std::to_string(cfg.parts) + " exceeds the " + std::to_string(n) + " nodes of dataset '" + ds.name + "'");
  if (!(cfg.imbalance >= 0 && cfg.imbalance <= 10)) throw InputError("--imbalance must be in [0, 10], got " + std::to_string(cfg.imbalance));
  if (cfg.balance.empty()) throw InputError("--balance needs at least one key");
  for (BalanceKey k : cfg.balance) {
    const auto need = [&](const IntArray& split, const char* what) {
      if (split.empty()) throw InputError("--balance " + balance_name(k) + ": dataset '" + ds.name + "' has no " + what + " split");
    };
    if (k == BalanceKey::kTrain || k == BalanceKey::kCost) need(ds.train_idx, "training");
    if (k == BalanceKey::kVal) need(ds.val_idx, "validation");
    if (k == BalanceKey::kTest) need(ds.test_idx, "test");
    if (k == BalanceKey::kLabels && ds.num_classes == 0) throw InputError("--balance labels: dataset '" + ds.name + "' has no labels");
    if (k == BalanceKey::kNtypes && !ds.schema.typed()) throw InputError("--balance ntypes: dataset '" + ds.name + "' has one node type");
  }
  if (cfg.method == PartitionMethod::kLabels && ds.num_classes == 0) throw InputError("--method labels: dataset '" + ds.name + "' has no labels");
  validate_cost_model(cfg.cost_fanouts, cfg.cost_remote_weight);
  if (cfg.method == PartitionMethod::kFennel && (!(cfg.fennel_gamma >= 1.0) || !std::isfinite(cfg.fennel_gamma)))
    throw InputError("--fennel-gamma must be a finite number >= 1, got " + std::to_string(cfg.fennel_gamma));
  // The streaming methods count neighbours; they have no notion of edge weights.
  if (cfg.edge_weights != EdgeWeighting::kNone && cfg.method != PartitionMethod::kMetis && cfg.method != PartitionMethod::kMetisMl)
    throw InputError("--edge-weights " + edge_weighting_name(cfg.edge_weights) + " works with --method metis or metis-ml only, not " +
                     method_name(cfg.method));
  if (cfg.edge_weights == EdgeWeighting::kEntropy && ds.feature_dim == 0)
    throw InputError("--edge-weights entropy: dataset '" + ds.name + "' has no features to compare");
}

// An invariant, not input: a partitioner that breaks it is a bug.
void check_assignment(const Dataset& ds, const PartitionConfig& cfg, const std::vector<PartId>& parts) {
  if (static_cast<std::int64_t>(parts.size()) != ds.num_nodes()) throw std::logic_error(method_name(cfg.method) + " returned a wrong-sized assignment");
  for (PartId p : parts)
    if (p < 0 || p >= cfg.parts) throw std::logic_error(method_name(cfg.method) + " returned part " + std::to_string(p));
}

}  // namespace

std::vector<PartId> Partitioner::partition(const Dataset& ds, const PartitionConfig& cfg) const {
  check_config(ds, cfg);
  if (cfg.parts == 1) return std::vector<PartId>(static_cast<std::size_t>(ds.num_nodes()), 0);
  std::vector<PartId> parts = run(ds, cfg);
  check_assignment(ds, cfg, parts);
  return parts;
}

std::vector<PartId> Partitioner::partition(const Dataset& ds, const PartitionConfig& cfg, const comm::Communicator& comm) const {
  if (comm.size() == 1) return partition(ds, cfg);
  agree(comm, [&] { check_config(ds, cfg); });
  if (cfg.parts == 1) return std::vector<PartId>(static_cast<std::size_t>(ds.num_nodes()), 0);
  std::vector<PartId> parts = run_spread(ds, cfg, comm);
  agree(comm, [&] { check_assignment(ds, cfg, parts); });
  return parts;
}

std::vector<PartId> Partitioner::run_spread(const Dataset& ds, const PartitionConfig& cfg, const comm::Communicator& comm) const {
  std::vector<PartId> parts;
  agree(comm, [&] {
    if (comm.rank() == 0) parts = run(ds, cfg);
  });
  comm.broadcast_vector(parts, 0);
  return parts;
}

std::unique_ptr<Partitioner> make_partitioner(PartitionMethod m) {
  switch (m) {
    case PartitionMethod::kMetis: return std::make_unique<MetisPartitioner>();
    case PartitionMethod::kMetisMl: return std::make_unique<MetisMlPartitioner>();
    case PartitionMethod::kRandom: return std::make_unique<RandomPartitioner>();
    case PartitionMethod::kLdg: return std::make_unique<LdgPartitioner>();
    case PartitionMethod::kFennel: return std::make_unique<FennelPartitioner>();
    case PartitionMethod::kLabels: return std::make_unique<LabelPartitioner>();
  }
  throw std::logic_error("unknown partitioning method");
}

std::vector<std::int64_t> balance_weights(const Dataset& ds, const std::vector<BalanceKey>& keys, int* ncon_out,
                                          std::span<const std::int64_t> cost, NodeId first, NodeId last) {
  if (last < 0) last = ds.num_nodes();
  const std::int64_t n = last - first;
  // kLabels and kNtypes expand to a column per class, per node type.
  const auto columns = [&](BalanceKey k) {
    return k == BalanceKey::kLabels ? static_cast<int>(ds.num_classes) : k == BalanceKey::kNtypes ? ds.schema.num_types() : 1;
  };
  int ncon = 0;
  for (BalanceKey k : keys) ncon += columns(k);
  std::vector<std::int64_t> w(static_cast<std::size_t>(n * ncon), 0);
  int col = 0;
  const bool by_nodes = std::find(keys.begin(), keys.end(), BalanceKey::kNodes) != keys.end();
  const auto mark = [&](const IntArray& split) {
    for (const NodeId v : split)
      if (v >= first && v < last) w[(v - first) * ncon + col] = 1;
  };
  for (BalanceKey k : keys) {
    switch (k) {
      case BalanceKey::kNodes:
        for (std::int64_t v = 0; v < n; ++v) w[v * ncon + col] = 1;
        break;
      case BalanceKey::kEdges:
        // The degree, as the edges balance is measured; beside no nodes key, a node with no edges
        // still weighs 1 (else a part could be handed every isolated node).
        for (std::int64_t v = 0; v < n; ++v) w[v * ncon + col] = std::max<std::int64_t>(by_nodes ? 0 : 1, ds.graph.degree(first + v));
        break;
      case BalanceKey::kTrain: mark(ds.train_idx); break;
      case BalanceKey::kVal: mark(ds.val_idx); break;
      case BalanceKey::kTest: mark(ds.test_idx); break;
      case BalanceKey::kLabels:
        // One constraint per label: a node weighs 1 in each of its labels' columns.
        for (std::int64_t v = 0; v < n; ++v) for_each_label(ds, first + v, [&](std::int64_t c) { w[v * ncon + col + c] = 1; });
        break;
      case BalanceKey::kCost:
        if (static_cast<std::int64_t>(cost.size()) != ds.num_nodes()) throw std::logic_error("balance_weights: --balance cost without the nodes' cost weights");
        for (std::int64_t v = 0; v < n; ++v) w[v * ncon + col] = cost[static_cast<std::size_t>(first + v)];
        break;
      case BalanceKey::kNtypes:
        // A node weighs 1 in its type's column; types are id ranges, so this walks each range.
        for (int t = 0; t < ds.schema.num_types(); ++t)
          for (NodeId v = std::max(first, ds.schema.begin(t)); v < std::min(last, ds.schema.end(t)); ++v) w[(v - first) * ncon + col + t] = 1;
        break;
    }
    col += columns(k);
  }
  *ncon_out = ncon;
  return w;
}

std::int64_t repair_balance(const CsrGraph& g, std::span<const std::int64_t> w, int ncon, int parts, double imbalance, std::vector<PartId>& part) {
  const NodeId n = g.num_nodes();
  const auto K = static_cast<std::size_t>(parts), C = static_cast<std::size_t>(ncon);
  std::vector<std::int64_t> load(K * C, 0);
  std::vector<double> limit(C, 0);
  for (NodeId v = 0; v < n; ++v)
    for (std::size_t c = 0; c < C; ++c) load[static_cast<std::size_t>(part[static_cast<std::size_t>(v)]) * C + c] += w[static_cast<std::size_t>(v) * C + c];
  for (std::size_t c = 0; c < C; ++c) {
    double total = 0;
    for (std::size_t p = 0; p < K; ++p) total += static_cast<double>(load[p * C + c]);
    limit[c] = (1 + imbalance) * total / static_cast<double>(K);
  }
  auto over = [&](std::size_t p, std::size_t c) { return static_cast<double>(load[p * C + c]) > limit[c]; };
  auto fits = [&](std::size_t q, const std::int64_t* wv) {
    for (std::size_t c = 0; c < C; ++c)
      if (wv[c] > 0 && static_cast<double>(load[q * C + c] + wv[c]) > limit[c]) return false;
    return true;
  };
  struct Move {
    std::int64_t gain;  // neighbours in the target part minus neighbours left behind
    NodeId v;
    PartId to;
  };
  std::int64_t moved = 0;
  std::vector<std::int64_t> beside(K, 0);
  // A few rounds: a round's moves change the loads its candidates were chosen under.
  for (int round = 0; round < 8; ++round) {
    std::vector<Move> moves;
    for (NodeId v = 0; v < n; ++v) {
      const auto p = static_cast<std::size_t>(part[static_cast<std::size_t>(v)]);
      const std::int64_t* wv = w.data() + static_cast<std::size_t>(v) * C;
      bool helps = false;
      for (std::size_t c = 0; c < C && !helps; ++c) helps = wv[c] > 0 && over(p, c);
      if (!helps) continue;
      std::fill(beside.begin(), beside.end(), 0);
      g.visit([&](const auto& view) {
        for (const auto u : view.neighbors(v)) ++beside[static_cast<std::size_t>(part[static_cast<std::size_t>(u)])];
      });
      std::optional<Move> best;
      for (std::size_t q = 0; q < K; ++q)
        if (q != p && fits(q, wv) && (!best || beside[q] > beside[static_cast<std::size_t>(best->to)]))
          best = Move{beside[q] - beside[p], v, static_cast<PartId>(q)};
      if (best) moves.push_back(*best);
    }
    if (moves.empty()) break;
    std::stable_sort(moves.begin(), moves.end(), [](const Move& a, const Move& b) { return a.gain > b.gain; });
    std::int64_t made = 0;
    for (const Move& m : moves) {
      const auto p = static_cast<std::size_t>(part[static_cast<std::size_t>(m.v)]), q = static_cast<std::size_t>(m.to);
      const std::int64_t* wv = w.data() + static_cast<std::size_t>(m.v) * C;
      bool helps = false;
      for (std::size_t c = 0; c < C && !helps; ++c) helps = wv[c] > 0 && over(p, c);
      if (!helps || !fits(q, wv)) continue;
      for (std::size_t c = 0; c < C; ++c) load[p * C + c] -= wv[c], load[q * C + c] += wv[c];
      part[static_cast<std::size_t>(m.v)] = m.to;
      ++made;
    }
    moved += made;
    if (made == 0) break;
  }
  return moved;
}

bool degrees_skewed(const CsrGraph& g, double* cv_out) {
  const NodeId n = g.num_nodes();
  double sum = 0, sum_sq = 0;
  for (NodeId v = 0; v < n; ++v) {
    const auto d = static_cast<double>(g.degree(v));
    sum += d;
    sum_sq += d * d;
  }
  const double mean = n > 0 ? sum / static_cast<double>(n) : 0;
  const double cv = mean > 0 ? std::sqrt(std::max(0.0, sum_sq / static_cast<double>(n) - mean * mean)) / mean : 0;
  if (cv_out) *cv_out = cv;
  return cv > kSkewedDegreeCv;
}

std::vector<std::int64_t> entropy_edge_weights(const Dataset& ds) {
  // Deshmukh et al. (ICDM 2023) weight edges so that METIS keeps nodes that are likely to share a
  // label together, which lowers each shard's label entropy. Our weight combines the two signals
  // they name: feature similarity (cosine, mapped to [0, 1]) and degree (an edge between
  // low-degree nodes is a larger share of their neighbourhoods, so cutting it costs more):
  //   w(u, v) = 1 + round(kScale * sim(u, v) * 2 / (1 + sqrt(deg(u) * deg(v)) / mean_deg))
  // Symmetric by construction; at least 1 so no edge becomes free to cut.
  constexpr double kScale = 100.0;
  const std::int64_t n = ds.num_nodes(), f = ds.feature_dim;
  std::vector<double> norm(static_cast<std::size_t>(n), 0.0);
  std::vector<float> row_u(static_cast<std::size_t>(f)), row_v(static_cast<std::size_t>(f));  // 2-byte rows widened
  for (std::int64_t v = 0; v < n; ++v) {
    const float* x = ds.feature_row_f32(v, row_u.data());
    double s = 0;
    for (std::int64_t j = 0; j < f; ++j) s += static_cast<double>(x[j]) * x[j];
    norm[v] = std::sqrt(s);
  }
  const double mean_deg = n > 0 ? std::max(1.0, static_cast<double>(ds.graph.num_edges()) / static_cast<double>(n)) : 1.0;
  std::vector<std::int64_t> w(static_cast<std::size_t>(ds.graph.num_edges()));
  ds.graph.visit([&](const auto& g) {
  for (NodeId u = 0; u < n; ++u) {
    const float* xu = ds.feature_row_f32(u, row_u.data());
    const EdgeId base = ds.graph.indptr()[u];
    const auto nb = g.neighbors(u);
    for (std::size_t i = 0; i < nb.size(); ++i) {
      const NodeId v = nb[i];
      const float* xv = ds.feature_row_f32(v, row_v.data());
      double dot = 0;
      for (std::int64_t j = 0; j < f; ++j) dot += static_cast<double>(xu[j]) * xv[j];
      const double denom = norm[u] * norm[v];
      const double cos = denom > 0 ? dot / denom : 0.0;
      const double sim = (1.0 + cos) / 2.0;
      const double deg = std::sqrt(static_cast<double>(ds.graph.degree(u)) * static_cast<double>(ds.graph.degree(v)));
      w[base + static_cast<EdgeId>(i)] = 1 + std::llround(kScale * sim * 2.0 / (1.0 + deg / mean_deg));
    }
  }
  });
  return w;
}

}  // namespace shardgnn
