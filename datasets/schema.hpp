// Typed graphs: node types and relations over the one CSR of global ids (DESIGN.md's "one CSR,
// a type per node and per edge"). Each node type owns a contiguous range of ids, in the order the
// types are listed, so a node's type is a search over the types' offsets and no per-node array is
// stored. An entry's relation is found one of two ways:
// - by its end types, when at most one relation joins each (source type, destination type): a
//   row sorted by neighbour then holds each relation's neighbours as one run (the range of the
//   destination type's ids), and no per-edge array is stored;
// - from a relation id per entry (`edge_relations.npy`, aligned with `indices`), when the schema
//   says so (relation_ids()): any number of relations may join a pair of types (a knowledge
//   graph's hundreds between entities), and each row holds its entries ordered by (relation,
//   neighbour), so a relation's neighbours are again one run, found by binary search.
// An untyped dataset has an empty schema, and its paths are as they were.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include <boost/json.hpp>

#include "datasets/graph.hpp"
#include "datasets/int_array.hpp"
#include "datasets/npy.hpp"

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
  // Checks names (non-empty, [A-Za-z0-9_-], unique), that relations join listed types and that no
  // two have one label; without `relation_ids`, also that no two relations join the same pair (an
  // entry's relation is then its end types'). Throws InputError naming `where`.
  GraphSchema(std::vector<NodeType> types, std::vector<Relation> relations, const std::string& where, bool relation_ids = false);

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
  // Each entry's relation is stored (edge_relations.npy) rather than taken from its end types.
  bool relation_ids() const noexcept { return relation_ids_; }
  // The relation from type s to type d: -1 when none, kSeveralRelations when several (only with
  // relation_ids()).
  static constexpr int kSeveralRelations = -2;
  int relation_between(int s, int d) const noexcept { return pair_[static_cast<std::size_t>(s * num_types() + d)]; }
  // "paper__cites__paper", as the IGB-Het and DGL canonical edge types name it.
  std::string relation_label(int r) const;

 private:
  std::vector<NodeType> types_;
  std::vector<Relation> relations_;
  std::vector<NodeId> offsets_;
  std::vector<int> pair_;
  bool relation_ids_ = false;
};

// The narrowest signed type that holds every relation id of `relations` (int8 up to 128, int16 up
// to 32,768, else int32): what edge_relations.npy is stored as.
inline DType relation_dtype(std::size_t relations) {
  return relations <= 128 ? DType::kInt8 : relations <= 32768 ? DType::kInt16 : DType::kInt32;
}

// meta.json's "node_types", "relations" and "relation_ids" (absent: an untyped graph; false:
// relations from end types). `num_nodes` must be the types' total.
GraphSchema schema_from_json(const boost::json::object& meta, const std::string& path, NodeId num_nodes);
void schema_to_json(const GraphSchema& s, boost::json::object& meta);

// Every entry u -> v is an edge of a relation from u's type to v's; throws InputError naming the
// first that is not (its position in `indices_file`). O(entries), one comparison per entry.
void check_relations(const CsrGraph& g, const GraphSchema& s, const std::string& indices_file);

// `ids` holds one relation id per entry of `g`, each in [0, relations), and each row is ordered by
// (relation, neighbour) (a repeated entry allowed, as a row without relation ids may repeat a
// neighbour unless conversion dropped duplicates); throws InputError naming the first entry that
// is not. What a shard's rows (global ids, types not at hand) are checked against. O(entries).
void check_relation_order(const CsrGraph& g, std::int64_t relations, const IntArray& ids, const std::string& relations_file, const std::string& indices_file);

// With relation ids: check_relation_order, and each entry u -> v of a relation from u's type to
// v's; throws InputError naming the first that is not (its position in `relations_file` or
// `indices_file`). O(entries).
void check_relation_ids(const CsrGraph& g, const GraphSchema& s, const IntArray& relations, const std::string& relations_file,
                        const std::string& indices_file);

// Entries of each relation (its index in s.relations()), counted along the rows (`relations`,
// the stored ids, when the schema has relation_ids()).
std::vector<std::int64_t> relation_entries(const CsrGraph& g, const GraphSchema& s, const IntArray& relations = {});


// A typed graph given to a command that trains or partitions one node type: one line saying so.
void require_untyped(const GraphSchema& s, const std::string& what, const std::string& command);

}  // namespace shardgnn
