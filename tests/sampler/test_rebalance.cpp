// Runtime rebalancing: the pure planning functions (every rank runs them; they need no MPI) and
// the collective seed exchange at 1, 2 and 4 ranks against the full training set.
#include <catch2/catch.hpp>
#include <cmath>
#include <map>
#include <numeric>
#include <set>

#include "datasets/error.hpp"
#include "datasets/random.hpp"
#include "sampler/feature_store.hpp"
#include "sampler/pipeline.hpp"
#include "sampler/rebalance.hpp"
#include "sampler/sampler.hpp"
#include "sampler/seed_scheduler.hpp"
#include "cora_parts.hpp"

using namespace shardgnn;

namespace {

std::int64_t sum(const std::vector<std::int64_t>& v) { return std::accumulate(v.begin(), v.end(), std::int64_t{0}); }

// Predicted time of each rank under a plan: cost * (kept + factor * received).
std::vector<double> predicted(const SeedPlan& p, const std::vector<std::int64_t>& own, const std::vector<double>& cost, double factor) {
  std::vector<double> t(own.size());
  for (std::size_t r = 0; r < own.size(); ++r) t[r] = cost[r] * seed_units(own[r], p.load[r], factor);
  return t;
}

}  // namespace

TEST_CASE("plan_seeds: none keeps every rank's own seeds and the longest rank's step count", "[rebalance]") {
  const std::vector<std::int64_t> own{500, 100, 100, 300};
  const SeedPlan p = plan_seeds(RebalancePolicy::kNone, own, {}, 1.2, 64);
  CHECK(p.load == own);
  CHECK(p.transfers.empty());
  CHECK(p.steps == 8);  // ceil(500 / 64)
  CHECK(p.batch == std::vector<std::int64_t>{64, 64, 64, 64});
}

TEST_CASE("plan_seeds: seeds equalises counts, moving only the excess", "[rebalance]") {
  // One shard holds half the training nodes (scenario (a) of the balance benchmark).
  const std::vector<std::int64_t> own{600, 200, 200, 200};
  const SeedPlan p = plan_seeds(RebalancePolicy::kSeeds, own, {}, 1.5, 100);
  CHECK(p.load == std::vector<std::int64_t>{300, 300, 300, 300});
  CHECK(p.transfers == std::vector<SeedTransfer>{{0, 1, 100}, {0, 2, 100}, {0, 3, 100}});
  CHECK(p.moved() == 300);
  CHECK(p.steps == 3);  // ceil(1200 / (4 * 100))
  CHECK(p.batch == std::vector<std::int64_t>{100, 100, 100, 100});
}

TEST_CASE("plan_seeds: cost gives a rank half as fast about half the work, and equal predicted times", "[rebalance]") {
  const std::vector<std::int64_t> own{1000, 1000, 1000, 1000};
  const std::vector<double> cost{1e-3, 2e-3, 1e-3, 1e-3};  // rank 1 slowed 2x
  for (double factor : {1.0, 1.25}) {
    const SeedPlan p = plan_seeds(RebalancePolicy::kCost, own, cost, factor, 128);
    INFO("factor " << factor);
    CHECK(sum(p.load) == 4000);
    CHECK(p.load[1] < 1000);
    CHECK(p.load[0] == p.load[2]);
    CHECK(p.load[2] == p.load[3]);
    const auto t = predicted(p, own, cost, factor);
    const double mx = *std::max_element(t.begin(), t.end());
    const double mn = *std::min_element(t.begin(), t.end());
    CHECK(mx / mn < 1.01);  // equal up to rounding to whole seeds
    // The slow rank is the only donor; the others receive.
    for (const SeedTransfer& tr : p.transfers) CHECK(tr.from == 1);
    CHECK(p.moved() == 1000 - p.load[1]);
    for (std::size_t r = 0; r < 4; ++r) CHECK(p.batch[r] * p.steps >= p.load[r]);
  }
  // Without a remote cost: loads inversely proportional to cost (1 : 0.5 : 1 : 1 of 4000).
  const SeedPlan p = plan_seeds(RebalancePolicy::kCost, own, cost, 1.0, 128);
  CHECK(p.load == std::vector<std::int64_t>{1143, 571, 1143, 1143});
  // A remote cost makes receiving dearer, so the slow rank keeps more.
  CHECK(plan_seeds(RebalancePolicy::kCost, own, cost, 1.5, 128).load[1] > 571);
}

