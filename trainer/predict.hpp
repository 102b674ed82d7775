// `shardgnn predict`'s core: full-neighbourhood inference with a trained model over every rank's
// shard (evaluation's layer-wise inference, evaluate.hpp), written out in the input's node order
// whatever the partition, as a folder of .npy files that numpy.load(..., mmap_mode='r') reads:
//   embeddings.npy   float32 [N, H]  the rows after `layer` layers (default: the last hidden
//                                    layer's, the representation before the output layer)
//   predictions.npy  the task's prediction per node (Task::predictions: int64 [N] classes, or
//                    float32 [N, labels] label scores)
//   node_ids.npy     int64 [N]       each row's id in the input (the dataset's node_ids.npy when
//                                    it was relabelled, else its dataset id)
//   predictions.json format, model, weights, input, layer, and per array its dtype, shape, CRC-32;
//                    a typed graph's node types with their first row and count
// A typed graph's model (R-GCN, R-GAT) runs through the sampler with every neighbour instead of
// layer-wise inference, over every node of every type (each type's rows are contiguous: its ids).
// Writing is two-phase, as MPI-IO's collective writes are: the rows travel (one all-to-all) to the
// rank that writes their range of rows, and each rank writes one contiguous byte range of each
// file with pwrite (disjoint ranges by pwrite are safe on NFS and Lustre; see write_at), so no rank
// writes a row at a time. The folder is built under a temporary name and renamed into place once
// every rank has written and fsynced.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>

#include "comm/communicator.hpp"
#include "partition/shards.hpp"
#include "trainer/metrics.hpp"
#include "model/gnn.hpp"
#include "trainer/task.hpp"

namespace shardgnn {

struct PredictOptions {
  std::string out_dir;
  bool overwrite = false;      // --force: replace a predictions (or other shardgnn) folder
  std::int64_t layer = -1;     // embeddings after this many layers (0: the input features); -1: layers - 1
  std::int64_t chunk = 0;      // full_inference's dst nodes per block (0: sized by memory)
  // The rows to write, as dataset ids in output order (empty: every node, in dataset order);
  // each at most once.
  std::span<const std::int64_t> nodes;
  // Each dataset id's id in the input (the dataset's node_ids.npy; empty: the dataset ids).
  std::span<const std::int64_t> original_ids;
  // A typed graph's run: its checkpoint.pt, beside which each rank's embedding rows of the node
  // types without features lie ("" = none).
  std::string checkpoint;
  // What predictions.json records of where the model and the input came from.
  std::string weights, input, dataset;
  std::string created;  // predictions.json's timestamp
};

struct PredictResult {
  std::int64_t rows = 0, width = 0;  // embeddings.npy's shape
  std::int64_t layer = 0;            // the layer it holds
  double inference_s = 0, write_s = 0;
  std::optional<SplitMetrics> metrics;  // the shard's validation and test nodes scored, when `task` was given
};

// Collective over `comm`. `task`: the task the model's outputs are read by (its predictions; with
// `score`, also its metrics on the shards' validation and test nodes). Throws InputError (the same
// on every rank) for a bad layer or output folder, and for a failed write; nothing is left behind
// then.
PredictResult predict(Gnn& model, const Shard& shard, const Task& task, bool score, const comm::Communicator& comm, const torch::Device& device,
                      const PredictOptions& options);

}  // namespace shardgnn
