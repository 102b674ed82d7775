// Configuration of the partitioning phase: plain structs with documented defaults, filled by the
// CLI (`shardgnn partition`) and by tests; nothing global.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace shardgnn {

// kLabels: nodes in order of their label (then a seeded hash) cut into equal runs, so each shard holds
// about max(1, classes / K) classes: the label-skewed partitions of Entropy-Aware Training's benchmarks, not a partitioner
// for speed.
enum class PartitionMethod { kMetis, kMetisMl, kRandom, kLdg, kFennel, kLabels };

// What each shard should get its fair share of. Each key becomes one balance constraint (a METIS
// vertex-weight component; a capacity for the streaming methods).
enum class BalanceKey {
  kNodes,   // every node weighs 1
  kTrain,   // training nodes
  kVal,     // validation nodes
  kTest,    // test nodes
  kEdges,   // a node weighs its degree
  kLabels,  // one constraint per class: every shard gets its share of each class (label entropy balanced)
  kCost,    // expected sampling cost of training nodes (partition/cost.hpp); others weigh 0
  kNtypes,  // one constraint per node type of a typed graph (DistDGL's balance_ntypes)
};

enum class PartitionObjective { kCut, kVolume };  // METIS: minimise edge cut or communication volume

enum class EdgeWeighting {
  kNone,     // unit weights (or the dataset's own edge weights, if it has them)
  kEntropy,  // weights from feature similarity and degree (Deshmukh et al. 2023): keeps similar
             // neighbourhoods together so shards get lower label entropy
};

struct PartitionConfig {
  int parts = 2;
  PartitionMethod method = PartitionMethod::kMetis;
  std::vector<BalanceKey> balance = {BalanceKey::kNodes};
  PartitionObjective objective = PartitionObjective::kCut;
  EdgeWeighting edge_weights = EdgeWeighting::kNone;
  double imbalance = 0.03;     // allowed load imbalance per constraint: max part <= (1 + imbalance) * mean
  std::uint64_t seed = 0;
  // Streaming methods (LDG, Fennel): nodes arrive in id order, or in a seeded random order.
  bool stream_shuffle = false;
  double fennel_gamma = 1.5;   // Fennel's exponent (Tsourakakis et al. 2014)
  // metis-ml: coarsen until the graph has at most this many nodes (0: 4096 per part), then METIS.
  std::int64_t coarse_nodes = 0;
  // metis-ml: the folder for its coarse graphs' spill files (empty: the system's temporary folder,
  // $TMPDIR, which batch systems often point at a node-local disk).
  std::string scratch_dir;
  // metis: the memory METIS may take on the whole graph before the multilevel path is chosen
  // instead (0: what this process may use, see usable_memory_bytes).
  std::uint64_t memory_limit = 0;
  // The cost model (partition/cost.hpp), used by --balance cost and by the expected-cost metrics:
  // the sampler's fanouts by hop from the seeds outward (-1 = all neighbours), and the cost of one
  // remote feature row relative to one sampled edge (2: a remote row is a network transfer on top
  // of the sampling work of its edge).
  std::vector<int> cost_fanouts = {15, 10, 5};
  double cost_remote_weight = 2.0;
};

std::string method_name(PartitionMethod m);
PartitionMethod parse_method(const std::string& name);           // metis, metis-ml, random, ldg, fennel, labels
std::vector<BalanceKey> parse_balance(const std::string& list);  // "nodes,train,val,test,edges,labels,cost,ntypes"
std::string balance_name(BalanceKey k);
PartitionObjective parse_objective(const std::string& name);     // cut, vol
std::string objective_name(PartitionObjective o);
EdgeWeighting parse_edge_weighting(const std::string& name);     // none, entropy
std::string edge_weighting_name(EdgeWeighting w);
// "15,10,5" -> {15, 10, 5}; -1 means all neighbours. Empty lists, 0, values below -1 and
// non-numbers are InputErrors naming the offending item. Shared by the sampler's --fanouts and the
// partitioner's cost model (it lives here because the sampler depends on partition, not the reverse).
std::vector<int> parse_fanouts(const std::string& text);

}  // namespace shardgnn
