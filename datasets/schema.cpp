#include "datasets/schema.hpp"

#include <algorithm>
#include <limits>
#include <set>
#include <utility>

#include "datasets/error.hpp"
#include "datasets/json_util.hpp"

namespace shardgnn {

namespace {

bool good_name(const std::string& s) {
  return !s.empty() && s.size() <= 64 && std::all_of(s.begin(), s.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
  });
}

}  // namespace

GraphSchema::GraphSchema(std::vector<NodeType> types, std::vector<Relation> relations, const std::string& where, bool relation_ids)
    : types_(std::move(types)), relations_(std::move(relations)), relation_ids_(relation_ids) {
  if (types_.empty()) {
    if (!relations_.empty()) throw InputError(where, "key 'relations'", "relations without node types");
    return;
  }
  if (types_.size() > 255) throw InputError(where, "key 'node_types'", std::to_string(types_.size()) + " node types, at most 255");
  std::set<std::string> names;
  offsets_.push_back(0);
  for (std::size_t t = 0; t < types_.size(); ++t) {
    const NodeType& nt = types_[t];
    const std::string at = "node type " + std::to_string(t);
    if (!good_name(nt.name)) throw InputError(where, at, "name '" + nt.name + "': expected 1 to 64 of A-Z a-z 0-9 _ -");
    if (!names.insert(nt.name).second) throw InputError(where, at, "name '" + nt.name + "' listed twice");
    if (nt.count < 0) throw InputError(where, at, "negative count " + std::to_string(nt.count));
    if (nt.feature_dim < 0) throw InputError(where, at, "negative feature_dim " + std::to_string(nt.feature_dim));
    offsets_.push_back(offsets_.back() + nt.count);
  }
  const int T = num_types();
  pair_.assign(static_cast<std::size_t>(T * T), -1);
  if (relations_.size() > static_cast<std::size_t>(std::numeric_limits<std::int32_t>::max()))
    throw InputError(where, "key 'relations'", std::to_string(relations_.size()) + " relations, at most 2^31 - 1");
  std::set<std::string> labels;
  for (std::size_t r = 0; r < relations_.size(); ++r) {
    const Relation& rel = relations_[r];
    const std::string at = "relation " + std::to_string(r);
    const int s = type_named(rel.src), d = type_named(rel.dst);
    if (s < 0) throw InputError(where, at, "source type '" + rel.src + "' is not a listed node type");
    if (d < 0) throw InputError(where, at, "destination type '" + rel.dst + "' is not a listed node type");
    if (!good_name(rel.name)) throw InputError(where, at, "name '" + rel.name + "': expected 1 to 64 of A-Z a-z 0-9 _ -");
    // Fanout overrides and model cards name a relation by its label.
    if (!labels.insert(relation_label(static_cast<int>(r))).second) throw InputError(where, at, relation_label(static_cast<int>(r)) + " listed twice");
    int& slot = pair_[static_cast<std::size_t>(s * T + d)];
    // Without relation ids an entry's relation is its endpoints' pair: two relations on one pair
    // could not be told apart.
    if (slot != -1 && !relation_ids_)
      throw InputError(where, at, relation_label(static_cast<int>(r)) + " joins the same types as " + relation_label(slot) +
                                      ": at most one relation per (source type, destination type) unless each edge stores its relation "
                                      "(convert with --relation-ids)");
    slot = slot == -1 ? static_cast<int>(r) : kSeveralRelations;
  }
}

int GraphSchema::type_of(NodeId v) const noexcept {
  return static_cast<int>(std::upper_bound(offsets_.begin() + 1, offsets_.end(), v) - (offsets_.begin() + 1));
}

int GraphSchema::type_named(const std::string& name) const noexcept {
  for (std::size_t t = 0; t < types_.size(); ++t)
    if (types_[t].name == name) return static_cast<int>(t);
  return -1;
}

std::string GraphSchema::relation_label(int r) const {
  const Relation& rel = relations_[static_cast<std::size_t>(r)];
  return rel.src + "__" + rel.name + "__" + rel.dst;
}

