// A model spec: what a GNN is, declared as data (an input encoder, a list of message-passing
// layers, jumping knowledge and a head), read from a JSON file or expanded from a built-in name.
// One struct with Boost.JSON conversions, and no torch here, so that tools and the sanitizer
// build parse and check specs with the code that trains them. docs/models.md is its manual.
#pragma once

#include <boost/json/fwd.hpp>
#include <boost/json/value_from.hpp>
#include <boost/json/value_to.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace shardgnn {

enum class LayerKind {
  kSage,   // GraphSAGE (Hamilton et al. 2017): fc_self(h_v) + fc_neigh(agg_u h_u); PyG SAGEConv, DGL SAGEConv
  kGcn,    // GCN (Kipf & Welling 2017), symmetric normalisation with self-loops; DGL GraphConv(norm='both')
  kGat,    // GAT (Velickovic et al. 2018); DGL GATConv, PyG GATConv
  kGatV2,  // GATv2 (Brody et al. 2022), attention after the nonlinearity; PyG GATv2Conv, DGL GATv2Conv
  kGin,    // GIN (Xu et al. 2019): MLP((1 + eps) h_v + sum_u h_u); PyG GINConv, DGL GINConv('sum')
  kRgcn,   // R-GCN (Schlichtkrull et al. 2018), mean per relation; DGL RelGraphConv, PyG RGCNConv
  kRgat,   // R-GAT as MLPerf's GNN reference: a GAT per relation, summed, plus a self term
};
enum class Aggregation { kMean, kMax, kSum };
enum class Activation { kNone, kRelu, kElu, kLeakyRelu, kGelu, kTanh };
enum class Norm { kNone, kBatch, kLayer };
enum class Residual { kNone, kAdd };
enum class JumpingKnowledge { kNone, kCat, kMax };
enum class HeadKind { kNone, kLinear, kMlp };
enum class Precision {
  kFloat32,   // everything in float32
  kBFloat16,  // matrix products in bfloat16 (autocast), aggregation, loss and weights in float32
};

// The sparse optimizer of a typed graph's learnable embedding rows (model/sparse_embedding.hpp).
enum class SparseOptimizer { kAdam, kAdagrad };

bool relational(LayerKind k) noexcept;  // R-GCN, R-GAT: layers of typed graphs
bool attention(LayerKind k) noexcept;   // GAT, GATv2, R-GAT: layers with heads

struct LayerSpec {
  LayerKind kind = LayerKind::kSage;
  // The layer's output width (after its heads are joined). 0, allowed on the last layer only
  // where no jumping knowledge or head follows: the model's output width (the task's).
  std::int64_t width = 0;
  Aggregation aggregation = Aggregation::kMean;  // sage
  std::int64_t heads = 1;                        // gat, gatv2, rgat
  bool concat = true;            // heads concatenated (width = heads x width / heads), else averaged (each head width wide)
  double attn_dropout = 0;       // gat, gatv2, rgat: dropout on the attention weights
  bool self_loop = true;         // gcn, gat, gatv2: every dst also receives from itself
  std::int64_t mlp_layers = 2;   // gin: its MLP's linear layers (ReLU between them)
  bool train_eps = true;         // gin: eps learnable (else 0)
  std::int64_t bases = 0;        // rgcn: relation weights as combinations of this many bases (0: one per relation)
  Activation activation = Activation::kRelu;
  double dropout = 0;            // on the layer's input
  Norm norm = Norm::kNone;       // after the convolution, before the activation
  Residual residual = Residual::kNone;  // add the layer's input dst rows after the activation (projected where widths differ)
};

// The input encoder: on an untyped graph none (features go to the first layer) or a linear map of
// the features; on a typed graph always one per node type (a linear map of its features, or
// learnable embedding rows for a type without features), all to `width`.
struct EncoderSpec {
  bool linear = false;
  std::int64_t width = 0;
};

struct HeadSpec {
  HeadKind kind = HeadKind::kNone;
  std::int64_t layers = 2;  // mlp: linear layers, the last to the output width
  std::int64_t width = 0;   // mlp: hidden width
  Activation activation = Activation::kRelu;
  double dropout = 0;       // mlp: on each linear layer's input
};

struct ModelSpec {
  std::string name;  // a built-in's name, or the spec file's stem
  EncoderSpec encoder;
  std::vector<LayerSpec> layers;  // one per hop, first to last
  JumpingKnowledge jumping_knowledge = JumpingKnowledge::kNone;
  HeadSpec head;
};

