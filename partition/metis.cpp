// The one place that calls METIS (Karypis & Kumar, "A fast and high quality multilevel scheme for
// partitioning irregular graphs", SIAM J. Sci. Comput. 1998): METIS_PartGraphKway with vertex
// weights (multi-constraint balance), edge weights, the cut or volume objective and a seed.
// Debian's METIS uses 32-bit idx_t: graphs beyond that range get a clear error naming the
// methods that have no such limit. Every METIS return code becomes an exception.
#include <sys/resource.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <limits>
#include <new>
#include <optional>

#include "datasets/builder.hpp"
#include "datasets/error.hpp"
#include "datasets/memory_limit.hpp"
#include "partition/cost.hpp"
#include "partition/methods.hpp"
#include "partition/metis_kway.hpp"

namespace shardgnn {

using comm::Op;  // the parameters called `comm` hide the namespace in function bodies

namespace {

static_assert(sizeof(idx_t) * 8 == IDXTYPEWIDTH, "METIS idx_t width mismatch");

std::atomic<double> g_metis_cpu_s{0};

// What METIS's k-way takes per adjacency entry, measured on R-MAT graphs (peak memory over entries).
constexpr double kMetisBytesPerEntry = 80;

void check_fits(std::int64_t value, const std::string& what, const Dataset& ds) {
  if (value > static_cast<std::int64_t>(std::numeric_limits<idx_t>::max()))
    throw InputError("dataset '" + ds.name + "': " + what + " (" + std::to_string(value) + ") exceeds the " + std::to_string(IDXTYPEWIDTH) +
                     "-bit index range of this METIS build; use --method fennel, ldg or random, which have no such limit");
}

// True when every row is free of self-loops and duplicates and every (u, v) has its (v, u):
// what METIS requires. One pass with a binary search per entry; skipped when conversion already
// guaranteed it.
bool is_metis_ready(const Dataset& ds) {
  // Rows with relation ids are sorted per relation and may list a neighbour under several: the
  // partitioner takes their simple projection (one entry per neighbour).
  if (ds.schema.relation_ids()) return false;
  const CleanReport& c = ds.cleaning;
  if (c.symmetric && c.no_self_loops && c.no_duplicates) return true;
  const bool simple_rows = ds.graph.visit([](const auto& g) {
    for (NodeId u = 0; u < g.num_nodes(); ++u) {
      const auto nb = g.neighbors(u);
      for (std::size_t i = 0; i < nb.size(); ++i)
        if (nb[i] == u || (i > 0 && nb[i - 1] == nb[i])) return false;
    }
    return true;
  });
  return simple_rows && (c.symmetric || is_symmetric(ds.graph));
}

struct MetisGraph {
  std::vector<idx_t> xadj, adjncy, adjwgt;
};

// Copies (or, if needed, cleans) the graph into METIS's arrays. `weights` is empty or aligned
// with the graph's ids.
MetisGraph to_metis(const Dataset& ds, const std::vector<std::int64_t>& weights) {
  MetisGraph mg;
  const CsrGraph* g = &ds.graph;
  const std::vector<std::int64_t>* w = &weights;
  std::optional<BuiltGraph> cleaned = simple_copy_if_needed(ds, weights);
  if (cleaned) {
    g = &cleaned->graph;
    w = &cleaned->weights;
  }
  check_fits(g->num_edges(), "its number of adjacency entries", ds);
  mg.xadj.assign(g->indptr().begin(), g->indptr().end());
  g->visit([&](const auto& v) { mg.adjncy.assign(v.indices().begin(), v.indices().end()); });
  if (!w->empty()) {
    mg.adjwgt.resize(w->size());
    for (std::size_t i = 0; i < w->size(); ++i) {
      check_fits((*w)[i], "an edge weight", ds);
      mg.adjwgt[i] = static_cast<idx_t>((*w)[i]);
    }
  }
  return mg;
}

// METIS keeps each constraint's total weight in an idx_t. A column whose total exceeds a quarter
// of idx_t's range (headroom for METIS's own sums and (1 + imbalance) products) is scaled down
// proportionally; a node with weight in it keeps at least 1. In practice only --balance cost on a
// large graph or with -1 fanouts gets here.
std::vector<idx_t> to_metis_vertex_weights(std::span<const std::int64_t> w, int ncon, std::int64_t n) {
  const double limit = static_cast<double>(std::numeric_limits<idx_t>::max() / 4);
  std::vector<double> scale(static_cast<std::size_t>(ncon), 1.0);
  std::vector<std::int64_t> nonzero(static_cast<std::size_t>(ncon), 0);
  for (int c = 0; c < ncon; ++c) {
    double total = 0;
    for (std::int64_t v = 0; v < n; ++v) {
      total += static_cast<double>(w[v * ncon + c]);
      nonzero[c] += w[v * ncon + c] != 0;
    }
    // After scaling, the total is at most (limit - nonzero) + nonzero: the max(1, ...) adds at most
    // one per node.
    if (total > limit) scale[c] = std::max(0.0, limit - static_cast<double>(nonzero[c])) / total;
  }
  std::vector<idx_t> out(w.size());
  for (std::int64_t v = 0; v < n; ++v)
    for (int c = 0; c < ncon; ++c) {
      const std::int64_t x = w[v * ncon + c];
      out[v * ncon + c] = scale[c] == 1.0 || x == 0 ? static_cast<idx_t>(x)
                                                    : static_cast<idx_t>(std::max(1.0, std::floor(static_cast<double>(x) * scale[c])));
    }
  // METIS rejects a constraint whose total weight is zero (e.g. a class with no labelled node):
  // such a column carries no balance information, so give every node weight 1 in it. (Scaling
  // keeps a non-zero weight non-zero, so the count above tells.)
  for (int c = 0; c < ncon; ++c)
    if (nonzero[c] == 0)
      for (std::int64_t v = 0; v < n; ++v) out[v * ncon + c] = 1;
  return out;
}

// max over the balance constraints of (heaviest part / mean part) under `part`, with `cost` the
// full cost measured under `part` itself (node_cost_weights with that assignment).
double worst_imbalance(const Dataset& ds, const PartitionConfig& cfg, const std::vector<PartId>& part, const std::vector<std::int64_t>& cost) {
  int ncon = 0;
  const std::vector<std::int64_t> w = balance_weights(ds, cfg.balance, &ncon, cost);
  const auto k = static_cast<std::size_t>(cfg.parts), nc = static_cast<std::size_t>(ncon);
  std::vector<double> load(k * nc, 0.0), total(nc, 0.0);
  for (std::size_t v = 0; v < part.size(); ++v)
    for (std::size_t c = 0; c < nc; ++c) {
      load[static_cast<std::size_t>(part[v]) * nc + c] += static_cast<double>(w[v * nc + c]);
      total[c] += static_cast<double>(w[v * nc + c]);
    }
  double worst = 0;
  for (std::size_t c = 0; c < nc; ++c)
    for (std::size_t p = 0; p < k && total[c] > 0; ++p) worst = std::max(worst, load[p * nc + c] * static_cast<double>(k) / total[c]);
  return worst;
}

}  // namespace

double metis_call_cpu_seconds() noexcept { return g_metis_cpu_s.load(); }

std::optional<BuiltGraph> simple_copy_if_needed(const Dataset& ds, const std::vector<std::int64_t>& weights) {
  if (is_metis_ready(ds)) return std::nullopt;
  // METIS needs a simple undirected graph: symmetrise and drop self-loops and duplicates here,
  // for the partitioner only; the shards keep the dataset's edges as they are.
  const CsrGraph& g = ds.graph;
  EdgeList el;
  el.num_nodes = ds.num_nodes();
  el.src.reserve(static_cast<std::size_t>(g.num_edges()));
  for (NodeId u = 0; u < g.num_nodes(); ++u) el.src.insert(el.src.end(), static_cast<std::size_t>(g.degree(u)), u);
  g.visit([&](const auto& v) { el.dst.assign(v.indices().begin(), v.indices().end()); });
  el.weight = weights;
  return build_csr(std::move(el), {true, true, true});
}

std::vector<idx_t> metis_kway(std::vector<idx_t>& xadj, std::vector<idx_t>& adjncy, std::vector<idx_t>& adjwgt, std::span<const std::int64_t> node_weights,
                              int ncon, const PartitionConfig& cfg, const std::string& name) {
  idx_t options[METIS_NOPTIONS];
  METIS_SetDefaultOptions(options);
  options[METIS_OPTION_OBJTYPE] = cfg.objective == PartitionObjective::kVolume ? METIS_OBJTYPE_VOL : METIS_OBJTYPE_CUT;
  options[METIS_OPTION_SEED] = static_cast<idx_t>(cfg.seed % static_cast<std::uint64_t>(std::numeric_limits<idx_t>::max()));
  options[METIS_OPTION_UFACTOR] = static_cast<idx_t>(std::lround(cfg.imbalance * 1000.0));
  options[METIS_OPTION_NUMBERING] = 0;
  const auto n = static_cast<std::int64_t>(xadj.size()) - 1;
  std::vector<idx_t> vwgt;
  if (!node_weights.empty()) vwgt = to_metis_vertex_weights(node_weights, ncon, n);
  std::vector<idx_t> part(static_cast<std::size_t>(n));
  idx_t nvtxs = static_cast<idx_t>(n), ncon_i = static_cast<idx_t>(node_weights.empty() ? 1 : ncon), nparts = cfg.parts, objval = 0;
  const double cpu0 = process_cpu_seconds();
  const int rc = METIS_PartGraphKway(&nvtxs, &ncon_i, xadj.data(), adjncy.data(), vwgt.empty() ? nullptr : vwgt.data(), /*vsize=*/nullptr,
                                     adjwgt.empty() ? nullptr : adjwgt.data(), &nparts, /*tpwgts=*/nullptr, /*ubvec=*/nullptr, options, &objval, part.data());
  g_metis_cpu_s.fetch_add(process_cpu_seconds() - cpu0);
  switch (rc) {
    case METIS_OK: break;
    case METIS_ERROR_INPUT: throw InputError("dataset '" + name + "': METIS rejected the input (METIS_ERROR_INPUT)");
    case METIS_ERROR_MEMORY: throw std::runtime_error("METIS ran out of memory (METIS_ERROR_MEMORY) partitioning '" + name + "'");
    default: throw std::runtime_error("METIS failed (return code " + std::to_string(rc) + ") partitioning '" + name + "'");
  }
  return part;
}

double process_cpu_seconds() noexcept {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) + 1e-6 * static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec);
}

