// What the sampler hands the trainer: per layer a block (a bipartite message-flow graph in CSR
// with local numbering) plus the global ids of each layer's nodes, the input features and the
// seeds' targets. Plain arrays: the trainer wraps them in tensors without copying.
#pragma once

#include <boost/container/vector.hpp>
#include <cstdint>
#include <memory>
#include <variant>
#include <vector>

#include "datasets/graph.hpp"
#include "sampler/huge_pages.hpp"

namespace shardgnn {

using FeatureRows = boost::container::vector<float, HugePageAllocator<float>>;

struct Block {
  std::int64_t num_src = 0;  // input-side nodes; the first num_dst of them are the output-side nodes
  std::int64_t num_dst = 0;
  std::vector<std::int64_t> indptr;   // num_dst + 1
  std::vector<std::int64_t> indices;  // positions in the src node list
  // Each edge's relation, aligned with indices, on a graph with relation ids (GraphSchema); empty
  // otherwise (a typed graph's relation then follows from the end types).
  std::vector<std::int32_t> relations;
};

// What a batch's examples are to learn, in the encoding of the task that reads them (and only it
// does): NodeExamples' classes or label sets, EdgeExamples' pairs.
struct ClassTargets {
  std::vector<std::int64_t> classes;  // one per seed, -1 = unlabelled
};
struct LabelSetTargets {
  // Each seed's label set, LabelSets::words() int64 words a seed (label c is bit c % 64 of word c / 64).
  std::vector<std::int64_t> words;
};
struct PairTargets {
  // Rows (u, v, y): the positions among the seeds of a pair's endpoints, and its target (1: a
  // training edge, 0: one of its corrupted pairs). PairBatch::pairs.
  std::vector<std::int64_t> rows;
};
using Targets = std::variant<std::monostate, ClassTargets, LabelSetTargets, PairTargets>;

// A batch's targets as the flat int64 values they hold (what travels to the device as one tensor).
inline const std::vector<std::int64_t>& target_values(const Targets& t) {
  static const std::vector<std::int64_t> none;
  if (const auto* c = std::get_if<ClassTargets>(&t)) return c->classes;
  if (const auto* l = std::get_if<LabelSetTargets>(&t)) return l->words;
  if (const auto* p = std::get_if<PairTargets>(&t)) return p->rows;
  return none;
}

struct MiniBatch {
  std::int64_t epoch = 0, step = 0;
  // layer_nodes[h]: global ids of the nodes at depth <= h, seeds first; a prefix of layer_nodes[h+1].
  std::vector<std::vector<NodeId>> layer_nodes;
  // blocks[0] is the input layer (as in DGL): src = layer_nodes[L], dst = layer_nodes[L-1];
  // blocks[L-1] ends at the seeds.
  std::vector<Block> blocks;
  std::int64_t feature_dim = 0;
  // layer_nodes[L].size() x feature_dim. A Boost vector so that it can be sized without the
  // zero-fill the gather would overwrite at once, a measurable part of a sampling rank's time.
  FeatureRows features;
  Targets targets;
  // Full-graph degree of each input node (SamplerConfig::with_degrees); empty otherwise. Exact
  // GCN normalisation needs it: a block sees only the sampled edges of its src nodes.
  std::vector<std::int64_t> degrees;
  // A typed graph's batch (Shard::schema; `features` then empty): per node type t the rows of the
  // input nodes of type t at the type's width (empty for a type without features), their positions
  // among the input nodes, and for a type without features their ids in the type's own numbering
  // (the rows of its embedding table, TypedFeatureStore's numbering); the input nodes' types.
  std::vector<FeatureRows> type_features;
  std::vector<std::vector<std::int64_t>> type_at;
  std::vector<std::vector<NodeId>> type_ids;
  std::vector<std::int64_t> node_types;
  // What a consumer's stage hook (Prefetcher) made of the batch ahead of its step, e.g. its tensors
  // already on their way to a GPU; type-erased, so that the sampler needs no torch. Null: not staged.
  std::shared_ptr<const void> staged;

  const std::vector<NodeId>& seeds() const { return layer_nodes.front(); }
  bool typed() const noexcept { return !type_at.empty(); }
  const std::vector<NodeId>& input_nodes() const { return layer_nodes.back(); }
  std::int64_t sampled_edges() const {
    std::int64_t e = 0;
    for (const auto& b : blocks) e += static_cast<std::int64_t>(b.indices.size());
    return e;
  }
};

}  // namespace shardgnn
