// The dataset directory: meta.json plus one .npy per array. Load maps every array read-only and
// checks only what is O(1) (sizes, dtypes, shapes); validate_dataset reads everything.
#include "datasets/dataset.hpp"

#include <boost/pending/disjoint_sets.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <limits>

#include "datasets/array_dir.hpp"
#include "datasets/checks.hpp"
#include "datasets/error.hpp"
#include "datasets/feature_rows.hpp"
#include "datasets/fileio.hpp"
#include "datasets/json_util.hpp"
#include "datasets/npy.hpp"

namespace fs = std::filesystem;

namespace shardgnn {

namespace {

constexpr const char* kFormatName = "shardgnn-dataset";

struct ArraySpec {
  const char* name;
  DType dtype;
  std::vector<std::int64_t> shape;
  const void* data;
};

// The arrays a dataset holds, in a fixed order, with the shapes its counts imply.
std::vector<ArraySpec> array_specs(const Dataset& ds) {
  const std::int64_t n = ds.num_nodes();
  std::vector<ArraySpec> v;
  v.push_back({"indptr", DType::kInt64, {n + 1}, ds.graph.indptr().data()});
  if (ds.num_classes > 0 && ds.multilabel) v.push_back({"label_bits", DType::kUInt8, {n, label_row_bytes(ds.num_classes)}, ds.label_bits.data()});
  if (!ds.node_ids.empty()) v.push_back({"node_ids", DType::kInt64, {n}, ds.node_ids.data()});
  if (ds.node_weight_dim > 0) v.push_back({"node_weights", DType::kInt64, {n, ds.node_weight_dim}, ds.node_weights.data()});
  if (!ds.edge_weights.empty()) v.push_back({"edge_weights", DType::kInt64, {ds.graph.num_edges()}, ds.edge_weights.data()});
  for_each_held_out(ds, [&](const char* name, const Array<NodeId>& rows, std::int64_t cols, const Array<NodeId>&, bool) {
    v.push_back({name, DType::kInt64, {static_cast<std::int64_t>(rows.size()) / cols, cols}, rows.data()});
  });
  return v;
}

void check_consistent(const Dataset& ds) {
  const std::int64_t n = ds.num_nodes();
  auto bad = [&](const std::string& what) { throw std::logic_error("save_dataset: inconsistent dataset '" + ds.name + "': " + what); };
  if (ds.graph.indptr().empty()) bad("no indptr");
  if (ds.feature_dim > 0 && static_cast<std::int64_t>(ds.feature_dtype == FeatureDtype::kFloat32 ? ds.features.size() : ds.features16.size()) != n * ds.feature_dim)
    bad("features size");
  if (ds.num_classes > 0 && !ds.multilabel && static_cast<std::int64_t>(ds.labels.size()) != n) bad("labels size");
  if (ds.schema.typed()) {
    if (ds.schema.num_nodes() != n) bad("node types' counts");
    if (ds.feature_dim != 0) bad("feature_dim of a typed graph (its features are per type)");
    const bool wide = ds.feature_dtype == FeatureDtype::kFloat32;
    if ((wide ? ds.type_features.size() : ds.type_features16.size()) != ds.schema.types().size()) bad("type_features count");
    for (std::size_t t = 0; t < ds.schema.types().size(); ++t)
      if (static_cast<std::int64_t>(wide ? ds.type_features[t].size() : ds.type_features16[t].size()) != ds.schema.types()[t].count * ds.schema.types()[t].feature_dim)
        bad("type_features size");
  }
  if (ds.num_classes > 0 && ds.multilabel && static_cast<std::int64_t>(ds.label_bits.size()) != n * label_row_bytes(ds.num_classes)) bad("label_bits size");
  if (ds.multilabel && !ds.labels.empty()) bad("a multi-label dataset with a label vector");
  if (!ds.node_ids.empty() && static_cast<std::int64_t>(ds.node_ids.size()) != n) bad("node_ids size");
  if (ds.node_weight_dim > 0 && static_cast<std::int64_t>(ds.node_weights.size()) != n * ds.node_weight_dim) bad("node_weights size");
  if (!ds.edge_weights.empty() && static_cast<std::int64_t>(ds.edge_weights.size()) != ds.graph.num_edges()) bad("edge_weights size");
  if (ds.schema.relation_ids() != !ds.edge_relations.empty() && ds.graph.num_edges() > 0) bad("edge_relations against the schema's relation_ids");
  if (!ds.edge_relations.empty() && static_cast<std::int64_t>(ds.edge_relations.size()) != ds.graph.num_edges()) bad("edge_relations size");
}

}  // namespace

void normalize_feature_rows(Dataset& ds) {
  if (ds.feature_dim == 0) return;
  if (ds.feature_dtype != FeatureDtype::kFloat32) throw std::logic_error("normalize_feature_rows: a dataset of 2-byte features");
  std::vector<float> f(ds.features.begin(), ds.features.end());
  const auto F = static_cast<std::size_t>(ds.feature_dim);
  for (std::size_t r = 0; r < f.size() / F; ++r) {
    double sum = 0;
    for (std::size_t j = 0; j < F; ++j) sum += f[r * F + j];
    if (sum != 0)
      for (std::size_t j = 0; j < F; ++j) f[r * F + j] = static_cast<float>(f[r * F + j] / sum);
  }
  ds.features = Array<float>(std::move(f));
  ds.feature_norm = FeatureNorm::kRow;
}

namespace {
// The rows of `a` (row_len values each) whose node is kept, in order.
template <class T>
Array<T> kept_rows(const Array<T>& a, std::span<const NodeId> kept, std::size_t row_len) {
  if (a.empty()) return {};
  std::vector<T> out;
  out.reserve(kept.size() * row_len);
  for (const NodeId v : kept) out.insert(out.end(), a.begin() + static_cast<std::ptrdiff_t>(v) * static_cast<std::ptrdiff_t>(row_len),
                                         a.begin() + (static_cast<std::ptrdiff_t>(v) + 1) * static_cast<std::ptrdiff_t>(row_len));
  return Array<T>(std::move(out));
}
}  // namespace

std::int64_t keep_largest_component(Dataset& ds) {
  const NodeId n = ds.num_nodes();
  if (n == 0) return 0;
  std::vector<NodeId> rank(static_cast<std::size_t>(n)), parent(static_cast<std::size_t>(n));
  boost::disjoint_sets<NodeId*, NodeId*> sets(rank.data(), parent.data());
  for (NodeId u = 0; u < n; ++u) sets.make_set(u);
  ds.graph.visit([&](const auto& g) {
    for (NodeId u = 0; u < n; ++u)
      for (const NodeId v : g.neighbors(u)) sets.union_set(u, v);
  });
  std::vector<NodeId> root(static_cast<std::size_t>(n)), size(static_cast<std::size_t>(n), 0);
  std::int64_t components = 0;
  for (NodeId u = 0; u < n; ++u) {
    root[static_cast<std::size_t>(u)] = sets.find_set(u);
    components += size[static_cast<std::size_t>(root[static_cast<std::size_t>(u)])]++ == 0;
  }
  NodeId best = -1;
  for (const NodeId r : root)  // the first node of the largest component names it
    if (best < 0 || size[static_cast<std::size_t>(r)] > size[static_cast<std::size_t>(best)]) best = r;
  std::vector<NodeId> kept, new_id(static_cast<std::size_t>(n), -1);
  for (NodeId u = 0; u < n; ++u)
    if (root[static_cast<std::size_t>(u)] == best) {
      new_id[static_cast<std::size_t>(u)] = static_cast<NodeId>(kept.size());
      kept.push_back(u);
    }
  if (static_cast<NodeId>(kept.size()) == n) return components;
  // Every edge of a kept node stays inside the component, so its rows carry over whole.
  std::vector<EdgeId> indptr = {0};
  std::vector<NodeId> indices;
  ds.graph.visit([&](const auto& g) {
    for (const NodeId u : kept) {
      for (const NodeId v : g.neighbors(u)) indices.push_back(new_id[static_cast<std::size_t>(v)]);
      indptr.push_back(static_cast<EdgeId>(indices.size()));
    }
  });
  if (!ds.edge_weights.empty()) {
    std::vector<std::int64_t> w;
    for (const NodeId u : kept)
      w.insert(w.end(), ds.edge_weights.begin() + ds.graph.indptr()[u], ds.edge_weights.begin() + ds.graph.indptr()[u + 1]);
    ds.edge_weights = Array<std::int64_t>(std::move(w));
  }
  if (!ds.edge_relations.empty()) {
    std::vector<std::int32_t> r;
    for (const NodeId u : kept)
      for (EdgeId e = ds.graph.indptr()[u]; e < ds.graph.indptr()[u + 1]; ++e) r.push_back(static_cast<std::int32_t>(ds.edge_relations[static_cast<std::size_t>(e)]));
    ds.edge_relations = Array<std::int32_t>(std::move(r));
  }
  ds.features = kept_rows(ds.features, kept, static_cast<std::size_t>(ds.feature_dim));
  ds.features16 = kept_rows(ds.features16, kept, static_cast<std::size_t>(ds.feature_dim));
  if (!ds.labels.empty()) {
    std::vector<std::int64_t> y;
    for (const NodeId v : kept) y.push_back(ds.labels[static_cast<std::size_t>(v)]);
    ds.labels = Array<std::int64_t>(std::move(y));
  }
  ds.label_bits = kept_rows(ds.label_bits, kept, static_cast<std::size_t>(label_row_bytes(ds.num_classes)));
  ds.node_weights = kept_rows(ds.node_weights, kept, static_cast<std::size_t>(ds.node_weight_dim));
  std::vector<std::int64_t> ids;
  for (const NodeId u : kept) ids.push_back(ds.node_ids.empty() ? u : ds.node_ids[static_cast<std::size_t>(u)]);
  ds.node_ids = Array<std::int64_t>(std::move(ids));
  for (IntArray* split : {&ds.train_idx, &ds.val_idx, &ds.test_idx}) {
    std::vector<NodeId> stay;
    for (const NodeId v : *split)
      if (new_id[static_cast<std::size_t>(v)] >= 0) stay.push_back(new_id[static_cast<std::size_t>(v)]);
    *split = Array<NodeId>(std::move(stay));
  }
  ds.graph = CsrGraph(Array<EdgeId>(std::move(indptr)), Array<NodeId>(std::move(indices)));
  return components;
}

namespace {
// features.npy in dtype `as`: the dataset's rows as they are, or converted a chunk of rows at a
// time (through float32) so that no whole copy is made.
// `shown` is the folder error messages name (`dir` is the temporary one being written).
boost::json::object write_features(const Dataset& ds, const std::string& dir, const std::string& shown, FeatureDtype as) {
  const std::int64_t n = ds.num_nodes(), F = ds.feature_dim;
  const std::vector<std::int64_t> shape = {n, F};
  if (as == ds.feature_dtype)
    return write_listed_array(dir, "features", feature_npy_dtype(as), as == FeatureDtype::kFloat32 ? static_cast<const void*>(ds.features.data())
                                                                                                 : static_cast<const void*>(ds.features16.data()), shape);
  return write_listed_array_streamed(dir, "features", feature_npy_dtype(as), shape, [&](const NpySink& out) {
    FeatureRowScratch scratch;
    write_feature_rows(ds, as, n, [](NodeId u) { return u; }, std::max<NodeId>(1, (NodeId{1} << 18) / F), scratch, out,
                       (fs::path(shown) / "features.npy").string() + ": ");
  });
}
}  // namespace

DatasetMeta meta_of(const Dataset& ds) {
  DatasetMeta m;
  copy_described(m, ds);
  m.name = ds.name;
  m.source = ds.source;
  m.num_nodes = ds.num_nodes();
  m.num_edges = ds.graph.num_edges();
  m.node_weight_dim = ds.node_weight_dim;
  m.cleaning = ds.cleaning;
  return m;
}

void save_dataset(const Dataset& ds, const std::string& dir, bool overwrite, std::optional<FeatureDtype> features_as) {
  check_consistent(ds);
  const FeatureDtype stored = features_as.value_or(ds.feature_dtype);
  write_dir_atomic(dir, overwrite, [&](const std::string& tmp) {
    boost::json::object arrays;
    for (const auto& a : array_specs(ds)) arrays[a.name] = write_listed_array(tmp, a.name, a.dtype, a.data, a.shape);
    if (ds.num_classes > 0 && !ds.multilabel) arrays["labels"] = write_listed_ints(tmp, "labels", ds.labels, label_dtype(ds.num_classes));
    arrays["indices"] = write_listed_indices(tmp, "indices", ds.graph, ids_fit_int32(ds.num_nodes()));
    if (ds.schema.relation_ids())
      arrays["edge_relations"] = write_listed_ints(tmp, "edge_relations", ds.edge_relations, relation_dtype(ds.schema.relations().size()));
    const DType id_as = ids_fit_int32(ds.num_nodes()) ? DType::kInt32 : DType::kInt64;
    for (auto [name, split] : {std::pair{"train_idx", &ds.train_idx}, {"val_idx", &ds.val_idx}, {"test_idx", &ds.test_idx}})
      arrays[name] = write_listed_ints(tmp, name, *split, id_as);
    if (ds.feature_dim > 0) arrays["features"] = write_features(ds, tmp, dir, stored);
    for (int t = 0; t < ds.schema.num_types(); ++t) {
      const NodeType& nt = ds.schema.types()[static_cast<std::size_t>(t)];
      if (nt.feature_dim == 0) continue;
      const std::string name = "features_" + nt.name;
      arrays[name] = write_listed_array_streamed(tmp, name, feature_npy_dtype(stored), {nt.count, nt.feature_dim}, [&](const NpySink& out) {
        FeatureRowScratch scratch;
        write_type_rows(ds, t, stored, nt.count, [](std::int64_t i) { return i; }, scratch, out, "--feature-dtype: " + dir + ": " + nt.name + " ");
      });
    }
    DatasetMeta m = meta_of(ds);
    m.feature_dtype = stored;
    boost::json::object meta{{"format", kFormatName},
                             {"version", ds.schema.relation_ids() ? kDatasetFormatVersion : kDatasetFormatVersionWithoutRelationIds}};
    boost::json::value described = boost::json::value_from(m);
    for (auto& [key, value] : described.as_object()) meta[key] = std::move(value);
    meta["arrays"] = std::move(arrays);
    write_json_file(tmp + "/meta.json", meta);
  });
}

namespace {

// meta.json as read: its description, and the object whose "arrays" lists the files.
struct Meta {
  std::string path;
  boost::json::object root;
  DatasetMeta d;
};

Meta read_meta(const std::string& dir) {
  std::error_code ec;
  if (!fs::exists(dir, ec)) throw InputError(dir, "", "no such dataset folder");
  if (!fs::is_directory(dir, ec)) throw InputError(dir, "", "is a file, expected a dataset folder (meta.json + .npy files)");
  Meta meta;
  meta.path = (fs::path(dir) / "meta.json").string();
  if (!fs::exists(meta.path, ec)) throw InputError(meta.path, "", "missing: not a shardgnn dataset folder (convert one with `shardgnn data convert`)");
  boost::json::value v = read_json_file(meta.path);
  if (!v.is_object()) throw InputError(meta.path, at_byte(0), "expected a JSON object");
  meta.root = std::move(v.get_object());
  const std::string fmt = json_string(meta.root, "format", meta.path);
  if (fmt != kFormatName) throw InputError(meta.path, "key 'format'", "'" + fmt + "', expected '" + kFormatName + "'");
  const std::int64_t version = json_int(meta.root, "version", meta.path);
  if (version < 1 || version > kDatasetFormatVersion)
    throw InputError(meta.path, "key 'version'", std::to_string(version) + ", this build reads versions 1 to " + std::to_string(kDatasetFormatVersion));
  try {
    meta.d = dataset_meta_from_json(meta.root);
  } catch (const InputError& bad) {
    throw InputError(meta.path, "", bad.what());
  }
  return meta;
}

template <class T>
Array<T> load_array(const Meta& meta, const std::string& dir, const char* name, std::vector<std::int64_t> expected, bool required) {
  return load_listed_array<T>(dir, json_object(meta.root, "arrays", meta.path), meta.path, name, expected, required);
}

std::int64_t split_len(const Meta& meta, const char* name) {
  return listed_length(json_object(meta.root, "arrays", meta.path), meta.path, name);
}

}  // namespace

namespace {

void check_contents(const Dataset& ds, const std::string& dir) {
  auto file = [&](const char* name) { return (fs::path(dir) / (std::string(name) + ".npy")).string(); };
  const std::int64_t n = ds.num_nodes();
  check_csr(ds.graph, n, file("indptr"), file("indices"));
  check_relations(ds.graph, ds.schema, file("indices"));
  check_relation_ids(ds.graph, ds.schema, ds.edge_relations, file("edge_relations"), file("indices"));
  if (ds.num_classes > 0 && !ds.multilabel) check_range(ds.labels, -1, ds.num_classes, file("labels"), "label");
  if (ds.multilabel) check_label_bits(ds.label_bits.span(), ds.num_classes, file("label_bits"));
  check_range(ds.train_idx, 0, n, file("train_idx"), "node id");
  check_range(ds.val_idx, 0, n, file("val_idx"), "node id");
  check_range(ds.test_idx, 0, n, file("test_idx"), "node id");
  check_range(ds.node_weights.span(), 0, std::numeric_limits<std::int64_t>::max(), file("node_weights"), "node weight");
  check_range(ds.edge_weights.span(), 1, std::numeric_limits<std::int64_t>::max(), file("edge_weights"), "edge weight");
  for_each_held_out(ds, [&](const char* name, const Array<NodeId>& rows, std::int64_t, const Array<NodeId>&, bool) { check_range(rows.span(), 0, n, file(name), "node id"); });
}

}  // namespace

Dataset load_dataset(const std::string& dir, Contents contents) {
  const Meta meta = read_meta(dir);
  hold_folder(dir);  // a `--force` rewrite of it waits until this process has ended
  const DatasetMeta& d = meta.d;
  const std::int64_t n = d.num_nodes;
  Dataset ds;
  copy_described(ds, d);
  ds.name = d.name;
  ds.source = d.source;
  ds.node_weight_dim = d.node_weight_dim;
  ds.cleaning = d.cleaning;
  ds.graph = load_listed_csr(dir, json_object(meta.root, "arrays", meta.path), meta.path, n, d.num_edges);
  for (const NodeType& t : ds.schema.types()) {
    const std::string name = "features_" + t.name;
    if (d.feature_dtype == FeatureDtype::kFloat32)
      ds.type_features.push_back(t.feature_dim == 0 ? Array<float>() : load_array<float>(meta, dir, name.c_str(), {t.count, t.feature_dim}, true));
    else
      ds.type_features16.push_back(t.feature_dim == 0 ? Array<std::uint16_t>()
                                                      : load_listed_array<std::uint16_t>(dir, json_object(meta.root, "arrays", meta.path), meta.path, name,
                                                                                         {t.count, t.feature_dim}, true, feature_npy_dtype(d.feature_dtype)));
  }
  if (d.feature_dim > 0 && d.feature_dtype == FeatureDtype::kFloat32) ds.features = load_array<float>(meta, dir, "features", {n, d.feature_dim}, true);
  else if (d.feature_dim > 0)
    ds.features16 = load_listed_array<std::uint16_t>(dir, json_object(meta.root, "arrays", meta.path), meta.path, "features", {n, d.feature_dim}, true,
                                                     feature_npy_dtype(d.feature_dtype));
  if (d.num_classes > 0 && !d.multilabel) ds.labels = load_listed_ints(dir, json_object(meta.root, "arrays", meta.path), meta.path, "labels", {n}, true);
  if (d.num_classes > 0 && d.multilabel) ds.label_bits = load_array<std::uint8_t>(meta, dir, "label_bits", {n, label_row_bytes(d.num_classes)}, true);
  for (auto [name, split] : {std::pair{"train_idx", &ds.train_idx}, {"val_idx", &ds.val_idx}, {"test_idx", &ds.test_idx}})
    *split = load_listed_ints(dir, json_object(meta.root, "arrays", meta.path), meta.path, name, {split_len(meta, name)}, false);
  ds.node_ids = load_array<std::int64_t>(meta, dir, "node_ids", {n}, false);
  if (d.node_weight_dim > 0) ds.node_weights = load_array<std::int64_t>(meta, dir, "node_weights", {n, d.node_weight_dim}, true);
  ds.edge_weights = load_array<std::int64_t>(meta, dir, "edge_weights", {d.num_edges}, false);
  if (ds.schema.relation_ids())
    ds.edge_relations = load_listed_ints(dir, json_object(meta.root, "arrays", meta.path), meta.path, "edge_relations", {d.num_edges}, true);
  if (d.edge_split) {
    const auto& arrays = json_object(meta.root, "arrays", meta.path);
    const auto rows = [&](const char* name) { return listed_length(arrays, meta.path, name, 2); };
    // Each split's negatives match its positives in number (and in rows of ranking negatives).
    ds.val_pos = load_array<NodeId>(meta, dir, "val_pos_edges", {rows("val_pos_edges"), 2}, true);
    ds.test_pos = load_array<NodeId>(meta, dir, "test_pos_edges", {rows("test_pos_edges"), 2}, true);
    ds.val_neg = load_array<NodeId>(meta, dir, "val_neg_edges", {rows("val_pos_edges"), 2}, true);
    ds.test_neg = load_array<NodeId>(meta, dir, "test_neg_edges", {rows("test_pos_edges"), 2}, true);
    if (d.eval_negatives > 0) {
      ds.val_neg_dst = load_array<NodeId>(meta, dir, "val_neg_dst", {rows("val_pos_edges"), d.eval_negatives}, true);
      ds.test_neg_dst = load_array<NodeId>(meta, dir, "test_neg_dst", {rows("test_pos_edges"), d.eval_negatives}, true);
    }
  }
  if (contents == Contents::check) check_contents(ds, dir);
  return ds;
}

namespace {

// Collects problems, one line each, capped so a badly broken file does not flood the terminal.
class Problems {
 public:
  explicit Problems(ValidationResult& r) : r_(r) {}
  void error(const std::string& file, std::int64_t element, const std::string& what) {
    if (r_.errors.size() < kMax) r_.errors.push_back(file + ": element " + std::to_string(element) + ": " + what);
    else if (r_.errors.size() == kMax) r_.errors.push_back("... further errors not shown");
  }
  bool full() const { return r_.errors.size() > kMax; }

