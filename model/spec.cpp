#include "model/spec.hpp"

#include <algorithm>
#include <boost/json.hpp>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <optional>

#include "datasets/error.hpp"
#include "datasets/fileio.hpp"
#include "datasets/names.hpp"

namespace shardgnn {

namespace json = boost::json;

namespace {

constexpr EnumName<LayerKind> kKinds[] = {{LayerKind::kSage, "sage"}, {LayerKind::kGcn, "gcn"},   {LayerKind::kGat, "gat"}, {LayerKind::kGatV2, "gatv2"},
                                          {LayerKind::kGin, "gin"},   {LayerKind::kRgcn, "rgcn"}, {LayerKind::kRgat, "rgat"}};
constexpr EnumName<Aggregation> kAggregations[] = {{Aggregation::kMean, "mean"}, {Aggregation::kMax, "max"}, {Aggregation::kSum, "sum"}};
constexpr EnumName<Activation> kActivations[] = {{Activation::kNone, "none"}, {Activation::kRelu, "relu"}, {Activation::kElu, "elu"},
                                                 {Activation::kLeakyRelu, "leaky_relu"}, {Activation::kGelu, "gelu"}, {Activation::kTanh, "tanh"}};
constexpr EnumName<Norm> kNorms[] = {{Norm::kNone, "none"}, {Norm::kBatch, "batch"}, {Norm::kLayer, "layer"}};
constexpr EnumName<Residual> kResiduals[] = {{Residual::kNone, "none"}, {Residual::kAdd, "add"}};
constexpr EnumName<JumpingKnowledge> kJks[] = {{JumpingKnowledge::kNone, "none"}, {JumpingKnowledge::kCat, "cat"}, {JumpingKnowledge::kMax, "max"}};
constexpr EnumName<HeadKind> kHeads[] = {{HeadKind::kNone, "none"}, {HeadKind::kLinear, "linear"}, {HeadKind::kMlp, "mlp"}};
constexpr EnumName<Precision> kPrecisions[] = {{Precision::kFloat32, "fp32"}, {Precision::kBFloat16, "bf16"}};
constexpr EnumName<ModelKind> kModelKinds[] = {{ModelKind::kSage, "sage"}, {ModelKind::kGcn, "gcn"}, {ModelKind::kGat, "gat"},
                                               {ModelKind::kRgcn, "rgcn"}, {ModelKind::kRgat, "rgat"}};
constexpr std::string_view kBuiltins[] = {"sage", "gcn", "gat", "rgcn", "rgat"};

// A spec's error: the file, the key path, what was expected.
[[noreturn]] void fail(const std::string& file, const std::string& path, const std::string& what) {
  throw InputError(file, path.empty() ? "the spec" : "key '" + path + "'", what);
}

// Reads one JSON object of a spec: each key once, by type, and at the end refuses the keys
// nobody asked for (a misspelt key is an error, not a silent default).
class Fields {
 public:
  Fields(const json::value& v, std::string file, std::string path) : file_(std::move(file)), path_(std::move(path)) {
    if (!v.is_object()) fail(file_, path_, "expected an object");
    o_ = &v.as_object();
  }
  std::string key(std::string_view k) const { return path_.empty() ? std::string(k) : path_ + "." + std::string(k); }
  const json::value* find(std::string_view k) {
    seen_.emplace_back(k);
    return o_->if_contains(k);
  }
  template <class E, std::size_t N>
  void take_enum(std::string_view k, const EnumName<E> (&table)[N], E& out) {
    const json::value* v = find(k);
    if (!v) return;
    if (!v->is_string()) fail(file_, key(k), "expected a string");
    try {
      out = parse_enum(table, std::string_view(v->as_string()), "value");
    } catch (const InputError& e) {
      fail(file_, key(k), e.what());
    }
  }
  void take_int(std::string_view k, std::int64_t& out, std::int64_t lo) {
    const json::value* v = find(k);
    if (!v) return;
    if (!v->is_int64() && !v->is_uint64()) fail(file_, key(k), "expected an integer");
    const auto x = v->is_int64() ? v->as_int64() : static_cast<std::int64_t>(std::min<std::uint64_t>(v->as_uint64(), INT64_MAX));
    if (x < lo || x > (std::int64_t{1} << 24)) fail(file_, key(k), "expected an integer from " + std::to_string(lo) + " to " + std::to_string(std::int64_t{1} << 24) + ", got " + std::to_string(x));
    out = x;
  }
  void take_prob(std::string_view k, double& out) {
    const json::value* v = find(k);
    if (!v) return;
    if (!v->is_number()) fail(file_, key(k), "expected a number in [0, 1)");
    const double x = v->to_number<double>();
    if (!(x >= 0 && x < 1)) fail(file_, key(k), "expected a number in [0, 1), got " + json::serialize(*v));
    out = x;
  }
  void take_bool(std::string_view k, bool& out) {
    const json::value* v = find(k);
    if (!v) return;
    if (!v->is_bool()) fail(file_, key(k), "expected true or false");
    out = v->as_bool();
  }
  void take_string(std::string_view k, std::string& out) {
    const json::value* v = find(k);
    if (!v) return;
    if (!v->is_string()) fail(file_, key(k), "expected a string");
    out = std::string(v->as_string());
  }
  void done() const {
    for (const auto& kv : *o_) {
      bool known = false;
      for (const std::string& s : seen_) known = known || s == kv.key();
      if (!known) {
        std::string names;
        for (const std::string& s : seen_) names += (names.empty() ? "" : ", ") + s;
        fail(file_, key(kv.key()), "unknown key, expected one of: " + names);
      }
    }
  }
  const std::string& file() const { return file_; }

