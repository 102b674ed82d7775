// The model card: what a weights file holds, written beside it (model.json beside weights.pt) and
// into the checkpoint, so that predict, load_weights and Python build the model and its task from
// the card, nothing from tensor names or score strings. It carries the weights file's CRC-32 and
// size, and every reader checks them: a card never vouches for other weights. No torch here.
#pragma once

#include <boost/json/fwd.hpp>

#include <cstdint>
#include <string>

#include "datasets/schema.hpp"
#include "model/spec.hpp"

namespace shardgnn {

struct ModelCard {
  ModelSpec spec;                 // checked, widths resolved
  std::int64_t in = 0, out = 0;   // feature width (untyped) and output width
  Precision precision = Precision::kFloat32;
  std::string task;               // classes, label-sets or link
  std::string scorer;             // link: dot or mlp ("" for a node task)
  GraphSchema schema;             // a typed graph's types (feature widths) and relations; untyped: empty
  std::string feature_dtype;      // the stored features' dtype: float32, float16 or bfloat16
  // What was done to the features before they were stored (none, or row: each row scaled to sum
  // 1): a new node's features need the same before the model sees them.
  std::string feature_norm = "none";
  std::string dataset;            // the dataset's name
  std::string partition;          // the partition trained on (CheckpointIdentity::partition)
  std::string program;            // "shardgnn 0.1.0"
  std::string weights;            // the weights file's name, beside the card
  std::uint32_t weights_crc32 = 0;
  std::uint64_t weights_bytes = 0;
};

inline constexpr const char* kModelCardFormat = "shardgnn-model-card";
inline constexpr std::int64_t kModelCardVersion = 1;

// The card of a weights file: model.json beside weights.pt, else <weights without .pt>.model.json.
std::string card_path(const std::string& weights);
// The program's name and version, as cards record it.
std::string program_version();

boost::json::value card_to_json(const ModelCard& card);
// An InputError naming the file and the key for a card that is not one (format, version, types).
ModelCard card_from_json(const boost::json::value& v, const std::string& path);

// Written atomically, after the weights it describes (their CRC-32 read back from the file).
void write_model_card(const std::string& path, ModelCard card, const std::string& weights_file);
ModelCard read_model_card(const std::string& path);
// The weights file against the card's size and CRC-32: an InputError naming the weights file.
void check_card_weights(const ModelCard& card, const std::string& card_file, const std::string& weights_file);
// A card's schema against the graph a model is to run on (types, widths, relations in order).
void check_card_schema(const ModelCard& card, const std::string& card_file, const GraphSchema& graph, const std::string& input);

}  // namespace shardgnn
