// Link prediction's batches at 1, 2 and 4 ranks: every training edge a seed exactly once per
// epoch over all ranks, negatives keyed by the edge, and no batch's positive edge left in its
// sampled blocks (DGL's exclude="reverse_id"), while the same seeds sampled without exclusion do
// reach them.
#include <catch2/catch.hpp>

#include <set>

#include "datasets/edge_split.hpp"
#include "sampler/feature_store.hpp"
#include "sampler/link_batches.hpp"
#include "sampler/pipeline.hpp"
#include "sampler/sampler.hpp"
#include "sampler/seed_scheduler.hpp"
#include "cora_parts.hpp"
#include "tests/graph_rows.hpp"

using namespace shardgnn;

namespace {

using Edge = std::pair<NodeId, NodeId>;

// Cora split by split-edges (seed 5), partitioned one part per rank.
struct LinkCora {
  test::ScratchDir scratch;
  Dataset base;
  test::CoraParts parts{0, [this](Dataset& raw) {
                          base = std::move(raw);
                          EdgeSplitReport rep;
                          EdgeSplitOptions o;
                          o.seed = 5;
                          raw = split_edges(base, o, scratch.path(), rep);
                        }};
};

}  // namespace

TEST_CASE("link batches: every training edge once per epoch over all ranks, pairs and targets as scheduled, negatives keyed", "[link][mpi]") {
  LinkCora fx;
  const auto& world = fx.parts.world;
  const Shard& shard = fx.parts.shard;
  const LinkSchedule links(shard, 64, 3, 11);
  std::vector<NodeId> mine;  // every edge this rank trains in epoch 2, as Cora ids
  const std::int64_t steps = world.allreduce<std::int64_t>(links.steps(2), comm::Op::kMax);
  for (std::int64_t step = 0; step < steps; ++step) {
    const PairBatch b = links.batch(2, step, world.rank());
    const std::size_t positives = b.positives.size() / 2;
    REQUIRE(b.pairs.size() == positives * 3 * (1 + 3));
    std::set<NodeId> distinct(b.seeds.begin(), b.seeds.end());
    CHECK(distinct.size() == b.seeds.size());
    for (std::size_t i = 0; i < b.pairs.size() / 3; ++i) {
      const std::int64_t pu = b.pairs[3 * i], pv = b.pairs[3 * i + 1], target = b.pairs[3 * i + 2];
      REQUIRE(pu >= 0);
      REQUIRE(pu < static_cast<std::int64_t>(b.seeds.size()));
      REQUIRE(pv < static_cast<std::int64_t>(b.seeds.size()));
      CHECK(target == (i < positives ? 1 : 0));
      if (i < positives) {
        CHECK(b.seeds[static_cast<std::size_t>(pu)] == b.positives[2 * i]);
        CHECK(b.seeds[static_cast<std::size_t>(pv)] == b.positives[2 * i + 1]);
      } else {
        // A negative corrupts the destination of its positive (three each, in order).
        CHECK(b.seeds[static_cast<std::size_t>(pu)] == b.positives[2 * ((i - positives) / 3)]);
      }
    }
    for (const NodeId v : b.positives) mine.push_back(fx.parts.old_of_new[static_cast<std::size_t>(v)]);
    // The same step drawn again: the same batch.
    const PairBatch again = links.batch(2, step, world.rank());
    CHECK(again.pairs == b.pairs);
    CHECK(again.seeds == b.seeds);
  }
  // Over all ranks: the training graph's undirected edges, each once.
  const auto all = world.allgatherv<NodeId>(mine).data;
  std::multiset<Edge> got;
  for (std::size_t i = 0; i < all.size(); i += 2) got.insert({std::min(all[i], all[i + 1]), std::max(all[i], all[i + 1])});
  std::multiset<Edge> want;
  for (NodeId u = 0; u < fx.parts.ds.num_nodes(); ++u) {
    NodeId prev = -1;
    for (const NodeId v : row_of(fx.parts.ds.graph, u))
      if (v > u && v != prev) want.insert({u, prev = v});
  }
  CHECK(got == want);
  // Another epoch, another order.
  if (links.steps(2) > 1) CHECK(links.batch(3, 0, world.rank()).positives != links.batch(2, 0, world.rank()).positives);
}