GraphSchema schema_from_json(const boost::json::object& meta, const std::string& path, NodeId num_nodes) {
  const auto* types = meta.if_contains("node_types");
  const auto* rels = meta.if_contains("relations");
  if (types == nullptr && rels == nullptr) return {};
  if (types == nullptr || !types->is_array()) throw InputError(path, "key 'node_types'", "expected a list of {\"name\", \"count\", \"feature_dim\"}");
  if (rels == nullptr || !rels->is_array()) throw InputError(path, "key 'relations'", "expected a list of {\"src\", \"name\", \"dst\"}");
  std::vector<NodeType> nt;
  for (const auto& v : types->get_array()) {
    if (!v.is_object()) throw InputError(path, "key 'node_types'", "expected objects {\"name\", \"count\", \"feature_dim\"}");
    const auto& o = v.get_object();
    nt.push_back({json_string(o, "name", path), json_int(o, "count", path), json_int(o, "feature_dim", path)});
  }
  std::vector<Relation> rs;
  for (const auto& v : rels->get_array()) {
    if (!v.is_object()) throw InputError(path, "key 'relations'", "expected objects {\"src\", \"name\", \"dst\"}");
    const auto& o = v.get_object();
    rs.push_back({json_string(o, "src", path), json_string(o, "name", path), json_string(o, "dst", path)});
  }
  bool ids = false;
  if (const auto* v = meta.if_contains("relation_ids")) {
    if (!v->is_bool()) throw InputError(path, "key 'relation_ids'", "expected true or false");
    ids = v->get_bool();
  }
  GraphSchema s(std::move(nt), std::move(rs), path, ids);
  if (s.typed() && s.num_nodes() != num_nodes)
    throw InputError(path, "key 'node_types'", "counts add up to " + std::to_string(s.num_nodes()) + " nodes, num_nodes is " + std::to_string(num_nodes));
  return s;
}

void schema_to_json(const GraphSchema& s, boost::json::object& meta) {
  if (!s.typed()) return;
  boost::json::array types, rels;
  for (const NodeType& t : s.types()) types.push_back({{"name", t.name}, {"count", t.count}, {"feature_dim", t.feature_dim}});
  for (const Relation& r : s.relations()) rels.push_back({{"src", r.src}, {"name", r.name}, {"dst", r.dst}});
  meta["node_types"] = std::move(types);
  meta["relations"] = std::move(rels);
  if (s.relation_ids()) meta["relation_ids"] = true;
}

void check_relations(const CsrGraph& g, const GraphSchema& s, const std::string& indices_file) {
  if (!s.typed() || s.relation_ids()) return;
  const auto& indptr = g.indptr();
  g.visit([&](const auto& view) {
    const auto indices = view.indices();
    for (int ts = 0; ts < s.num_types(); ++ts)
      for (NodeId u = s.begin(ts); u < s.end(ts); ++u) {
        // The row is sorted, so the destination type only rises along it.
        int td = 0;
        for (EdgeId e = indptr[u]; e < indptr[u + 1]; ++e) {
          const NodeId v = indices[static_cast<std::size_t>(e)];
          while (v >= s.end(td)) ++td;
          if (s.relation_between(ts, td) < 0)
            throw InputError(indices_file, "element " + std::to_string(e),
                             "edge " + std::to_string(u) + " -> " + std::to_string(v) + " goes from a " + s.types()[static_cast<std::size_t>(ts)].name + " to a " +
                                 s.types()[static_cast<std::size_t>(td)].name + ", and no relation joins them");
        }
      }
  });
}

namespace {

// Entry e of row u (which starts at `row_begin`): its relation id in [0, relations) and after the
// entry before it in (relation, neighbour) order.
template <class Rel, class Ids>
void check_entry_order(Rel rel, Ids indices, NodeId u, EdgeId row_begin, EdgeId e, std::int64_t relations, const std::string& relations_file,
                       const std::string& indices_file) {
  const auto i = static_cast<std::size_t>(e);
  const std::int64_t r = rel[i];
  if (r < 0 || r >= relations)
    throw InputError(relations_file, "element " + std::to_string(e), "relation id " + std::to_string(r) + ", expected 0 to " + std::to_string(relations - 1));
  if (e > row_begin && (rel[i - 1] > r || (rel[i - 1] == r && indices[i - 1] > indices[i])))
    throw InputError(indices_file, "element " + std::to_string(e),
                     "row " + std::to_string(u) + " is not ordered by (relation, neighbour): (" + std::to_string(rel[i - 1]) + ", " +
                         std::to_string(indices[i - 1]) + ") comes before (" + std::to_string(r) + ", " + std::to_string(indices[i]) + ")");
}

void check_relation_count(const CsrGraph& g, const IntArray& ids, const std::string& relations_file, const std::string& indices_file) {
  if (static_cast<EdgeId>(ids.size()) != g.num_edges())
    throw InputError(relations_file, "", std::to_string(ids.size()) + " relation ids, expected one per entry of " + indices_file + " (" +
                                         std::to_string(g.num_edges()) + ")");
}

}  // namespace

