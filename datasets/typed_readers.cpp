// Readers of typed graphs: OGB's heterogeneous raw layout (ogbn-mag) and IGB-Het's numpy layout.
// Both gather the same pieces (types with counts and features, relations with type-local edges,
// labels and splits per type) and assemble them into one CSR over global ids, each type a range.
#include <algorithm>
#include <charconv>
#include <limits>
#include <cmath>
#include <filesystem>
#include <map>
#include <set>

#include <boost/algorithm/string/finder.hpp>
#include <boost/algorithm/string/iter_find.hpp>

#include "datasets/error.hpp"
#include "datasets/npy.hpp"
#include "datasets/reader_parts.hpp"
#include "datasets/readers.hpp"
#include "datasets/text.hpp"

namespace fs = std::filesystem;

namespace shardgnn {

namespace {

struct TypedInput {
  std::vector<NodeType> types;
  std::vector<NodeId> begin;               // each type's first global id
  std::vector<Array<float>> features;      // per type; empty for a type without
  std::vector<Relation> relations;
  EdgeList edges;                          // global ids
  std::vector<std::int64_t> labels;        // global; -1 unlabelled
  std::string label_origin;
  std::vector<NodeId> train, val, test;

  int type_index(const std::string& name, const std::string& where) const {
    for (std::size_t t = 0; t < types.size(); ++t)
      if (types[t].name == name) return static_cast<int>(t);
    std::string known;
    for (const auto& t : types) known += (known.empty() ? "" : ", ") + t.name;
    throw InputError(where, "", "names node type '" + name + "', which is not one of the graph's (" + known + ")");
  }
  void set_types(std::vector<NodeType> ts) {
    types = std::move(ts);
    NodeId next = 0;
    for (const auto& t : types) begin.push_back(next), next += t.count;
    edges.num_nodes = next;
    features.resize(types.size());
    labels.assign(static_cast<std::size_t>(next), -1);
  }
  // Adds edges of the relation listed last, from type s to type d, from type-local ids, checking
  // each against its type's count; `where` and the edge's number name a bad one.
  void add_edges(int s, int d, std::span<const std::int64_t> src, std::span<const std::int64_t> dst,
                    std::uint64_t first_edge, const std::string& where) {
    const NodeId ns = types[static_cast<std::size_t>(s)].count, nd = types[static_cast<std::size_t>(d)].count;
    for (std::size_t i = 0; i < src.size(); ++i) {
      if (src[i] < 0 || src[i] >= ns || dst[i] < 0 || dst[i] >= nd)
        throw InputError(where, "edge " + std::to_string(first_edge + i + 1),
                         "ids " + std::to_string(src[i]) + " -> " + std::to_string(dst[i]) + ", expected a " + types[static_cast<std::size_t>(s)].name +
                             " id below " + std::to_string(ns) + " and a " + types[static_cast<std::size_t>(d)].name + " id below " + std::to_string(nd));
      edges.src.push_back(begin[static_cast<std::size_t>(s)] + src[i]);
      edges.dst.push_back(begin[static_cast<std::size_t>(d)] + dst[i]);
      edges.relation.push_back(static_cast<std::int32_t>(relations.size() - 1));
    }
  }
  // One label per node of type t, read from `where` (positions are its elements from `first`).
  void set_type_labels(int t, const std::vector<std::int64_t>& ys, const std::string& where, const std::string& pos, std::size_t first) {
    if (static_cast<std::int64_t>(ys.size()) != types[static_cast<std::size_t>(t)].count)
      throw InputError(where, "", std::to_string(ys.size()) + " labels, expected one per " + types[static_cast<std::size_t>(t)].name + " node (" +
                                      std::to_string(types[static_cast<std::size_t>(t)].count) + ")");
    for (std::size_t i = 0; i < ys.size(); ++i) {
      if (ys[i] < -1 || ys[i] >= (std::int64_t{1} << 31))
        throw InputError(where, pos + std::to_string(first + i), "label " + std::to_string(ys[i]) + ", expected a class index >= 0 or -1 for unlabelled");
      labels[static_cast<std::size_t>(begin[static_cast<std::size_t>(t)]) + i] = ys[i];
    }
    label_origin = where;
  }
};

Dataset assemble(TypedInput&& in, const std::string& where, const std::string& name, const std::string& source, const ReadOptions& options) {
  if (in.relations.empty()) throw InputError(where, "", "holds no relation (edge) files");
  CleanOptions clean = options.clean;
  if (clean.symmetrize && !options.add_reverse)
    throw InputError(where, "", "--symmetrize on a typed graph would add edges of no relation; --add-reverse adds each relation's reverse");
  clean.symmetrize = options.add_reverse;
  // Several relations between one pair of types can only be told apart by an id per edge.
  std::set<std::pair<std::string, std::string>> pairs;
  bool ids = options.relation_ids;
  for (const Relation& r : in.relations) ids |= !pairs.insert({r.src, r.dst}).second;
  std::vector<Relation> relations = in.relations;
  const auto R = static_cast<std::int32_t>(in.relations.size());
  if (options.add_reverse) {
    // With ids every relation gets its own reverse (a knowledge graph's r and its inverse); without,
    // a relation within one type is its own reverse (undirected), as the type pair names it.
    for (const Relation& rel : in.relations)
      if (ids || rel.src != rel.dst) relations.push_back(Relation{rel.dst, "rev_" + rel.name, rel.src});
    // With ids, relation r's reverse is R + r and the other way round.
    if (ids)
      for (std::int32_t r = 0; r < 2 * R; ++r) in.edges.reverse_relation.push_back(r < R ? R + r : r - R);
  }
  if (!ids) in.edges.relation = {};
  Dataset ds;
  ds.name = name;
  ds.source = source;
  // The schema first: a second relation between one pair of types without ids, or a relation
  // listed twice, is refused before the graph is built.
  ds.schema = GraphSchema(in.types, relations, where, ids);
  BuiltGraph built = build_csr(std::move(in.edges), clean);
  ds.graph = std::move(built.graph);
  if (ids) ds.edge_relations = Array<std::int32_t>(std::move(built.relations));
  ds.cleaning = built.report;
  ds.type_features = std::move(in.features);
  if (std::any_of(in.labels.begin(), in.labels.end(), [](std::int64_t y) { return y >= 0; }))
    set_labels(ds, std::move(in.labels), in.label_origin, "node ", 0);
  if (!in.train.empty() || !in.val.empty() || !in.test.empty()) {
    ds.train_idx = Array<NodeId>(std::move(in.train));
    ds.val_idx = Array<NodeId>(std::move(in.val));
    ds.test_idx = Array<NodeId>(std::move(in.test));
  }
  return ds;
}

// The parts of a folder name joined by `sep` ("author___writes___paper", "paper__cites__paper").
std::vector<std::string> split_name(const std::string& s, const std::string& sep) {
  std::vector<std::string> parts;
  boost::algorithm::iter_split(parts, s, boost::algorithm::first_finder(sep));
  return parts;
}

std::vector<fs::path> subfolders(const fs::path& dir) {
  std::vector<fs::path> out;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.is_directory()) out.push_back(e.path());
  std::sort(out.begin(), out.end());
  return out;
}

// The lines of a small text file (plain or gzip), blank ones dropped, each split at commas.
std::vector<std::vector<std::string>> csv_rows(const std::string& path) {
  std::string text;
  for_each_text_chunk(path, [&](std::string_view chunk, std::uint64_t) { text.append(chunk); });
  std::vector<std::vector<std::string>> rows;
  for (std::string line : split_name(text, "\n")) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.find_first_not_of(" \t") == std::string::npos) continue;
    rows.push_back(split_name(line, ","));
  }
  return rows;
}

}  // namespace

