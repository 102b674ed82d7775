// The sampler on a typed graph at 1, 2 and 4 ranks (ctest runs the sampler tests under mpiexec at
// each count): each relation sampled with its own fanout, every drawn entry an edge of the graph,
// and one rank the serial reference exactly. Only CHECK after the first collective.
#include <catch2/catch.hpp>

#include <cmath>
#include <filesystem>
#include <map>
#include <set>
#include <tuple>

#include "comm/communicator.hpp"
#include "datasets/feature_dtype.hpp"
#include "datasets/hetero.hpp"
#include "partition/partitioner.hpp"
#include "partition/shards.hpp"
#include "sampler/sampler.hpp"
#include "sampler/shard_view.hpp"
#include "sampler/typed_features.hpp"
#include "cora_parts.hpp"
#include "tests/graph_rows.hpp"

using namespace shardgnn;
namespace fs = std::filesystem;

namespace {

// A small IGB-Het-shaped graph partitioned by METIS with --balance ntypes into one part per rank,
// or into `parts` that the ranks share (each rank's merged, load_shard_for_rank).
struct TypedParts {
  comm::Communicator world = comm::Communicator::world();
  std::string root;
  Dataset ds;
  PartitionInfo info;
  Shard shard;
  std::vector<NodeId> old_of_new;

  explicit TypedParts(FeatureDtype dtype = FeatureDtype::kFloat32, int parts = 0, bool relation_ids = false) {
    HeteroOptions o;
    o.papers = 1500;
    o.feature_dim = 8;
    root = test::typed_parts_folder(world, "shardgnn-typed-", o, dtype, parts, relation_ids);
    ds = load_dataset(root + "/h");
    info = load_partition_info(root + "/parts");
    shard = parts > 0 ? load_shard_for_rank(info, world.rank(), world.size()) : load_shard(info, world.rank());
    old_of_new.resize(static_cast<std::size_t>(ds.num_nodes()));
    for (PartId k = 0; k < info.book.parts(); ++k) {
      const Shard s = load_shard(info, k);
      for (std::size_t i = 0; i < s.orig_ids.size(); ++i) old_of_new[static_cast<std::size_t>(info.book.begin(k)) + i] = s.orig_ids[i];
    }
  }
  ~TypedParts() {
    world.barrier();
    if (world.rank() == 0) fs::remove_all(root);
  }
};

}  // namespace

TEST_CASE("a typed graph is sampled per relation: each neighbour type of a row gets its relation's fanout", "[sampler][mpi][typed]") {
  TypedParts fx;
  const GraphSchema& s = fx.ds.schema;
  SamplerConfig cfg;
  cfg.fanouts = {3, 2};
  cfg.batch_size = 50;
  cfg.seed = 5;
  // Hop 0 as the fanouts say, but no citations; hop 1 one of each.
  cfg.relation_fanouts = {std::vector<int>(s.relations().size(), 3), std::vector<int>(s.relations().size(), 1)};
  cfg.relation_fanouts[0][0] = 0;  // paper__cites__paper
  REQUIRE(s.relation_label(0) == "paper__cites__paper");
  auto comm = fx.world.dup();
  const ShardView shards(fx.shard);
  DistSampler sampler(shards, comm, cfg);
  const NodeTypeIndex types = NodeTypeIndex::of(fx.shard);
  const std::int64_t steps = sampler.steps_in_epoch(0);
  std::int64_t wrong_type = 0, not_edges = 0, wrong_count = 0, rows = 0;
  for (std::int64_t step = 0; step < steps; ++step) {
    const auto seeds = sampler.seeds_for(0, step);
    const MiniBatch mb = sampler.sample(seeds, 0, step);
    if (fx.world.size() == 1) {
      // One part keeps the dataset's order: the serial reference, exactly.
      const MiniBatch ref = reference_sample(fx.ds, cfg, seeds, 0, step);
      CHECK(mb.layer_nodes == ref.layer_nodes);
      for (std::size_t b = 0; b < mb.blocks.size(); ++b) CHECK(mb.blocks[b].indices == ref.blocks[b].indices);
    }
    const int L = static_cast<int>(cfg.fanouts.size());
    for (int hop = 0; hop < L; ++hop) {
      const Block& blk = mb.blocks[static_cast<std::size_t>(L - 1 - hop)];
      const auto& dst = mb.layer_nodes[static_cast<std::size_t>(hop)];
      const auto& src = mb.layer_nodes[static_cast<std::size_t>(hop) + 1];
      for (std::size_t i = 0; i < dst.size(); ++i, ++rows) {
        const NodeId u = fx.old_of_new[static_cast<std::size_t>(dst[i])];
        const int tu = s.type_of(u);
        if (types(dst[i]) != tu) ++wrong_type;
        std::vector<std::int64_t> have(static_cast<std::size_t>(s.num_types()), 0), drawn(have);
        for (const NodeId v : row_of(fx.ds.graph, u)) ++have[static_cast<std::size_t>(s.type_of(v))];
        for (auto e = blk.indptr[i]; e < blk.indptr[i + 1]; ++e) {
          const NodeId v = fx.old_of_new[static_cast<std::size_t>(src[static_cast<std::size_t>(blk.indices[static_cast<std::size_t>(e)])])];
          if (!fx.ds.graph.has_edge(u, v)) ++not_edges;
          ++drawn[static_cast<std::size_t>(s.type_of(v))];
        }
        for (int t = 0; t < s.num_types(); ++t) {
          const int r = s.relation_between(tu, t);
          const std::int64_t f = r < 0 ? 0 : cfg.relation_fanouts[static_cast<std::size_t>(hop)][static_cast<std::size_t>(r)];
          if (drawn[static_cast<std::size_t>(t)] != std::min(f, have[static_cast<std::size_t>(t)])) ++wrong_count;
        }
      }
    }
  }
  CHECK(rows > 0);
  CHECK(wrong_type == 0);
  CHECK(not_edges == 0);
  CHECK(wrong_count == 0);
}

