// The distributed sampler and feature store at 1, 2 and 4 ranks (ctest runs this file under
// mpiexec at each count) against the full graph and the serial reference. Only CHECK (never
// REQUIRE) after the first collective: a failing rank must keep entering the collectives.
#include <catch2/catch.hpp>
#include <bit>
#include <cmath>
#include <filesystem>
#include <map>

#include "comm/communicator.hpp"
#include "datasets/error.hpp"
#include "datasets/memory_limit.hpp"
#include "datasets/readers.hpp"
#include "partition/partitioner.hpp"
#include "partition/shards.hpp"
#include "sampler/feature_store.hpp"
#include "sampler/pipeline.hpp"
#include "sampler/sample_row.hpp"
#include "sampler/sampler.hpp"
#include "sampler/shard_view.hpp"
#include "datasets/feature_dtype.hpp"
#include "cora_parts.hpp"
#include "test_paths.hpp"
#include "tests/graph_rows.hpp"

using namespace shardgnn;
namespace fs = std::filesystem;

namespace {

using Fixture = test::CoraParts;

bool has_edge(const Dataset& ds, NodeId u, NodeId v) {
  const auto nb = row_of(ds.graph, u);
  return std::binary_search(nb.begin(), nb.end(), v);
}

}  // namespace

TEST_CASE("sampled blocks are subgraphs of the full graph, respecting fanouts", "[sampler][mpi]") {
  Fixture fx;
  for (bool replace : {false, true}) {
    SamplerConfig cfg;
    cfg.fanouts = {5, 3, -1};
    cfg.batch_size = 64;
    cfg.replace = replace;
    cfg.seed = 7;
    auto comm = fx.world.dup();
    const ShardView shards(fx.shard);
    DistSampler sampler(shards, comm, cfg);
    const std::int64_t steps = sampler.steps_in_epoch(0);
    const auto all_steps = fx.world.allgather(steps);
    CHECK(std::all_of(all_steps.begin(), all_steps.end(), [&](std::int64_t s) { return s == steps; }));
    CHECK(steps >= static_cast<std::int64_t>((fx.shard.train_idx.size() + 63) / 64));
    std::int64_t bad_edges = 0, over_fanout = 0, dups = 0, wrong_count = 0;
    for (std::int64_t step = 0; step < steps; ++step) {
      const auto seeds = sampler.seeds_for(0, step);
      for (NodeId s : seeds) CHECK(fx.info.book.owner(s) == fx.world.rank());
      MiniBatch mb = sampler.sample(seeds, 0, step);
      const int L = static_cast<int>(cfg.fanouts.size());
      CHECK(static_cast<int>(mb.blocks.size()) == L);
      for (int b = 0; b < L; ++b) {
        const Block& blk = mb.blocks[static_cast<std::size_t>(b)];
        const int hop = L - 1 - b;  // blocks run input -> output
        const auto& dst_nodes = mb.layer_nodes[static_cast<std::size_t>(hop)];
        const auto& src_nodes = mb.layer_nodes[static_cast<std::size_t>(hop + 1)];
        CHECK(blk.num_dst == static_cast<std::int64_t>(dst_nodes.size()));
        CHECK(blk.num_src == static_cast<std::int64_t>(src_nodes.size()));
        const int f = cfg.fanouts[static_cast<std::size_t>(hop)];
        for (std::int64_t i = 0; i < blk.num_dst; ++i) {
          const NodeId u = fx.old_of_new[dst_nodes[i]];
          const std::int64_t deg = fx.ds.graph.degree(u);
          const std::int64_t cnt = blk.indptr[i + 1] - blk.indptr[i];
          const std::int64_t want = f < 0 ? deg : (replace ? (deg > 0 ? f : 0) : std::min<std::int64_t>(f, deg));
          wrong_count += cnt != want;
          over_fanout += f > 0 && cnt > f;
          std::vector<NodeId> row;
          for (std::int64_t e = blk.indptr[i]; e < blk.indptr[i + 1]; ++e) {
            const NodeId v = fx.old_of_new[src_nodes[blk.indices[e]]];
            bad_edges += !has_edge(fx.ds, u, v);
            row.push_back(v);
          }
          std::sort(row.begin(), row.end());
          if (!replace) dups += std::adjacent_find(row.begin(), row.end()) != row.end();
        }
      }
    }
    INFO("replace=" << replace);
    CHECK(bad_edges == 0);
    CHECK(over_fanout == 0);
    CHECK(wrong_count == 0);
    CHECK(dups == 0);
  }
}

