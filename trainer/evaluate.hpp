// Evaluation on the validation and test sets of every rank: (a) through the sampler, with the
// training fanouts, and (b) with full neighbourhoods by layer-wise inference: each layer is
// computed for all owned nodes before the next, and the rows of the halo nodes (the remote
// neighbours of the shard's edges) are exchanged with their owners between layers. The task
// (trainer/task.hpp) turns the outputs into metrics, reduced across ranks.
#pragma once

#include <torch/nn.h>

#include "partition/shards.hpp"
#include "sampler/feature_store.hpp"
#include "sampler/sampler.hpp"
#include "trainer/metrics.hpp"
#include "model/gnn.hpp"
#include "trainer/task.hpp"

namespace shardgnn {

// The sampler epoch key of evaluation batches: fixed, so every validation sees the same
// neighbourhoods and epochs compare on equal terms (-1 is the cache's presampling).
inline constexpr std::int64_t kEvalEpoch = -2;

// An evaluation batch kept to be scored again. Evaluation batches have a fixed key, so their
// blocks and features never change: for GraphSAGE and GCN the first layer's sums over the
// features (Gnn::aggregate_input) never change either, and are kept in place of the features.
struct KeptBatch {
  MiniBatch mb;             // without its features when `aggregated` is defined
  torch::Tensor aggregated;
};

// Collective over the sampler's communicator (no Prefetcher may be running on it): the nodes of
// `val` and `test` (global ids owned by this rank), each scored as its split; an empty split
// (count 0) is one no rank asked for.
// With `keep`, the batches are also moved there while they take at most `keep_bytes` in all;
// past that `keep` is left empty.
SplitMetrics evaluate_sampled(const Task& task, Gnn& model, DistSampler& sampler, FeatureStore& features, const torch::Device& device,
                              std::span<const NodeId> val, std::span<const NodeId> test, std::vector<KeptBatch>* keep = nullptr, std::size_t keep_bytes = 0);

// Collective over `comm` (one all-reduce): validation batches kept by evaluate_sampled, scored
// again.
SplitMetrics evaluate_kept(const Task& task, Gnn& model, const std::vector<KeptBatch>& val_batches, const torch::Device& device,
                           const comm::Communicator& comm);

// Memory a kept batch takes (blocks, features or their aggregate, labels).
std::size_t batch_bytes(const KeptBatch& kb);

// What the per-edge tensors of one block of full-neighbourhood inference may take when no chunk is
// given (index tensors, and GAT's messages): 4M edges for GraphSAGE and GCN.
inline constexpr std::int64_t kEvalBlockBytes = std::int64_t{64} << 20;
// What one block's src rows, gathered from the layer's table, may take (at the widest layer input).
inline constexpr std::int64_t kEvalSrcBytes = std::int64_t{1} << 30;
// What the blocks cut for the first layer may take when kept for the later ones (index tensors,
// src positions and degrees); blocks past it are cut again for every layer.
inline constexpr std::int64_t kEvalKeptBlockBytes = std::int64_t{1} << 30;

// Collective over `comm`. Returns the output rows of every owned node, [n_own, out], on `device`.
// A layer whose linear map is cheaper before the sum (Gnn::projects_table) projects the owned
// rows once, and the halo exchange and the blocks then move projected rows.
// chunk: dst nodes per block, or 0 for blocks whose per-edge tensors take about kEvalBlockBytes
// and whose src rows about `src_bytes` (bounds the memory of one layer step beyond the layer's
// input and output tables). The first layer's blocks are kept for the others up to `kept_bytes`.
// With `kept`, the rows after the first `keep_after` layers (0: the input rows, `layers`: the
// output) are also returned there (shardgnn predict's embeddings), at the memory of one more table.
torch::Tensor full_inference(Gnn& model, const Shard& shard, const comm::Communicator& comm, const torch::Device& device, std::int64_t chunk,
                             std::int64_t src_bytes = kEvalSrcBytes, std::int64_t kept_bytes = kEvalKeptBlockBytes, std::int64_t keep_after = -1,
                             torch::Tensor* kept = nullptr);

// Collective over `comm` (one all-reduce): full_inference's `output` rows scored on the owned val
// and test nodes.
SplitMetrics score_full(const Task& task, const torch::Tensor& output, const Shard& shard, const comm::Communicator& comm);
// Collective over `comm`: full_inference, scored on the owned val and test nodes.
SplitMetrics evaluate_full(const Task& task, Gnn& model, const Shard& shard, const comm::Communicator& comm, const torch::Device& device, std::int64_t chunk);

}  // namespace shardgnn
