// The partitioning options `partition` and `bench partition` share, bound into a PartitionConfig.
#include "datasets/error.hpp"
#include "datasets/names.hpp"
#include "partition/cost.hpp"
#include "tools/cli.hpp"

namespace shardgnn::cli {

namespace {
constexpr EnumName<bool> kStreamOrders[] = {{false, "natural"}, {true, "random"}};

std::string balance_text(const std::vector<BalanceKey>& keys) {
  std::string out;
  for (BalanceKey k : keys) {
    if (!out.empty()) out += ',';
    out += balance_name(k);
  }
  return out;
}
}  // namespace

void add_partition_options(po::options_description& o, PartitionConfig& c) {
  o.add_options()
      ("parts,k", bound(c.parts), "number of parts K (one per MPI rank)")
      ("method,m", bound(c.method, parse_method, method_name), "metis, metis-ml (multilevel: label-propagation coarsening, METIS on the coarsest graph), random, ldg or fennel")
      ("balance", bound(c.balance, parse_balance, balance_text),
       "what every part gets its share of, comma-separated: nodes, train, val, test, edges, labels (one constraint per class), "
       "cost (expected sampling cost of the training nodes, see --fanouts); by default nodes, and with ldg or fennel "
       "nodes,edges on a graph whose degrees are skewed (coefficient of variation above 1)")
      ("objective", bound(c.objective, parse_objective, objective_name),
       "METIS objective: cut or vol (communication volume)")
      ("edge-weights", bound(c.edge_weights, parse_edge_weighting, edge_weighting_name),
       "none, or entropy (feature similarity and degree, Deshmukh et al. 2023)")
      ("memory-limit", po::value<std::string>()->notifier([&c](const std::string& text) { c.memory_limit = parse_byte_size(text, "--memory-limit"); }),
       "metis: the memory METIS may take on the whole graph, e.g. 8G (default: what this process may use); a graph needing more goes the "
       "multilevel way (metis-ml)")
      ("imbalance", bound(c.imbalance), "allowed imbalance per constraint (0.03: max part <= 1.03 x mean)")
      ("seed", bound(c.seed), "random seed")
      ("coarse-nodes", bound(c.coarse_nodes), "metis-ml: coarsen until at most N nodes, then METIS (0: 4096 per part)")
      ("scratch", po::value<std::string>(&c.scratch_dir), "metis-ml: folder for the coarse graphs' spill files, unlinked as they are made (default: $TMPDIR or /tmp)")
      ("stream-order", bound(c.stream_shuffle, kStreamOrders, "--stream-order"),
       "LDG/Fennel node order: natural or random")
      ("fanouts", bound(c.cost_fanouts, parse_fanouts, fanouts_text), "cost model: the sampler's fanouts by hop from the seeds outward (-1 = all neighbours)")
      ("cost-remote-weight", bound(c.cost_remote_weight), "cost model: cost of one remote feature row relative to one sampled edge");
}

void check_partition_config(const PartitionConfig& c) {
  try {
    validate_cost_model(c.cost_fanouts, c.cost_remote_weight);
  } catch (const InputError& e) {
    throw UsageError(e.what());
  }
  if (c.parts < 1) throw UsageError("--parts must be at least 1, got " + std::to_string(c.parts));
  if (c.coarse_nodes < 0) throw UsageError("--coarse-nodes must be 0 (the default) or positive, got " + std::to_string(c.coarse_nodes));
}

}  // namespace shardgnn::cli
