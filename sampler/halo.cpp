#include "sampler/halo.hpp"

#include <algorithm>
#include <string>

#include "datasets/error.hpp"

namespace shardgnn {

HaloPlan ask_halo(const Shard& shard, const comm::Communicator& comm) {
  const NodeId first = shard.book.begin(shard.part);
  std::vector<std::int64_t> ask_counts(static_cast<std::size_t>(comm.size()), 0);
  for (PartId o : shard.halo_owner.span()) ++ask_counts[static_cast<std::size_t>(o)];
  const auto asked = comm.alltoallv<NodeId>(shard.halo_nodes.widened(), ask_counts);
  HaloPlan plan;
  plan.n_halo = static_cast<std::int64_t>(shard.halo_nodes.size());
  plan.serve.resize(asked.data.size());
  for (std::size_t i = 0; i < plan.serve.size(); ++i) plan.serve[i] = asked.data[i] - first;
  plan.counts = asked.counts;
  return plan;
}

std::vector<std::int64_t> neighbour_rows(const Shard& shard) {
  const CsrGraph& g = shard.graph;
  const NodeId first = shard.book.begin(shard.part);
  const NodeId n_own = g.num_nodes();
  std::vector<std::int64_t> nbr_pos(static_cast<std::size_t>(g.num_edges()));
  g.visit([&](const auto& view) {
    shard.halo_nodes.visit([&](const auto halo) {
      const auto indices = view.indices();
      for (std::size_t e = 0; e < nbr_pos.size(); ++e) {
        const NodeId v = indices[e];
        if (v >= first && v < first + n_own) {
          nbr_pos[e] = v - first;
          continue;
        }
        const auto at = std::lower_bound(halo.begin(), halo.end(), v);
        // The loader checks the halo list is sorted, not that it is complete (a search per entry).
        if (at == halo.end() || *at != v)
          throw InputError(shard.dir, "part " + std::to_string(shard.part),
                           "its halo_nodes.npy lacks node " + std::to_string(v) + ", a neighbour in its edges (run `shardgnn partition verify`)");
        nbr_pos[e] = n_own + (at - halo.begin());
      }
    });
  });
  return nbr_pos;
}

std::vector<float> exchange_halo_rows(const HaloPlan& plan, std::span<const float> own, std::int64_t width, const comm::Communicator& comm) {
  const auto w = static_cast<std::size_t>(width);
  std::vector<float> rows(plan.serve.size() * w);
  for (std::size_t i = 0; i < plan.serve.size(); ++i)
    std::copy_n(own.begin() + static_cast<std::ptrdiff_t>(static_cast<std::size_t>(plan.serve[i]) * w), w, rows.begin() + static_cast<std::ptrdiff_t>(i * w));
  std::vector<std::int64_t> row_counts(plan.counts.begin(), plan.counts.end());
  for (auto& c : row_counts) c *= width;
  return comm.alltoallv<float>(std::span<const float>(rows), row_counts).data;
}

}  // namespace shardgnn
