// The concrete partitioners behind make_partitioner (internal to partition/).
#pragma once

#include "comm/communicator.hpp"
#include "partition/partitioner.hpp"

namespace shardgnn {

class MetisPartitioner final : public Partitioner {
  std::vector<PartId> run(const Dataset& ds, const PartitionConfig& cfg) const override;
  std::vector<PartId> run_spread(const Dataset& ds, const PartitionConfig& cfg, const comm::Communicator& comm) const override;
};

// Label-propagation coarsening, METIS on the coarsest graph, refinement on the way back
// (multilevel.cpp): for graphs METIS cannot take whole.
class MetisMlPartitioner final : public Partitioner {
  std::vector<PartId> run(const Dataset& ds, const PartitionConfig& cfg) const override;
  std::vector<PartId> run_spread(const Dataset& ds, const PartitionConfig& cfg, const comm::Communicator& comm) const override;
};

// The multilevel path over the ranks of `comm` (collective): every node's part, on every rank.
std::vector<PartId> metis_ml_partition(const Dataset& ds, const PartitionConfig& cfg, const comm::Communicator& comm);

class RandomPartitioner final : public Partitioner {
  std::vector<PartId> run(const Dataset& ds, const PartitionConfig& cfg) const override;
};

class LdgPartitioner final : public Partitioner {
  std::vector<PartId> run(const Dataset& ds, const PartitionConfig& cfg) const override;
};

class FennelPartitioner final : public Partitioner {
  std::vector<PartId> run(const Dataset& ds, const PartitionConfig& cfg) const override;
};

// Label-skewed parts (label_skew.cpp): nodes ordered by label, then a seeded hash, cut into equal runs.
class LabelPartitioner final : public Partitioner {
  std::vector<PartId> run(const Dataset& ds, const PartitionConfig& cfg) const override;
};

}  // namespace shardgnn
