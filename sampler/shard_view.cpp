#include "sampler/shard_view.hpp"

#include <exception>
#include <iostream>
#include <string>

namespace shardgnn {

namespace {
// The sampler reads rows at random (the feature store advises its rows itself, after deciding
// whether to map them in whole).
void advise_random_reads(const Shard& s) { s.graph.advise_random_indices(); }
}  // namespace

ShardView::ShardView(const Shard& own) : own_(&own), readable_(static_cast<std::size_t>(own.book.parts()), nullptr) {
  readable_[static_cast<std::size_t>(own.part)] = own_;
  advise_random_reads(own);
}

ShardView::ShardView(const Shard& own, const comm::Communicator& comm, bool node_local) : ShardView(own, comm, comm.node_ids(), node_local && comm.size() > 1) {}

ShardView::ShardView(const Shard& own, const comm::Communicator& comm, std::vector<int> node_of_rank, bool node_local, const Load& load)
    : ShardView(own) {
  node_of_rank_ = std::move(node_of_rank);
  const auto P = static_cast<std::size_t>(comm.size());
  // The partition.json parsed when `own` was loaded lists the other parts' files.
  reads_node_local_ = comm.all(node_local && own.info != nullptr && own.merged_parts == 1 && own.book.parts() == comm.size() && own.part == comm.rank() &&
                               node_of_rank_.size() == P);
  if (!reads_node_local_) return;
  node_local_.resize(P);
  const int my_node = node_of_rank_[static_cast<std::size_t>(comm.rank())];
  for (std::size_t r = 0; r < P; ++r) {
    if (static_cast<PartId>(r) == own.part || node_of_rank_[r] != my_node) continue;
    try {
      node_local_[r] = load(*own.info, static_cast<PartId>(r));
      advise_random_reads(node_local_[r]);
      readable_[r] = &node_local_[r];
      ++peers_;
    } catch (const std::exception& e) {
      std::cerr << "shardgnn: warning: rank " << comm.rank() << ": cannot map the shard of rank " << r << " on this node (" << e.what()
                << "); those rows go over MPI\n";
    }
  }
  exchange_ = !comm.all(peers_ == comm.size() - 1);
}

}  // namespace shardgnn