TEST_CASE("fetched features equal the full graph's rows, with and without a cache, over MPI or from node-local shards", "[sampler][mpi]") {
  Fixture fx;
  const int P = fx.world.size();
  // Node layouts: none (every row over MPI); the job's own (one node here: every other rank's
  // shard read directly, no row exchange); pairs of ranks as nodes (both paths in one fetch).
  enum class Layout { kOff, kJob, kPairs };
  for (Layout layout : {Layout::kOff, Layout::kJob, Layout::kPairs})
  for (std::uint64_t dense_bytes : {SamplerConfig{}.dense_index_bytes, std::uint64_t{0}})  // dense indexes, then hash maps
  for (CachePolicy policy : {CachePolicy::kNone, CachePolicy::kDegree, CachePolicy::kPresample}) {
    SamplerConfig cfg;
    cfg.node_local = layout == Layout::kJob;
    cfg.dense_index_bytes = dense_bytes;
    cfg.fanouts = {4, 4};
    cfg.batch_size = 128;
    cfg.cache_policy = policy;
    cfg.cache_fraction = 0.2;
    cfg.presample_batches = 4;
    auto comm = fx.world.dup();
    std::vector<int> pairs(static_cast<std::size_t>(P));
    for (int r = 0; r < P; ++r) pairs[static_cast<std::size_t>(r)] = r / 2;
    const ShardView shards = layout == Layout::kPairs ? ShardView(fx.shard, comm, pairs) : ShardView(fx.shard, comm, cfg.node_local);
    DistSampler sampler(shards, comm, cfg);
    FeatureStore store(shards, comm);
    store.build_cache(cfg, &sampler);
    // The job's layout as MPI reports it (one node under ctest, but not assumed).
    const std::vector<int> job_nodes = fx.world.node_ids();
    const auto node_local_ranks = static_cast<int>(std::count(job_nodes.begin(), job_nodes.end(), job_nodes[static_cast<std::size_t>(fx.world.rank())])) - 1;
    const bool one_node = std::count(job_nodes.begin(), job_nodes.end(), job_nodes[0]) == P;
    const int node_local_peers = layout == Layout::kOff ? 0 : layout == Layout::kJob ? node_local_ranks : std::min(2, P - (fx.world.rank() / 2) * 2) - 1;
    CHECK(shards.node_local_peers() == node_local_peers);
    CHECK(&sampler.shards() == &store.shards());  // the sampler reads the same shards
    // The row exchange is skipped only when every rank reads every other rank's shard.
    const bool mapped = (layout == Layout::kJob && P > 1) || layout == Layout::kPairs;
    CHECK(shards.exchange() == !(mapped && (layout == Layout::kJob ? one_node : P <= 2)));
    const bool far_rows = P > 1 && shards.exchange();
    if (policy != CachePolicy::kNone && far_rows) CHECK(store.cached_rows() > 0);
    if (!far_rows) CHECK(store.cached_rows() == 0);
    std::int64_t mismatched = 0, label_mismatch = 0;
    const std::int64_t steps = sampler.steps_in_epoch(1);
    Prefetcher pipe(sampler, store, 1, steps, /*depth=*/2);
    std::int64_t got = 0;
    while (auto mb = pipe.next()) {
      ++got;
      const auto F = static_cast<std::size_t>(fx.ds.feature_dim);
      const auto& in = mb->input_nodes();
      CHECK(mb->features.size() == in.size() * F);
      for (std::size_t i = 0; i < in.size(); ++i)
        mismatched += !std::equal(mb->features.begin() + static_cast<std::ptrdiff_t>(i * F), mb->features.begin() + static_cast<std::ptrdiff_t>((i + 1) * F),
                                  fx.ds.features.data() + fx.old_of_new[in[i]] * fx.ds.feature_dim);
      for (std::size_t i = 0; i < mb->seeds().size(); ++i) label_mismatch += std::get<ClassTargets>(mb->targets).classes[i] != fx.ds.labels[fx.old_of_new[mb->seeds()[i]]];
    }
    INFO("layout " << static_cast<int>(layout) << ", policy " << cache_policy_name(policy) << ", dense index bytes " << dense_bytes);
    CHECK(got == steps);
    CHECK(mismatched == 0);
    CHECK(label_mismatch == 0);
    const auto& c = store.counters();
    CHECK(c.cache_hits <= c.remote_rows);
    CHECK((c.node_local_rows > 0) == (node_local_peers > 0));
    CHECK((c.remote_rows > 0) == far_rows);
    if (policy == CachePolicy::kNone) CHECK(c.cache_hits == 0);
    if (policy != CachePolicy::kNone && far_rows) CHECK(c.hit_rate() > 0.2);
  }
}

TEST_CASE("2-byte stored features arrive as the dataset's rows rounded, over MPI at 2 bytes a value, from node-local shards and a cache", "[sampler][mpi][feature-dtype]") {
  for (const FeatureDtype dtype : {FeatureDtype::kFloat16, FeatureDtype::kBFloat16}) {
    // Cora's 0/1 features scaled to values neither type holds exactly.
    Fixture fx(0, [](Dataset& d) {
      std::vector<float> x(d.features.begin(), d.features.end());
      for (std::size_t i = 0; i < x.size(); ++i) x[i] = x[i] * 0.3f + static_cast<float>(i % 7) * 1e-3f;
      d.features = Array<float>(std::move(x));
    }, dtype);
    REQUIRE(fx.shard.feature_dtype == dtype);
    REQUIRE(static_cast<std::int64_t>(fx.shard.features16.size()) == fx.shard.graph.num_nodes() * fx.ds.feature_dim);
    const auto F = static_cast<std::size_t>(fx.ds.feature_dim);
    std::vector<std::uint16_t> narrow(F);
    std::vector<float> want(F);
    for (const bool node_local : {false, true})
    for (const CachePolicy policy : {CachePolicy::kNone, CachePolicy::kDegree}) {
      SamplerConfig cfg;
      cfg.node_local = node_local;
      cfg.fanouts = {4, 4};
      cfg.batch_size = 128;
      cfg.cache_policy = policy;
      auto comm = fx.world.dup();
      const ShardView shards(fx.shard, comm, node_local);
      DistSampler sampler(shards, comm, cfg);
      FeatureStore store(shards, comm);
      store.build_cache(cfg, &sampler);
      const FeatureCounters before = store.counters();
      std::int64_t mismatched = 0, inexact = 0;
      Prefetcher pipe(sampler, store, 1, sampler.steps_in_epoch(1), /*depth=*/2);
      while (auto mb = pipe.next()) {
        const auto& in = mb->input_nodes();
        REQUIRE(mb->features.size() == in.size() * F);
        for (std::size_t i = 0; i < in.size(); ++i) {
          const float* row = fx.ds.features.data() + fx.old_of_new[in[i]] * fx.ds.feature_dim;
          narrow_values(dtype, row, F, narrow.data());
          widen_values(dtype, narrow.data(), F, want.data());
          mismatched += !std::equal(want.begin(), want.end(), mb->features.begin() + static_cast<std::ptrdiff_t>(i * F));
          inexact += !std::equal(want.begin(), want.end(), row);
        }
      }
      INFO(feature_dtype_name(dtype) << ", node-local " << node_local << ", policy " << cache_policy_name(policy));
      CHECK(mismatched == 0);
      CHECK(inexact > 0);  // the rounding was there to see
      // Every exchanged row took 8 bytes of id and 2 a value, summed over the ranks.
      const FeatureCounters c = store.counters() - before;
      const auto received = fx.world.allreduce<std::int64_t>(c.bytes_received, comm::Op::kSum);
      const auto rows = fx.world.allreduce<std::int64_t>(c.remote_rows - c.cache_hits, comm::Op::kSum);
      CHECK(received == rows * static_cast<std::int64_t>(8 + 2 * F));
      if (fx.world.size() > 1 && !node_local) CHECK(rows > 0);
    }
  }
}

