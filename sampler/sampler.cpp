#include "sampler/sampler.hpp"
#include "datasets/stopwatch.hpp"

#include <boost/unordered/unordered_flat_map.hpp>
#include <chrono>
#include <numeric>
#include <stdexcept>
#include <type_traits>
#include <utility>

#include "datasets/error.hpp"
#include "datasets/random.hpp"
#include "sampler/sample_row.hpp"

namespace shardgnn {

namespace {


}  // namespace

// Numbers the nodes of a batch as they are first seen, across all hops (layer h's nodes are a
// prefix of layer h+1's, so one map serves every hop), and turns each hop's neighbour ids into
// positions in that list.
class Compactor {
 public:
  // `others` maps the nodes outside the dense range; it is cleared here (its buckets stay).
  Compactor(std::vector<NodeId>& nodes, const DenseRange& dense, boost::unordered_flat_map<NodeId, std::int64_t>& others)
      : nodes_(nodes), dense_(dense), pos_(others) {
    pos_.clear();
    for (std::size_t i = 0; i < nodes.size(); ++i) find_or_add(nodes[i], static_cast<std::int64_t>(i));
  }
  std::int64_t size() const noexcept { return static_cast<std::int64_t>(nodes_.size()); }
  // Replaces every global id in `ids` by its position, appending ids seen for the first time in
  // order. The dense slots are random places in a table of the rank's nodes: prefetched ahead.
  void compact(std::vector<std::int64_t>& ids) {
    constexpr std::size_t kAhead = 16;
    const std::size_t n = ids.size();
    std::uint64_t* slots = dense_.slots->data();
    for (std::size_t j = 0; j < n; ++j) {
      if (j + kAhead < n) {
        const NodeId d = ids[j + kAhead] - dense_.first;
        if (static_cast<std::uint64_t>(d) < static_cast<std::uint64_t>(dense_.count)) __builtin_prefetch(slots + d, 1);
      }
      ids[j] = find_or_add(ids[j], static_cast<std::int64_t>(nodes_.size()));
    }
  }

 private:
  // The position of v, appending it (at `next`) when first seen.
  std::int64_t find_or_add(NodeId v, std::int64_t next) {
    const NodeId d = v - dense_.first;
    if (static_cast<std::uint64_t>(d) < static_cast<std::uint64_t>(dense_.count)) {
      std::uint64_t& slot = (*dense_.slots)[static_cast<std::size_t>(d)];
      if (static_cast<std::uint32_t>(slot >> 32) == dense_.current) return static_cast<std::int64_t>(slot & 0xffffffffULL);
      if (next > static_cast<std::int64_t>(0xffffffffLL))
        throw std::length_error("sampler: a batch reaches more than 2^32 nodes; use smaller batches or fanouts");
      slot = (static_cast<std::uint64_t>(dense_.current) << 32) | static_cast<std::uint64_t>(next);
      if (next == static_cast<std::int64_t>(nodes_.size())) nodes_.push_back(v);
      return next;
    }
    auto [it, inserted] = pos_.try_emplace(v, next);
    if (inserted && next == static_cast<std::int64_t>(nodes_.size())) nodes_.push_back(v);
    return it->second;
  }