TEST_CASE("plan_seeds: cost without measurements (first epoch) falls back to equal speeds", "[rebalance]") {
  const std::vector<std::int64_t> own{700, 100, 100, 100};
  for (const std::vector<double>& cost : {std::vector<double>{}, std::vector<double>{1, 0, 1, 1}, std::vector<double>{1, NAN, 1, 1}}) {
    const SeedPlan p = plan_seeds(RebalancePolicy::kCost, own, cost, 1.0, 50);
    CHECK(p.load == std::vector<std::int64_t>{250, 250, 250, 250});
  }
}

TEST_CASE("plan_seeds: deterministic, sums preserved, transfers consistent with loads, on drawn inputs", "[rebalance]") {
  Rng rng(42);
  for (int trial = 0; trial < 200; ++trial) {
    const int P = 1 + static_cast<int>(rng() % 8);
    std::vector<std::int64_t> own(static_cast<std::size_t>(P));
    std::vector<double> cost(static_cast<std::size_t>(P));
    for (int r = 0; r < P; ++r) {
      own[r] = static_cast<std::int64_t>(rng() % 5000);
      cost[r] = 1e-4 * (1 + static_cast<double>(rng() % 100));
    }
    if (sum(own) == 0) own[0] = 1;
    const double factor = 1.0 + static_cast<double>(rng() % 100) / 100.0;
    for (RebalancePolicy policy : {RebalancePolicy::kSeeds, RebalancePolicy::kCost}) {
      const SeedPlan p = plan_seeds(policy, own, cost, factor, 1 + static_cast<std::int64_t>(rng() % 300));
      const SeedPlan q = plan_seeds(policy, own, cost, factor, 1);  // loads do not depend on the batch
      CHECK(p.load == q.load);
      CHECK(sum(p.load) == sum(own));
      std::vector<std::int64_t> net(own);
      for (const SeedTransfer& t : p.transfers) {
        CHECK(t.count > 0);
        CHECK(own[t.from] > p.load[t.from]);  // only donors give
        CHECK(p.load[t.to] > own[t.to]);      // only receivers take
        net[t.from] -= t.count;
        net[t.to] += t.count;
      }
      CHECK(net == p.load);
      for (int r = 0; r < P; ++r) CHECK(p.batch[r] * p.steps >= p.load[r]);
      if (policy == RebalancePolicy::kCost) {
        // No rank can be improved: the slowest predicted time is within one seed of the best.
        const auto t = predicted(p, own, cost, factor);
        const double mx = *std::max_element(t.begin(), t.end());
        double slack = 0;
        for (int r = 0; r < P; ++r) slack = std::max(slack, cost[r] * factor);
        for (int r = 0; r < P; ++r)
          if (p.load[r] > 0) CHECK(t[r] >= mx - 2 * slack - 1e-9);
      }
      for (int r = 0; r < P; ++r) {
        const auto ranges = outgoing_ranges(p, r, own[r]);
        std::int64_t out = 0;
        for (const auto& g : ranges) out += g.end - g.begin;
        CHECK(out == std::max<std::int64_t>(0, own[r] - p.load[r]));
      }
    }
  }
}

TEST_CASE("plan_seeds: bad arguments and unknown policies", "[rebalance][bad-input]") {
  CHECK_THROWS(plan_seeds(RebalancePolicy::kCost, {}, {}, 1.0, 10));
  const std::vector<std::int64_t> own{1, 2};
  CHECK_THROWS(plan_seeds(RebalancePolicy::kCost, own, {}, 0.5, 10));
  CHECK_THROWS(plan_seeds(RebalancePolicy::kCost, own, {}, 1.0, 0));
  CHECK(parse_rebalance_policy("cost") == RebalancePolicy::kCost);
  CHECK_THROWS_WITH(parse_rebalance_policy("fast"), Catch::Contains("unknown --rebalance policy 'fast'") && Catch::Contains("none, seeds, cost"));
}