namespace {
// The bfloat16 nearest to x (ties to even), found by comparing the two candidates around it.
float nearest_bfloat16(float x) {
  const auto bits = std::bit_cast<std::uint32_t>(x);
  const float down = std::bit_cast<float>(bits & 0xffff0000U), up = std::bit_cast<float>((bits & 0xffff0000U) + 0x10000U);
  const double to_down = std::abs(static_cast<double>(x) - down), to_up = std::abs(static_cast<double>(up) - x);
  if (to_down != to_up) return to_down < to_up ? down : up;
  return (bits >> 16) & 1U ? up : down;
}
}  // namespace

TEST_CASE("bf16 on the wire: rows over the wire (exchange or cache) are the owner's rounded to bfloat16, rows read here exact", "[sampler][mpi]") {
  // Cora's features are 0/1, which bfloat16 holds exactly: give them significand bits to lose.
  Fixture fx(0, [](Dataset& d) {
    std::vector<float> f(d.features.span().begin(), d.features.span().end());
    for (std::size_t i = 0; i < f.size(); ++i) f[i] = f[i] / 3.0f + static_cast<float>(i % 1009) * 1e-3f;
    d.features = Array<float>(std::move(f));
  });
  const int P = fx.world.size();
  const auto F = static_cast<std::size_t>(fx.ds.feature_dim);
  std::vector<int> pairs(static_cast<std::size_t>(P));
  for (int r = 0; r < P; ++r) pairs[static_cast<std::size_t>(r)] = r / 2;
  for (bool node_pairs : {false, true})
  for (CachePolicy policy : {CachePolicy::kNone, CachePolicy::kDegree}) {
    std::int64_t received[2] = {0, 0}, remote_rows = 0;
    for (WireDtype wire : {WireDtype::kFloat32, WireDtype::kBFloat16}) {
      SamplerConfig cfg;
      cfg.node_local = false;
      cfg.fanouts = {4, 4};
      cfg.batch_size = 128;
      cfg.cache_policy = policy;
      cfg.wire_dtype = wire;
      auto comm = fx.world.dup();
      const ShardView shards = node_pairs ? ShardView(fx.shard, comm, pairs) : ShardView(fx.shard, comm, false);
      DistSampler sampler(shards, comm, cfg);
      FeatureStore store(shards, comm);
      store.build_cache(cfg, &sampler);
      std::int64_t wrong = 0, rounded = 0;
      Prefetcher pipe(sampler, store, 1, sampler.steps_in_epoch(1), /*depth=*/0);
      while (auto mb = pipe.next()) {
        const auto& in = mb->input_nodes();
        for (std::size_t i = 0; i < in.size(); ++i) {
          const bool read_here = shards.readable(fx.info.book.owner(in[i])) != nullptr;
          const float* want = fx.ds.features.data() + fx.old_of_new[in[i]] * fx.ds.feature_dim;
          for (std::size_t j = 0; j < F; ++j) {
            const float got = mb->features[i * F + j];
            const float expect = read_here || wire == WireDtype::kFloat32 ? want[j] : nearest_bfloat16(want[j]);
            wrong += got != expect;
            rounded += got != want[j];
          }
        }
      }
      INFO((node_pairs ? "pairs of ranks as nodes" : "every rank a node") << ", policy " << cache_policy_name(policy) << ", wire " << wire_dtype_name(wire));
      CHECK(wrong == 0);
      const bool far_rows = P > 1 && shards.exchange();
      CHECK((rounded > 0) == (far_rows && wire == WireDtype::kBFloat16));
      received[wire == WireDtype::kBFloat16] = store.counters().bytes_received;
      remote_rows = store.counters().remote_rows - store.counters().cache_hits;
    }
    // The same batches both times: the rows' bytes halve, the ids' stay.
    CHECK(received[0] - received[1] == remote_rows * static_cast<std::int64_t>(F) * 2);
  }
}

