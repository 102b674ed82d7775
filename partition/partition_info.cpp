#include "partition/partition_info.hpp"

#include <algorithm>
#include <filesystem>
#include <limits>
#include <numeric>

#include "datasets/dataset.hpp"
#include "datasets/error.hpp"
#include "datasets/fileio.hpp"
#include "datasets/json_util.hpp"

namespace json = boost::json;
namespace fs = std::filesystem;

namespace shardgnn {

std::string PartitionInfo::json_path() const { return (fs::path(dir) / "partition.json").string(); }

namespace {

[[noreturn]] void fail(const std::string& key, const std::string& what) { throw InputError("key '" + key + "': " + what); }

json::object parameters_to_json(const PartitionConfig& c) {
  json::array balance;
  for (auto k : c.balance) balance.push_back(json::string(balance_name(k)));
  json::array fanouts;
  for (int f : c.cost_fanouts) fanouts.push_back(f);
  return {{"parts", c.parts},
          {"method", method_name(c.method)},
          {"balance", balance},
          {"objective", objective_name(c.objective)},
          {"edge_weights", edge_weighting_name(c.edge_weights)},
          {"imbalance", c.imbalance},
          {"seed", c.seed},
          {"stream_shuffle", c.stream_shuffle},
          {"fennel_gamma", c.fennel_gamma},
          {"cost_fanouts", fanouts},
          {"cost_remote_weight", c.cost_remote_weight}};
}

// Typed reads of "parameters", whose errors name the key's whole path because its keys are common
// words ("method", "parts") that other levels of the file use too.
class ParameterReader {
 public:
  explicit ParameterReader(const json::object& p) : p_(p) {}

  const json::value* find(const char* key, const char* expected, bool required) const {
    const json::value* v = p_.if_contains(key);
    if (!v && required) fail(path(key), std::string("missing, expected ") + expected);
    return v;
  }
  [[noreturn]] void wrong(const char* key, const char* expected, const json::value& v) const {
    fail(path(key), std::string("expected ") + expected + ", found " + json::serialize(v));
  }
  int integer(const char* key) const {
    const json::value& v = *find(key, "an integer", true);
    if (!v.is_int64() || v.get_int64() < std::numeric_limits<int>::min() || v.get_int64() > std::numeric_limits<int>::max()) wrong(key, "an integer", v);
    return static_cast<int>(v.get_int64());
  }
  std::uint64_t unsigned_integer(const char* key) const {
    const json::value& v = *find(key, "a non-negative integer", true);
    if (v.is_uint64()) return v.get_uint64();
    if (!v.is_int64() || v.get_int64() < 0) wrong(key, "a non-negative integer", v);
    return static_cast<std::uint64_t>(v.get_int64());
  }
  // A number; `dflt` when absent and not required.
  double number(const char* key, bool required = true, double dflt = 0) const {
    const json::value* v = find(key, "a number", required);
    if (!v) return dflt;
    if (!v->is_number()) wrong(key, "a number", *v);
    return v->to_number<double>();
  }
  bool flag(const char* key) const {
    const json::value& v = *find(key, "true or false", true);
    if (!v.is_bool()) wrong(key, "true or false", v);
    return v.get_bool();
  }
  // `text` as `parse` reads it on the command line; its complaint is given under the key.
  template <class Parse>
  auto parsed(const char* key, const json::value& text, Parse parse) const {
    if (!text.is_string()) wrong(key, "a string", text);
    try {
      return parse(std::string(text.get_string()));
    } catch (const InputError& e) {
      fail(path(key), e.what());
    }
  }
  template <class Parse>
  auto named(const char* key, Parse parse) const {
    return parsed(key, *find(key, "a string", true), parse);
  }
  const json::array& array(const char* key, bool required) const {
    static const json::array none;
    const json::value* v = find(key, "an array", required);
    if (!v) return none;
    if (!v->is_array()) wrong(key, "an array", *v);
    return v->get_array();
  }