 private:
  std::string file_, path_;
  const json::object* o_ = nullptr;
  std::vector<std::string> seen_;
};

LayerSpec read_layer(const json::value& v, const std::string& file, const std::string& path, double dropout, bool last) {
  Fields f(v, file, path);
  LayerSpec l;
  if (!f.find("kind")) fail(file, f.key("kind"), "missing: expected one of: sage, gcn, gat, gatv2, gin, rgcn, rgat");
  f.take_enum("kind", kKinds, l.kind);
  f.take_int("width", l.width, 1);
  f.take_enum("aggregation", kAggregations, l.aggregation);
  f.take_int("heads", l.heads, 1);
  // The output layer averages its heads (the GAT paper's), hidden layers concatenate them.
  l.concat = !last;
  f.take_bool("concat", l.concat);
  f.take_prob("attn_dropout", l.attn_dropout);
  f.take_bool("self_loop", l.self_loop);
  f.take_int("mlp_layers", l.mlp_layers, 1);
  f.take_bool("train_eps", l.train_eps);
  f.take_int("bases", l.bases, 0);
  // The last layer of a model without a head gives the output (logits): no activation unless asked.
  l.activation = last ? Activation::kNone : Activation::kRelu;
  f.take_enum("activation", kActivations, l.activation);
  l.dropout = dropout;
  f.take_prob("dropout", l.dropout);
  f.take_enum("norm", kNorms, l.norm);
  f.take_enum("residual", kResiduals, l.residual);
  f.done();
  // Options a kind does not take are refused rather than ignored.
  const auto only = [&](const char* key, bool given, bool applies, const char* kinds) {
    if (given && !applies) fail(file, f.key(key), std::string("applies to ") + kinds + " layers, not " + layer_kind_name(l.kind));
  };
  const json::object& o = v.as_object();
  only("aggregation", o.contains("aggregation"), l.kind == LayerKind::kSage, "sage");
  only("heads", o.contains("heads"), attention(l.kind), "gat, gatv2 and rgat");
  only("concat", o.contains("concat"), attention(l.kind), "gat, gatv2 and rgat");
  only("attn_dropout", o.contains("attn_dropout"), attention(l.kind), "gat, gatv2 and rgat");
  only("self_loop", o.contains("self_loop"), l.kind == LayerKind::kGcn || l.kind == LayerKind::kGat || l.kind == LayerKind::kGatV2, "gcn, gat and gatv2");
  only("mlp_layers", o.contains("mlp_layers"), l.kind == LayerKind::kGin, "gin");
  only("train_eps", o.contains("train_eps"), l.kind == LayerKind::kGin, "gin");
  only("bases", o.contains("bases"), l.kind == LayerKind::kRgcn, "rgcn");
  if (l.kind == LayerKind::kRgat && o.contains("self_loop")) fail(file, f.key("self_loop"), "rgat has a self term, not self-loops");
  return l;
}

HeadSpec read_head(const json::value& v, const std::string& file) {
  Fields f(v, file, "head");
  HeadSpec h;
  if (!f.find("kind")) fail(file, f.key("kind"), "missing: expected one of: none, linear, mlp");
  f.take_enum("kind", kHeads, h.kind);
  f.take_int("layers", h.layers, 1);
  f.take_int("width", h.width, 1);
  f.take_enum("activation", kActivations, h.activation);
  f.take_prob("dropout", h.dropout);
  f.done();
  const json::object& o = v.as_object();
  if (h.kind != HeadKind::kMlp)
    for (const char* k : {"layers", "width", "activation", "dropout"})
      if (o.contains(k)) fail(file, f.key(k), "applies to an mlp head");
  if (h.kind == HeadKind::kMlp && h.layers >= 2 && !o.contains("width")) fail(file, f.key("width"), "missing: an mlp head of 2 or more layers needs its hidden width");
  if (h.kind == HeadKind::kMlp && h.layers == 1 && o.contains("width")) fail(file, f.key("width"), "an mlp head of 1 layer has no hidden width");
  return h;
}

ModelSpec read_spec(const json::value& v, const std::string& file, double dropout) {
  Fields f(v, file, "");
  ModelSpec s;
  f.take_string("name", s.name);
  f.take_prob("dropout", dropout);  // the layers' default
  if (const json::value* e = f.find("encoder")) {
    Fields fe(*e, file, "encoder");
    std::string kind = "linear";
    fe.take_string("kind", kind);
    if (kind != "linear" && kind != "none") fail(file, "encoder.kind", "expected linear or none, got " + quote_token(kind));
    s.encoder.linear = kind == "linear";
    fe.take_int("width", s.encoder.width, 1);
    fe.done();
    if (!s.encoder.linear && e->as_object().contains("width")) fail(file, "encoder.width", "applies to a linear encoder");
  }
  f.take_enum("jumping_knowledge", kJks, s.jumping_knowledge);
  if (const json::value* h = f.find("head")) s.head = read_head(*h, file);
  const json::value* layers = f.find("layers");
  f.done();
  if (!layers) fail(file, "layers", "missing: expected a list of layers, one per hop");
  if (!layers->is_array() || layers->as_array().empty()) fail(file, "layers", "expected a list of at least one layer");
  const json::array& a = layers->as_array();
  const bool feeds_output = s.head.kind == HeadKind::kNone && s.jumping_knowledge == JumpingKnowledge::kNone;
  for (std::size_t i = 0; i < a.size(); ++i)
    s.layers.push_back(read_layer(a[i], file, "layers[" + std::to_string(i) + "]", dropout, feeds_output && i + 1 == a.size()));
  return s;
}

}  // namespace

bool relational(LayerKind k) noexcept { return k == LayerKind::kRgcn || k == LayerKind::kRgat; }
bool attention(LayerKind k) noexcept { return k == LayerKind::kGat || k == LayerKind::kGatV2 || k == LayerKind::kRgat; }

std::uint32_t spec_checksum(const ModelSpec& spec) {
  const std::string text = json::serialize(json::value_from(spec));
  return crc32_of(std::as_bytes(std::span<const char>(text.data(), text.size())));
}

std::string layer_kind_name(LayerKind k) { return enum_name(kKinds, k); }
std::string precision_name(Precision p) { return enum_name(kPrecisions, p); }
Precision parse_precision(const std::string& name) { return parse_enum(kPrecisions, name, "--precision"); }

bool builtin_model(const std::string& name) {
  for (std::string_view b : kBuiltins)
    if (b == name) return true;
  return name == "graphsage";
}

std::string builtin_names() { return "sage, gcn, gat, rgcn, rgat"; }

ModelSpec builtin_spec(const std::string& name_in, std::int64_t hidden, std::int64_t heads, std::int64_t bases, double dropout, std::int64_t hops) {
  const std::string name = name_in == "graphsage" ? "sage" : name_in;
  if (!builtin_model(name)) throw InputError("unknown --model " + quote_token(name_in) + ", expected a spec file (.json) or one of: " + builtin_names());
  const LayerKind kind = parse_enum(kKinds, name, "--model");
  ModelSpec s;
  s.name = name;
  // Typed graphs' models encode each type's features to the hidden width first.
  if (relational(kind)) s.encoder = {true, hidden};
  for (std::int64_t l = 0; l < hops; ++l) {
    const bool last = l + 1 == hops;
    LayerSpec ls;
    ls.kind = kind;
    ls.dropout = dropout;
    ls.width = last ? 0 : hidden;
    ls.activation = last ? Activation::kNone : Activation::kRelu;
    if (attention(kind)) {
      // The hidden layers concatenate their heads (hidden / heads each), the output averages them;
      // ELU between layers, as the GAT paper. GAT also drops attention weights at --dropout;
      // R-GAT does not (MLPerf's reference: DGL GATConv's attn_drop 0).
      ls.heads = heads;
      ls.concat = !last;
      ls.activation = last ? Activation::kNone : Activation::kElu;
      if (kind == LayerKind::kGat) ls.attn_dropout = dropout;
    }
    if (kind == LayerKind::kRgcn) ls.bases = bases;
    s.layers.push_back(ls);
  }
  return s;
}

ModelSpec model_spec(const ModelConfig& m, std::int64_t hops) {
  if (!m.spec.empty()) return read_spec_file(m.spec, m.dropout);
  return builtin_spec(enum_name(kModelKinds, m.kind), m.hidden, m.heads, m.bases, m.dropout, hops);
}

std::string model_label(const ModelConfig& m) { return m.spec.empty() ? enum_name(kModelKinds, m.kind) : m.spec; }

bool names_spec_file(const std::string& value) {
  return value.find('/') != std::string::npos || (value.size() > 5 && value.compare(value.size() - 5, 5, ".json") == 0);
}

ModelSpec parse_spec(const std::string& text, const std::string& file, double dropout) {
  json::error_code ec;
  json::parse_options po;
  po.allow_comments = true;
  po.allow_trailing_commas = true;
  std::size_t used = 0;
  json::stream_parser p({}, po);
  used = p.write_some(text.data(), text.size(), ec);
  if (!ec) p.finish(ec);
  if (ec) {
    // The line and column of the byte the parser stopped at.
    std::uint64_t line = 1, col = 1;
    for (std::size_t i = 0; i < std::min(used, text.size()); ++i) {
      if (text[i] == '\n') {
        ++line;
        col = 1;
      } else {
        ++col;
      }
    }
    throw InputError(file, at_line_col(line, col), "malformed JSON: " + ec.message());
  }
  ModelSpec s = read_spec(p.release(), file, dropout);
  if (s.name.empty()) s.name = std::filesystem::path(file).stem().string();
  return s;
}

ModelSpec read_spec_file(const std::string& path, double dropout) {
  if (!std::filesystem::is_regular_file(path)) throw InputError(path, "", "no such model spec file (--model takes " + builtin_names() + " or a spec file)");
  MappedFile m = map_file(path);
  return parse_spec(std::string(reinterpret_cast<const char*>(m.bytes.data()), m.bytes.size()), path, dropout);
}

ModelSpec check_spec(ModelSpec s, const SpecContext& ctx, const std::string& file) {
  const auto n = static_cast<std::int64_t>(s.layers.size());
  if (n != ctx.hops)
    fail(file, "layers", "the spec has " + std::to_string(n) + " message-passing layer" + (n == 1 ? "" : "s") + " and --fanouts " + std::to_string(ctx.hops) +
                             " hop" + (ctx.hops == 1 ? "" : "s") + ": a layer per hop");
  const bool readout = s.head.kind != HeadKind::kNone || s.jumping_knowledge != JumpingKnowledge::kNone;
  if (s.jumping_knowledge != JumpingKnowledge::kNone && s.head.kind == HeadKind::kNone)
    fail(file, "head", "jumping knowledge joins the layers' outputs for a head: add \"head\": {\"kind\": \"linear\"}");
  if (ctx.typed) {
    s.encoder.linear = true;
    if (s.encoder.width == 0) fail(file, "encoder.width", "missing: a typed graph's node types are encoded to one width first");
  } else if (!s.encoder.linear && s.encoder.width != 0) {
    fail(file, "encoder.width", "applies to a linear encoder");
  } else if (s.encoder.linear && s.encoder.width == 0) {
    fail(file, "encoder.width", "missing: the width a linear encoder maps the features to");
  }
  for (std::size_t i = 0; i < s.layers.size(); ++i) {
    LayerSpec& l = s.layers[i];
    const std::string at = "layers[" + std::to_string(i) + "]";
    const bool last = i + 1 == s.layers.size();
    if (relational(l.kind) && !ctx.typed)
      fail(file, at + ".kind", layer_kind_name(l.kind) + " is a relational layer: it runs on typed graphs, and this graph has one node type");
    if (l.kind == LayerKind::kGcn && ctx.typed)
      fail(file, at + ".kind", "gcn normalises by an untyped graph's degrees; on a typed graph use rgcn (or sage, gat, gatv2, gin)");
    if (l.width == 0) {
      if (!last || readout) fail(file, at + ".width", "missing: only the last layer, with no head after it, takes the output width");
      l.width = ctx.out;
    } else if (last && !readout && l.width != ctx.out) {
      fail(file, at + ".width", std::to_string(l.width) + ", but the task's output is " + std::to_string(ctx.out) + " wide: leave the width out, or add a head");
    }
    if (attention(l.kind) && l.concat && l.width % l.heads != 0)
      fail(file, at + ".width", std::to_string(l.width) + " is not divisible by heads " + std::to_string(l.heads) + " (concatenated heads split the width)");
    if (l.kind == LayerKind::kRgat && l.attn_dropout > 0) fail(file, at + ".attn_dropout", "rgat takes no attention dropout (MLPerf's reference)");
    if (relational(l.kind) && ctx.precision != Precision::kFloat32)
      fail(file, at + ".kind", "--precision bf16 runs sage, gcn, gat, gatv2 and gin; rgcn and rgat compute in float32");
  }
  if (s.jumping_knowledge == JumpingKnowledge::kMax)
    for (std::size_t i = 1; i < s.layers.size(); ++i)
      if (s.layers[i].width != s.layers[0].width)
        fail(file, "layers[" + std::to_string(i) + "].width", "jumping knowledge 'max' takes layers of one width: " + std::to_string(s.layers[0].width) + " first, " +
                                                                 std::to_string(s.layers[i].width) + " here");
  return s;
}

std::int64_t layer_in_width(const ModelSpec& s, std::int64_t in, std::size_t l) {
  if (l > 0) return s.layers[l - 1].width;
  return s.encoder.linear ? s.encoder.width : in;
}

std::int64_t readout_width(const ModelSpec& s) {
  if (s.jumping_knowledge == JumpingKnowledge::kCat) {
    std::int64_t w = 0;
    for (const LayerSpec& l : s.layers) w += l.width;
    return w;
  }
  return s.layers.back().width;
}

bool has_relational(const ModelSpec& s) noexcept {
  for (const LayerSpec& l : s.layers)
    if (relational(l.kind)) return true;
  return false;
}

bool uses(const ModelSpec& s, LayerKind kind) noexcept {
  return std::any_of(s.layers.begin(), s.layers.end(), [kind](const LayerSpec& l) { return l.kind == kind; });
}

bool uses(const ModelSpec& s, Norm norm) noexcept {
  return std::any_of(s.layers.begin(), s.layers.end(), [norm](const LayerSpec& l) { return l.norm == norm; });
}

void tag_invoke(const json::value_from_tag&, json::value& v, const ModelSpec& s) {
  json::object o;
  o["name"] = s.name;
  if (s.encoder.linear) o["encoder"] = {{"kind", "linear"}, {"width", s.encoder.width}};
  json::array layers;
  for (const LayerSpec& l : s.layers) {
    json::object lo;
    lo["kind"] = layer_kind_name(l.kind);
    lo["width"] = l.width;
    if (l.kind == LayerKind::kSage) lo["aggregation"] = enum_name(kAggregations, l.aggregation);
    if (attention(l.kind)) {
      lo["heads"] = l.heads;
      lo["concat"] = l.concat;
      lo["attn_dropout"] = l.attn_dropout;
    }
    if (l.kind == LayerKind::kGcn || l.kind == LayerKind::kGat || l.kind == LayerKind::kGatV2) lo["self_loop"] = l.self_loop;
    if (l.kind == LayerKind::kGin) {
      lo["mlp_layers"] = l.mlp_layers;
      lo["train_eps"] = l.train_eps;
    }
    if (l.kind == LayerKind::kRgcn) lo["bases"] = l.bases;
    lo["activation"] = enum_name(kActivations, l.activation);
    lo["dropout"] = l.dropout;
    lo["norm"] = enum_name(kNorms, l.norm);
    lo["residual"] = enum_name(kResiduals, l.residual);
    layers.push_back(std::move(lo));
  }
  o["layers"] = std::move(layers);
  o["jumping_knowledge"] = enum_name(kJks, s.jumping_knowledge);
  json::object h;
  h["kind"] = enum_name(kHeads, s.head.kind);
  if (s.head.kind == HeadKind::kMlp) {
    h["layers"] = s.head.layers;
    if (s.head.width > 0) h["width"] = s.head.width;
    h["activation"] = enum_name(kActivations, s.head.activation);
    h["dropout"] = s.head.dropout;
  }
  o["head"] = std::move(h);
  v = std::move(o);
}

ModelSpec tag_invoke(const json::value_to_tag<ModelSpec>&, const json::value& v) { return read_spec(v, "model spec", 0); }

}  // namespace shardgnn
