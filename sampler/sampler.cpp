#include "sampler/sampler.hpp"

#include <boost/unordered/unordered_flat_map.hpp>
#include <chrono>

#include "datasets/random.hpp"
#include "sampler/sample_row.hpp"

namespace shardgnn {

namespace {

using Clock = std::chrono::steady_clock;
double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// Builds one block from the per-dst sampled neighbour lists, extending the node list with the
// neighbours seen for the first time.
class BlockBuilder {
 public:
  explicit BlockBuilder(std::vector<NodeId>& nodes) : nodes_(nodes) {
    pos_.reserve(nodes.size() * 4);
    for (std::size_t i = 0; i < nodes.size(); ++i) pos_.emplace(nodes[i], static_cast<std::int64_t>(i));
    block_.num_dst = static_cast<std::int64_t>(nodes.size());
    block_.indptr.reserve(nodes.size() + 1);
    block_.indptr.push_back(0);
  }
  void add_row(std::span<const NodeId> nbrs) {
    for (NodeId v : nbrs) {
      auto [it, inserted] = pos_.try_emplace(v, static_cast<std::int64_t>(nodes_.size()));
      if (inserted) nodes_.push_back(v);
      block_.indices.push_back(it->second);
    }
    block_.indptr.push_back(static_cast<std::int64_t>(block_.indices.size()));
  }
  Block finish() {
    block_.num_src = static_cast<std::int64_t>(nodes_.size());
    return std::move(block_);
  }