 private:
  static constexpr std::size_t kMax = 20;
  ValidationResult& r_;
};

}  // namespace

namespace {

// An edge split's pairs: ids in range, positives (u, v) with u < v, none left in the training
// graph (that would leak it), none held out twice, and no negative an edge of the training graph
// or a held-out positive; ranking negatives are non-neighbours of their positive's u. Without a
// sound CSR (`csr_ok`, reported already) only the ids are checked.
void check_edge_split(const Dataset& ds, const std::string& d, Problems& p, bool csr_ok) {
  const NodeId n = ds.num_nodes();
  const auto edge = [&](NodeId u, NodeId v) {
    if (!csr_ok) return false;
    return ds.graph.has_edge(u, v);
  };
  std::vector<std::pair<NodeId, NodeId>> held;
  for (const auto* pos : {&ds.val_pos, &ds.test_pos})
    for (std::size_t i = 0; i + 1 < pos->size(); i += 2) held.emplace_back((*pos)[i], (*pos)[i + 1]);
  std::sort(held.begin(), held.end());
  for_each_held_out(ds, [&](const char* name, const Array<NodeId>& rows, std::int64_t cols, const Array<NodeId>& lead, bool positive) {
    const std::string file = d + name + ".npy";
    const bool ranking = cols != 2 || &lead != &rows;
    for (std::size_t i = 0; i < rows.size() && !p.full(); ++i) {
      const NodeId x = rows[i];
      if (x < 0 || x >= n) { p.error(file, static_cast<std::int64_t>(i), "node id " + std::to_string(x) + " out of range [0, " + std::to_string(n) + ")"); continue; }
      if (ranking) {
        const NodeId u = lead[i / static_cast<std::size_t>(cols) * 2];
        if (u >= 0 && u < n && (x == u || edge(u, x))) p.error(file, static_cast<std::int64_t>(i), "destination " + std::to_string(x) + " neighbours its positive's node " + std::to_string(u));
        continue;
      }
      if (i % 2 == 0) continue;
      const NodeId u = rows[i - 1];
      if (u < 0 || u >= n) continue;
      const auto at = static_cast<std::int64_t>(i - 1);
      const std::string pair = "(" + std::to_string(u) + ", " + std::to_string(x) + ")";
      if (u >= x) p.error(file, at, "pair " + pair + ", expected u < v");
      else if (edge(u, x)) p.error(file, at, positive ? "held-out edge " + pair + " is still in the graph (it would leak into training)" : "negative " + pair + " is an edge of the graph");
      else if (!positive && std::binary_search(held.begin(), held.end(), std::pair{u, x})) p.error(file, at, "negative " + pair + " is a held-out edge");
    }
  });
  for (std::size_t i = 1; i < held.size() && !p.full(); ++i)
    if (held[i] == held[i - 1]) p.error(d + "val_pos_edges.npy", 0, "edge (" + std::to_string(held[i].first) + ", " + std::to_string(held[i].second) + ") is held out twice");
}

}  // namespace

ValidationResult validate_dataset(const std::string& dir) {
  ValidationResult res;
  Dataset ds;
  Meta meta;
  try {
    meta = read_meta(dir);
    // Checksums first: a flipped byte is reported as corruption, not as a confusing content error.
    verify_listed_checksums(dir, json_object(meta.root, "arrays", meta.path), meta.path, res.errors);
    ds = load_dataset(dir, Contents::trust);  // the checks below report every problem
  } catch (const InputError& e) {
    res.errors.push_back(e.what());
    return res;
  }
  const std::string d = fs::path(dir).string() + "/";
  Problems p(res);
  const std::int64_t n = ds.num_nodes(), m = ds.graph.num_edges();
  const auto& indptr = ds.graph.indptr();
  ds.graph.visit([&](const auto& g) {
    const auto indices = g.indices();
    for (std::int64_t u = 0; u < n && !p.full(); ++u) {
      if (indptr[u + 1] < indptr[u] || indptr[u] < 0) { p.error(d + "indptr.npy", u + 1, "indptr decreases (" + std::to_string(indptr[u]) + " -> " + std::to_string(indptr[u + 1]) + ")"); continue; }
      if (indptr[u + 1] > m) { p.error(d + "indptr.npy", u + 1, "offset " + std::to_string(indptr[u + 1]) + " beyond num_edges " + std::to_string(m)); continue; }
      for (EdgeId e = indptr[u]; e < indptr[u + 1]; ++e) {
        const NodeId v = indices[static_cast<std::size_t>(e)];
        if (v < 0 || v >= n) p.error(d + "indices.npy", e, "node id " + std::to_string(v) + " out of range [0, " + std::to_string(n) + ")");
        else if (e > indptr[u] && !ds.schema.relation_ids() && indices[static_cast<std::size_t>(e - 1)] > v)
          p.error(d + "indices.npy", e, "row of node " + std::to_string(u) + " is not sorted");
      }
    }
  });
  // The held-out pairs' checks look edges up in the graph: only in a CSR without faults.
  const bool csr_ok = res.errors.empty();
  if (csr_ok) {
    try {
      check_relations(ds.graph, ds.schema, d + "indices.npy");
      check_relation_ids(ds.graph, ds.schema, ds.edge_relations, d + "edge_relations.npy", d + "indices.npy");
    } catch (const InputError& e) {
      res.errors.push_back(e.what());
    }
  }
  for (int t = 0; t < ds.schema.num_types() && !p.full(); ++t) {
    const NodeType& nt = ds.schema.types()[static_cast<std::size_t>(t)];
    std::vector<float> scratch(static_cast<std::size_t>(nt.feature_dim));
    for (std::int64_t i = 0; nt.feature_dim > 0 && i < nt.count && !p.full(); ++i) {
      const float* x = ds.type_row_f32(t, i, scratch.data());
      for (std::int64_t j = 0; j < nt.feature_dim && !p.full(); ++j)
        if (!std::isfinite(x[j]))
          p.error(d + "features_" + nt.name + ".npy", i * nt.feature_dim + j, "non-finite feature (" + std::string(std::isnan(x[j]) ? "NaN" : "Inf") + ")");
    }
  }
  std::vector<float> row(static_cast<std::size_t>(ds.feature_dim));
  for (NodeId u = 0; ds.feature_dim > 0 && u < ds.num_nodes() && !p.full(); ++u) {
    const float* x = ds.feature_row_f32(u, row.data());
    for (std::int64_t j = 0; j < ds.feature_dim && !p.full(); ++j)
      if (!std::isfinite(x[j]))
        p.error(d + "features.npy", u * ds.feature_dim + j, "non-finite feature (" + std::string(std::isnan(x[j]) ? "NaN" : "Inf") + ") at node " + std::to_string(u));
  }
  for (std::size_t i = 0; i < ds.labels.size() && !p.full(); ++i)
    if (ds.labels[i] < -1 || ds.labels[i] >= ds.num_classes)
      p.error(d + "labels.npy", static_cast<std::int64_t>(i), "label " + std::to_string(ds.labels[i]) + " outside [-1, " + std::to_string(ds.num_classes) + ")");
  if (ds.multilabel && ds.num_classes % 8 != 0 && !p.full()) {
    // Bits past the last label are padding, and must be clear.
    const std::int64_t row = label_row_bytes(ds.num_classes);
    const auto pad = static_cast<std::uint8_t>(ds.num_classes % 8 == 0 ? 0 : 0xff << (ds.num_classes % 8));
    for (std::int64_t v = 0; v < n && !p.full(); ++v)
      if (ds.label_bits[static_cast<std::size_t>(v * row + row - 1)] & pad)
        p.error(d + "label_bits.npy", v * row + row - 1, "node " + std::to_string(v) + " has a label bit past its " + std::to_string(ds.num_classes) + " labels set");
  }
  std::vector<std::uint8_t> seen(static_cast<std::size_t>(n), 0);
  std::uint8_t bit = 1;
  for (auto [name, arr] : {std::pair<const char*, const IntArray*>{"train_idx", &ds.train_idx}, {"val_idx", &ds.val_idx}, {"test_idx", &ds.test_idx}}) {
    for (std::size_t i = 0; i < arr->size() && !p.full(); ++i) {
      const NodeId v = (*arr)[i];
      const std::string file = d + name + ".npy";
      if (v < 0 || v >= n) { p.error(file, static_cast<std::int64_t>(i), "node id " + std::to_string(v) + " out of range [0, " + std::to_string(n) + ")"); continue; }
      if (seen[v] & bit) p.error(file, static_cast<std::int64_t>(i), "node " + std::to_string(v) + " listed twice");
      else if (seen[v]) p.error(file, static_cast<std::int64_t>(i), "node " + std::to_string(v) + " is also in another split");
      seen[v] |= bit;
      if (ds.num_classes > 0 && !ds.multilabel && ds.labels[v] < 0) res.warnings.push_back(file + ": node " + std::to_string(v) + " is unlabelled");
    }
    bit <<= 1;
  }
  if (res.warnings.size() > 20) res.warnings.resize(20);
  for (std::size_t i = 0; i < ds.edge_weights.size() && !p.full(); ++i)
    if (ds.edge_weights[i] <= 0) p.error(d + "edge_weights.npy", static_cast<std::int64_t>(i), "edge weight " + std::to_string(ds.edge_weights[i]) + ", expected > 0");
  if (ds.num_classes > 0 && ds.train_idx.empty()) res.warnings.push_back(d + "train_idx.npy: empty training split");
  if (ds.edge_split) check_edge_split(ds, d, p, csr_ok);
  return res;
}

}  // namespace shardgnn