namespace {
// In the powers of 1024 that --memory-limit reads.
std::string size_text(double bytes) {
  char text[32];
  if (bytes >= 0x1p30) std::snprintf(text, sizeof text, "%.1f GiB", bytes / 0x1p30);
  else if (bytes >= 0x1p20) std::snprintf(text, sizeof text, "%.0f MiB", bytes / 0x1p20);
  else std::snprintf(text, sizeof text, "%.0f KiB", bytes / 0x1p10);
  return text;
}
}  // namespace

std::string metis_too_large(const Dataset& ds, const PartitionConfig& cfg) {
  const std::int64_t n = ds.num_nodes(), entries = ds.graph.num_edges(), idx_max = std::numeric_limits<idx_t>::max();
  const double need = kMetisBytesPerEntry * static_cast<double>(entries),
               have = static_cast<double>(cfg.memory_limit > 0 ? cfg.memory_limit : usable_memory_bytes());
  if (n > idx_max || entries > idx_max)
    return "the graph (" + std::to_string(n) + " nodes, " + std::to_string(entries) + " adjacency entries) exceeds this METIS build's " +
           std::to_string(IDXTYPEWIDTH) + "-bit index range";
  if (need > have)
    return "METIS would need about " + size_text(need) + " for " + std::to_string(entries) + " adjacency entries, more than the " + size_text(have) +
           (cfg.memory_limit > 0 ? " of --memory-limit" : " usable here");
  return "";
}

