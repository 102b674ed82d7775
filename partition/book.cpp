#include "partition/book.hpp"

namespace shardgnn {

Relabelling relabel(std::span<const PartId> assignment, int parts) {
  Relabelling r;
  std::vector<NodeId> offsets(static_cast<std::size_t>(parts) + 1, 0);
  for (PartId p : assignment) ++offsets[p + 1];
  for (int k = 0; k < parts; ++k) offsets[k + 1] += offsets[k];
  std::vector<NodeId> next(offsets.begin(), offsets.end() - 1);
  r.new_of_old.resize(assignment.size());
  r.old_of_new.resize(assignment.size());
  // A counting sort keeps each part's nodes in their dataset order.
  for (std::size_t v = 0; v < assignment.size(); ++v) {
    const NodeId g = next[assignment[v]]++;
    r.new_of_old[v] = g;
    r.old_of_new[g] = static_cast<NodeId>(v);
  }
  r.book = PartitionBook(std::move(offsets));
  return r;
}

}  // namespace shardgnn