void check_relation_order(const CsrGraph& g, std::int64_t relations, const IntArray& ids, const std::string& relations_file, const std::string& indices_file) {
  check_relation_count(g, ids, relations_file, indices_file);
  const auto& indptr = g.indptr();
  g.visit([&](const auto& view) {
    const auto indices = view.indices();
    ids.visit([&](auto rel) {
      for (NodeId u = 0; u < g.num_nodes(); ++u)
        for (EdgeId e = indptr[u]; e < indptr[u + 1]; ++e) check_entry_order(rel, indices, u, indptr[u], e, relations, relations_file, indices_file);
    });
  });
}

void check_relation_ids(const CsrGraph& g, const GraphSchema& s, const IntArray& relations, const std::string& relations_file,
                        const std::string& indices_file) {
  if (!s.relation_ids()) return;
  check_relation_count(g, relations, relations_file, indices_file);
  const auto R = static_cast<std::int64_t>(s.relations().size());
  std::vector<int> src_type(static_cast<std::size_t>(R)), dst_type(static_cast<std::size_t>(R));
  for (std::int64_t r = 0; r < R; ++r) {
    src_type[static_cast<std::size_t>(r)] = s.type_named(s.relations()[static_cast<std::size_t>(r)].src);
    dst_type[static_cast<std::size_t>(r)] = s.type_named(s.relations()[static_cast<std::size_t>(r)].dst);
  }
  const auto& indptr = g.indptr();
  g.visit([&](const auto& view) {
    const auto indices = view.indices();
    relations.visit([&](auto rel) {
      for (int ts = 0; ts < s.num_types(); ++ts)
        for (NodeId u = s.begin(ts); u < s.end(ts); ++u)
          for (EdgeId e = indptr[u]; e < indptr[u + 1]; ++e) {
            check_entry_order(rel, indices, u, indptr[u], e, R, relations_file, indices_file);
            const auto ri = static_cast<std::size_t>(rel[static_cast<std::size_t>(e)]);
            const NodeId v = indices[static_cast<std::size_t>(e)];
            const int td = s.type_of(v);
            if (src_type[ri] != ts || dst_type[ri] != td)
              throw InputError(relations_file, "element " + std::to_string(e),
                               "edge " + std::to_string(u) + " -> " + std::to_string(v) + " goes from a " + s.types()[static_cast<std::size_t>(ts)].name +
                                   " to a " + s.types()[static_cast<std::size_t>(td)].name + ", not as its relation " + s.relation_label(static_cast<int>(ri)) +
                                   " does");
          }
    });
  });
}

std::vector<std::int64_t> relation_entries(const CsrGraph& g, const GraphSchema& s, const IntArray& relations) {
  std::vector<std::int64_t> count(s.relations().size(), 0);
  if (s.relation_ids()) {
    relations.visit([&](auto rel) {
      for (const auto r : rel) ++count[static_cast<std::size_t>(r)];
    });
    return count;
  }
  const auto& indptr = g.indptr();
  g.visit([&](const auto& view) {
    const auto indices = view.indices();
    for (int ts = 0; ts < s.num_types(); ++ts)
      for (NodeId u = s.begin(ts); u < s.end(ts); ++u) {
        // Each destination type's run found by binary search: the per-relation fanout's lookup.
        const auto* row = indices.data() + indptr[u];
        const auto* row_end = indices.data() + indptr[u + 1];
        for (int td = 0; td < s.num_types(); ++td) {
          const int r = s.relation_between(ts, td);
          if (r < 0) continue;
          count[static_cast<std::size_t>(r)] += std::lower_bound(row, row_end, s.end(td)) - std::lower_bound(row, row_end, s.begin(td));
        }
      }
  });
  return count;
}

void require_untyped(const GraphSchema& s, const std::string& what, const std::string& command) {
  if (!s.typed()) return;
  throw InputError(what, "", "a typed graph (" + std::to_string(s.num_types()) + " node types, " + std::to_string(s.relations().size()) + " relations): " + command +
                                 " takes graphs of one node type");
}

}  // namespace shardgnn
