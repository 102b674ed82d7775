// Checkpoints: model, optimiser state, the epoch (and step) to run next and the early-stopping
// state (with the best weights so far), as one dictionary of plain values and tensors in torch.save's
// format (Python reads it with torch.load), sealed with a CRC-32 in its zip comment and written
// atomically (temporary file, fsync, rename). Loading checks the seal before torch parses a byte,
// and checks every entry's type and every tensor's shape before the model or the optimiser is
// touched; it needs no TorchScript. The checkpoint names the model and the dataset it was trained
// on, and loading a checkpoint of anything else is an InputError. Randomness needs no stored
// state: dropout and torch's generator are reseeded from (seed, epoch, step, rank) at every step
// and the sampler's streams are keyed by (seed, epoch, step), so a resumed run draws exactly what
// an uninterrupted one would, from an epoch boundary or from any step (the seed is part of the
// identity). It records the partition and the rank count: a run may resume on another rank count
// over the same partition (Trainer says how). Format version 4; version 3 (without the two) is
// read as of this partition and rank count; earlier versions (TorchScript archives) are refused.
#pragma once

#include <torch/nn.h>
#include <torch/optim.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "model/card.hpp"
#include "model/gnn.hpp"

namespace shardgnn {

// What a checkpoint must match to be resumed.
struct CheckpointIdentity {
  std::string model, optimizer, dataset;
  std::int64_t hidden = 0, layers = 0, heads = 0, in = 0, classes = 0, num_nodes = 0;
  std::uint64_t seed = 0;
  // The partition trained on: "metis, 4 parts, 1f2e3d4c5b6a7980" (method, parts, the CRC-32s of
  // its book and of its shard files' CRC-32s), or "not partitioned" for a dataset folder.
  std::string partition;
  // The model card's JSON (model/card.hpp, without its weights entry), stored with the checkpoint
  // as "model_card" so that the checkpoint says what its model is; not compared on resume.
  std::string model_card;
  std::string describe() const;  // "gcn (hidden 16, 2 layers, adam, seed 0) on 'cora' (2708 nodes, ...), partition metis, 2 parts, ..."
};

// Where training stands: at an epoch boundary, or after a step inside epoch next_epoch when a
// run stopped on a signal (next_step > 0, with the epoch's sums so far so that its record and
// loss come out whole).
struct TrainState {
  int next_epoch = 0;
  std::int64_t next_step = 0;
  double step_loss_sum = 0, step_correct = 0, step_examples = 0;  // summed over every rank
  double best_val = -1;   // best validation accuracy so far (-1: none yet)
  int best_epoch = -1;
  int bad_evals = 0;      // validations since the best one (for patience)
  int ranks = 0;          // the rank count that wrote it (0: not recorded, format version 3)
  std::vector<torch::Tensor> best;  // parameters of the best epoch (empty: none yet)
};

void save_checkpoint(const std::string& path, const CheckpointIdentity& id, const torch::nn::Module& model, const torch::optim::Optimizer& optimizer,
                     const TrainState& state);

// Restores `model`, `optimizer` and `state` from `path`, tensors onto `device`. A file that is not
// a checkpoint, is damaged, or was written for another model or dataset (`id`) is an InputError
// naming the file.
void load_checkpoint(const std::string& path, const CheckpointIdentity& id, torch::nn::Module& model, torch::optim::Optimizer& optimizer, TrainState& state,
                     const torch::Device& device);

// A typed graph's embedding tables (TypedEmbeddings): each rank's own rows and their sparse
// optimizer's state, in a file of the rank's beside the checkpoint at `path`, named after the rank
// and the state's epoch and step, so that a checkpoint written later never meets an older rank's
// rows: save_embeddings on every rank, then save_checkpoint, then drop_old_embeddings.
class TypedEmbeddings;
void save_embeddings(const std::string& path, const TrainState& state, const TypedEmbeddings& tables, int rank);
void drop_old_embeddings(const std::string& path, const TrainState& state, int rank);
// This rank's rows for the checkpoint's `state` put back, from the files of the `written_by` ranks
// that wrote it (0: as many as now), rows matched by dataset id (any partition of the dataset, any
// rank count), files read from this rank's own on until every row is found; an InputError naming
// the file when one is missing, damaged, holds other tables or lacks rows.
// `rows_only` (inference): the rows alone, the tables' optimizer state left as it is (the file's
// may be another optimizer's).
void load_embeddings(const std::string& path, const TrainState& state, TypedEmbeddings& tables, int rank, int written_by, bool rows_only = false);

// The model's parameters as {name: tensor} (CPU), pickled as torch.save does: Python reads it
// with torch.load(path). Written atomically.
void save_weights(const std::string& path, const torch::nn::Module& model);

// The model a weights file holds (save_weights's dictionary, or one torch.save wrote with the same
// names): its kind, depth, widths and heads read off the entries' names and shapes (GraphSAGE has
// conv0.fc_self, GAT conv0.attn_l, GCN conv0.fc only), its values loaded, in eval mode on
// `device`. A file that is not such a dictionary, lacks an entry the model needs, has one of
// another shape or one the model has no place for is an InputError naming the file and the entry.
// A link-prediction model's MLP scorer (scorer.fc1, scorer.fc2) is loaded as the model's child
// "scorer" (a PairScorer).
// R-GCN and R-GAT weights (entries under "rgnn.") need the typed graph's `schema` they run on.
//
// With a model card beside the file (card_path: model.json beside weights.pt) the model is the
// card's: the file's size and CRC-32 checked against the card, the card's graph against `schema`
// (when given), the model built from its spec, and every entry matched by name and shape.
// Without one, the model is read off the names as above and `note` says so.
struct LoadedWeights {
  Gnn model{nullptr};
  std::optional<ModelCard> card;
  std::string note;  // "" with a card
};
LoadedWeights load_weights(const std::string& path, const torch::Device& device, const GraphSchema* schema = nullptr);
// The model a card describes, its weights as initialised.
Gnn model_from_card(const ModelCard& card, const std::string& card_file);
// The training state a checkpoint holds (its epoch and step: the stamp of its embedding files).
TrainState checkpoint_state(const std::string& path);

}  // namespace shardgnn