TEST_CASE("link batches: a batch's positive edges are excluded from its blocks in both directions", "[link][mpi]") {
  LinkCora fx;
  const auto& world = fx.parts.world;
  SamplerConfig cfg;
  cfg.fanouts = {-1, -1};  // every neighbour: without exclusion, each positive's edge is in its block
  cfg.batch_size = 32;
  cfg.remote_seeds = true;
  auto comm = world.dup();
  const ShardView shards(fx.parts.shard, comm, false);
  DistSampler sampler(shards, comm, cfg);
  FeatureStore store(shards, comm);
  const LinkSchedule links(fx.parts.shard, 32, 1, 4);
  const std::int64_t steps = world.allreduce<std::int64_t>(links.steps(0), comm::Op::kMax);
  std::int64_t seen_without = 0, seen_with = 0, seen_kept = 0;
  const auto count_positive_edges = [](const MiniBatch& mb, const std::vector<NodeId>& positives) {
    std::set<Edge> banned;
    for (std::size_t i = 0; i < positives.size(); i += 2) banned.insert({positives[i], positives[i + 1]}), banned.insert({positives[i + 1], positives[i]});
    std::int64_t n = 0;
    const std::size_t L = mb.blocks.size();
    for (std::size_t b = 0; b < L; ++b)
      for (std::int64_t r = 0; r < mb.blocks[b].num_dst; ++r)
        for (std::int64_t e = mb.blocks[b].indptr[static_cast<std::size_t>(r)]; e < mb.blocks[b].indptr[static_cast<std::size_t>(r) + 1]; ++e)
          n += banned.count({mb.layer_nodes[L - 1 - b][static_cast<std::size_t>(r)], mb.layer_nodes[L - b][static_cast<std::size_t>(mb.blocks[b].indices[static_cast<std::size_t>(e)])]});
    return n;
  };
  for (std::int64_t step = 0; step < steps; ++step) {
    PairBatch b = links.batch(0, step, world.rank());
    const std::vector<NodeId> positives = b.positives;
    const MiniBatch raw = sampler.sample(b.seeds, 0, step);
    seen_without += count_positive_edges(raw, positives);
    // --exclude none (GAE's protocol) keeps every one of them.
    seen_kept += count_positive_edges(produce_pair_batch(sampler, store, b, 0, step, false), positives);
    const MiniBatch mb = produce_pair_batch(sampler, store, std::move(b), 0, step);
    seen_with += count_positive_edges(mb, positives);
    // The blocks stay well-formed: offsets end at the kept edges.
    for (const Block& blk : mb.blocks) CHECK(blk.indptr.back() == static_cast<std::int64_t>(blk.indices.size()));
  }
  CHECK(world.allreduce<std::int64_t>(seen_without, comm::Op::kSum) > 0);
  CHECK(seen_kept == seen_without);
  CHECK(seen_with == 0);
}

TEST_CASE("link batches rebalanced: a plan moves edges between ranks, equal loads, every edge still once", "[link][mpi]") {
  LinkCora fx;
  const auto& world = fx.parts.world;
  SamplerConfig cfg;
  cfg.fanouts = {2};
  cfg.batch_size = 50;
  cfg.remote_seeds = true;
  auto comm = world.dup();
  const ShardView shards(fx.parts.shard, comm, false);
  DistSampler sampler(shards, comm, cfg);
  EdgeExamples examples(fx.parts.shard, 50, 1, 4, true);
  const LinkSchedule& links = examples.schedule();
  SeedScheduler::Options o;
  o.policy = RebalancePolicy::kSeeds;
  o.examples = &examples;
  SeedScheduler scheduler(sampler, o);
  const SeedScheduler::Assignment a = scheduler.assign(1);
  const auto own = world.allgather(links.edges());
  std::int64_t total = 0;
  for (const auto e : own) total += e;
  for (const auto load : a.load) CHECK(std::abs(load - total / world.size()) <= 1);
  const std::int64_t steps = links.steps(1);
  CHECK(world.allreduce<std::int64_t>(steps, comm::Op::kMax) == steps);  // one step count on every rank
  std::vector<NodeId> mine;
  std::int64_t trained = 0;
  for (std::int64_t step = 0; step < steps; ++step) {
    const PairBatch b = links.batch(1, step, world.rank());
    trained += static_cast<std::int64_t>(b.positives.size() / 2);
    for (const NodeId v : b.positives) mine.push_back(v);
  }
  CHECK(trained == a.load[static_cast<std::size_t>(world.rank())]);
  const auto all = world.allgatherv<NodeId>(mine).data;
  std::multiset<Edge> got;
  for (std::size_t i = 0; i < all.size(); i += 2) got.insert({all[i], all[i + 1]});
  CHECK(static_cast<std::int64_t>(got.size()) == total);
  CHECK(std::adjacent_find(got.begin(), got.end()) == got.end());
}