TEST_CASE("a cache sized by fraction is capped by its share of the node's memory, one sized in MB is not, rows counted as stored", "[sampler][mpi][feature-dtype]") {
  // A 2-byte shard's cache holds its rows as stored: the same share or MB hold twice the rows.
  for (const FeatureDtype dtype : {FeatureDtype::kFloat32, FeatureDtype::kFloat16}) {
  Fixture fx(0, {}, dtype);
  const int P = fx.world.size();
  const std::vector<int> nodes = fx.world.node_ids();
  const auto node_ranks = static_cast<double>(std::count(nodes.begin(), nodes.end(), nodes[static_cast<std::size_t>(fx.world.rank())]));
  const double row_bytes = static_cast<double>(fx.ds.feature_dim) * static_cast<double>(feature_value_bytes(dtype));
  // A share that leaves room for 10.5 rows per rank, and the whole memory.
  const double ten_rows = 10.5 * row_bytes * node_ranks / static_cast<double>(usable_memory_bytes());
  for (double share : {ten_rows, 1.0})
  for (bool by_mb : {false, true}) {
    SamplerConfig cfg;
    cfg.node_local = false;
    cfg.fanouts = {2};
    cfg.cache_fraction = by_mb ? 0 : 0.5;
    cfg.cache_mb = 0.5 * static_cast<double>(fx.ds.num_nodes()) * row_bytes / 1e6;
    cfg.cache_memory_share = share;
    auto comm = fx.world.dup();
    const ShardView shards(fx.shard, comm, false);
    FeatureStore store(shards, comm);
    store.build_cache(cfg, nullptr);
    INFO(feature_dtype_name(dtype) << ", share " << share << (by_mb ? ", by MB" : ", by fraction"));
    const bool capped = P > 1 && share < 1 && !by_mb;
    CHECK(store.cache_capped() == capped);
    if (capped) CHECK(store.cached_rows() == 10);
    if (P > 1 && !capped) CHECK(store.cached_rows() > 10);
  }
  }
}

TEST_CASE("one rank reproduces the serial reference exactly", "[sampler][mpi]") {
  Fixture fx;
  if (fx.world.size() != 1) return;
  for (bool replace : {false, true})
    for (const std::vector<int>& fanouts : {std::vector<int>{10, 5}, std::vector<int>{3, -1}}) {
      SamplerConfig cfg;
      cfg.fanouts = fanouts;
      cfg.batch_size = 50;
      cfg.replace = replace;
      cfg.seed = 11;
      const ShardView shards(fx.shard);
      DistSampler sampler(shards, fx.world, cfg);
      const auto batches = epoch_batches(std::vector<NodeId>(fx.ds.train_idx.begin(), fx.ds.train_idx.end()), 50, 11, 2, 0);
      CHECK(sampler.steps_in_epoch(2) == static_cast<std::int64_t>(batches.size()));
      for (std::int64_t step = 0; step < static_cast<std::int64_t>(batches.size()); ++step) {
        CHECK(sampler.seeds_for(2, step) == batches[static_cast<std::size_t>(step)]);
        MiniBatch d = sampler.sample(batches[static_cast<std::size_t>(step)], 2, step);
        MiniBatch r = reference_sample(fx.ds, cfg, batches[static_cast<std::size_t>(step)], 2, step);
        CHECK(d.layer_nodes == r.layer_nodes);
        for (std::size_t b = 0; b < d.blocks.size(); ++b) {
          CHECK(d.blocks[b].indptr == r.blocks[b].indptr);
          CHECK(d.blocks[b].indices == r.blocks[b].indices);
        }
      }
    }
}

TEST_CASE("sample_rows draws every row as choose_neighbors does, for any number of rows, at either id width", "[sampler][ids]") {
  // An oracle for the prefetching, lagged loop: one row at a time, no ring. Rows of degree 0, 1,
  // 2, 3, 7 and 40, in an order that revisits rows; counts around the ring's lag and size.
  std::vector<EdgeId> indptr = {0};
  std::vector<NodeId> indices;
  for (int degree : {0, 1, 2, 3, 7, 40, 0, 5}) {
    for (int j = 0; j < degree; ++j) indices.push_back(static_cast<NodeId>(100 * indptr.size() + static_cast<std::size_t>(j)));
    indptr.push_back(static_cast<EdgeId>(indices.size()));
  }
  const std::vector<NodeId> orig = {90, 91, 92, 93, 94, 95, 96, 97};
  for (bool narrow : {false, true})
  for (std::size_t n : {0, 1, 3, 4, 5, 7, 8, 9, 17, 100})
    for (int fanout : {-1, 1, 3, 7})
      for (bool replace : {false, true})
        for (bool keyed_by_orig : {false, true}) {
          const CsrGraph g = narrow ? CsrGraph(Array<EdgeId>(indptr), Array<std::int32_t>(std::vector<std::int32_t>(indices.begin(), indices.end())))
                                    : CsrGraph(Array<EdgeId>(indptr), Array<NodeId>(indices));
          REQUIRE(g.narrow_ids() == narrow);
          std::vector<NodeId> rows(n);
          for (std::size_t i = 0; i < n; ++i) rows[i] = static_cast<NodeId>((i * 5 + i / 8) % 8);
          const std::uint64_t key = hop_key(3, 1, static_cast<std::int64_t>(n), fanout);
          std::vector<NodeId> out;
          std::vector<std::int64_t> ends, scratch;
          sample_rows(g, keyed_by_orig ? std::span<const NodeId>(orig) : std::span<const NodeId>(), rows, fanout, replace, key, out, ends, scratch);
          std::vector<NodeId> want;
          std::vector<std::int64_t> want_ends, pos(static_cast<std::size_t>(std::max(fanout, 1)));
          for (NodeId u : rows) {
            const auto nb = row_of(g, u);
            const int k = choose_neighbors(static_cast<std::int64_t>(nb.size()), fanout, replace, node_key(key, keyed_by_orig ? orig[static_cast<std::size_t>(u)] : u),
                                           pos.data());
            if (k < 0) want.insert(want.end(), nb.begin(), nb.end());
            for (int q = 0; q < k; ++q) want.push_back(nb[static_cast<std::size_t>(pos[static_cast<std::size_t>(q)])]);
            want_ends.push_back(static_cast<std::int64_t>(want.size()));
          }
          INFO("n " << n << ", fanout " << fanout << ", replace " << replace << ", narrow " << narrow);
          CHECK(out == want);
          CHECK(ends == want_ends);
        }
}

