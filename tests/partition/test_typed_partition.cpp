// Partitioning a typed graph: every method partitions the one CSR; --balance ntypes gives each part
// its share of every node type; shards keep the types (per-part type counts and halos, per-type
// feature rows), and the verifier checks them.
#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>

#include "datasets/error.hpp"
#include "datasets/generators.hpp"
#include "datasets/hetero.hpp"
#include "partition/partitioner.hpp"
#include "partition/shards.hpp"
#include "test_paths.hpp"

using namespace shardgnn;
using Catch::Matchers::Contains;
namespace fs = std::filesystem;

namespace {

// A small IGB-Het-shaped graph, saved and loaded back mapped as the tools see it.
Dataset saved_hetero(const test::ScratchDir& dir) {
  HeteroOptions o;
  o.papers = 2000;
  o.featureless = {"institute"};
  save_dataset(generate_hetero(o), dir / "h");
  return load_dataset(dir / "h");
}

}  // namespace

TEST_CASE("balancing node types gives every part its share of each node type, and shards keep the types", "[partition][typed]") {
  test::ScratchDir dir;
  const Dataset ds = saved_hetero(dir);
  const GraphSchema& s = ds.schema;
  for (const int k : {1, 2, 4}) {
    PartitionResult r;
    r.config.method = PartitionMethod::kMetis;
    r.config.parts = k;
    r.config.balance = {BalanceKey::kNtypes, BalanceKey::kTrain};
    r.assignment = make_partitioner(r.config.method)->partition(ds, r.config);
    std::vector<std::vector<std::int64_t>> count(static_cast<std::size_t>(k), std::vector<std::int64_t>(static_cast<std::size_t>(s.num_types()), 0));
    for (NodeId v = 0; v < ds.num_nodes(); ++v) ++count[static_cast<std::size_t>(r.assignment[static_cast<std::size_t>(v)])][static_cast<std::size_t>(s.type_of(v))];
    for (int t = 0; t < s.num_types(); ++t) {
      std::int64_t most = 0;
      for (const auto& c : count) most = std::max(most, c[static_cast<std::size_t>(t)]);
      INFO(k << " parts, type " << s.types()[static_cast<std::size_t>(t)].name);
      CHECK(static_cast<double>(most) <= (1 + r.config.imbalance) * static_cast<double>(s.types()[static_cast<std::size_t>(t)].count) / k);
    }
    const std::string out = dir / ("p" + std::to_string(k));
    write_partitioned(ds, dir / "h", r, out, {});
    const auto v = verify_partition(dir / "h", out);
    INFO((v.errors.empty() ? "" : v.errors.front()));
    CHECK(v.ok());
    const PartitionInfo info = load_partition_info(out);
    CHECK(info.dataset.schema.relations().size() == 7);
    for (PartId p = 0; p < k; ++p) {
      const Shard sh = load_shard(info, p);
      CHECK(sh.type_nodes == count[static_cast<std::size_t>(p)]);
      CHECK(sh.type_features[2].empty());  // the featureless institutes
      CHECK(sh.type_features[0].size() == static_cast<std::size_t>(sh.type_nodes[0] * 128));
    }
    // Two ranks over four parts: each rank's two parts merged, type by type, rows end to end.
    if (k == 4)
      for (int rank = 0; rank < 2; ++rank) {
        const Shard m = load_shard_for_rank(info, rank, 2, dir.path());
        const Shard a = load_shard(info, 2 * rank), b = load_shard(info, 2 * rank + 1);
        CHECK(m.merged_parts == 2);
        for (int t = 0; t < s.num_types(); ++t) CHECK(m.type_nodes[static_cast<std::size_t>(t)] == a.type_nodes[static_cast<std::size_t>(t)] + b.type_nodes[static_cast<std::size_t>(t)]);
        std::vector<float> want(a.type_features[0].begin(), a.type_features[0].end());
        want.insert(want.end(), b.type_features[0].begin(), b.type_features[0].end());
        CHECK(std::equal(want.begin(), want.end(), m.type_features[0].begin(), m.type_features[0].end()));
        CHECK(m.type_features[2].empty());
      }
  }
}

TEST_CASE("the verifier catches a typed shard whose feature rows or types are wrong", "[partition][typed]") {
  test::ScratchDir dir;
  Dataset ds = saved_hetero(dir);
  PartitionResult r;
  r.config.method = PartitionMethod::kRandom;
  r.config.parts = 2;
  r.assignment = make_partitioner(r.config.method)->partition(ds, r.config);
  // Written from a copy whose author rows differ from the saved dataset's: the shards' rows then
  // differ from the dataset the verifier reads.
  Dataset changed = load_dataset(dir / "h");
  std::vector<float> authors(changed.type_features[1].begin(), changed.type_features[1].end());
  authors[5] += 1;
  changed.type_features[1] = Array<float>(std::move(authors));
  write_partitioned(changed, dir / "h", r, dir / "p", {});
  const auto v = verify_partition(dir / "h", dir / "p");
  REQUIRE_FALSE(v.ok());
  CHECK_THAT(v.errors.front(), Contains("features_author.npy"));
}

TEST_CASE("balancing node types needs a typed graph", "[partition][typed]") {
  SbmOptions o;
  o.num_nodes = 200;
  const Dataset ds = generate_sbm(o);
  PartitionConfig c;
  c.parts = 2;
  c.balance = {BalanceKey::kNtypes};
  CHECK_THROWS_WITH(make_partitioner(c.method)->partition(ds, c), Contains("--balance ntypes") && Contains("one node type"));
}
