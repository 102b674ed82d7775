// GraphSAINT's dataset folder (Zeng et al. 2020; the layout of Flickr, Yelp, Reddit, PPI and
// Amazon that DGL and PyG read): adj_full.npz (scipy.sparse.save_npz of the whole graph's CSR),
// feats.npy (float features, one row per node), class_map.json ({"node id": class} or
// {"node id": [0/1 per label]}) and role.json ({"tr": [...], "va": [...], "te": [...]}).
// adj_train.npz, the training nodes' subgraph for GraphSAINT's inductive protocol, is not read:
// training here samples the whole graph from the training nodes, as DGL's loaders do.
// class_map.json is parsed as a stream (Yelp's holds 72M label entries), never as a whole DOM.
#include <boost/json/basic_parser_impl.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>

#include "datasets/error.hpp"
#include "datasets/json_util.hpp"
#include "datasets/npy.hpp"
#include "datasets/npz.hpp"
#include "datasets/readers.hpp"

namespace fs = std::filesystem;

namespace shardgnn {

namespace {

// The whole graph's adjacency: a square CSR matrix in scipy's npz members.
void read_adjacency(const std::string& path, Dataset& ds, const ReadOptions& options) {
  NpzArchive z(path);
  if (z.contains("format")) {
    const NpyBuffer f = z.read("format");
    std::string fmt(reinterpret_cast<const char*>(f.data().data()), f.data().size());
    fmt.erase(std::find(fmt.begin(), fmt.end(), '\0'), fmt.end());
    if (fmt != "csr") throw InputError(path, "member 'format.npy'", "sparse format '" + fmt + "', expected 'csr' (scipy.sparse.save_npz of a CSR matrix)");
  }
  const auto shape = npy_to_vector<std::int64_t>(z.read("shape"), 1);
  if (shape.size() != 2 || shape[0] != shape[1] || shape[0] < 0 || shape[0] >= (std::int64_t{1} << 40))
    throw InputError(path, "member 'shape.npy'", "expected a square matrix's (n, n), n below 2^40");
  read_npz_adjacency(ds, z, "indptr", "indices", shape[0], options);
}

// class_map.json's entries, as the parser meets them: one class per node, or one 0/1 row.
class ClassMapHandler {
 public:
  static constexpr std::size_t max_object_size = std::size_t(-1);
  static constexpr std::size_t max_array_size = std::size_t(-1);
  static constexpr std::size_t max_key_size = std::size_t(-1);
  static constexpr std::size_t max_string_size = std::size_t(-1);

  explicit ClassMapHandler(std::int64_t n) : n_(n) {}

  std::string problem;                 // set when a callback refuses
  std::int64_t classes = -1;           // multi-label: the row length; single: the largest class + 1
  bool multi = false, decided = false;
  std::vector<std::int64_t> labels;    // single-label, -1 = not in the map
  std::vector<std::uint8_t> bits;      // multi-label, label_row_bytes(classes) a node, as label_bits.npy
  std::vector<char> seen;