std::vector<PartId> MetisPartitioner::run_spread(const Dataset& ds, const PartitionConfig& cfg, const comm::Communicator& comm) const {
  // Rank 0 decides, so that ranks on nodes with different memory take one path.
  const std::string why = comm.rank() == 0 ? metis_too_large(ds, cfg) : "";
  std::int64_t whole = comm.rank() == 0 && why.empty() ? 1 : 0;
  comm.allreduce_inplace(std::span<std::int64_t>(&whole, 1), Op::kMax);
  if (whole == 1) return Partitioner::run_spread(ds, cfg, comm);
  if (comm.rank() == 0) std::fprintf(stderr, "metis: %s; partitioning it the multilevel way (--method metis-ml)\n", why.c_str());
  return metis_ml_partition(ds, cfg, comm);
}

std::vector<PartId> MetisPartitioner::run(const Dataset& ds, const PartitionConfig& cfg) const {
  const std::int64_t n = ds.num_nodes();
  // A graph beyond METIS's index range or the memory METIS would take goes the multilevel way.
  if (const std::string why = metis_too_large(ds, cfg); !why.empty()) {
    std::fprintf(stderr, "metis: %s; partitioning it the multilevel way (--method metis-ml)\n", why.c_str());
    return metis_ml_partition(ds, cfg, comm::Communicator::one_rank());
  }

  // --balance cost: the subtree-only cost first (no assignment yet), computed before the mapped
  // graph's pages are released below.
  const bool by_cost = std::find(cfg.balance.begin(), cfg.balance.end(), BalanceKey::kCost) != cfg.balance.end();
  std::vector<std::int64_t> cost;
  if (by_cost) cost = node_cost_weights(ds, cfg.cost_fanouts, cfg.cost_remote_weight);

  std::vector<std::int64_t> edge_w;
  if (cfg.edge_weights == EdgeWeighting::kEntropy) edge_w = entropy_edge_weights(ds);
  else if (!ds.edge_weights.empty()) edge_w.assign(ds.edge_weights.begin(), ds.edge_weights.end());
  MetisGraph mg = to_metis(ds, edge_w);
  edge_w = {};
  // METIS now has its own copy: stop holding the mapped graph in memory as well (the second cost
  // pass reads it again, mapping it back in).
  ds.graph.release_index_pages();
  ds.graph.indptr().release_pages();

  std::vector<idx_t> part(static_cast<std::size_t>(n));
  int ncon = 1;
  std::vector<std::int64_t> w;  // the last pass's vertex weights
  auto kway = [&](const std::vector<std::int64_t>& cost_column) {
    // Plain node balance is METIS's default (no vertex weights): pass none, as gpmetis does.
    ncon = 1;
    w.clear();
    if (!(cfg.balance.size() == 1 && cfg.balance[0] == BalanceKey::kNodes)) w = balance_weights(ds, cfg.balance, &ncon, cost_column);  // sets ncon
    part = metis_kway(mg.xadj, mg.adjncy, mg.adjwgt, w, ncon, cfg, ds.name);
  };
  kway(cost);
  if (!by_cost) {
    std::vector<PartId> out(part.begin(), part.end());
    // Several constraints: METIS may leave one a little over its bound (repair_balance).
    if (ncon > 1) repair_balance(ds.graph, w, ncon, cfg.parts, cfg.imbalance, out);
    return out;
  }
  if (cfg.cost_remote_weight == 0) return std::vector<PartId>(part.begin(), part.end());

  // Second pass: the remote fetches depend on the assignment, so estimate them under the first
  // pass's and partition again, same seed, with the full cost s + remote_weight * r. Those weights
  // are estimates: METIS moves nodes, which changes their r (a second pass balanced under its own
  // weights measures less balanced under its own result, sometimes worse than the first pass,
  // and further passes oscillate rather than converge). So both assignments are measured with
  // the exact full cost under themselves, and the one whose worst balance constraint is least
  // imbalanced is kept (ties: the second).
  std::vector<PartId> first(part.begin(), part.end());
  cost = node_cost_weights(ds, cfg.cost_fanouts, cfg.cost_remote_weight, first);
  const double first_worst = worst_imbalance(ds, cfg, first, cost);
  kway(cost);
  std::vector<PartId> second(part.begin(), part.end());
  return worst_imbalance(ds, cfg, second, node_cost_weights(ds, cfg.cost_fanouts, cfg.cost_remote_weight, second)) <= first_worst ? second : first;
}

}  // namespace shardgnn
