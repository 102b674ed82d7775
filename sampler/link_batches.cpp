#include "sampler/link_batches.hpp"

#include <boost/unordered/unordered_flat_map.hpp>
#include <boost/unordered/unordered_flat_set.hpp>

#include <algorithm>
#include <numeric>
#include <stdexcept>

#include "datasets/random.hpp"

namespace shardgnn {

namespace {
// Streams of the link schedule's draws.
constexpr std::uint64_t kEdgeOrderStream = 0x11'4b'0000, kCorruptStream = 0x11'4b'0001;
}  // namespace

LinkSchedule::LinkSchedule(const Shard& shard, int batch, int negatives, std::uint64_t seed)
    : batch_(batch), negatives_(negatives), seed_(seed), num_nodes_(shard.book.num_nodes()) {
  if (batch < 1) throw std::invalid_argument("LinkSchedule: batch must be positive");
  if (negatives < 0) throw std::invalid_argument("LinkSchedule: negatives must be 0 or more");
  const NodeId first = shard.book.begin(shard.part);
  shard.graph.visit([&](const auto& g) {
    for (NodeId r = 0; r < g.num_nodes(); ++r) {
      const NodeId u = first + r;
      NodeId prev = -1;
      for (const NodeId v : g.neighbors(r))
        if (v > u && v != prev) {
          src_.push_back(u);
          dst_.push_back(v);
          prev = v;
        }
    }
  });
}

std::vector<LinkSchedule::Edge> LinkSchedule::shuffled(std::int64_t epoch, int rank) const {
  std::vector<std::int64_t> order(src_.size());
  std::iota(order.begin(), order.end(), 0);
  keyed_shuffle(std::span<std::int64_t>(order), seed_, epoch, kEdgeOrderStream + static_cast<std::uint64_t>(rank));
  std::vector<Edge> out(order.size());
  for (std::size_t i = 0; i < order.size(); ++i) out[i] = {src_[static_cast<std::size_t>(order[i])], dst_[static_cast<std::size_t>(order[i])]};
  return out;
}

void LinkSchedule::install(std::int64_t epoch, std::vector<Edge> edges, std::int64_t batch, std::int64_t steps) {
  installed_epoch_ = epoch;
  installed_ = std::move(edges);
  installed_batch_ = std::max<std::int64_t>(batch, 1);
  installed_steps_ = steps;
}

PairBatch LinkSchedule::batch(std::int64_t epoch, std::int64_t step, int rank) const {
  const bool installed = installed_epoch_ == epoch;
  if (!installed && order_epoch_ != epoch) {
    order_.resize(src_.size());
    std::iota(order_.begin(), order_.end(), 0);
    keyed_shuffle(std::span<std::int64_t>(order_), seed_, epoch, kEdgeOrderStream + static_cast<std::uint64_t>(rank));
    order_epoch_ = epoch;
  }
  PairBatch b;
  const std::int64_t count = installed ? static_cast<std::int64_t>(installed_.size()) : edges(), size = installed ? installed_batch_ : batch_;
  const std::int64_t begin = std::min(step * size, count), end = std::min(begin + size, count);
  boost::unordered_flat_map<NodeId, std::int64_t> position;
  const auto place = [&](NodeId v) {
    const auto [it, fresh] = position.try_emplace(v, static_cast<std::int64_t>(b.seeds.size()));
    if (fresh) b.seeds.push_back(v);
    return it->second;
  };
  for (std::int64_t i = begin; i < end; ++i) {
    Edge e;
    if (installed) {
      e = installed_[static_cast<std::size_t>(i)];
    } else {
      const auto k = static_cast<std::size_t>(order_[static_cast<std::size_t>(i)]);
      e = {src_[k], dst_[k]};
    }
    b.positives.push_back(e.u);
    b.positives.push_back(e.v);
    b.pairs.insert(b.pairs.end(), {place(e.u), place(e.v), 1});
  }
  boost::random::uniform_int_distribution<NodeId> node(0, num_nodes_ - 1);
  for (std::size_t p = 0; p < b.positives.size(); p += 2) {
    const NodeId u = b.positives[p], v = b.positives[p + 1];
    Rng rng(derive_seed(derive_seed(epoch_stream_seed(seed_, epoch, kCorruptStream), static_cast<std::uint64_t>(u)), static_cast<std::uint64_t>(v)));
    const std::int64_t pu = b.pairs[p / 2 * 3];
    for (int k = 0; k < negatives_; ++k) b.pairs.insert(b.pairs.end(), {pu, place(node(rng)), 0});
  }
  return b;
}

void exclude_positives(MiniBatch& mb, std::span<const NodeId> positives) {
  if (positives.empty()) return;
  boost::unordered_flat_set<std::pair<NodeId, NodeId>> banned;
  for (std::size_t i = 0; i + 1 < positives.size(); i += 2) {
    banned.insert({positives[i], positives[i + 1]});
    banned.insert({positives[i + 1], positives[i]});
  }
  const std::size_t L = mb.blocks.size();
  for (std::size_t b = 0; b < L; ++b) {
    // blocks[b]: src = layer_nodes[L - b], dst = layer_nodes[L - 1 - b].
    const auto& src = mb.layer_nodes[L - b];
    const auto& dst = mb.layer_nodes[L - 1 - b];
    Block& blk = mb.blocks[b];
    std::size_t kept = 0;
    std::int64_t row_start = 0;
    for (std::int64_t r = 0; r < blk.num_dst; ++r) {
      const std::int64_t row_end = blk.indptr[static_cast<std::size_t>(r) + 1];
      for (std::int64_t e = row_start; e < row_end; ++e) {
        const std::int64_t s = blk.indices[static_cast<std::size_t>(e)];
        if (!banned.contains({dst[static_cast<std::size_t>(r)], src[static_cast<std::size_t>(s)]})) blk.indices[kept++] = s;
      }
      row_start = row_end;
      blk.indptr[static_cast<std::size_t>(r) + 1] = static_cast<std::int64_t>(kept);
    }
    blk.indices.resize(kept);
  }
}

}  // namespace shardgnn