// What a spec is built against: the data's widths, the fanouts' hops, the graph's kind, the
// precision. `out`: the task's output width (classes, labels or the embedding).
struct SpecContext {
  std::int64_t in = 0, out = 0, hops = 0;
  bool typed = false;
  Precision precision = Precision::kFloat32;
};

// The built-in models: each a spec of one layer kind per hop (builtin_spec).
enum class ModelKind {
  kSage,  // GraphSAGE, mean aggregator (Hamilton et al. 2017; DGL SAGEConv 'mean')
  kGcn,   // GCN (Kipf & Welling 2017; DGL GraphConv norm='both' on blocks, with self-loops)
  kGat,   // GAT (Velickovic et al. 2018; DGL GATConv)
  kRgcn,  // R-GCN (typed graphs; Schlichtkrull et al. 2018; DGL RelGraphConv, mean per relation)
  kRgat,  // R-GAT (typed graphs; MLPerf's GNN reference: a GATConv per relation, summed per destination type)
};

// The run's model options: a built-in (`kind`) with its widths, or a spec file.
struct ModelConfig {
  ModelKind kind = ModelKind::kSage;
  std::string spec = {};  // --model FILE: a spec file, which then says everything but precision and --dropout's default
  int hidden = 256;       // built-ins: hidden width; for GAT and R-GAT the heads split it (hidden / heads each)
  int heads = 4;          // built-ins: GAT and R-GAT attention heads (hidden layers concatenate, the output averages)
  int bases = 0;          // built-in R-GCN: basis decomposition of the relation weights (0: a weight per relation)
  double dropout = 0.5;   // on every layer's input (GAT: also on the attention weights); a spec's layers' default
  Precision precision = Precision::kFloat32;
};

// The spec the options name, `hops` layers for a built-in (a spec file is read; check_spec then
// checks its hops). Its label: the built-in's name or the file.
ModelSpec model_spec(const ModelConfig& m, std::int64_t hops);
std::string model_label(const ModelConfig& m);
// Whether --model's value names a spec file rather than a built-in (it ends in .json or holds a
// '/').
bool names_spec_file(const std::string& value);

// The built-in models by name, expanded for the run: `hidden` (GAT, R-GAT: split between the
// heads), `heads`, `bases`, `dropout` and `hops` layers. Unknown names: false.
bool builtin_model(const std::string& name);
ModelSpec builtin_spec(const std::string& name, std::int64_t hidden, std::int64_t heads, std::int64_t bases, double dropout, std::int64_t hops);
std::string builtin_names();  // "sage, gcn, gat, rgcn, rgat"

// A spec file, read and converted; a syntax error, an unknown key or kind, or a value of the
// wrong type is an InputError naming the file, the key path ("layers[1].heads") and what was
// expected. `dropout`: the default of a layer that names none (--dropout).
ModelSpec read_spec_file(const std::string& path, double dropout);
// The same from text (spec files' reader, and tests).
ModelSpec parse_spec(const std::string& text, const std::string& file, double dropout);

// Checks a spec against what it is built on: hops against the fanouts, widths against heads,
// relational layers against an untyped graph, the output width against the task's, ... An
// InputError naming `file`, the key path and what was expected. Returns the spec with widths
// resolved (a last layer's 0 set to ctx.out, an encoder's 0 to the first layer's input width).
ModelSpec check_spec(ModelSpec spec, const SpecContext& ctx, const std::string& file);

// Each layer's input width, and the model's width before its head, after check_spec.
std::int64_t layer_in_width(const ModelSpec& spec, std::int64_t in, std::size_t l);
std::int64_t readout_width(const ModelSpec& spec);
bool has_relational(const ModelSpec& spec) noexcept;
bool uses(const ModelSpec& spec, LayerKind kind) noexcept;
bool uses(const ModelSpec& spec, Norm norm) noexcept;

// CRC-32 of the spec's JSON (value_from, compact): the same model, the same checksum.
std::uint32_t spec_checksum(const ModelSpec& spec);

std::string layer_kind_name(LayerKind k);
std::string precision_name(Precision p);
Precision parse_precision(const std::string& name);

// Boost.JSON conversions: value_from writes every field; value_to reads a spec as written (no
// defaults from the command line: dropout 0 where a layer names none).
void tag_invoke(const boost::json::value_from_tag&, boost::json::value& v, const ModelSpec& s);
ModelSpec tag_invoke(const boost::json::value_to_tag<ModelSpec>&, const boost::json::value& v);

}  // namespace shardgnn