TEST_CASE("class-balanced draws give every class the same share whatever its size", "[rebalance]") {
  // Class 0 has 90 nodes, class 1 has 9, class 2 has 1; unlabelled nodes are never drawn.
  std::vector<NodeId> ids;
  std::vector<std::int64_t> labels;
  for (NodeId v = 0; v < 100; ++v) {
    ids.push_back(v);
    labels.push_back(v < 90 ? 0 : v < 99 ? 1 : 2);
  }
  ids.push_back(100);
  labels.push_back(-1);
  const ClassBalancedPool pool(ids, labels);
  CHECK(pool.size() == 100);
  CHECK(pool.classes_present() == 3);
  const auto draws = pool.draw(30000, 5, 2, 1);
  CHECK(draws == pool.draw(30000, 5, 2, 1));  // seeded
  CHECK(draws != pool.draw(30000, 5, 3, 1));  // keyed by epoch
  std::map<std::int64_t, std::int64_t> per_class;
  for (NodeId v : draws) {
    REQUIRE(v < 100);
    ++per_class[labels[static_cast<std::size_t>(v)]];
  }
  // Expected 10000 each; sd ~82: a 5-sd band.
  for (auto [c, n] : per_class) CHECK(std::abs(n - 10000) < 410);
  CHECK(per_class.size() == 3);
  // Asked for labels too: the same draws, each with its own label.
  std::vector<std::int64_t> drawn_labels;
  CHECK(pool.draw(30000, 5, 2, 1, &drawn_labels) == draws);
  REQUIRE(drawn_labels.size() == draws.size());
  std::int64_t wrong = 0;
  for (std::size_t i = 0; i < draws.size(); ++i) wrong += drawn_labels[i] != labels[static_cast<std::size_t>(draws[i])];
  CHECK(wrong == 0);
}

TEST_CASE("apply_plan moves seeds so that every training seed is trained exactly once, labels carried with them or fetched from owners", "[rebalance][mpi]") {
  test::CoraParts fx;
  // Over MPI, and with node-local shards read directly (sampling, features and labels of moved
  // seeds owned elsewhere on the node).
  for (bool node_local : {false, true}) {
    INFO("node-local " << node_local);
    SamplerConfig cfg;
    cfg.fanouts = {3, 2};
    cfg.batch_size = 16;
    cfg.seed = 9;
    cfg.remote_seeds = true;
    cfg.node_local = node_local;
    auto comm = fx.world.dup();
    const ShardView shards(fx.shard, comm, node_local);
    DistSampler sampler(shards, comm, cfg);
    FeatureStore store(shards, comm);
    if (node_local) store.build_cache(cfg, &sampler);
    const int P = fx.world.size();
    const auto own = fx.world.allgather(static_cast<std::int64_t>(fx.shard.train_idx.size()));
    // Rank 0 is "slow": it should train a quarter of what the others do.
    std::vector<double> cost(static_cast<std::size_t>(P), 1.0);
    cost[0] = 4.0;
    const SeedPlan plan = plan_seeds(RebalancePolicy::kCost, own, cost, 1.0, cfg.batch_size);
    SeedScheduler(sampler, {}).apply_plan(3, plan);
    const std::int64_t steps = sampler.steps_in_epoch(3);
    CHECK(steps == plan.steps);
    std::vector<NodeId> mine;
    std::int64_t label_mismatch = 0, over_batch = 0;
    const std::int64_t fetches_before = store.counters().value_fetches;
    for (std::int64_t step = 0; step < steps; ++step) {
      MiniBatch mb = produce_batch(sampler, store, 3, step);
      over_batch += static_cast<std::int64_t>(mb.seeds().size()) > plan.batch[static_cast<std::size_t>(fx.world.rank())];
      for (std::size_t i = 0; i < mb.seeds().size(); ++i) {
        mine.push_back(mb.seeds()[i]);
        label_mismatch += std::get<ClassTargets>(mb.targets).classes[i] != fx.ds.labels[fx.old_of_new[mb.seeds()[i]]];
      }
    }
    CHECK(label_mismatch == 0);
    CHECK(store.counters().value_fetches == fetches_before);  // the labels came with the schedule
    CHECK(over_batch == 0);
    CHECK(static_cast<std::int64_t>(mine.size()) == plan.load[static_cast<std::size_t>(fx.world.rank())]);
    // Every rank's seeds together are the training set, each exactly once.
    const auto all = fx.world.allgatherv<NodeId>(mine);
    std::vector<NodeId> got(all.data);
    std::sort(got.begin(), got.end());
    std::vector<NodeId> want;
    for (NodeId v : fx.ds.train_idx) want.push_back(v);
    std::vector<NodeId> got_old;
    for (NodeId v : got) got_old.push_back(fx.old_of_new[v]);
    std::sort(got_old.begin(), got_old.end());
    CHECK(got_old == want);
    if (P > 1) CHECK(plan.moved() > 0);
    // The labels came with the plan's schedule; a schedule installed without them has its batches
    // fetch them from the owners (collectively), with the same result.
    std::vector<std::int64_t> carried;
    CHECK(sampler.schedule_labels(3, 0, carried));
    CHECK_FALSE(sampler.schedule_labels(0, 0, carried));
    sampler.set_schedule(4, mine, plan.batch[static_cast<std::size_t>(fx.world.rank())], plan.steps);
    CHECK_FALSE(sampler.schedule_labels(4, 0, carried));
    std::int64_t fetched_mismatch = 0, fetched = 0;
    for (std::int64_t step = 0; step < plan.steps; ++step) {
      MiniBatch mb = produce_batch(sampler, store, 4, step);
      for (std::size_t i = 0; i < mb.seeds().size(); ++i, ++fetched) fetched_mismatch += std::get<ClassTargets>(mb.targets).classes[i] != fx.ds.labels[fx.old_of_new[mb.seeds()[i]]];
    }
    CHECK(fetched == static_cast<std::int64_t>(mine.size()));
    CHECK(fetched_mismatch == 0);
    // One label fetch per batch, unless every rank reads the others' shards (labels included).
    CHECK(store.counters().value_fetches == fetches_before + (shards.exchange() ? plan.steps : 0));
    // Ranks that disagree on whether the schedule carries labels would enter different
    // collectives per batch: every rank refuses the epoch instead.
    if (P > 1) {
      if (fx.world.rank() == 0) sampler.set_schedule(5, {}, {}, 1, 1);
      else sampler.set_schedule(5, {}, 1, 1);
      CHECK_THROWS_WITH(sampler.steps_in_epoch(5), Catch::Contains("1 of " + std::to_string(P) + " ranks installed a schedule with labels"));
    }
    // Without a schedule for an epoch the default applies: own seeds, every seed once, then empty steps.
    const std::int64_t steps0 = sampler.steps_in_epoch(0);
    std::int64_t seen = 0;
    for (std::int64_t step = 0; step < steps0; ++step) seen += static_cast<std::int64_t>(sampler.seeds_for(0, step).size());
    CHECK(seen == static_cast<std::int64_t>(fx.shard.train_idx.size()));
  }
}