Dataset read_ogb_hetero_dataset(const std::string& dir, const ReadOptions& options) {
  TypedInput in;
  {
    const std::string p = require_ogb_file(dir, "raw/num-node-dict");
    const auto rows = csv_rows(p);
    if (rows.size() != 2 || rows[0].size() != rows[1].size())
      throw InputError(p, "", "expected two lines, node type names and as many node counts");
    std::vector<NodeType> types;
    for (std::size_t t = 0; t < rows[0].size(); ++t) {
      std::int64_t count = -1;
      const std::string& c = rows[1][t];
      const auto [end, ec] = std::from_chars(c.data(), c.data() + c.size(), count);
      if (ec != std::errc() || end != c.data() + c.size() || count < 0)
        throw InputError(p, at_line_col(2, t + 1), "expected a node count for type '" + rows[0][t] + "', found '" + c + "'");
      types.push_back(NodeType{rows[0][t], count, 0});
    }
    in.set_types(std::move(types));
  }
  const fs::path rel_root = fs::path(dir) / "raw" / "relations";
  std::error_code ec;
  if (!fs::is_directory(rel_root, ec)) throw InputError(rel_root.string(), "", "missing: the OGB heterogeneous layout keeps a folder per relation there");
  for (const fs::path& r : subfolders(rel_root)) {
    const auto parts = split_name(r.filename().string(), "___");
    if (parts.size() != 3) throw InputError(r.string(), "", "expected a relation folder named <src>___<relation>___<dst>");
    const int s = in.type_index(parts[0], r.string()), d = in.type_index(parts[2], r.string());
    const std::string p = require_ogb_file(r.string(), "edge");
    const RawEdges raw = parse_edge_file(p, std::numeric_limits<std::int64_t>::max());
    in.relations.push_back(Relation{parts[0], parts[1], parts[2]});
    in.add_edges(s, d, raw.src, raw.dst, 0, p);
  }
  for (std::size_t t = 0; t < in.types.size(); ++t) {
    const std::string& type = in.types[t].name;
    if (const std::string p = ogb_file(dir, "raw/node-feat/" + type + "/node-feat"); !p.empty()) {
      FeatureCsv f = read_feature_csv(p);
      if (f.rows != in.types[t].count)
        throw InputError(p, "end of file", std::to_string(f.rows) + " feature rows, expected one per " + type + " node (" + std::to_string(in.types[t].count) + ")");
      in.types[t].feature_dim = f.dim;
      in.features[t] = Array<float>(std::move(f.values));
    }
    if (const std::string p = ogb_file(dir, "raw/node-label/" + type + "/node-label"); !p.empty()) {
      const std::int64_t unlabelled = -1;
      in.set_type_labels(static_cast<int>(t), read_int_column(p, "an integer class label", &unlabelled), p, "line ", 1);
    }
  }
  if (const std::string sdir = ogb_split_dir(dir, options); !sdir.empty()) {
    bool any = false;
    for (std::size_t t = 0; t < in.types.size(); ++t) {
      const std::string tdir = (fs::path(sdir) / in.types[t].name).string();
      if (!fs::is_directory(tdir, ec)) continue;
      any = true;
      for (auto [file, out] : {std::pair{"train", &in.train}, {"valid", &in.val}, {"test", &in.test}}) {
        const auto ids = read_ogb_split_ids(tdir, file, in.begin[t], in.types[t].count);
        out->insert(out->end(), ids.begin(), ids.end());
      }
    }
    if (!any) throw InputError(sdir, "", "holds no folder named after a node type (split/<name>/<type>/train.csv.gz)");
  }
  return assemble(std::move(in), dir, options.name.empty() ? default_name(dir) : options.name, dir + " (ogb, typed)", options);
}