 private:
  static std::string path(const char* key) { return std::string("parameters.") + key; }
  const json::object& p_;
};

PartitionConfig parameters_from_json(const json::object& p) {
  const ParameterReader r(p);
  PartitionConfig c;
  c.parts = r.integer("parts");
  c.method = r.named("method", parse_method);
  c.balance.clear();
  for (const json::value& k : r.array("balance", true)) {
    const std::vector<BalanceKey> one = r.parsed("balance", k, parse_balance);
    if (one.size() != 1) r.wrong("balance", "one balance key per entry", k);
    c.balance.push_back(one.front());
  }
  c.objective = r.named("objective", parse_objective);
  c.edge_weights = r.named("edge_weights", parse_edge_weighting);
  c.imbalance = r.number("imbalance");
  c.seed = r.unsigned_integer("seed");
  c.stream_shuffle = r.flag("stream_shuffle");
  c.fennel_gamma = r.number("fennel_gamma");
  // Absent from files written before the cost model.
  if (p.contains("cost_fanouts")) {
    c.cost_fanouts.clear();
    for (const json::value& f : r.array("cost_fanouts", true)) {
      if (!f.is_int64() || f.get_int64() < std::numeric_limits<int>::min() || f.get_int64() > std::numeric_limits<int>::max())
        r.wrong("cost_fanouts", "an array of integers", f);
      c.cost_fanouts.push_back(static_cast<int>(f.get_int64()));
    }
  }
  c.cost_remote_weight = r.number("cost_remote_weight", false, c.cost_remote_weight);
  return c;
}

// "num_parts" and "offsets": the range partition book, checked against the dataset's node count.
PartitionBook book_from_json(const json::object& o, std::int64_t num_nodes) {
  const std::int64_t K = json_int(o, "num_parts");
  if (K < 1 || K > (std::int64_t{1} << 30)) fail("num_parts", std::to_string(K) + ", expected a positive number of parts");
  auto* off = o.if_contains("offsets");
  if (!off || !off->is_array() || static_cast<std::int64_t>(off->get_array().size()) != K + 1)
    fail("offsets", "expected num_parts + 1 = " + std::to_string(K + 1) + " integers");
  std::vector<NodeId> offsets;
  for (const auto& x : off->get_array()) {
    if (!x.is_int64()) fail("offsets", "expected integers");
    offsets.push_back(x.get_int64());
  }
  if (offsets.front() != 0 || offsets.back() != num_nodes || !std::is_sorted(offsets.begin(), offsets.end()))
    fail("offsets", "expected non-decreasing offsets from 0 to num_nodes = " + std::to_string(num_nodes));
  return PartitionBook(std::move(offsets));
}

// "dataset": the source's folder and meta.json checksum, and its description.
void dataset_from_json(const json::object& d, PartitionInfo& info) {
  info.dataset_dir = json_string(d, "dir");
  info.meta_crc32 = json_string(d, "meta_crc32");
  try {
    info.dataset = dataset_meta_from_json(d);
  } catch (const InputError& bad) {
    // The key path from the file's root.
    const std::string what = bad.what();
    throw InputError(what.rfind("key '", 0) == 0 ? "key 'dataset." + what.substr(5) : "key 'dataset': " + what);
  }
  info.dataset.full = false;
}

}  // namespace

void tag_invoke(json::value_from_tag, json::value& v, const PartEntry& e) {
  json::object o{{"dir", e.dir}, {"nodes", e.nodes}, {"edges", e.edges}, {"halo", e.halo}};
  if (!e.type_nodes.empty()) {
    o["type_nodes"] = json::array(e.type_nodes.begin(), e.type_nodes.end());
    o["type_halo"] = json::array(e.type_halo.begin(), e.type_halo.end());
  }
  o["arrays"] = e.arrays;
  v = std::move(o);
}

PartEntry tag_invoke(json::value_to_tag<PartEntry>, const json::value& v) {
  if (!v.is_object()) throw InputError("expected an object per part, found " + json::serialize(v));
  const json::object& o = v.get_object();
  PartEntry e;
  e.arrays = json_object(o, "arrays");
  e.dir = json_string(o, "dir");
  e.edges = json_int(o, "edges");
  e.nodes = json_int(o, "nodes");
  e.halo = json_int(o, "halo");
  for (auto [key, out] : {std::pair{"type_nodes", &e.type_nodes}, {"type_halo", &e.type_halo}}) {
    const auto* a = o.if_contains(key);
    if (a == nullptr) continue;
    if (!a->is_array()) throw InputError(std::string("key '") + key + "': expected a count per node type");
    for (const auto& x : a->get_array()) {
      if (!x.is_int64() || x.get_int64() < 0) throw InputError(std::string("key '") + key + "': expected non-negative counts, found " + json::serialize(x));
      out->push_back(x.get_int64());
    }
  }
  return e;
}

void tag_invoke(json::value_from_tag, json::value& v, const PartitionInfo& info) {
  json::object root;
  root["format"] = kPartitionFormatName;
  root["version"] = info.dataset.schema.relation_ids() ? kPartitionFormatVersion : kPartitionFormatVersionWithoutRelationIds;
  json::object dataset{{"name", info.dataset.name}, {"dir", info.dataset_dir}, {"meta_crc32", info.meta_crc32}};
  json::value described = json::value_from(info.dataset);
  for (auto& [key, value] : described.as_object()) dataset[key] = std::move(value);
  root["dataset"] = std::move(dataset);
  root["method"] = info.method;
  root["parameters"] = parameters_to_json(info.parameters);
  root["partition_seconds"] = info.partition_seconds;
  root["num_parts"] = info.book.parts();
  root["offsets"] = json::array(info.book.offsets().begin(), info.book.offsets().end());
  root["metrics"] = json::value_from(info.metrics);
  root["parts"] = json::value_from(info.parts);
  v = std::move(root);
}

PartitionInfo tag_invoke(json::value_to_tag<PartitionInfo>, const json::value& v) {
  if (!v.is_object()) throw InputError(at_byte(0) + ": expected a JSON object");
  const json::object& o = v.get_object();
  if (json_string(o, "format") != kPartitionFormatName) fail("format", std::string("expected '") + kPartitionFormatName + "'");
  if (const std::int64_t version = json_int(o, "version"); version < 1 || version > kPartitionFormatVersion)
    fail("version", "this build reads versions 1 to " + std::to_string(kPartitionFormatVersion));
  PartitionInfo info;
  dataset_from_json(json_object(o, "dataset"), info);
  info.method = json_string(o, "method");
  info.book = book_from_json(o, info.dataset.num_nodes);
  const std::int64_t K = info.book.parts();
  auto* parts = o.if_contains("parts");
  if (!parts || !parts->is_array() || static_cast<std::int64_t>(parts->get_array().size()) != K) fail("parts", "expected " + std::to_string(K) + " entries");
  for (std::int64_t k = 0; k < K; ++k) {
    const json::value& entry = parts->get_array()[static_cast<std::size_t>(k)];
    if (!entry.is_object()) fail("parts[" + std::to_string(k) + "]", "expected an object");
    info.parts.push_back(json::value_to<PartEntry>(entry));
    const PartEntry& e = info.parts.back();
    const auto T = static_cast<std::size_t>(info.dataset.schema.num_types());
    if (e.type_nodes.size() != T || e.type_halo.size() != T)
      fail("parts[" + std::to_string(k) + "]", T == 0 ? "has per-type counts, but the dataset has one node type"
                                                      : "expected type_nodes and type_halo, " + std::to_string(T) + " counts each");
    if (T > 0 && std::accumulate(e.type_nodes.begin(), e.type_nodes.end(), std::int64_t{0}) != info.book.size(static_cast<PartId>(k)))
      fail("parts[" + std::to_string(k) + "].type_nodes", "counts do not add up to the part's " + std::to_string(info.book.size(static_cast<PartId>(k))) + " nodes");
  }
  info.metrics_as_written = json_object(o, "metrics");
  info.metrics = json::value_to<PartitionMetrics>(o.at("metrics"));
  info.parameters = parameters_from_json(json_object(o, "parameters"));
  const json::value* seconds = o.if_contains("partition_seconds");
  if (!seconds || !seconds->is_number()) fail("partition_seconds", seconds ? "expected a number, found " + json::serialize(*seconds) : "missing, expected a number");
  info.partition_seconds = seconds->to_number<double>();
  return info;
}

PartitionInfo load_partition_info(const std::string& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) throw InputError(dir, "", "no such partitioned-dataset folder");
  const std::string path = (fs::path(dir) / "partition.json").string();
  if (!fs::exists(path, ec)) throw InputError(path, "", "missing: not a partitioned dataset (make one with `shardgnn partition`)");
  hold_folder(dir);  // a `--force` rewrite of it waits until this process has ended
  PartitionInfo info;
  try {
    info = json::value_to<PartitionInfo>(read_json_file(path));
  } catch (const InputError& bad) {
    if (!bad.file().empty()) throw;  // read_json_file's, which names the file already
    throw InputError(path, "", bad.what());
  }
  info.dir = dir;
  // Checked before anything reads a part's files, so partition.json cannot send a reader elsewhere.
  for (std::size_t k = 0; k < info.parts.size(); ++k)
    info.parts[k].path = confined_path(dir, info.parts[k].dir, path, "parts[" + std::to_string(k) + "].dir", true, true);
  return info;
}

}  // namespace shardgnn