TEST_CASE("global seed sampling slices one shuffle over the ranks: every training node once an epoch, labels carried, a new order each epoch", "[rebalance][mpi]") {
  test::CoraParts fx;
  SamplerConfig cfg;
  cfg.fanouts = {3, 2};
  cfg.batch_size = 16;
  cfg.seed = 9;
  cfg.remote_seeds = true;
  auto comm = fx.world.dup();
  const ShardView shards(fx.shard, comm, false);
  DistSampler sampler(shards, comm, cfg);
  FeatureStore store(shards, comm);
  SeedScheduler::Options o;
  o.sampling = SeedSampling::kGlobal;
  o.seed = 5;
  SeedScheduler scheduler(sampler, o);
  CHECK(scheduler.pool_size() == static_cast<std::int64_t>(fx.ds.train_idx.size()));
  const int P = fx.world.size();
  std::vector<std::vector<NodeId>> epochs;
  for (std::int64_t epoch : {1, 2}) {
    const SeedScheduler::Assignment a = scheduler.assign(epoch);
    CHECK(a.policy == "none+global");
    const std::int64_t total = static_cast<std::int64_t>(fx.ds.train_idx.size());
    // Even shares: no rank keeps its own part's seeds, each takes total / P of the shuffle.
    for (int k = 0; k < P; ++k) CHECK(a.load[static_cast<std::size_t>(k)] == total / P + (k < total % P ? 1 : 0));
    std::vector<NodeId> mine;
    std::int64_t label_mismatch = 0, owned_elsewhere = 0;
    const std::int64_t fetches_before = store.counters().value_fetches;
    for (std::int64_t step = 0; step < sampler.steps_in_epoch(epoch); ++step) {
      MiniBatch mb = produce_batch(sampler, store, epoch, step);
      for (std::size_t i = 0; i < mb.seeds().size(); ++i) {
        owned_elsewhere += fx.shard.book.owner(mb.seeds()[i]) != fx.shard.part;
        mine.push_back(fx.old_of_new[mb.seeds()[i]]);
        label_mismatch += std::get<ClassTargets>(mb.targets).classes[i] != fx.ds.labels[fx.old_of_new[mb.seeds()[i]]];
      }
    }
    CHECK(label_mismatch == 0);
    CHECK(store.counters().value_fetches == fetches_before);  // the labels came with the schedule
    const auto all = fx.world.allgatherv<NodeId>(mine);
    std::vector<NodeId> got(all.data), want(fx.ds.train_idx.begin(), fx.ds.train_idx.end());
    epochs.push_back(got);
    std::sort(got.begin(), got.end());
    std::sort(want.begin(), want.end());
    CHECK(got == want);
    if (P > 1) CHECK(owned_elsewhere > 0);  // seeds come from every part, not only the rank's own
  }
  CHECK(epochs[0] != epochs[1]);  // reshuffled each epoch
}
