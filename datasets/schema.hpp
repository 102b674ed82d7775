// Typed graphs: node types and relations over the one CSR of global ids (DESIGN.md's "one CSR,
// a type per node and per edge"). Each node type owns a contiguous range of ids, in the order the
// types are listed, so a node's type is a search over the types' offsets and no per-node array is
// stored. At most one relation joins a (source type, destination type) pair, so an entry u -> v's
// relation is the pair's, and a row sorted by neighbour holds each relation's neighbours as one
// run (the range of the destination type's ids): no per-edge array either, and per-relation
// fanouts find their run by binary search. An untyped dataset has an empty schema, and its paths
// are as they were.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include <boost/json.hpp>

#include "datasets/graph.hpp"

namespace shardgnn {

struct NodeType {
  std::string name;
  NodeId count = 0;
  std::int64_t feature_dim = 0;  // 0: no features (a learnable embedding's type)
};

// Edges from `src` nodes to `dst` nodes, one entry u -> v in u's row each.
struct Relation {
  std::string src, name, dst;
};

class GraphSchema {
 public:
  GraphSchema() = default;
  // Checks names (non-empty, [A-Za-z0-9_-], unique), that relations join listed types, and that
  // no two relations join the same pair; throws InputError naming `where`.
  GraphSchema(std::vector<NodeType> types, std::vector<Relation> relations, const std::string& where);

  bool typed() const noexcept { return !types_.empty(); }
  // Some node type has no features (its rows are learnt: model/dist_embedding.hpp).
  bool featureless() const noexcept {
    return std::any_of(types_.begin(), types_.end(), [](const NodeType& t) { return t.feature_dim == 0; });
  }
  const std::vector<NodeType>& types() const noexcept { return types_; }
  const std::vector<Relation>& relations() const noexcept { return relations_; }
  int num_types() const noexcept { return static_cast<int>(types_.size()); }
  NodeId num_nodes() const noexcept { return offsets_.empty() ? 0 : offsets_.back(); }
  // Type t owns the ids [begin(t), end(t)).
  NodeId begin(int t) const noexcept { return offsets_[static_cast<std::size_t>(t)]; }
  NodeId end(int t) const noexcept { return offsets_[static_cast<std::size_t>(t) + 1]; }
  int type_of(NodeId v) const noexcept;
  int type_named(const std::string& name) const noexcept;  // -1 when none
  // The relation from type s to type d, -1 when none.
  int relation_between(int s, int d) const noexcept { return pair_[static_cast<std::size_t>(s * num_types() + d)]; }
  // "paper__cites__paper", as the IGB-Het and DGL canonical edge types name it.
  std::string relation_label(int r) const;

 private:
  std::vector<NodeType> types_;
  std::vector<Relation> relations_;
  std::vector<NodeId> offsets_;
  std::vector<int> pair_;
};

// meta.json's "node_types" and "relations" (absent: an untyped graph). `num_nodes` must be the
// types' total.
GraphSchema schema_from_json(const boost::json::object& meta, const std::string& path, NodeId num_nodes);
void schema_to_json(const GraphSchema& s, boost::json::object& meta);

// Every entry u -> v is an edge of a relation from u's type to v's; throws InputError naming the
// first that is not (its position in `indices_file`). O(entries), one comparison per entry.
void check_relations(const CsrGraph& g, const GraphSchema& s, const std::string& indices_file);

// Entries of each relation (its index in s.relations()), counted along the rows.
std::vector<std::int64_t> relation_entries(const CsrGraph& g, const GraphSchema& s);

// A typed graph given to a command that trains or partitions one node type: one line saying so.
void require_untyped(const GraphSchema& s, const std::string& what, const std::string& command);

}  // namespace shardgnn