Dataset read_igbh_dataset(const std::string& dir, const ReadOptions& options) {
  std::error_code ec;
  const fs::path root = fs::is_directory(fs::path(dir) / "processed", ec) ? fs::path(dir) / "processed" : fs::path(dir);
  if (!fs::is_directory(root, ec)) throw InputError(dir, "", "expected an IGB-Het folder (processed/<type>/node_feat.npy, processed/<src>__<rel>__<dst>/edge_index.npy)");
  TypedInput in;
  std::vector<fs::path> relation_dirs;
  std::vector<NodeType> types;
  std::vector<NpyBuffer> feats;
  for (const fs::path& sub : subfolders(root)) {
    const std::string name = sub.filename().string();
    if (name.find("__") != std::string::npos) {
      relation_dirs.push_back(sub);
      continue;
    }
    const fs::path f = sub / "node_feat.npy";
    if (!fs::exists(f, ec)) continue;
    NpyBuffer buf = map_npy(f.string());
    if (buf.header.shape.size() != 2) throw InputError(f.string(), "", "expected a 2-d array of feature rows (N x F)");
    types.push_back(NodeType{name, buf.header.shape[0], buf.header.shape[1]});
    feats.push_back(std::move(buf));
  }
  if (types.empty()) throw InputError(root.string(), "", "holds no <type>/node_feat.npy: not an IGB-Het folder");
  in.set_types(types);
  for (std::size_t t = 0; t < types.size(); ++t) {
    Dataset tmp;
    const std::string f = (root / types[t].name / "node_feat.npy").string();
    // A type without features may come as [N, 0] (what `data export --format igbh` writes).
    if (types[t].feature_dim > 0) {
      read_feature_matrix(tmp, npy_stream(feats[t]), &feats[t], types[t].count, options, f, "row ");
      in.features[t] = std::move(tmp.features);
    }
    const fs::path lp = root / types[t].name / ("node_label_" + options.igb_labels + ".npy");
    if (!fs::exists(lp, ec)) continue;
    // IGB-Het stores its labels as floats in some releases: whole numbers are accepted.
    const std::vector<double> ys = npy_to_vector<double>(map_npy(lp.string()));
    std::vector<std::int64_t> labels(ys.size());
    for (std::size_t i = 0; i < ys.size(); ++i) {
      if (ys[i] != std::floor(ys[i]) || std::fabs(ys[i]) > 0x1p31)
        throw InputError(lp.string(), "element " + std::to_string(i), "label " + std::to_string(ys[i]) + ", expected a whole class index");
      labels[i] = static_cast<std::int64_t>(ys[i]);
    }
    in.set_type_labels(static_cast<int>(t), labels, lp.string(), "element ", 0);
  }
  for (const fs::path& r : relation_dirs) {
    const auto parts = split_name(r.filename().string(), "__");
    if (parts.size() != 3) throw InputError(r.string(), "", "expected a relation folder named <src>__<relation>__<dst>");
    const int s = in.type_index(parts[0], r.string()), d = in.type_index(parts[2], r.string());
    const std::string p = (r / "edge_index.npy").string();
    const NpyBuffer buf = map_npy(p);
    if (buf.header.shape.size() != 2 || buf.header.shape[1] != 2) throw InputError(p, "", "expected an [E, 2] array of (source, destination) rows");
    in.relations.push_back(Relation{parts[0], parts[1], parts[2]});
    std::vector<std::int64_t> src, dst, carry;
    std::uint64_t done = 0;
    npy_for_each<std::int64_t>(npy_stream(buf), 2, std::size_t{1} << 20, [&](std::span<const std::int64_t> v, std::uint64_t) {
      src.clear();
      dst.clear();
      std::size_t i = 0;
      // A row split between two pieces: its source came last in the one before.
      if (!carry.empty() && !v.empty()) src.push_back(carry[0]), dst.push_back(v[0]), carry.clear(), i = 1;
      for (; i + 1 < v.size(); i += 2) src.push_back(v[i]), dst.push_back(v[i + 1]);
      if (i < v.size()) carry.assign(1, v[i]);
      in.add_edges(s, d, src, dst, done, p);
      done += src.size();
    });
  }
  return assemble(std::move(in), dir, options.name.empty() ? default_name(dir) : options.name, dir + " (igbh)", options);
}

}  // namespace shardgnn