TEST_CASE("every row of every block is the owner's keyed draw from its own shard row", "[sampler][mpi]") {
  // An exact check of the remote path at any rank count: a row sampled by another rank and sent
  // back in its reply must be what that owner's shard row gives under the node's key.
  Fixture fx;
  std::vector<Shard> shards;
  for (PartId k = 0; k < fx.info.book.parts(); ++k) shards.push_back(load_shard(fx.info, k));
  // Node layouts: none (every remote row drawn by its owner over MPI), the job's own (one node:
  // every row drawn here from the owners' shard files, no exchange), pairs of ranks as nodes (both
  // in one hop). The blocks must be identical under all three.
  const int P = fx.world.size();
  std::vector<int> one_node(static_cast<std::size_t>(P), 0), pairs(static_cast<std::size_t>(P));
  for (int r = 0; r < P; ++r) pairs[static_cast<std::size_t>(r)] = r / 2;
  for (std::uint64_t dense_bytes : {SamplerConfig{}.dense_index_bytes, std::uint64_t{0}})
  for (bool replace : {false, true}) {
    std::vector<MiniBatch> over_mpi;
    for (int layout = 0; layout < 3; ++layout) {
    SamplerConfig cfg;
    cfg.fanouts = {4, 3, -1};
    cfg.batch_size = 32;
    cfg.replace = replace;
    cfg.dense_index_bytes = dense_bytes;
    cfg.seed = 21;
    auto comm = fx.world.dup();
    const ShardView view = layout == 0 ? ShardView(fx.shard) : ShardView(fx.shard, comm, layout == 1 ? one_node : pairs);
    DistSampler sampler(view, comm, cfg);
    const int node_local_peers = layout == 0 ? 0 : layout == 1 ? P - 1 : std::min(2, P - (fx.world.rank() / 2) * 2) - 1;  // layouts given, not the job's
    CHECK(view.node_local_peers() == node_local_peers);
    CHECK(view.exchange() == !(layout == 1 || (layout == 2 && P <= 2)));
    const std::int64_t steps = std::min<std::int64_t>(sampler.steps_in_epoch(0), 6);
    std::int64_t rows = 0, wrong = 0, differ = 0;
    std::vector<std::int64_t> pos(static_cast<std::size_t>(*std::max_element(cfg.fanouts.begin(), cfg.fanouts.end())));
    for (std::int64_t step = 0; step < steps; ++step) {
      MiniBatch mb = sampler.sample(sampler.seeds_for(0, step), 0, step);
      if (layout == 0) {
        over_mpi.push_back(mb);
      } else {
        const MiniBatch& ref = over_mpi[static_cast<std::size_t>(step)];
        bool same = mb.layer_nodes == ref.layer_nodes && mb.blocks.size() == ref.blocks.size();
        for (std::size_t b = 0; same && b < mb.blocks.size(); ++b)
          same = mb.blocks[b].indptr == ref.blocks[b].indptr && mb.blocks[b].indices == ref.blocks[b].indices && mb.blocks[b].num_src == ref.blocks[b].num_src;
        differ += !same;
      }
      const int L = static_cast<int>(cfg.fanouts.size());
      for (int hop = 0; hop < L; ++hop) {
        const Block& blk = mb.blocks[static_cast<std::size_t>(L - 1 - hop)];
        const auto& dst = mb.layer_nodes[static_cast<std::size_t>(hop)];
        const auto& src = mb.layer_nodes[static_cast<std::size_t>(hop + 1)];
        const int fanout = cfg.fanouts[static_cast<std::size_t>(hop)];
        for (std::size_t i = 0; i < dst.size(); ++i) {
          const PartId k = fx.info.book.owner(dst[i]);
          const Shard& s = shards[static_cast<std::size_t>(k)];
          const NodeId local = dst[i] - fx.info.book.begin(k);
          const auto nb = row_of(s.graph, local);
          std::vector<NodeId> want;
          const int c = choose_neighbors(static_cast<std::int64_t>(nb.size()), fanout, replace,
                                         node_key(hop_key(cfg.seed, 0, step, hop), s.orig_ids[static_cast<std::size_t>(local)]), pos.data());
          if (c < 0) want.assign(nb.begin(), nb.end());
          for (int q = 0; q < c; ++q) want.push_back(nb[static_cast<std::size_t>(pos[static_cast<std::size_t>(q)])]);
          std::vector<NodeId> got;
          for (auto e = blk.indptr[i]; e < blk.indptr[i + 1]; ++e) got.push_back(src[static_cast<std::size_t>(blk.indices[static_cast<std::size_t>(e)])]);
          ++rows;
          if (got != want) ++wrong;
        }
      }
    }
    INFO("layout " << layout << ", replace " << replace << ", dense index bytes " << dense_bytes << ", rank " << fx.world.rank());
    CHECK(rows > 0);
    CHECK(wrong == 0);
    CHECK(differ == 0);
    const SamplerCounters& c = sampler.counters();
    CHECK((c.node_local_rows_sampled > 0) == (node_local_peers > 0));
    if (!view.exchange()) CHECK(c.remote_rows_sampled == 0);
    }
  }
}

