#include "model/card.hpp"

#include <boost/json.hpp>

#include <filesystem>

#include "datasets/array_dir.hpp"
#include "datasets/error.hpp"
#include "datasets/fileio.hpp"
#include "datasets/json_util.hpp"

namespace shardgnn {

namespace json = boost::json;
namespace fs = std::filesystem;

std::string card_path(const std::string& weights) {
  const fs::path p(weights);
  if (p.filename() == "weights.pt") return (p.parent_path() / "model.json").string();
  fs::path c = p;
  if (c.extension() == ".pt") c.replace_extension();
  return c.string() + ".model.json";
}

std::string program_version() { return std::string("shardgnn ") + SHARDGNN_VERSION; }

json::value card_to_json(const ModelCard& c) {
  json::object o;
  o["format"] = kModelCardFormat;
  o["version"] = kModelCardVersion;
  o["program"] = c.program;
  o["spec"] = json::value_from(c.spec);
  o["in"] = c.in;
  o["out"] = c.out;
  o["precision"] = precision_name(c.precision);
  json::object task{{"kind", c.task}};
  if (!c.scorer.empty()) task["scorer"] = c.scorer;
  task["outputs"] = c.out;
  o["task"] = std::move(task);
  json::object graph;
  schema_to_json(c.schema, graph);
  o["graph"] = std::move(graph);
  o["features"] = {{"dtype", c.feature_dtype}, {"norm", c.feature_norm}};
  o["dataset"] = {{"name", c.dataset}, {"partition", c.partition}};
  o["weights"] = {{"file", c.weights}, {"bytes", c.weights_bytes}, {"crc32", hex32(c.weights_crc32)}};
  return o;
}

ModelCard card_from_json(const json::value& v, const std::string& path) {
  if (!v.is_object()) throw InputError(path, "", "not a model card: expected a JSON object");
  const json::object& o = v.as_object();
  ModelCard c;
  try {
    if (json_string(o, "format") != kModelCardFormat) throw InputError("key 'format': expected \"" + std::string(kModelCardFormat) + "\"");
    if (const std::int64_t version = json_int(o, "version"); version != kModelCardVersion)
      throw InputError("key 'version': model card version " + std::to_string(version) + ", this build reads version " + std::to_string(kModelCardVersion));
    c.program = json_string(o, "program");
    c.in = json_int(o, "in");
    c.out = json_int(o, "out");
    const std::string precision = json_string(o, "precision");
    if (precision != "fp32" && precision != "bf16") throw InputError("key 'precision': expected fp32 or bf16, got " + quote_token(precision));
    c.precision = parse_precision(precision);
    const json::object& task = json_object(o, "task");
    c.task = json_string(task, "kind");
    if (c.task != "classes" && c.task != "label-sets" && c.task != "link") throw InputError("key 'task.kind': expected classes, label-sets or link, got " + quote_token(c.task));
    if (task.contains("scorer")) c.scorer = json_string(task, "scorer");
    if (c.task == "link" && c.scorer != "dot" && c.scorer != "mlp" && c.scorer != "distmult") throw InputError("key 'task.scorer': expected dot, mlp or distmult");
    const json::object& features = json_object(o, "features");
    c.feature_dtype = json_string(features, "dtype");
    // Cards from before it was recorded: the features as stored.
    if (features.contains("norm")) c.feature_norm = json_string(features, "norm");
    if (c.feature_norm != "none" && c.feature_norm != "row") throw InputError("key 'features.norm': expected none or row, got " + quote_token(c.feature_norm));
    const json::object& ds = json_object(o, "dataset");
    c.dataset = json_string(ds, "name");
    c.partition = json_string(ds, "partition");
    const json::object& w = json_object(o, "weights");
    c.weights = json_string(w, "file");
    c.weights_bytes = static_cast<std::uint64_t>(json_int(w, "bytes"));
    const std::string crc = json_string(w, "crc32");
    std::size_t used = 0;
    c.weights_crc32 = crc.size() == 8 ? static_cast<std::uint32_t>(std::stoul(crc, &used, 16)) : 0;
    if (crc.size() != 8 || used != 8) throw InputError("key 'weights.crc32': expected 8 hexadecimal digits");
    if (c.weights.empty() || c.weights.find('/') != std::string::npos) throw InputError("key 'weights.file': expected a file name beside the card");
  } catch (const InputError& e) {
    if (!e.file().empty()) throw;
    throw InputError(path, "", e.what());
  } catch (const std::exception&) {
    throw InputError(path, "key 'weights.crc32'", "expected 8 hexadecimal digits");
  }
  const json::value* graph = o.if_contains("graph");
  if (!graph || !graph->is_object()) throw InputError(path, "key 'graph'", "missing: expected an object (empty for an untyped graph)");
  NodeId nodes = 0;
  if (const json::value* types = graph->as_object().if_contains("node_types"); types && types->is_array())
    for (const json::value& t : types->as_array())
      if (t.is_object() && t.as_object().contains("count") && t.as_object().at("count").is_int64()) nodes += t.as_object().at("count").as_int64();
  c.schema = schema_from_json(graph->as_object(), path, nodes);
  // The spec as the card holds it, read with the spec reader (key paths under "spec").
  const json::value* spec = o.if_contains("spec");
  if (!spec) throw InputError(path, "key 'spec'", "missing: expected the model's spec");
  c.spec = parse_spec(json::serialize(*spec), path, 0);
  SpecContext ctx{c.in, c.out, static_cast<std::int64_t>(c.spec.layers.size()), c.schema.typed(), c.precision};
  c.spec = check_spec(std::move(c.spec), ctx, path);
  return c;
}

void write_model_card(const std::string& path, ModelCard card, const std::string& weights_file) {
  card.weights = fs::path(weights_file).filename().string();
  card.weights_bytes = fs::file_size(weights_file);
  card.weights_crc32 = crc32_of_file(weights_file);
  if (card.program.empty()) card.program = program_version();
  write_json_file(path, card_to_json(card));
}

ModelCard read_model_card(const std::string& path) { return card_from_json(read_json_file(path), path); }

void check_card_weights(const ModelCard& card, const std::string& card_file, const std::string& weights_file) {
  if (fs::path(weights_file).filename() != card.weights)
    throw InputError(card_file, "key 'weights.file'", "describes " + quote_token(card.weights) + ", not " + weights_file);
  const std::uint64_t bytes = fs::file_size(weights_file);
  if (bytes != card.weights_bytes)
    throw InputError(weights_file, "", "does not match its model card " + card_file + ": " + std::to_string(bytes) + " bytes, the card says " +
                                           std::to_string(card.weights_bytes));
  if (const std::uint32_t crc = crc32_of_file(weights_file); crc != card.weights_crc32)
    throw InputError(weights_file, "", "does not match its model card " + card_file + ": CRC-32 " + hex32(crc) + ", the card says " + hex32(card.weights_crc32) +
                                           " (damaged, or other weights)");
}

void check_card_schema(const ModelCard& card, const std::string& card_file, const GraphSchema& graph, const std::string& input) {
  const GraphSchema& s = card.schema;
  if (s.typed() != graph.typed())
    throw InputError(input, "", std::string(graph.typed() ? "a typed graph" : "an untyped graph") + "; the model in " + card_file + " was trained on " +
                                    (s.typed() ? "a typed one" : "an untyped one"));
  if (!s.typed()) return;
  bool same = s.types().size() == graph.types().size() && s.relations().size() == graph.relations().size();
  for (std::size_t t = 0; same && t < s.types().size(); ++t)
    same = s.types()[t].name == graph.types()[t].name && s.types()[t].feature_dim == graph.types()[t].feature_dim;
  for (std::size_t r = 0; same && r < s.relations().size(); ++r) same = s.relation_label(static_cast<int>(r)) == graph.relation_label(static_cast<int>(r));
  if (!same) throw InputError(input, "", "its node types, feature widths or relations differ from those the model in " + card_file + " was trained on");
}

}  // namespace shardgnn