  bool on_document_begin(boost::json::error_code&) { return true; }
  bool on_document_end(boost::json::error_code&) { return true; }
  bool on_object_begin(boost::json::error_code& ec) { return depth_++ == 0 || refuse(ec, "expected {\"node id\": label, ...}, found a nested object"); }
  bool on_object_end(std::size_t, boost::json::error_code&) {
    --depth_;
    return true;
  }
  bool on_array_begin(boost::json::error_code& ec) {
    if (depth_ != 1) return refuse(ec, "expected a class or a list of 0/1 labels, found a nested list");
    if (!decide(true, ec)) return false;
    ++depth_;
    column_ = 0;
    return true;
  }
  bool on_array_end(std::size_t n, boost::json::error_code& ec) {
    --depth_;
    if (classes < 0) {
      if (n == 0) return refuse(ec, "an empty label list: expected one 0/1 entry per label");
      classes = static_cast<std::int64_t>(n);
      bits.assign(static_cast<std::size_t>(n_ * label_row_bytes(classes)), 0);
      for (std::size_t i = 0; i < row_.size(); ++i) set(static_cast<std::int64_t>(i), row_[i]);
    } else if (static_cast<std::int64_t>(n) != classes) {
      return refuse(ec, "has " + std::to_string(n) + " labels, the first node " + std::to_string(classes));
    }
    row_.clear();
    return true;
  }
  bool on_key_part(boost::json::string_view s, std::size_t, boost::json::error_code&) {
    key_.append(s.data(), s.size());
    return true;
  }
  bool on_key(boost::json::string_view s, std::size_t, boost::json::error_code& ec) {
    key_.append(s.data(), s.size());
    const std::string key = std::move(key_);
    key_.clear();
    std::size_t used = 0;
    long long v = -1;
    try {
      v = std::stoll(key, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    where_ = "node '" + key + "'";
    if (used != key.size() || v < 0 || v >= n_) return refuse(ec, "not a node id of the graph's " + std::to_string(n_) + " nodes");
    if (seen.empty()) seen.assign(static_cast<std::size_t>(n_), 0);
    if (seen[static_cast<std::size_t>(v)]) return refuse(ec, "listed twice");
    seen[static_cast<std::size_t>(v)] = 1;
    node_ = v;
    return true;
  }
  bool on_string_part(boost::json::string_view, std::size_t, boost::json::error_code& ec) { return refuse(ec, "expected a number, found a string"); }
  bool on_string(boost::json::string_view, std::size_t, boost::json::error_code& ec) { return refuse(ec, "expected a number, found a string"); }
  bool on_number_part(boost::json::string_view, boost::json::error_code&) { return true; }
  bool on_int64(std::int64_t i, boost::json::string_view, boost::json::error_code& ec) { return value(i, ec); }
  bool on_uint64(std::uint64_t u, boost::json::string_view, boost::json::error_code& ec) { return value(static_cast<std::int64_t>(std::min<std::uint64_t>(u, INT64_MAX)), ec); }
  bool on_double(double d, boost::json::string_view, boost::json::error_code& ec) {
    if (d != std::floor(d) || d < 0 || d > 1e9) return refuse(ec, "expected an integer label, found " + std::to_string(d));
    return value(static_cast<std::int64_t>(d), ec);
  }
  bool on_bool(bool b, boost::json::error_code& ec) { return depth_ == 2 ? value(b ? 1 : 0, ec) : refuse(ec, "expected a class, found true or false"); }
  bool on_null(boost::json::error_code& ec) { return refuse(ec, "expected a label, found null"); }
  bool on_comment_part(boost::json::string_view, boost::json::error_code&) { return true; }
  bool on_comment(boost::json::string_view, boost::json::error_code&) { return true; }

 private:
  bool refuse(boost::json::error_code& ec, const std::string& what) {
    problem = (where_.empty() ? "" : where_ + ": ") + what;
    ec = boost::json::error::syntax;  // our message is in `problem`
    return false;
  }
  void set(std::int64_t column, std::uint8_t x) {
    if (x) set_label(bits.data() + node_ * label_row_bytes(classes), column);
  }
  bool decide(bool is_multi, boost::json::error_code& ec) {
    if (!decided) {
      decided = true;
      multi = is_multi;
      if (!multi) labels.assign(static_cast<std::size_t>(n_), -1);
    }
    return multi == is_multi || refuse(ec, multi ? "a single class where the other nodes have label lists" : "a label list where the other nodes have single classes");
  }
  bool value(std::int64_t x, boost::json::error_code& ec) {
    if (depth_ == 2) {  // an entry of a node's row
      if (x != 0 && x != 1) return refuse(ec, "label entry " + std::to_string(x) + ", expected 0 or 1");
      if (classes < 0) {
        row_.push_back(static_cast<std::uint8_t>(x));
      } else {
        if (column_ >= classes) return refuse(ec, "has more than " + std::to_string(classes) + " labels, as the first node");
        set(column_, static_cast<std::uint8_t>(x));
      }
      ++column_;
      return true;
    }
    if (depth_ != 1) return refuse(ec, "expected an object of node ids");
    if (!decide(false, ec)) return false;
    if (x < 0 || x >= (std::int64_t{1} << 31)) return refuse(ec, "class " + std::to_string(x) + ", expected 0 to 2^31 - 1");
    labels[static_cast<std::size_t>(node_)] = x;
    classes = std::max(classes, x + 1);
    return true;
  }

  std::int64_t n_;
  int depth_ = 0;
  std::string key_, where_;
  std::int64_t node_ = -1, column_ = 0;
  std::vector<std::uint8_t> row_;  // the first row, until its length is known
};

void read_class_map(const std::string& path, Dataset& ds, std::vector<char>& seen) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(path, "", "cannot open it (GraphSAINT's class_map.json)");
  boost::json::basic_parser<ClassMapHandler> p(boost::json::parse_options{}, ds.num_nodes());
  std::vector<char> buf(std::size_t{1} << 20);
  boost::json::error_code ec;
  std::uint64_t at = 0;  // bytes the parser took: where an error stands
  while (in) {
    in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
    const auto got = static_cast<std::size_t>(in.gcount());
    for (std::size_t off = 0; off < got && !ec;) {
      const std::size_t used = p.write_some(true, buf.data() + off, got - off, ec);
      off += used;
      at += used;
    }
    if (ec) break;
  }
  if (!ec) p.write_some(false, nullptr, 0, ec);
  ClassMapHandler& h = p.handler();
  if (ec && h.problem.empty()) throw InputError(path, "byte " + std::to_string(at), "malformed JSON: " + ec.message());
  if (ec) throw InputError(path, "", h.problem);
  seen = std::move(h.seen);  // which nodes have an entry (the caller checks the splits' nodes)
  if (!h.decided) return;  // an empty map: no labels
  ds.num_classes = std::max<std::int64_t>(h.classes, 0);
  if (h.multi) {
    ds.multilabel = true;
    ds.label_bits = Array<std::uint8_t>(std::move(h.bits));
  } else {
    ds.labels = Array<std::int64_t>(std::move(h.labels));
  }
}

// role.json's "tr", "va" and "te" node lists.
void read_roles(const std::string& path, Dataset& ds) {
  const boost::json::value v = read_json_file(path);
  if (!v.is_object()) throw InputError(path, "", "expected {\"tr\": [...], \"va\": [...], \"te\": [...]}");
  const auto& o = v.get_object();
  for (auto [key, split] : {std::pair{"tr", &ds.train_idx}, {"va", &ds.val_idx}, {"te", &ds.test_idx}}) {
    const auto* a = o.if_contains(key);
    if (a == nullptr) throw InputError(path, "", std::string("lacks '") + key + "' (GraphSAINT's role.json has tr, va and te)");
    if (!a->is_array()) throw InputError(path, std::string("key '") + key + "'", "expected a list of node ids");
    std::vector<NodeId> ids;
    ids.reserve(a->get_array().size());
    for (std::size_t i = 0; i < a->get_array().size(); ++i) {
      const auto& x = a->get_array()[i];
      if (!x.is_int64() || x.get_int64() < 0 || x.get_int64() >= ds.num_nodes())
        throw InputError(path, std::string("key '") + key + "', element " + std::to_string(i),
                         "expected a node id in [0, " + std::to_string(ds.num_nodes()) + "), found " + boost::json::serialize(x));
      ids.push_back(x.get_int64());
    }
    *split = Array<NodeId>(std::move(ids));
  }
}

}  // namespace

Dataset read_graphsaint_dataset(const std::string& dir, const ReadOptions& options) {
  const auto file = [&](const char* name) {
    const fs::path p = fs::path(dir) / name;
    if (!fs::exists(p)) throw InputError(dir, "", std::string("lacks ") + name + " (GraphSAINT's layout: adj_full.npz, feats.npy, class_map.json, role.json)");
    return p.string();
  };
  Dataset ds;
  fs::path name = fs::path(dir).lexically_normal();
  if (!name.has_filename()) name = name.parent_path();
  ds.name = options.name.empty() ? name.filename().string() : options.name;
  ds.source = dir + " (graphsaint)";
  read_adjacency(file("adj_full.npz"), ds, options);
  const std::string feats = file("feats.npy");
  const NpyBuffer mapped = map_npy(feats);
  ds.feature_dim = read_feature_matrix(ds, npy_stream(mapped), &mapped, ds.num_nodes(), options, feats, "element ");
  std::vector<char> listed;
  read_class_map(file("class_map.json"), ds, listed);
  read_roles(file("role.json"), ds);
  if (ds.multilabel)
    for (auto [key, split] : {std::pair{"tr", &ds.train_idx}, {"va", &ds.val_idx}, {"te", &ds.test_idx}})
      for (const NodeId v : *split)
        if (listed.empty() || !listed[static_cast<std::size_t>(v)])
          throw InputError(file("class_map.json"), "", "node " + std::to_string(v) + " of role.json's '" + key + "' has no label list");
  return ds;
}

}  // namespace shardgnn