TEST_CASE("a graph with relation ids is sampled per relation: each relation's run of a row gets its fanout, every pick an entry of its relation",
          "[sampler][mpi][typed][relation-ids]") {
  for (const int parts : {0, 4}) {
    TypedParts fx(FeatureDtype::kFloat32, parts, true);
    const GraphSchema& s = fx.ds.schema;
    const auto R = s.relations().size();
    const auto relation = [&](const std::string& label) {
      for (std::size_t r = 0; r < R; ++r)
        if (s.relation_label(static_cast<int>(r)) == label) return static_cast<int>(r);
      return -1;
    };
    const int mentions = relation("paper__mentions__paper");
    SamplerConfig cfg;
    cfg.fanouts = {3, 2};
    cfg.batch_size = 40;
    cfg.seed = 9;
    // Hop 0: two of each relation, every citation and mention (so that a paper both cited and
    // mentioned comes twice); hop 1: one of each, no citations.
    const int cites = relation("paper__cites__paper");
    cfg.relation_fanouts = {std::vector<int>(R, 2), std::vector<int>(R, 1)};
    cfg.relation_fanouts[0][static_cast<std::size_t>(mentions)] = -1;
    cfg.relation_fanouts[0][static_cast<std::size_t>(cites)] = -1;
    cfg.relation_fanouts[1][static_cast<std::size_t>(cites)] = 0;
    std::set<std::tuple<NodeId, NodeId, std::int64_t>> entries;
    for (NodeId u = 0; u < fx.ds.num_nodes(); ++u) {
      const auto row = row_of(fx.ds.graph, u);
      for (std::size_t j = 0; j < row.size(); ++j) entries.insert({u, row[j], fx.ds.edge_relations[static_cast<std::size_t>(fx.ds.graph.indptr()[u]) + j]});
    }
    auto comm = fx.world.dup();
    const ShardView shards(fx.shard);
    DistSampler sampler(shards, comm, cfg);
    const std::int64_t steps = sampler.steps_in_epoch(0);
    std::int64_t not_entries = 0, wrong_count = 0, rows = 0, unaligned = 0, mentioned = 0, repeats = 0;
    for (std::int64_t step = 0; step < steps; ++step) {
      const auto seeds = sampler.seeds_for(0, step);
      const MiniBatch mb = sampler.sample(seeds, 0, step);
      if (fx.world.size() == 1 && parts == 0) {
        // One part keeps the dataset's order: the serial reference, exactly, relations included.
        const MiniBatch ref = reference_sample(fx.ds, cfg, seeds, 0, step);
        CHECK(mb.layer_nodes == ref.layer_nodes);
        for (std::size_t b = 0; b < mb.blocks.size(); ++b) {
          CHECK(mb.blocks[b].indices == ref.blocks[b].indices);
          CHECK(mb.blocks[b].relations == ref.blocks[b].relations);
        }
      }
      const int L = static_cast<int>(cfg.fanouts.size());
      for (int hop = 0; hop < L; ++hop) {
        const Block& blk = mb.blocks[static_cast<std::size_t>(L - 1 - hop)];
        unaligned += blk.relations.size() != blk.indices.size();
        if (blk.relations.size() != blk.indices.size()) continue;
        const auto& dst = mb.layer_nodes[static_cast<std::size_t>(hop)];
        const auto& src = mb.layer_nodes[static_cast<std::size_t>(hop) + 1];
        for (std::size_t i = 0; i < dst.size(); ++i, ++rows) {
          const NodeId u = fx.old_of_new[static_cast<std::size_t>(dst[i])];
          std::vector<std::int64_t> have(R, 0), drawn(R, 0);
          for (EdgeId e = fx.ds.graph.indptr()[u]; e < fx.ds.graph.indptr()[u + 1]; ++e) ++have[static_cast<std::size_t>(fx.ds.edge_relations[static_cast<std::size_t>(e)])];
          std::set<NodeId> picked;
          for (auto e = blk.indptr[i]; e < blk.indptr[i + 1]; ++e) {
            const NodeId v = fx.old_of_new[static_cast<std::size_t>(src[static_cast<std::size_t>(blk.indices[static_cast<std::size_t>(e)])])];
            const std::int64_t r = blk.relations[static_cast<std::size_t>(e)];
            not_entries += !entries.contains({u, v, r});
            ++drawn[static_cast<std::size_t>(r)];
            mentioned += r == mentions;
            repeats += !picked.insert(v).second;  // the same paper under two relations
          }
          for (std::size_t r = 0; r < R; ++r)
            if (const int f = cfg.relation_fanouts[static_cast<std::size_t>(hop)][r]; drawn[r] != (f < 0 ? have[r] : std::min<std::int64_t>(f, have[r]))) ++wrong_count;
        }
      }
    }
    INFO(parts << " parts");
    CHECK(rows > 0);
    CHECK(unaligned == 0);
    CHECK(not_entries == 0);
    CHECK(wrong_count == 0);
    CHECK(mentioned > 0);
    CHECK(repeats > 0);
  }
}