TEST_CASE("four parts on fewer ranks: each rank serves its parts merged, rows, halo, draws and features as the parts' own", "[sampler][mpi]") {
  const int P = comm::Communicator::world().size();
  if (P > 4) return;
  test::CoraParts fx(4);
  const PartitionBook& book = fx.shard.book;
  const auto [first, last] = parts_of_rank(4, fx.world.rank(), P);
  CHECK(book.parts() == P);
  CHECK(fx.shard.part == fx.world.rank());
  CHECK(fx.shard.merged_parts == last - first);
  CHECK(book.begin(fx.world.rank()) == fx.info.book.begin(first));
  CHECK(book.end(fx.world.rank()) == fx.info.book.end(last - 1));
  std::vector<Shard> parts;
  for (PartId k = 0; k < 4; ++k) parts.push_back(load_shard(fx.info, k));
  // Every row, feature row, label and dataset id is its part's; the halo is every neighbour
  // outside the rank's range, once, with the rank that owns it.
  const NodeId begin = book.begin(fx.world.rank()), end = book.end(fx.world.rank());
  std::int64_t wrong = 0;
  std::vector<NodeId> halo, train;
  for (NodeId v = begin; v < end; ++v) {
    const PartId k = fx.info.book.owner(v);
    const Shard& s = parts[static_cast<std::size_t>(k)];
    const NodeId i = v - fx.info.book.begin(k), j = v - begin;
    const auto want = row_of(s.graph, i), got = row_of(fx.shard.graph, j);
    wrong += !std::equal(want.begin(), want.end(), got.begin(), got.end());
    wrong += !std::equal(s.features.data() + i * s.feature_dim, s.features.data() + (i + 1) * s.feature_dim, fx.shard.features.data() + j * s.feature_dim);
    wrong += s.labels[static_cast<std::size_t>(i)] != fx.shard.labels[static_cast<std::size_t>(j)];
    wrong += s.orig_ids[static_cast<std::size_t>(i)] != fx.shard.orig_ids[static_cast<std::size_t>(j)];
    for (const NodeId u : want)
      if (u < begin || u >= end) halo.push_back(u);
  }
  for (PartId k = first; k < last; ++k) train.insert(train.end(), parts[static_cast<std::size_t>(k)].train_idx.begin(), parts[static_cast<std::size_t>(k)].train_idx.end());
  std::sort(halo.begin(), halo.end());
  halo.erase(std::unique(halo.begin(), halo.end()), halo.end());
  CHECK(wrong == 0);
  CHECK(std::vector<NodeId>(fx.shard.train_idx.begin(), fx.shard.train_idx.end()) == train);
  CHECK(std::vector<NodeId>(fx.shard.halo_nodes.begin(), fx.shard.halo_nodes.end()) == halo);
  for (std::size_t i = 0; i < halo.size(); ++i) wrong += fx.shard.halo_owner[i] != book.owner(halo[i]);
  CHECK(wrong == 0);
  CHECK(fx.shard.graph.indptr().is_mapped());  // spill files, page cache like the parts' own

  // Sampling: seeds are the rank's, every row is its owner's keyed draw from the part's row, and
  // every fetched feature row and label is the dataset's.
  SamplerConfig cfg;
  cfg.fanouts = {4, 3, -1};
  cfg.batch_size = 32;
  cfg.seed = 5;
  auto comm = fx.world.dup();
  const ShardView view(fx.shard, comm, false);
  CHECK_FALSE(view.reads_node_local());
  DistSampler sampler(view, comm, cfg);
  FeatureStore store(view, comm);
  std::vector<std::int64_t> pos(4);
  std::int64_t rows = 0, foreign_seeds = 0, bad_features = 0, bad_labels = 0;
  const std::int64_t steps = sampler.steps_in_epoch(0);
  Prefetcher pipe(sampler, store, 0, steps, /*depth=*/1);
  std::int64_t step = 0;
  while (auto mb = pipe.next()) {
    for (const NodeId seed : mb->seeds()) foreign_seeds += book.owner(seed) != fx.world.rank();
    const int L = static_cast<int>(cfg.fanouts.size());
    for (int hop = 0; hop < L; ++hop) {
      const Block& blk = mb->blocks[static_cast<std::size_t>(L - 1 - hop)];
      const auto& dst = mb->layer_nodes[static_cast<std::size_t>(hop)];
      const auto& src = mb->layer_nodes[static_cast<std::size_t>(hop + 1)];
      for (std::size_t i = 0; i < dst.size(); ++i) {
        const PartId k = fx.info.book.owner(dst[i]);
        const Shard& s = parts[static_cast<std::size_t>(k)];
        const NodeId local = dst[i] - fx.info.book.begin(k);
        const auto nb = row_of(s.graph, local);
        std::vector<NodeId> want, got;
        const int c = choose_neighbors(static_cast<std::int64_t>(nb.size()), cfg.fanouts[static_cast<std::size_t>(hop)], false,
                                       node_key(hop_key(cfg.seed, 0, step, hop), s.orig_ids[static_cast<std::size_t>(local)]), pos.data());
        if (c < 0) want.assign(nb.begin(), nb.end());
        for (int q = 0; q < c; ++q) want.push_back(nb[static_cast<std::size_t>(pos[static_cast<std::size_t>(q)])]);
        for (auto e = blk.indptr[i]; e < blk.indptr[i + 1]; ++e) got.push_back(src[static_cast<std::size_t>(blk.indices[static_cast<std::size_t>(e)])]);
        wrong += got != want;
        ++rows;
      }
    }
    const auto F = static_cast<std::size_t>(fx.ds.feature_dim);
    const auto& in = mb->input_nodes();
    for (std::size_t i = 0; i < in.size(); ++i)
      bad_features += !std::equal(mb->features.begin() + static_cast<std::ptrdiff_t>(i * F), mb->features.begin() + static_cast<std::ptrdiff_t>((i + 1) * F),
                                  fx.ds.features.data() + fx.old_of_new[in[i]] * fx.ds.feature_dim);
    for (std::size_t i = 0; i < mb->seeds().size(); ++i) bad_labels += std::get<ClassTargets>(mb->targets).classes[i] != fx.ds.labels[fx.old_of_new[mb->seeds()[i]]];
    ++step;
  }
  INFO("rank " << fx.world.rank() << " of " << P);
  CHECK(step == steps);
  CHECK(rows > 0);
  CHECK(wrong == 0);
  CHECK(foreign_seeds == 0);
  CHECK(bad_features == 0);
  CHECK(bad_labels == 0);
  CHECK((store.counters().remote_rows > 0) == (P > 1));
}

