#include "partition/node_types.hpp"

#include <algorithm>
#include <stdexcept>

#include "partition/shard_loader.hpp"

namespace shardgnn {

NodeTypeIndex::NodeTypeIndex(const PartitionBook& book, const std::vector<std::vector<std::int64_t>>& type_nodes)
    : book_(book), types_(type_nodes.empty() ? 0 : static_cast<int>(type_nodes.front().size())) {
  if (static_cast<int>(type_nodes.size()) != book.parts()) throw std::logic_error("NodeTypeIndex: a type count list per part expected");
  for (PartId k = 0; k < book.parts(); ++k) {
    const auto& counts = type_nodes[static_cast<std::size_t>(k)];
    if (static_cast<int>(counts.size()) != types_) throw std::logic_error("NodeTypeIndex: parts with different numbers of types");
    NodeId end = book.begin(k);
    for (const std::int64_t c : counts) ends_.push_back(end += c);
    if (end != book.end(k)) throw std::logic_error("NodeTypeIndex: part " + std::to_string(k) + "'s type counts do not add up to its size");
  }
}

NodeTypeIndex NodeTypeIndex::of(const Shard& s) {
  if (s.type_nodes.empty()) return {};
  if (!s.info) return NodeTypeIndex(s.book, {s.type_nodes});
  std::vector<std::vector<std::int64_t>> counts;
  for (const PartEntry& e : s.info->parts) counts.push_back(e.type_nodes);
  return NodeTypeIndex(s.info->book, counts);
}

std::pair<PartId, int> NodeTypeIndex::locate(NodeId v) const noexcept {
  const PartId k = book_.owner(v);
  const auto first = ends_.begin() + static_cast<std::ptrdiff_t>(static_cast<std::size_t>(k) * static_cast<std::size_t>(types_));
  return {k, static_cast<int>(std::upper_bound(first, first + types_, v) - first)};
}

}  // namespace shardgnn