 private:
  std::vector<NodeId>& nodes_;
  boost::unordered_flat_map<NodeId, std::int64_t> pos_;
  Block block_;
};

}  // namespace

std::vector<std::vector<NodeId>> epoch_batches(std::span<const NodeId> seeds, int batch_size, std::uint64_t seed, std::int64_t epoch, int rank) {
  std::vector<NodeId> order(seeds.begin(), seeds.end());
  Rng rng(derive_seed(derive_seed(seed, static_cast<std::uint64_t>(epoch)), 0x5eed0000ULL + static_cast<std::uint64_t>(rank)));
  seeded_shuffle(std::span<NodeId>(order), rng);
  std::vector<std::vector<NodeId>> out;
  for (std::size_t i = 0; i < order.size(); i += static_cast<std::size_t>(batch_size))
    out.emplace_back(order.begin() + static_cast<std::ptrdiff_t>(i),
                     order.begin() + static_cast<std::ptrdiff_t>(std::min(order.size(), i + static_cast<std::size_t>(batch_size))));
  return out;
}

DistSampler::DistSampler(const Shard& shard, const comm::Communicator& comm, SamplerConfig config)
    : shard_(shard), comm_(comm), config_(std::move(config)), train_(shard.train_idx.begin(), shard.train_idx.end()) {
  validate(config_);
}

std::int64_t DistSampler::steps_in_epoch(std::int64_t epoch) const {
  const auto local = static_cast<std::int64_t>(epoch_batches(train_, config_.batch_size, config_.seed, epoch, comm_.rank()).size());
  return comm_.allreduce<std::int64_t>(local, comm::Op::kMax);
}

std::vector<NodeId> DistSampler::seeds_for(std::int64_t epoch, std::int64_t step) const {
  if (batches_epoch_ != epoch) {
    batches_ = epoch_batches(train_, config_.batch_size, config_.seed, epoch, comm_.rank());
    batches_epoch_ = epoch;
  }
  if (batches_.empty()) return {};
  return batches_[static_cast<std::size_t>(step) % batches_.size()];
}

MiniBatch DistSampler::sample(std::span<const NodeId> seeds, std::int64_t epoch, std::int64_t step) {
  const PartitionBook& book = shard_.book;
  const PartId me = shard_.part;
  const int P = comm_.size();
  const NodeId first = book.begin(me);
  MiniBatch mb;
  mb.epoch = epoch;
  mb.step = step;
  mb.layer_nodes.emplace_back(seeds.begin(), seeds.end());
  std::vector<NodeId> picked;
  std::vector<std::int64_t> scratch;
  const int L = static_cast<int>(config_.fanouts.size());
  for (int hop = 0; hop < L; ++hop) {
    const int fanout = config_.fanouts[static_cast<std::size_t>(hop)];
    std::vector<NodeId> nodes = mb.layer_nodes.back();
    const std::size_t n = nodes.size();

    // Requests for the owners of remote frontier nodes, grouped by owner.
    auto t0 = Clock::now();
    std::vector<std::int64_t> send_counts(static_cast<std::size_t>(P), 0);
    for (NodeId v : nodes)
      if (book.owner(v) != me) ++send_counts[book.owner(v)];
    std::vector<std::int64_t> offs(static_cast<std::size_t>(P) + 1, 0);
    for (int r = 0; r < P; ++r) offs[r + 1] = offs[r] + send_counts[r];
    std::vector<NodeId> requests(static_cast<std::size_t>(offs[P]));
    std::vector<std::int64_t> fill(offs.begin(), offs.end() - 1);
    for (NodeId v : nodes)
      if (book.owner(v) != me) requests[fill[book.owner(v)]++] = v;
    counters_.sample_s += since(t0);

    t0 = Clock::now();
    auto incoming = comm_.alltoallv<NodeId>(requests, send_counts);
    counters_.exchange_s += since(t0);
    counters_.bytes_sent += offs[P] * static_cast<std::int64_t>(sizeof(NodeId));
    counters_.bytes_received += static_cast<std::int64_t>(incoming.data.size() * sizeof(NodeId));

    // Serve the requests: [count, neighbours...] per requested node, in request order.
    t0 = Clock::now();
    std::vector<std::int64_t> reply_counts(static_cast<std::size_t>(P), 0);
    std::vector<NodeId> reply;
    for (int r = 0; r < P; ++r) {
      const std::size_t before = reply.size();
      for (NodeId v : incoming.from(r)) {
        const NodeId local = v - first;
        picked.clear();
        sample_row<NodeId>(shard_.graph.neighbors(local), fanout, config_.replace, sample_key(config_.seed, epoch, step, hop, shard_.orig_ids[local]),
                           picked, scratch);
        reply.push_back(static_cast<NodeId>(picked.size()));
        reply.insert(reply.end(), picked.begin(), picked.end());
      }
      reply_counts[r] = static_cast<std::int64_t>(reply.size() - before);
      counters_.rows_served += incoming.counts[r];
    }
    counters_.sample_s += since(t0);

    t0 = Clock::now();
    auto answers = comm_.alltoallv<NodeId>(reply, reply_counts);
    counters_.exchange_s += since(t0);
    counters_.bytes_sent += static_cast<std::int64_t>(reply.size() * sizeof(NodeId));
    counters_.bytes_received += static_cast<std::int64_t>(answers.data.size() * sizeof(NodeId));

    // Assemble the block in frontier order: local rows sampled here, remote rows from the answers.
    t0 = Clock::now();
    std::vector<std::int64_t> cursor(answers.displs.begin(), answers.displs.end());
    std::vector<NodeId>& next = mb.layer_nodes.emplace_back(nodes);
    BlockBuilder builder(next);
    for (std::size_t i = 0; i < n; ++i) {
      const NodeId v = nodes[i];
      const PartId owner = book.owner(v);
      if (owner == me) {
        const NodeId local = v - first;
        picked.clear();
        sample_row<NodeId>(shard_.graph.neighbors(local), fanout, config_.replace, sample_key(config_.seed, epoch, step, hop, shard_.orig_ids[local]),
                           picked, scratch);
        builder.add_row(picked);
        ++counters_.local_rows_sampled;
      } else {
        std::int64_t& c = cursor[owner];
        const auto cnt = answers.data[static_cast<std::size_t>(c)];
        builder.add_row(std::span<const NodeId>(answers.data.data() + c + 1, static_cast<std::size_t>(cnt)));
        c += 1 + cnt;
        ++counters_.remote_rows_sampled;
      }
    }
    mb.blocks.push_back(builder.finish());
    counters_.sample_s += since(t0);
  }
  std::reverse(mb.blocks.begin(), mb.blocks.end());
  ++counters_.batches;
  counters_.seeds += static_cast<std::int64_t>(seeds.size());
  counters_.sampled_edges += mb.sampled_edges();
  return mb;
}

MiniBatch reference_sample(const Dataset& ds, const SamplerConfig& config, std::span<const NodeId> seeds, std::int64_t epoch, std::int64_t step) {
  MiniBatch mb;
  mb.epoch = epoch;
  mb.step = step;
  mb.layer_nodes.emplace_back(seeds.begin(), seeds.end());
  std::vector<NodeId> picked;
  std::vector<std::int64_t> scratch;
  for (int hop = 0; hop < static_cast<int>(config.fanouts.size()); ++hop) {
    std::vector<NodeId> nodes = mb.layer_nodes.back();
    std::vector<NodeId>& next = mb.layer_nodes.emplace_back(nodes);
    BlockBuilder builder(next);
    for (NodeId v : nodes) {
      picked.clear();
      sample_row<NodeId>(ds.graph.neighbors(v), config.fanouts[static_cast<std::size_t>(hop)], config.replace,
                         sample_key(config.seed, epoch, step, hop, v), picked, scratch);
      builder.add_row(picked);
    }
    mb.blocks.push_back(builder.finish());
  }
  std::reverse(mb.blocks.begin(), mb.blocks.end());
  return mb;
}

}  // namespace shardgnn