TEST_CASE("each relation's neighbours are drawn uniformly at every rank count, remote rows included", "[sampler][mpi][typed][statistics]") {
  // For every row sampled at either hop, and each relation of it with more neighbours than its
  // fanout f, count how often each neighbour of that relation is chosen over many steps: without
  // replacement each is chosen with probability f/d per appearance. The normalised squared
  // deviations, summed over all such (row, neighbour) pairs, follow roughly a chi-square law with
  // that many degrees of freedom; the sum must land within 6 standard deviations of its mean. At 2
  // and 4 ranks most hop-1 rows are other ranks' (the typed rows a wider rank count ships).
  TypedParts fx;
  const GraphSchema& s = fx.ds.schema;
  SamplerConfig cfg;
  cfg.fanouts = {3, 2};
  cfg.batch_size = 40;
  cfg.seed = 11;
  cfg.relation_fanouts = {std::vector<int>(s.relations().size(), 3), std::vector<int>(s.relations().size(), 2)};
  auto comm = fx.world.dup();
  const ShardView shards(fx.shard);
  DistSampler sampler(shards, comm, cfg);
  const auto seeds = sampler.seeds_for(0, 0);
  const int L = static_cast<int>(cfg.fanouts.size());
  std::map<std::pair<int, NodeId>, std::int64_t> appear;             // (hop, row) -> samples it was in
  std::map<std::tuple<int, NodeId, NodeId>, std::int64_t> chosen;    // (hop, row, neighbour) -> draws
  std::set<NodeId> remote;                                           // rows other ranks own
  const int S = 300;
  for (int step = 0; step < S; ++step) {
    const MiniBatch mb = sampler.sample(seeds, 0, step);
    for (int hop = 0; hop < L; ++hop) {
      const Block& blk = mb.blocks[static_cast<std::size_t>(L - 1 - hop)];
      const auto& dst = mb.layer_nodes[static_cast<std::size_t>(hop)];
      const auto& src = mb.layer_nodes[static_cast<std::size_t>(hop) + 1];
      for (std::size_t i = 0; i < dst.size(); ++i) {
        const NodeId u = fx.old_of_new[static_cast<std::size_t>(dst[i])];
        ++appear[{hop, u}];
        if (fx.info.book.owner(dst[i]) != fx.world.rank()) remote.insert(u);
        for (auto e = blk.indptr[i]; e < blk.indptr[i + 1]; ++e)
          ++chosen[{hop, u, fx.old_of_new[static_cast<std::size_t>(src[static_cast<std::size_t>(blk.indices[static_cast<std::size_t>(e)])])]}];
      }
    }
  }
  double chi = 0, dof = 0;
  std::int64_t remote_rows = 0;
  for (const auto& [key, n] : appear) {
    const auto [hop, u] = key;
    if (n < 30) continue;
    remote_rows += remote.count(u) > 0;
    const int tu = s.type_of(u);
    std::vector<std::vector<NodeId>> by_type(static_cast<std::size_t>(s.num_types()));
    for (const NodeId v : row_of(fx.ds.graph, u)) by_type[static_cast<std::size_t>(s.type_of(v))].push_back(v);
    for (int t = 0; t < s.num_types(); ++t) {
      const int r = s.relation_between(tu, t);
      const auto& nb = by_type[static_cast<std::size_t>(t)];
      if (r < 0) continue;
      const double f = cfg.relation_fanouts[static_cast<std::size_t>(hop)][static_cast<std::size_t>(r)];
      const auto d = static_cast<double>(nb.size());
      if (d <= f) continue;
      const double p = f / d;
      for (const NodeId v : nb) {
        auto it = chosen.find({hop, u, v});
        const double obs = it == chosen.end() ? 0.0 : static_cast<double>(it->second);
        const double exp = static_cast<double>(n) * p;
        chi += (obs - exp) * (obs - exp) / (static_cast<double>(n) * p * (1 - p));
        dof += 1;
      }
    }
  }
  INFO("rank " << fx.world.rank() << " of " << fx.world.size() << ": chi2 " << chi << " over " << dof << ", " << remote_rows << " remote rows");
  CHECK(dof > 100);
  CHECK((remote_rows > 0) == (fx.world.size() > 1));
  CHECK(std::abs(chi - dof) < 6 * std::sqrt(2 * dof));
}