TEST_CASE("the distributed sampler draws neighbours uniformly, as the serial reference does", "[sampler][mpi][statistics]") {
  // For every node sampled at hop 1 (often remote) with degree above the fanout, count how often
  // each neighbour is chosen over many steps; without replacement each neighbour is chosen with
  // probability f/d per appearance. The normalised squared deviations, summed over all such
  // (node, neighbour) pairs, follow roughly a chi-square law with that many degrees of freedom:
  // both samplers must land within 6 standard deviations of its mean.
  Fixture fx;
  SamplerConfig cfg;
  cfg.fanouts = {3, 4};
  cfg.batch_size = 16;
  cfg.seed = 5;
  const ShardView shards(fx.shard);
  DistSampler sampler(shards, fx.world, cfg);
  const auto seeds = sampler.seeds_for(0, 0);
  std::vector<NodeId> seeds_old;
  for (NodeId s : seeds) seeds_old.push_back(fx.old_of_new[s]);
  std::map<NodeId, std::int64_t> appear_d, appear_r;
  std::map<std::pair<NodeId, NodeId>, std::int64_t> chosen_d, chosen_r;
  const int S = 300;
  auto tally = [&](const MiniBatch& mb, bool translate, auto& appear, auto& chosen) {
    const Block& blk = mb.blocks[0];  // input block = hop 1
    for (std::int64_t i = 0; i < blk.num_dst; ++i) {
      const NodeId u = translate ? fx.old_of_new[mb.layer_nodes[1][i]] : mb.layer_nodes[1][i];
      ++appear[u];
      for (std::int64_t e = blk.indptr[i]; e < blk.indptr[i + 1]; ++e) {
        const NodeId v = translate ? fx.old_of_new[mb.layer_nodes[2][blk.indices[e]]] : mb.layer_nodes[2][blk.indices[e]];
        ++chosen[{u, v}];
      }
    }
  };
  for (int s = 0; s < S; ++s) {
    tally(sampler.sample(seeds, 100, s), true, appear_d, chosen_d);
    tally(reference_sample(fx.ds, cfg, seeds_old, 100, s), false, appear_r, chosen_r);
  }
  auto statistic = [&](const auto& appear, const auto& chosen, double& chi, double& dof) {
    chi = 0;
    dof = 0;
    for (const auto& [u, n] : appear) {
      const auto d = static_cast<double>(fx.ds.graph.degree(u));
      const double f = cfg.fanouts[1];
      if (d <= f || n < 30) continue;
      const double p = f / d;
      for (NodeId v : row_of(fx.ds.graph, u)) {
        auto it = chosen.find({u, v});
        const double obs = it == chosen.end() ? 0.0 : static_cast<double>(it->second);
        const double exp = static_cast<double>(n) * p;
        chi += (obs - exp) * (obs - exp) / (static_cast<double>(n) * p * (1 - p));
        dof += 1;
      }
    }
  };
  double chi_d, dof_d, chi_r, dof_r;
  statistic(appear_d, chosen_d, chi_d, dof_d);
  statistic(appear_r, chosen_r, chi_r, dof_r);
  INFO("distributed chi2 " << chi_d << " over " << dof_d << ", reference " << chi_r << " over " << dof_r);
  CHECK(dof_d > 20);
  CHECK(std::abs(chi_d - dof_d) < 6 * std::sqrt(2 * dof_d));
  CHECK(std::abs(chi_r - dof_r) < 6 * std::sqrt(2 * dof_r));
  // The same nodes appear at hop 1 in both (the seeds' neighbourhoods), about equally often.
  CHECK(appear_d.size() == appear_r.size());
}

TEST_CASE("degrees and labels of any nodes equal the full graph's, over MPI or from node-local shards", "[sampler][mpi]") {
  Fixture fx;
  const int P = fx.world.size();
  // Every rank asks for every node of the graph (its own, the node-local ranks', the others').
  std::vector<NodeId> all(static_cast<std::size_t>(fx.info.book.num_nodes()));
  for (std::size_t v = 0; v < all.size(); ++v) all[v] = static_cast<NodeId>(v);
  for (int layout = 0; layout < 3; ++layout) {  // none, the job's own, pairs of ranks as nodes
    SamplerConfig cfg;
    cfg.node_local = layout == 1;
    cfg.fanouts = {2};
    auto comm = fx.world.dup();
    std::vector<int> pairs(static_cast<std::size_t>(P));
    for (int r = 0; r < P; ++r) pairs[static_cast<std::size_t>(r)] = r / 2;
    const ShardView shards = layout == 2 ? ShardView(fx.shard, comm, pairs) : ShardView(fx.shard, comm, cfg.node_local);
    FeatureStore store(shards, comm);
    store.build_cache(cfg, nullptr);
    std::vector<std::int64_t> degrees, labels;
    store.fetch_degrees(all, degrees);
    store.fetch_labels(all, labels);
    std::int64_t wrong_degree = 0, wrong_label = 0;
    for (std::size_t v = 0; v < all.size(); ++v) {
      const NodeId old = fx.old_of_new[all[v]];
      wrong_degree += v >= degrees.size() || degrees[v] != fx.ds.graph.degree(old);
      wrong_label += v >= labels.size() || labels[v] != fx.ds.labels[static_cast<std::size_t>(old)];
    }
    INFO("layout " << layout << ", rank " << fx.world.rank());
    CHECK(wrong_degree == 0);
    CHECK(wrong_label == 0);
    // Owners are asked only while some rank reads a shard it cannot map: two exchanges (degrees, labels) or none.
    CHECK(store.counters().value_fetches == (shards.exchange() ? 2 : 0));
    if (layout == 1 && P > 1) CHECK(shards.node_local_peers() > 0);
  }
}