  std::vector<NodeId>& nodes_;
  const DenseRange& dense_;
  boost::unordered_flat_map<NodeId, std::int64_t>& pos_;
};

namespace {

// Advances the stamp of a dense table (a new batch), clearing it when the counter wraps.
DenseRange next_dense(NodeId first, NodeId count, std::vector<std::uint64_t>& slots, std::uint32_t& current) {
  if (slots.size() != static_cast<std::size_t>(count)) {
    slots.assign(static_cast<std::size_t>(count), 0);
    current = 0;
  }
  if (++current == 0) {
    std::fill(slots.begin(), slots.end(), 0);
    current = 1;
  }
  return DenseRange{first, count, &slots, current};
}

// A block whose rows' neighbour ids (global) are ids[indptr[i] .. indptr[i+1]).
Block make_block(std::vector<std::int64_t> indptr, std::vector<std::int64_t> ids, Compactor& compactor) {
  Block b;
  b.num_dst = static_cast<std::int64_t>(indptr.size()) - 1;
  b.indptr = std::move(indptr);
  b.indices = std::move(ids);
  compactor.compact(b.indices);
  b.num_src = compactor.size();
  return b;
}



// A rank's seeds in the epoch's order: shuffled by the stream keyed by (seed, epoch, rank).
std::vector<NodeId> shuffle_for_epoch(std::span<const NodeId> seeds, std::uint64_t seed, std::int64_t epoch, int rank) {
  std::vector<NodeId> order(seeds.begin(), seeds.end());
  keyed_shuffle<NodeId>(order, seed, epoch, 0x5eed0000ULL + static_cast<std::uint64_t>(rank));
  return order;
}
// What an exchange a rank skips would have returned: nothing from any of P ranks.
comm::AlltoallvResult<NodeId> none_from(int P) {
  comm::AlltoallvResult<NodeId> r;
  r.counts.assign(static_cast<std::size_t>(P), 0);
  r.displs.assign(static_cast<std::size_t>(P), 0);
  return r;
}
}  // namespace

std::vector<std::vector<NodeId>> epoch_batches(std::span<const NodeId> seeds, int batch_size, std::uint64_t seed, std::int64_t epoch, int rank) {
  const std::vector<NodeId> order = shuffle_for_epoch(seeds, seed, epoch, rank);
  std::vector<std::vector<NodeId>> out;
  for (std::size_t i = 0; i < order.size(); i += static_cast<std::size_t>(batch_size))
    out.emplace_back(order.begin() + static_cast<std::ptrdiff_t>(i),
                     order.begin() + static_cast<std::ptrdiff_t>(std::min(order.size(), i + static_cast<std::size_t>(batch_size))));
  return out;
}

DistSampler::DistSampler(const ShardView& shards, const comm::Communicator& comm, SamplerConfig config)
    : shards_(shards), shard_(shards.own()), comm_(comm), config_(std::move(config)), types_(NodeTypeIndex::of(shard_)),
      train_(shard_.train_idx.begin(), shard_.train_idx.end()) {
  validate(config_);
  if (types_.typed()) relation_fanouts_ = relation_fanouts_of(config_, shard_.schema);
  relation_ids_ = shard_.schema.relation_ids();
}

std::vector<std::vector<int>> relation_fanouts_of(const SamplerConfig& config, const GraphSchema& schema) {
  const std::size_t R = schema.relations().size(), hops = config.fanouts.size();
  if (config.relation_fanouts.empty()) {
    std::vector<std::vector<int>> out;
    for (const int f : config.fanouts) out.emplace_back(R, f);
    return out;
  }
  if (config.relation_fanouts.size() != hops)
    throw InputError("per-relation fanouts for " + std::to_string(config.relation_fanouts.size()) + " hops, but the sampler has " + std::to_string(hops));
  for (const auto& hop : config.relation_fanouts)
    if (hop.size() != R) throw InputError("per-relation fanouts list " + std::to_string(hop.size()) + " relations, the graph has " + std::to_string(R));
  return config.relation_fanouts;
}

void DistSampler::draw_rows(const Shard& s, std::span<const NodeId> rows, int hop, std::uint64_t key, std::vector<NodeId>& out,
                            std::vector<std::int64_t>& ends, std::vector<std::int32_t>& relations) {
  if (!types_.typed()) {
    sample_rows(s.graph, s.orig_ids, rows, config_.fanouts[static_cast<std::size_t>(hop)], config_.replace, key, out, ends, scratch_);
    return;
  }
  if (relation_ids_) {
    s.orig_ids.visit([&](auto ids) {
      s.edge_relations.visit([&](auto rel) {
        s.graph.visit([&](const auto& g) {
          sample_relation_rows_of(g, rel, ids, rows, relation_fanouts_[static_cast<std::size_t>(hop)], config_.replace, key, out, ends, relations, scratch_);
        });
      });
    });
    return;
  }
  const NodeId first = s.book.begin(s.part);
  s.orig_ids.visit([&](auto ids) {
    s.graph.visit([&](const auto& g) {
      sample_typed_rows_of(g, ids, first, rows, types_, s.schema, relation_fanouts_[static_cast<std::size_t>(hop)], config_.replace, key, out, ends, groups_,
                           scratch_);
    });
  });
}

std::int64_t DistSampler::steps_in_epoch(std::int64_t epoch) const {
  const auto B = static_cast<std::int64_t>(config_.batch_size);
  const std::int64_t local = schedule_.epoch == epoch ? schedule_.steps : (static_cast<std::int64_t>(train_.size()) + B - 1) / B;
  const auto steps = comm_.allreduce<std::int64_t>(local, comm::Op::kMax);
  // Batches fetch labels collectively unless the schedule carries them: ranks that disagreed
  // would enter different collectives. Every rank sees the same count and throws alike.
  const bool labelled = schedule_.epoch == epoch && schedule_.with_labels;
  const auto labelled_ranks = comm_.allreduce<std::int64_t>(labelled ? 1 : 0, comm::Op::kSum);
  if (labelled_ranks != 0 && labelled_ranks != comm_.size())
    throw std::logic_error("DistSampler: " + std::to_string(labelled_ranks) + " of " + std::to_string(comm_.size()) +
                           " ranks installed a schedule with labels for epoch " + std::to_string(epoch) + ": all or none must");
  if (schedule_.epoch == epoch && steps != schedule_.steps)
    throw std::logic_error("DistSampler: ranks installed schedules of different step counts for epoch " + std::to_string(epoch));
  return steps;
}

std::vector<NodeId> DistSampler::seeds_for(std::int64_t epoch, std::int64_t step) const {
  if (schedule_.epoch == epoch) {
    const auto n = static_cast<std::int64_t>(schedule_.seeds.size());
    const std::int64_t begin = std::min(n, step * schedule_.batch), end = std::min(n, begin + schedule_.batch);
    return {schedule_.seeds.begin() + begin, schedule_.seeds.begin() + end};
  }
  if (batches_epoch_ != epoch) {
    batches_ = epoch_batches(train_, config_.batch_size, config_.seed, epoch, comm_.rank());
    batches_epoch_ = epoch;
  }
  if (step < 0 || static_cast<std::size_t>(step) >= batches_.size()) return {};
  return batches_[static_cast<std::size_t>(step)];
}

std::vector<NodeId> DistSampler::shuffled_seeds(std::int64_t epoch) const { return shuffle_for_epoch(train_, config_.seed, epoch, comm_.rank()); }

void DistSampler::set_schedule(std::int64_t epoch, std::vector<NodeId> seeds, std::int64_t batch, std::int64_t steps) {
  if (batch < 0 || steps < 0 || (!seeds.empty() && batch * steps < static_cast<std::int64_t>(seeds.size())))
    throw std::invalid_argument("DistSampler::set_schedule: " + std::to_string(seeds.size()) + " seeds do not fit " + std::to_string(steps) +
                                " steps of " + std::to_string(batch));
  schedule_ = Schedule{epoch, batch, steps, std::move(seeds), false, {}};
}

void DistSampler::set_schedule(std::int64_t epoch, std::vector<NodeId> seeds, std::vector<std::int64_t> labels, std::int64_t batch, std::int64_t steps) {
  if (labels.size() != seeds.size())
    throw std::invalid_argument("DistSampler::set_schedule: " + std::to_string(labels.size()) + " labels for " + std::to_string(seeds.size()) + " seeds");
  set_schedule(epoch, std::move(seeds), batch, steps);
  schedule_.with_labels = true;
  schedule_.labels = std::move(labels);
}

bool DistSampler::schedule_labels(std::int64_t epoch, std::int64_t step, std::vector<std::int64_t>& out) const {
  if (schedule_.epoch != epoch || !schedule_.with_labels) return false;
  const auto n = static_cast<std::int64_t>(schedule_.labels.size());
  const std::int64_t begin = std::min(n, step * schedule_.batch), end = std::min(n, begin + schedule_.batch);
  out.assign(schedule_.labels.begin() + begin, schedule_.labels.begin() + end);
  return true;
}

std::vector<std::vector<NodeId>> DistSampler::eval_batches(std::span<const NodeId> seeds) const {
  const auto B = static_cast<std::size_t>(config_.batch_size);
  std::vector<std::vector<NodeId>> out;
  for (std::size_t i = 0; i < seeds.size(); i += B) out.emplace_back(seeds.begin() + i, seeds.begin() + std::min(seeds.size(), i + B));
  const auto steps = comm_.allreduce<std::int64_t>(static_cast<std::int64_t>(out.size()), comm::Op::kMax);
  out.resize(static_cast<std::size_t>(steps));
  return out;
}

MiniBatch DistSampler::sample(std::span<const NodeId> seeds, std::int64_t epoch, std::int64_t step) {
  if (observer_.before_batch) observer_.before_batch();
  const PartitionBook& book = shard_.book;
  MiniBatch mb;
  mb.epoch = epoch;
  mb.step = step;
  // All hops grow one node list; layer h is its prefix of length sizes[h].
  std::vector<NodeId> nodes(seeds.begin(), seeds.end());
  std::vector<std::size_t> sizes = {nodes.size()};
  // The dense table covers every node when it fits config_.dense_index_bytes (a hash lookup of a
  // node owned elsewhere was a cache miss the prefetcher cannot see), else the owned range.
  const bool all = static_cast<std::uint64_t>(book.num_nodes()) * sizeof(std::uint64_t) <= config_.dense_index_bytes;
  const DenseRange dense = all ? next_dense(0, book.num_nodes(), local_slots_, stamp_)
                               : next_dense(book.begin(shard_.part), book.size(shard_.part), local_slots_, stamp_);
  Compactor compactor(nodes, dense, remote_pos_);
  for (int hop = 0; hop < static_cast<int>(config_.fanouts.size()); ++hop) {
    const std::uint64_t key = hop_key(config_.seed, epoch, step, hop);
    const std::size_t n = sizes.back();
    route_frontier(std::span<const NodeId>(nodes.data(), n));
    const comm::AlltoallvResult<NodeId> incoming = exchange(requests_, send_counts_);
    serve_requests(incoming, hop, key);
    const comm::AlltoallvResult<NodeId> answers = exchange(reply_, reply_counts_);
    draw_readable(hop, key);
    mb.blocks.push_back(assemble_block(n, answers, compactor));
    sizes.push_back(nodes.size());
  }
  for (std::size_t size : sizes) mb.layer_nodes.emplace_back(nodes.begin(), nodes.begin() + static_cast<std::ptrdiff_t>(size));
  std::reverse(mb.blocks.begin(), mb.blocks.end());
  ++counters_.batches;
  counters_.seeds += static_cast<std::int64_t>(seeds.size());
  counters_.sampled_edges += mb.sampled_edges();
  return mb;
}

void DistSampler::route_frontier(std::span<const NodeId> frontier) {
  const auto t0 = Clock::now();
  const PartitionBook& book = shard_.book;
  const PartId me = shard_.part;
  const NodeId first = book.begin(me), owned = book.size(me);
  const auto P = static_cast<std::size_t>(comm_.size());
  owner_.resize(frontier.size());
  drawn_.resize(P);
  for (Drawn& d : drawn_) d.rows.clear();
  send_counts_.assign(P, 0);
  for (std::size_t i = 0; i < frontier.size(); ++i) {
    const NodeId v = frontier[i];
    const PartId p = static_cast<std::uint64_t>(v - first) < static_cast<std::uint64_t>(owned) ? me : book.owner(v);
    owner_[i] = p;
    if (shards_.readable(p) != nullptr) {
      drawn_[static_cast<std::size_t>(p)].rows.push_back(v - book.begin(p));
    } else {
      ++send_counts_[static_cast<std::size_t>(p)];
    }
  }
  std::vector<std::int64_t> fill(P, 0);
  for (std::size_t r = 1; r < P; ++r) fill[r] = fill[r - 1] + send_counts_[r - 1];
  requests_.resize(static_cast<std::size_t>(fill[P - 1] + send_counts_[P - 1]));
  for (std::size_t i = 0; i < frontier.size(); ++i)
    if (shards_.readable(owner_[i]) == nullptr) requests_[static_cast<std::size_t>(fill[static_cast<std::size_t>(owner_[i])]++)] = frontier[i];
  counters_.sample_s += since(t0);
  if (!shards_.exchange() && !requests_.empty())
    throw std::logic_error("DistSampler: a frontier node owned off this node, but no rank exchanges rows");
}

comm::AlltoallvResult<NodeId> DistSampler::exchange(std::span<const NodeId> send, std::span<const std::int64_t> counts) {
  const auto t0 = Clock::now();
  comm::AlltoallvResult<NodeId> got = shards_.exchange() ? comm_.alltoallv<NodeId>(send, counts) : none_from(comm_.size());
  counters_.exchange_s += since(t0);
  counters_.bytes_sent += static_cast<std::int64_t>(send.size() * sizeof(NodeId));
  counters_.bytes_received += static_cast<std::int64_t>(got.data.size() * sizeof(NodeId));
  return got;
}

void DistSampler::serve_requests(const comm::AlltoallvResult<NodeId>& incoming, int hop, std::uint64_t key) {
  const auto t0 = Clock::now();
  const NodeId first = shard_.book.begin(shard_.part);
  const auto P = static_cast<std::size_t>(comm_.size());
  serve_rows_.clear();
  for (NodeId v : incoming.data) serve_rows_.push_back(v - first);
  served_.clear();
  served_relations_.clear();
  served_ends_.assign(1, 0);  // with the rows' ends after it: an indptr over served_
  draw_rows(shard_, serve_rows_, hop, key, served_, served_ends_, served_relations_);
  reply_counts_.assign(P, 0);
  reply_.clear();
  for (std::size_t r = 0, row = 0; r < P; ++r) {
    const std::size_t before = reply_.size(), rows = static_cast<std::size_t>(incoming.counts[r]);
    for (std::size_t k = row; k < row + rows; ++k) reply_.push_back(served_ends_[k + 1] - served_ends_[k]);
    reply_.insert(reply_.end(), served_.begin() + served_ends_[row], served_.begin() + served_ends_[row + rows]);
    if (relation_ids_)
      reply_.insert(reply_.end(), served_relations_.begin() + served_ends_[row], served_relations_.begin() + served_ends_[row + rows]);
    row += rows;
    reply_counts_[r] = static_cast<std::int64_t>(reply_.size() - before);
    counters_.rows_served += incoming.counts[r];
  }
  counters_.sample_s += since(t0);
}

void DistSampler::draw_readable(int hop, std::uint64_t key) {
  const auto t0 = Clock::now();
  for (std::size_t p = 0; p < drawn_.size(); ++p) {
    const Shard* s = shards_.readable(static_cast<PartId>(p));
    if (s == nullptr) continue;
    Drawn& d = drawn_[p];
    d.picked.clear();
    d.relations.clear();
    d.ends.assign(1, 0);
    if (d.rows.empty()) continue;
    draw_rows(*s, d.rows, hop, key, d.picked, d.ends, d.relations);
    (static_cast<PartId>(p) == shard_.part ? counters_.local_rows_sampled : counters_.node_local_rows_sampled) += static_cast<std::int64_t>(d.rows.size());
  }
  counters_.sample_s += since(t0);
}

Block DistSampler::assemble_block(std::size_t n, const comm::AlltoallvResult<NodeId>& answers, Compactor& compactor) {
  const auto t0 = Clock::now();
  const int P = comm_.size();
  Drawn& own = drawn_[static_cast<std::size_t>(shard_.part)];
  counters_.remote_rows_sampled += static_cast<std::int64_t>(n) - std::accumulate(drawn_.begin(), drawn_.end(), std::int64_t{0}, [](std::int64_t a, const Drawn& d) {
                                     return a + static_cast<std::int64_t>(d.rows.size());
                                   });
  if (own.rows.size() == n) {  // every row owned here: the draw is the block
    Block b = make_block(own.ends, std::move(own.picked), compactor);
    b.relations = std::move(own.relations);
    own.picked = {};
    own.relations = {};
    counters_.sample_s += since(t0);
    return b;
  }
  std::vector<std::int64_t> ids, indptr = {0};
  std::vector<std::int32_t> relations;
  ids.reserve(answers.data.size() + own.picked.size());
  indptr.reserve(n + 1);
  // Where each reply's counts, neighbours and (with relation ids) relations are read next: a
  // reply of c rows and m neighbours holds c + m values, or c + 2m with relations.
  std::vector<std::int64_t> count_at(answers.displs.begin(), answers.displs.end()), nbr_at(count_at), rel_at(count_at);
  for (int r = 0; r < P; ++r) {
    nbr_at[r] += send_counts_[r];
    rel_at[r] = nbr_at[r] + (relation_ids_ ? (answers.counts[r] - send_counts_[r]) / 2 : 0);
  }
  std::vector<std::size_t> next_row(drawn_.size(), 0);
  for (std::size_t i = 0; i < n; ++i) {
    const auto p = static_cast<std::size_t>(owner_[i]);
    if (shards_.readable(owner_[i]) != nullptr) {
      const Drawn& d = drawn_[p];
      const std::size_t k = next_row[p]++;
      ids.insert(ids.end(), d.picked.begin() + d.ends[k], d.picked.begin() + d.ends[k + 1]);
      if (relation_ids_) relations.insert(relations.end(), d.relations.begin() + d.ends[k], d.relations.begin() + d.ends[k + 1]);
    } else {
      const auto c = answers.data[static_cast<std::size_t>(count_at[p]++)];
      ids.insert(ids.end(), answers.data.begin() + nbr_at[p], answers.data.begin() + nbr_at[p] + c);
      nbr_at[p] += c;
      if (relation_ids_) {
        for (std::int64_t j = 0; j < c; ++j) relations.push_back(static_cast<std::int32_t>(answers.data[static_cast<std::size_t>(rel_at[p] + j)]));
        rel_at[p] += c;
      }
    }
    indptr.push_back(static_cast<std::int64_t>(ids.size()));
  }
  for (int r = 0; r < P; ++r)
    if ((relation_ids_ ? rel_at[r] : nbr_at[r]) != answers.displs[r] + answers.counts[r])  // after the hop's collectives: a throw here cannot strand a peer
      throw std::logic_error("DistSampler: rank " + std::to_string(r) + "'s reply does not match its " + std::to_string(send_counts_[r]) + " rows");
  Block b = make_block(std::move(indptr), std::move(ids), compactor);
  b.relations = std::move(relations);
  counters_.sample_s += since(t0);
  return b;
}

MiniBatch reference_sample(const Dataset& ds, const SamplerConfig& config, std::span<const NodeId> seeds, std::int64_t epoch, std::int64_t step) {
  MiniBatch mb;
  mb.epoch = epoch;
  mb.step = step;
  std::vector<NodeId> nodes(seeds.begin(), seeds.end());
  std::vector<std::size_t> sizes = {nodes.size()};
  std::vector<std::uint64_t> slots;
  std::uint32_t current = 0;
  const DenseRange dense = next_dense(0, ds.num_nodes(), slots, current);
  boost::unordered_flat_map<NodeId, std::int64_t> others;
  Compactor compactor(nodes, dense, others);
  std::vector<std::int64_t> scratch;
  std::vector<std::vector<std::int64_t>> groups;
  NodeTypeIndex types;
  std::vector<std::vector<int>> relation_fanouts;
  if (ds.schema.typed()) {
    std::vector<std::int64_t> counts;
    for (const NodeType& t : ds.schema.types()) counts.push_back(t.count);
    types = NodeTypeIndex(PartitionBook({0, ds.num_nodes()}), {counts});
    relation_fanouts = relation_fanouts_of(config, ds.schema);
  }
  for (int hop = 0; hop < static_cast<int>(config.fanouts.size()); ++hop) {
    const std::size_t n = sizes.back();
    std::vector<NodeId> picked;
    std::vector<std::int64_t> indptr = {0};
    const std::span<const NodeId> rows(nodes.data(), n);
    const std::uint64_t key = hop_key(config.seed, epoch, step, hop);
    std::vector<std::int32_t> relations;
    if (ds.schema.relation_ids()) {
      ds.edge_relations.visit([&](auto rel) {
        ds.graph.visit([&](const auto& g) {
          sample_relation_rows_of(g, rel, std::span<const NodeId>(), rows, relation_fanouts[static_cast<std::size_t>(hop)], config.replace, key, picked, indptr,
                                  relations, scratch);
        });
      });
    } else if (types.typed()) {
      ds.graph.visit([&](const auto& g) {
        sample_typed_rows_of(g, std::span<const NodeId>(), 0, rows, types, ds.schema, relation_fanouts[static_cast<std::size_t>(hop)], config.replace, key,
                             picked, indptr, groups, scratch);
      });
    } else {
      sample_rows(ds.graph, std::span<const NodeId>(), rows, config.fanouts[static_cast<std::size_t>(hop)], config.replace, key, picked, indptr, scratch);
    }
    mb.blocks.push_back(make_block(std::move(indptr), std::move(picked), compactor));
    mb.blocks.back().relations = std::move(relations);
    sizes.push_back(nodes.size());
  }
  for (std::size_t size : sizes) mb.layer_nodes.emplace_back(nodes.begin(), nodes.begin() + static_cast<std::ptrdiff_t>(size));
  std::reverse(mb.blocks.begin(), mb.blocks.end());
  return mb;
}

}  // namespace shardgnn
