#include "datasets/dataset_meta.hpp"

#include <algorithm>
#include <utility>

#include "datasets/error.hpp"
#include "datasets/json_util.hpp"

namespace json = boost::json;

namespace shardgnn {

std::string feature_norm_name(FeatureNorm n) { return n == FeatureNorm::kRow ? "row" : "none"; }

std::optional<FeatureNorm> feature_norm_named(const std::string& s) {
  if (s == "none") return FeatureNorm::kNone;
  if (s == "row") return FeatureNorm::kRow;
  return std::nullopt;
}

namespace {

[[noreturn]] void fail(const std::string& key, const std::string& what) { throw InputError("key '" + key + "': " + what); }

json::object cleaning_json(const CleanReport& r) {
  return {{"input_entries", r.input_entries},
          {"reverse_added", r.reverse_added},
          {"self_loops_dropped", r.self_loops_dropped},
          {"duplicates_dropped", r.duplicates_dropped},
          {"output_entries", r.output_entries},
          {"symmetric", r.symmetric},
          {"no_self_loops", r.no_self_loops},
          {"no_duplicates", r.no_duplicates}};
}

CleanReport cleaning_from_json(const json::object& o) {
  CleanReport r;
  r.input_entries = json_int(o, "input_entries");
  r.reverse_added = json_int(o, "reverse_added");
  r.self_loops_dropped = json_int(o, "self_loops_dropped");
  r.duplicates_dropped = json_int(o, "duplicates_dropped");
  r.output_entries = json_int(o, "output_entries");
  // Absent from folders written before they were recorded: false, i.e. unknown.
  auto flag = [&](const char* key) { auto* b = o.if_contains(key); return b && b->is_bool() && b->get_bool(); };
  r.symmetric = flag("symmetric");
  r.no_self_loops = flag("no_self_loops");
  r.no_duplicates = flag("no_duplicates");
  return r;
}

}  // namespace

void tag_invoke(json::value_from_tag, json::value& v, const DatasetMeta& m) {
  json::object o;
  o["name"] = m.name;
  if (m.full) o["source"] = m.source;
  o["num_nodes"] = m.num_nodes;
  o["num_edges"] = m.num_edges;
  o["feature_dim"] = m.feature_dim;
  o["num_classes"] = m.num_classes;
  const bool featured = m.feature_dim > 0 || m.schema.typed();
  if (featured && m.feature_dtype != FeatureDtype::kFloat32) o["feature_dtype"] = feature_dtype_name(m.feature_dtype);
  if (featured && m.feature_norm != FeatureNorm::kNone) o["feature_norm"] = feature_norm_name(m.feature_norm);
  if (m.multilabel) o["multilabel"] = true;
  if (m.edge_split) o["edge_split"] = {{"eval_negatives", m.eval_negatives}};
  if (m.full) o["node_weight_dim"] = m.node_weight_dim;
  schema_to_json(m.schema, o);
  if (m.full) o["cleaning"] = cleaning_json(m.cleaning);
  v = std::move(o);
}

DatasetMeta tag_invoke(json::value_to_tag<DatasetMeta>, const json::value& v) {
  if (!v.is_object()) throw InputError("expected a JSON object");
  return dataset_meta_from_json(v.get_object());
}

DatasetMeta dataset_meta_from_json(const json::object& o) {
  DatasetMeta m;
  m.name = json_string(o, "name");
  if (o.contains("source")) m.source = json_string(o, "source");
  m.num_nodes = json_int(o, "num_nodes");
  m.num_edges = json_int(o, "num_edges");
  m.feature_dim = json_int(o, "feature_dim");
  m.num_classes = json_int(o, "num_classes");
  if (o.contains("node_weight_dim")) m.node_weight_dim = json_int(o, "node_weight_dim");
  for (auto [key, val] : {std::pair{"num_nodes", m.num_nodes}, {"num_edges", m.num_edges}, {"feature_dim", m.feature_dim}, {"num_classes", m.num_classes},
                          {"node_weight_dim", m.node_weight_dim}})
    if (val < 0) fail(key, "negative count " + std::to_string(val));
  // Per-class tables are sized by it, and no file bounds it as the arrays bound the other counts.
  if (m.num_classes > std::max<std::int64_t>(m.num_nodes, kMaxClassesAnyGraph))
    fail("num_classes", std::to_string(m.num_classes) + " classes for " + std::to_string(m.num_nodes) + " nodes");
  if (const auto* ml = o.if_contains("multilabel")) {
    if (!ml->is_bool()) fail("multilabel", "expected true or false");
    m.multilabel = ml->get_bool();
    if (m.multilabel && m.num_classes < 1) fail("multilabel", "true with num_classes " + std::to_string(m.num_classes) + ": label sets need at least one label");
  }
  if (const auto* fd = o.if_contains("feature_dtype")) {
    const auto t = fd->is_string() ? feature_dtype_named(std::string(fd->get_string())) : std::nullopt;
    if (!t) fail("feature_dtype", "expected \"float32\", \"float16\" or \"bfloat16\", found " + json::serialize(*fd));
    m.feature_dtype = *t;
  }
  if (const auto* fn = o.if_contains("feature_norm")) {
    const auto t = fn->is_string() ? feature_norm_named(std::string(fn->get_string())) : std::nullopt;
    if (!t) fail("feature_norm", "expected \"none\" or \"row\", found " + json::serialize(*fn));
    m.feature_norm = *t;
  }
  if (const auto* es = o.if_contains("edge_split")) {
    if (!es->is_object()) fail("edge_split", "expected an object {\"eval_negatives\": K}");
    m.edge_split = true;
    m.eval_negatives = json_int(es->get_object(), "eval_negatives");
    if (m.eval_negatives < 0) fail("edge_split", "negative eval_negatives " + std::to_string(m.eval_negatives));
  }
  try {
    m.schema = schema_from_json(o, "", m.num_nodes);
  } catch (const InputError& bad) {
    throw InputError(std::string(bad.what()).substr(2));  // without the empty file name's ": "
  }
  if (m.schema.typed() && m.feature_dim != 0)
    fail("feature_dim", std::to_string(m.feature_dim) + " in a typed graph: its features are per node type (node_types' feature_dim), so 0");
  if (const auto* c = o.if_contains("cleaning"); c && c->is_object()) m.cleaning = cleaning_from_json(c->get_object());
  return m;
}

}  // namespace shardgnn