TEST_CASE("per-relation fanouts that do not fit the graph are refused", "[sampler][mpi][typed]") {
  TypedParts fx;
  SamplerConfig cfg;
  cfg.fanouts = {3, 2};
  cfg.relation_fanouts = {{1, 2}, {1, 2}};
  auto comm = fx.world.dup();
  const ShardView shards(fx.shard);
  CHECK_THROWS_WITH(DistSampler(shards, comm, cfg), Catch::Matchers::Contains("the graph has 7"));
}

TEST_CASE("a typed batch's input rows arrive per node type at each type's width, with and without a cache, stored 4 or 2 bytes a value",
          "[sampler][mpi][typed]") {
  // float32, float16, and float32 over twice as many parts as ranks (each rank's merged).
  for (const auto& [dtype, parts] : {std::pair{FeatureDtype::kFloat32, 0}, {FeatureDtype::kFloat16, 0}, {FeatureDtype::kFloat32, -1}}) {
  TypedParts fx(dtype, parts < 0 ? 2 * comm::Communicator::world().size() : 0);
  INFO("feature dtype " << feature_dtype_name(dtype) << ", " << fx.info.book.parts() << " parts");
  const GraphSchema& s = fx.ds.schema;
  for (const bool node_local : {false, true})
  for (const CachePolicy policy : {CachePolicy::kNone, CachePolicy::kDegree}) {
    SamplerConfig cfg;
    cfg.node_local = node_local;
    cfg.fanouts = {4, 3};
    cfg.batch_size = 40;
    cfg.cache_policy = policy;
    cfg.cache_fraction = 0.5;
    auto comm = fx.world.dup();
    const ShardView shards(fx.shard);
    DistSampler sampler(shards, comm, cfg);
    TypedFeatureStore store(fx.shard, fx.world, cfg);
    std::int64_t wrong = 0, rows = 0, misplaced = 0;
    const std::int64_t steps = std::min<std::int64_t>(sampler.steps_in_epoch(0), 4);
    for (std::int64_t step = 0; step < steps; ++step) {
      const MiniBatch mb = sampler.sample(sampler.seeds_for(0, step), 0, step);
      std::vector<FeatureRows> x;
      std::vector<std::vector<std::int64_t>> at;
      std::vector<std::vector<NodeId>> ids;
      store.fetch(mb.input_nodes(), x, at, ids);
      for (int t = 0; t < s.num_types(); ++t) {
        const std::int64_t F = s.types()[static_cast<std::size_t>(t)].feature_dim;
        const auto& pos = at[static_cast<std::size_t>(t)];
        if (x[static_cast<std::size_t>(t)].size() != pos.size() * static_cast<std::size_t>(F)) ++wrong;
        for (std::size_t i = 0; i < pos.size(); ++i, ++rows) {
          const NodeId u = fx.old_of_new[static_cast<std::size_t>(mb.input_nodes()[static_cast<std::size_t>(pos[i])])];
          if (s.type_of(u) != t) ++misplaced;
          // The dataset's row as stored: float32, or rounded to float16 and widened back.
          std::vector<float> want(fx.ds.type_features[static_cast<std::size_t>(t)].data() + (u - s.begin(t)) * F,
                                  fx.ds.type_features[static_cast<std::size_t>(t)].data() + (u - s.begin(t) + 1) * F);
          if (dtype != FeatureDtype::kFloat32) {
            std::vector<std::uint16_t> bits(want.size());
            narrow_values(dtype, want.data(), want.size(), bits.data());
            widen_values(dtype, bits.data(), bits.size(), want.data());
          }
          if (!std::equal(want.begin(), want.end(), x[static_cast<std::size_t>(t)].data() + static_cast<std::ptrdiff_t>(i) * F)) ++wrong;
        }
      }
    }
    INFO("policy " << cache_policy_name(policy) << ", node-local reads " << node_local);
    CHECK(rows > 0);
    CHECK(misplaced == 0);
    CHECK(wrong == 0);
    std::int64_t hits = 0, remote = 0, same_node = 0;
    for (int t = 0; t < s.num_types(); ++t) {
      const FeatureCounters& c = store.store(t)->counters();
      hits += c.cache_hits, remote += c.remote_rows, same_node += c.node_local_rows;
    }
    // One machine: with node-local reads every other rank's rows are read from its shard (with
    // a part per rank; merged shards exchange theirs).
    const bool reads_local = node_local && fx.shard.merged_parts == 1;
    if (fx.world.size() > 1 && !node_local && policy == CachePolicy::kDegree) CHECK(hits > 0);
    if (fx.world.size() > 1) CHECK((reads_local ? same_node : remote) > 0);
    if (reads_local) CHECK(remote == 0);
    if (fx.world.size() > 1 && dtype != FeatureDtype::kFloat32) CHECK(store.store(0)->wire_value_bytes() == 2);
  }
  }
}

TEST_CASE("per-relation fanouts parse from --fanouts text: defaults, then overrides by name or label", "[sampler][typed]") {
  const GraphSchema s({{"paper", 3, 2}, {"author", 2, 0}},
                      {{"paper", "cites", "paper"}, {"paper", "written_by", "author"}, {"author", "writes", "paper"}}, "test");
  CHECK(parse_relation_fanouts("15,10", s) == std::vector<std::vector<int>>{{15, 15, 15}, {10, 10, 10}});
  CHECK(parse_relation_fanouts("15,10;cites=5,0;author__writes__paper=-1,2", s) == std::vector<std::vector<int>>{{5, 15, -1}, {0, 10, 2}});
  using Catch::Matchers::Contains;
  CHECK_THROWS_WITH(parse_relation_fanouts("15,10;cited=5,5", s), Contains("no relation named 'cited'") && Contains("written_by"));
  CHECK_THROWS_WITH(parse_relation_fanouts("15,10;cites=5", s), Contains("1 hops, the default has 2"));
  CHECK_THROWS_WITH(parse_relation_fanouts("cites=5,5", s), Contains("default fanouts first"));
}