TEST_CASE("node-local shards that cannot be mapped are left to the exchange, and mapping needs one part per rank", "[sampler][mpi]") {
  Fixture fx;
  const int P = fx.world.size();
  const std::vector<int> one_node(static_cast<std::size_t>(P), 0);
  // Rank 1 cannot map rank 0's shard (a different view of the file system, say); all else maps.
  const ShardView shards(fx.shard, fx.world, one_node, true, [&](const PartitionInfo& info, PartId r) {
    if (fx.world.rank() == 1 && r == 0) throw InputError("part-0 unreadable here");
    return load_shard_rows(info, r);
  });
  CHECK(shards.reads_node_local());
  for (int r = 0; r < P; ++r) {
    const bool expect = r != fx.world.rank() && !(fx.world.rank() == 1 && r == 0);
    const Shard* mapped = r == fx.world.rank() ? nullptr : shards.readable(r);
    CHECK((mapped != nullptr) == expect);
    CHECK((mapped ? mapped->features.size() : 0) == (expect ? static_cast<std::size_t>(fx.info.book.size(r) * fx.info.dataset.feature_dim) : 0));
    CHECK((mapped ? mapped->labels.size() : 0) == (expect ? static_cast<std::size_t>(fx.info.book.size(r)) : 0));
  }
  CHECK(shards.readable(fx.world.rank()) == &fx.shard);
  // Whether anyone still needs the exchange: yes as soon as one rank could not map a node-local shard.
  CHECK(fx.world.all(shards.node_local_peers() == P - 1) == (P == 1));
  CHECK(shards.exchange() == (P > 1));
  // A shard that is not this rank's part (here: part 0 everywhere) maps nothing, on every rank.
  const Shard other = load_shard(fx.info, 0);
  const ShardView off(other, fx.world, one_node);
  CHECK(off.reads_node_local() == (P == 1));
}

TEST_CASE("a rank count the parts cannot be mapped to is an error on every rank", "[sampler][mpi][bad-input]") {
  Fixture fx;
  // Pretend the job has one rank more than the parts: every rank detects it and agrees.
  const bool ok = fx.info.book.parts() == fx.world.size() + 1;
  std::string what;
  try {
    fx.world.check_all(ok, "the partitioned dataset has " + std::to_string(fx.info.book.parts()) + " parts, the job " +
                               std::to_string(fx.world.size() + 1) + " ranks");
  } catch (const comm::CollectiveError& e) {
    what = e.what();
  }
  CHECK_THAT(what, Catch::Matchers::Contains("parts, the job"));
  // Each rank learns the same message, even if only one rank saw the problem.
  std::string one;
  try {
    fx.world.check_all(fx.world.rank() != fx.world.size() - 1, "rank " + std::to_string(fx.world.size() - 1) + " found a bad file");
  } catch (const comm::CollectiveError& e) {
    one = e.what();
  }
  CHECK(one == "rank " + std::to_string(fx.world.size() - 1) + " found a bad file");
}

TEST_CASE("bad sampler options are clear errors", "[sampler][bad-input]") {
  using Catch::Matchers::Contains;
  CHECK(parse_fanouts("15,10,5") == std::vector<int>{15, 10, 5});
  CHECK(parse_fanouts("-1,3") == std::vector<int>{-1, 3});
  CHECK_THROWS_WITH(parse_fanouts(""), Contains("--fanouts is empty"));
  CHECK_THROWS_WITH(parse_fanouts("15,-4,5"), Contains("item 2 is -4"));
  CHECK_THROWS_WITH(parse_fanouts("15,x"), Contains("item 2 is 'x'"));
  CHECK_THROWS_WITH(parse_fanouts("15,,5"), Contains("item 2"));
  CHECK_THROWS_WITH(parse_fanouts("-2"), Contains("item 1 is -2"));
  SamplerConfig c;
  c.batch_size = 0;
  CHECK_THROWS_WITH(validate(c), Contains("--batch must be at least 1"));
  CHECK_THROWS_WITH(parse_cache_policy("lru"), Contains("unknown --cache-policy 'lru'"));
}

TEST_CASE("a paused pipeline keeps its batches ahead, frees the sampler for other collectives, and goes on as if never paused", "[sampler][mpi]") {
  Fixture fx;
  SamplerConfig cfg;
  cfg.fanouts = {4, 3};
  cfg.batch_size = 16;
  auto comm = fx.world.dup();
  const ShardView view(fx.shard, comm, false);
  DistSampler sampler(view, comm, cfg);
  FeatureStore store(view, comm);
  const std::int64_t steps = std::min<std::int64_t>(sampler.steps_in_epoch(0), 12);
  std::vector<std::vector<NodeId>> plain;
  {
    Prefetcher pipe(sampler, store, 0, steps, /*depth=*/3);
    while (auto mb = pipe.next()) plain.push_back(mb->input_nodes());
  }
  std::vector<std::vector<NodeId>> paused;
  std::int64_t between = 0;
  {
    Prefetcher pipe(sampler, store, 0, steps, /*depth=*/3);
    for (std::int64_t step = 0; auto mb = pipe.next(); ++step) {
      paused.push_back(mb->input_nodes());
      // Every third step (and after the last), a batch of another epoch in between, collective on
      // the sampler's communicator as a validation's.
      if (step % 3 == 0) {
        pipe.pause();
        between += static_cast<std::int64_t>(produce_batch(sampler, store, 7, step).input_nodes().size());
        pipe.resume();
      }
    }
  }
  CHECK(between > 0);
  CHECK(paused == plain);
  CHECK(static_cast<std::int64_t>(plain.size()) == steps);
}
