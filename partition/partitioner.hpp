// Partitioners: assign every node of a dataset to one of K parts.
//  - METIS k-way (Karypis & Kumar 1998), multi-constraint, cut or volume objective;
//  - random (a seeded hash of the node id);
//  - LDG, linear deterministic greedy (Stanton & Kliot, KDD 2012), one pass, bounded memory;
//  - Fennel (Tsourakakis et al., WSDM 2014), one pass, bounded memory.
// All are deterministic for a given seed. The interface follows mt-KaHyPar: a public non-virtual
// method that validates and measures, over a private virtual one.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "datasets/dataset.hpp"
#include "partition/book.hpp"
#include "comm/communicator.hpp"
#include "partition/config.hpp"

namespace shardgnn {

class Partitioner {
 public:
  virtual ~Partitioner() = default;
  // Returns the part of every node (size num_nodes, values in [0, parts)). Throws InputError for a
  // configuration the dataset cannot satisfy (K < 1, K > nodes, --balance train without a train
  // split, a graph beyond METIS's index range, bad cost-model
  // fanouts, ...).
  std::vector<PartId> partition(const Dataset& ds, const PartitionConfig& cfg) const;
  // The same over the ranks of `comm` (collective: every rank passes the same dataset and
  // configuration), every node's part on every rank. metis-ml, and metis where it takes the
  // multilevel path, spread the work over the ranks; the other methods run on rank 0.
  std::vector<PartId> partition(const Dataset& ds, const PartitionConfig& cfg, const comm::Communicator& comm) const;

 protected:
  // By default `run` on rank 0, its result sent to every rank.
  virtual std::vector<PartId> run_spread(const Dataset& ds, const PartitionConfig& cfg, const comm::Communicator& comm) const;

 private:
  virtual std::vector<PartId> run(const Dataset& ds, const PartitionConfig& cfg) const = 0;
};

std::unique_ptr<Partitioner> make_partitioner(PartitionMethod m);

// Process CPU seconds (user + system, getrusage) spent inside METIS_PartGraphKway calls so far:
// the span gpmetis's "Partitioning" line times, for benchmarks comparing the two like for like
// (our METIS path also converts the graph into METIS's arrays first).
double metis_call_cpu_seconds() noexcept;
// User + system CPU seconds of the whole process so far (getrusage): how GKlib, and so gpmetis,
// times in a build without OpenMP, as Debian's is.
double process_cpu_seconds() noexcept;

// The per-node balance weights of `keys`, row-major [num_nodes x ncon] (kLabels expands to one
// column per class). Shared by METIS (vertex weights) and the streaming methods (capacities).
// kCost takes its column from `cost` (node_cost_weights, size num_nodes), required when listed.
// With first/last, only the rows of nodes [first, last) (last < 0: to the end).
std::vector<std::int64_t> balance_weights(const Dataset& ds, const std::vector<BalanceKey>& keys, int* ncon,
                                          std::span<const std::int64_t> cost = {}, NodeId first = 0, NodeId last = -1);

// Moves nodes out of parts heavier than (1 + imbalance) x the mean in any of the ncon columns of
// `w` (balance_weights' rows) into parts where every column of the node stays within that bound,
// best first: the move that keeps the most of the node's neighbours beside it. METIS meets a
// single constraint's bound but may miss some of several (4 node types and the training split:
// 1.036 at 4 parts against 1.03); this pass closes that gap at a small cost in cut. Stops when
// every part is within bounds or no move helps. Returns the moves made.
std::int64_t repair_balance(const CsrGraph& g, std::span<const std::int64_t> w, int ncon, int parts, double imbalance, std::vector<PartId>& part);

// Whether the degrees are skewed (a power law's hubs: their coefficient of variation above
// kSkewedDegreeCv): there a node-balanced streaming partition can leave one part with most edges.
inline constexpr double kSkewedDegreeCv = 1.0;
bool degrees_skewed(const CsrGraph& g, double* cv = nullptr);

// Why --method metis cannot take this graph whole and goes the multilevel way (its size beyond
// METIS's index range, or the memory METIS would need beyond cfg.memory_limit or what is usable
// here), or empty.
std::string metis_too_large(const Dataset& ds, const PartitionConfig& cfg);

// Entropy-aware edge weights (Deshmukh et al. 2023), aligned with ds.graph.indices(): positive
// integers, larger for neighbours with similar features and for low-degree endpoints. Symmetric:
// w(u, v) == w(v, u).
std::vector<std::int64_t> entropy_edge_weights(const Dataset& ds);

}  // namespace shardgnn
