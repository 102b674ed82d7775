// The concrete partitioners behind make_partitioner (internal to partition/).
#pragma once

#include "partition/partitioner.hpp"

namespace shardgnn {

class MetisPartitioner final : public Partitioner {
  std::vector<PartId> run(const Dataset& ds, const PartitionConfig& cfg) const override;
};

// Label-propagation coarsening, METIS on the coarsest graph, refinement on the way back
// (multilevel.cpp): for graphs METIS cannot take whole.
class MetisMlPartitioner final : public Partitioner {
  std::vector<PartId> run(const Dataset& ds, const PartitionConfig& cfg) const override;
};

class RandomPartitioner final : public Partitioner {
  std::vector<PartId> run(const Dataset& ds, const PartitionConfig& cfg) const override;
};

class LdgPartitioner final : public Partitioner {
  std::vector<PartId> run(const Dataset& ds, const PartitionConfig& cfg) const override;
};

class FennelPartitioner final : public Partitioner {
  std::vector<PartId> run(const Dataset& ds, const PartitionConfig& cfg) const override;
};

}  // namespace shardgnn
