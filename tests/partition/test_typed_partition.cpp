// Partitioning a typed graph: every method partitions the one CSR; --balance ntypes gives each part
// its share of every node type; shards keep the types (per-part type counts and halos, per-type
// feature rows) and each entry's relation where the graph stores them, and the verifier checks
// them.
#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>

#include "datasets/error.hpp"
#include "datasets/generators.hpp"
#include "datasets/hetero.hpp"
#include "datasets/json_util.hpp"
#include "datasets/npy.hpp"
#include "graph_rows.hpp"
#include "partition/partitioner.hpp"
#include "partition/shards.hpp"
#include "cora_parts.hpp"
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

// saved_hetero's graph with_mentions: rows list some papers twice, under two relations; saved
// and loaded back mapped.
Dataset saved_relational(const test::ScratchDir& dir) {
  save_dataset(test::with_mentions(saved_hetero(dir), dir.path()), dir / "kg");
  return load_dataset(dir / "kg");
}

// Each row's (dataset neighbour, relation) pairs, sorted: of a dataset's rows, or of a shard's
// (its neighbours mapped back through `old_of_new`).
using Entries = std::vector<std::pair<NodeId, std::int64_t>>;
Entries entries_of(const CsrGraph& g, const IntArray& relations, NodeId row, const std::vector<NodeId>* old_of_new = nullptr) {
  Entries out;
  const auto nb = row_of(g, row);
  for (std::size_t j = 0; j < nb.size(); ++j)
    out.emplace_back(old_of_new ? (*old_of_new)[static_cast<std::size_t>(nb[j])] : nb[j], relations[static_cast<std::size_t>(g.indptr()[row]) + j]);
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

TEST_CASE("a graph with relation ids partitions by every method, and its shards keep each entry's relation in (relation, neighbour) order", "[partition][typed][relation-ids]") {
  test::ScratchDir dir;
  const Dataset ds = saved_relational(dir);
  REQUIRE(ds.schema.relation_ids());
  // Some row lists a paper twice, under two relations: rows are not sorted by neighbour.
  bool repeated = false;
  for (NodeId u = 0; u < ds.num_nodes() && !repeated; ++u) {
    const auto row = row_of(ds.graph, u);
    repeated = std::set<NodeId>(row.begin(), row.end()).size() < row.size();
  }
  REQUIRE(repeated);
  for (const PartitionMethod method : {PartitionMethod::kMetis, PartitionMethod::kMetisMl, PartitionMethod::kFennel, PartitionMethod::kRandom})
    for (const int k : {2, 4}) {
      INFO(method_name(method) << ", " << k << " parts");
      PartitionResult r;
      r.config.method = method;
      r.config.parts = k;
      r.config.balance = {BalanceKey::kNtypes};
      r.assignment = make_partitioner(method)->partition(ds, r.config);
      const std::string out = dir / (method_name(method) + std::to_string(k));
      const PartitionMetrics metrics = write_partitioned(ds, dir / "kg", r, out, {});
      const auto v = verify_partition(dir / "kg", out);
      INFO((v.errors.empty() ? "" : v.errors.front()));
      CHECK(v.ok());
      // The cut, counted here entry by entry: an entry is an edge; u -> v with u > v counts only
      // where v's row does not list u (it was counted from v's row).
      std::int64_t cut = 0;
      for (NodeId u = 0; u < ds.num_nodes(); ++u)
        for (const NodeId w : row_of(ds.graph, u))
          if (r.assignment[static_cast<std::size_t>(u)] != r.assignment[static_cast<std::size_t>(w)]) {
            const auto back = row_of(ds.graph, w);
            cut += u < w || std::find(back.begin(), back.end(), u) == back.end();
          }
      CHECK(metrics.edge_cut == cut);
      const PartitionInfo info = load_partition_info(out);
      std::vector<NodeId> old_of_new(static_cast<std::size_t>(ds.num_nodes()));
      std::vector<Shard> shards;
      for (PartId p = 0; p < k; ++p) {
        shards.push_back(load_shard(info, p));
        for (std::size_t i = 0; i < shards.back().orig_ids.size(); ++i) old_of_new[static_cast<std::size_t>(info.book.begin(p)) + i] = shards.back().orig_ids[i];
      }
      std::int64_t rows_differ = 0;
      for (const Shard& sh : shards) {
        REQUIRE(sh.edge_relations.size() == static_cast<std::size_t>(sh.graph.num_edges()));
        CHECK(sh.edge_relations.element_bytes() == 1);  // 8 relations: int8
        for (NodeId i = 0; i < sh.graph.num_nodes(); ++i)
          rows_differ += entries_of(sh.graph, sh.edge_relations, i, &old_of_new) != entries_of(ds.graph, ds.edge_relations, sh.orig_ids[static_cast<std::size_t>(i)]);
      }
      CHECK(rows_differ == 0);
      // Two ranks over four parts: each rank's relation ids are its two parts' end to end.
      if (k == 4)
        for (int rank = 0; rank < 2; ++rank) {
          const Shard m = load_shard_for_rank(info, rank, 2, dir.path());
          std::vector<std::int64_t> want = shards[static_cast<std::size_t>(2 * rank)].edge_relations.widened();
          const auto second = shards[static_cast<std::size_t>(2 * rank + 1)].edge_relations.widened();
          want.insert(want.end(), second.begin(), second.end());
          CHECK(m.edge_relations.widened() == want);
        }
    }
  // partition.json says version 5 (an older build refuses it); a partition without relation ids
  // stays version 4.
  CHECK(read_json_file(dir / "metis2/partition.json").as_object().at("version").as_int64() == 5);
}

TEST_CASE("a shard's relation ids out of range or out of (relation, neighbour) order are refused, naming the file and element", "[partition][typed][relation-ids]") {
  test::ScratchDir dir;
  const Dataset ds = saved_relational(dir);
  PartitionResult r;
  r.config.method = PartitionMethod::kRandom;
  r.config.parts = 2;
  r.assignment = make_partitioner(r.config.method)->partition(ds, r.config);
  write_partitioned(ds, dir / "kg", r, dir / "p", {});
  const PartitionInfo info = load_partition_info(dir / "p");
  const std::string file = dir / "p/part-0/edge_relations.npy";
  const std::int64_t data = read_npy_header(file).data_offset;
  // The first row with two relations: its first entry given the last run's relation breaks the order.
  const Shard sh = load_shard(info, 0);
  std::int64_t at = -1;
  for (NodeId i = 0; i < sh.graph.num_nodes() && at < 0; ++i) {
    const EdgeId b = sh.graph.indptr()[i], e = sh.graph.indptr()[i + 1];
    if (e - b >= 2 && sh.edge_relations[static_cast<std::size_t>(b)] != sh.edge_relations[static_cast<std::size_t>(e - 1)]) at = b;
  }
  REQUIRE(at >= 0);
  const auto last = static_cast<char>(sh.edge_relations[static_cast<std::size_t>(at)] + 1);
  auto poke = [&](std::int64_t element, char value) {
    std::fstream f(file, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(data + element);
    f.put(value);
  };
  poke(at, 100);
  CHECK_THROWS_WITH(load_shard(info, 0), Contains("edge_relations.npy") && Contains("element " + std::to_string(at)) && Contains("relation id 100, expected 0 to 7"));
  poke(at, static_cast<char>(7));
  CHECK_THROWS_WITH(load_shard(info, 0), Contains("indices.npy") && Contains("element " + std::to_string(at + 1)) && Contains("not ordered by (relation, neighbour)"));
  poke(at, static_cast<char>(last - 1));
  CHECK_NOTHROW(load_shard(info, 0));
}

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
