#include <catch2/catch.hpp>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <set>

#include "datasets/array_dir.hpp"
#include "datasets/builder.hpp"
#include "datasets/error.hpp"
#include "datasets/fileio.hpp"
#include "datasets/generators.hpp"
#include "datasets/json_util.hpp"
#include "datasets/readers.hpp"
#include "partition/partitioner.hpp"
#include "partition/shards.hpp"
#include "drawn.hpp"
#include "test_paths.hpp"
#include "tests/graph_rows.hpp"

using namespace shardgnn;
using Catch::Matchers::Contains;
namespace fs = std::filesystem;

namespace {

using test::drawn;

//  0 - 1      4 - 5
//  | X |  --  | X |      two 4-cliques, 3 - 4 the only bridge
//  2 - 3      6 - 7
Dataset two_cliques() {
  std::vector<std::pair<NodeId, NodeId>> e;
  for (NodeId base : {0, 4})
    for (NodeId a = 0; a < 4; ++a)
      for (NodeId b = a + 1; b < 4; ++b) e.emplace_back(base + a, base + b);
  e.emplace_back(3, 4);
  return drawn(8, e, {0, 0, 0, 0, 1, 1, 1, 1}, {0, 1, 4, 5});
}

std::int64_t cut_of(const Dataset& ds, const std::vector<PartId>& p) {
  std::int64_t cut = 0;
  for (NodeId u = 0; u < ds.num_nodes(); ++u)
    for (NodeId v : row_of(ds.graph, u)) cut += u < v && p[u] != p[v];
  return cut;
}

PartitionConfig config(PartitionMethod m, int k, std::uint64_t seed = 1) {
  PartitionConfig c;
  c.method = m;
  c.parts = k;
  c.seed = seed;
  return c;
}

struct SampleGraph {
  std::string path;
  bool symmetrize;
};

// A sample graph read (symmetrised when asked), saved under `dir` and loaded back mapped, as the
// tools see a dataset; its folder goes to `folder`.
Dataset saved_sample(const SampleGraph& c, const test::ScratchDir& dir, std::string& folder) {
  ReadOptions o;
  o.clean.symmetrize = c.symmetrize;
  folder = dir / fs::path(c.path).filename().string();
  save_dataset(read_dataset(c.path, o), folder);
  return load_dataset(folder);
}

// Cora saved as `dir`/cora and loaded from there.
Dataset saved_cora(const test::ScratchDir& dir) {
  save_dataset(read_dataset(test::sample("cora.npz"), {}), dir / "cora");
  return load_dataset(dir / "cora");
}

// A random assignment of `ds`'s nodes to `parts` parts.
PartitionResult random_parts(const Dataset& ds, int parts) {
  PartitionResult r;
  r.config = config(PartitionMethod::kRandom, parts);
  r.assignment = make_partitioner(r.config.method)->partition(ds, r.config);
  return r;
}

// Partitions `ds` (saved in `dataset_dir`) at random into k parts and writes the shards to `out`.
PartitionResult write_random_parts(const Dataset& ds, const std::string& dataset_dir, int k, const std::string& out, const WriteOptions& options = {}) {
  PartitionResult r = random_parts(ds, k);
  write_partitioned(ds, dataset_dir, r, out, options);
  return r;
}

}  // namespace

TEST_CASE("relabel gives each part a contiguous range, stable inside a part", "[partition]") {
  const std::vector<PartId> assignment = {1, 0, 1, 2, 0, 1};
  Relabelling r = relabel(assignment, 3);
  CHECK(r.book.offsets() == std::vector<NodeId>{0, 2, 5, 6});
  CHECK(r.old_of_new == std::vector<NodeId>{1, 4, 0, 2, 5, 3});
  for (NodeId v = 0; v < 6; ++v) {
    CHECK(r.old_of_new[r.new_of_old[v]] == v);
    CHECK(r.book.owner(r.new_of_old[v]) == assignment[v]);
  }
  CHECK(r.book.to_local(3) == 1);
  // An empty part keeps an empty range.
  Relabelling e = relabel(std::vector<PartId>{0, 0, 2}, 3);
  CHECK(e.book.offsets() == std::vector<NodeId>{0, 2, 2, 3});
  CHECK(e.book.owner(2) == 2);
}

TEST_CASE("metrics on a drawn graph: cut, volume, halo, label entropy", "[partition]") {
  Dataset ds = two_cliques();
  const std::vector<PartId> p = {0, 0, 0, 0, 1, 1, 1, 1};
  PartitionMetrics m = compute_metrics(ds, p, 2);
  CHECK(m.edge_cut == 1);
  CHECK(m.comm_volume == 2);  // nodes 3 and 4 each see one other part
  CHECK(m.shards[0].halo == 1);
  CHECK(m.shards[1].halo == 1);
  CHECK(m.halo_factor == Approx(10.0 / 8.0));
  CHECK(m.global_label_entropy == Approx(1.0));
  CHECK(m.mean_label_entropy == Approx(0.0));  // each shard holds one class
  CHECK(m.max_label_kl > 0.9);
  CHECK(m.train.ratio() == Approx(1.0));
  // Moving node 3 across: cut 3 + 1 - ... every edge of 3 into part 0 is now cut.
  PartitionMetrics m2 = compute_metrics(ds, std::vector<PartId>{0, 0, 0, 1, 1, 1, 1, 1}, 2);
  CHECK(m2.edge_cut == 3);
  CHECK(m2.nodes.max == 5);
  CHECK(m2.nodes.ratio() == Approx(5.0 / 4.0));
}

TEST_CASE("a graph recorded symmetric gets the same metrics without searching reverse edges", "[partition]") {
  // Both paths of compute_metrics' edge cut, on a symmetric graph under a scattered partition,
  // and on the two cliques.
  SbmOptions o;
  o.num_nodes = 3000;
  o.num_classes = 4;
  Dataset ds = generate_sbm(o);
  REQUIRE(ds.cleaning.symmetric);
  // K = 64 uses the last bit of the branch-free path's shard mask; K = 65 takes the general path.
  for (int K : {5, 64, 65}) {
    INFO("K=" << K);
    std::vector<PartId> p(static_cast<std::size_t>(ds.num_nodes()));
    for (std::size_t v = 0; v < p.size(); ++v) p[v] = static_cast<PartId>((v * 2654435761u >> 7) % static_cast<unsigned>(K));
    ds.cleaning.symmetric = true;
    const PartitionMetrics fast = compute_metrics(ds, p, K);
    ds.cleaning.symmetric = false;
    const PartitionMetrics searched = compute_metrics(ds, p, K);
    CHECK(fast.edge_cut > 0);
    CHECK(fast.edge_cut == searched.edge_cut);
    CHECK(fast.comm_volume == searched.comm_volume);
    CHECK(fast.halo_factor == searched.halo_factor);
    for (int k = 0; k < K; ++k) {
      CHECK(fast.shards[k].cut_entries == searched.shards[k].cut_entries);
      CHECK(fast.shards[k].halo == searched.shards[k].halo);
    }
  }
  Dataset cliques = two_cliques();
  cliques.cleaning.symmetric = true;
  CHECK(compute_metrics(cliques, std::vector<PartId>{0, 0, 0, 1, 1, 1, 1, 1}, 2).edge_cut == 3);
}

namespace {

// The graph metrics by their definitions, by brute force: distinct cut pairs {u, v} listed from
// either end, each node's distinct other shards among its row's entries, each shard's cut entries
// and distinct remote targets.
struct ReferenceMetrics {
  std::int64_t edge_cut = 0, comm_volume = 0;
  std::vector<std::int64_t> cut_entries, halo;
};
ReferenceMetrics reference_metrics(const Dataset& ds, const std::vector<PartId>& part, int K) {
  ReferenceMetrics ref;
  ref.cut_entries.assign(static_cast<std::size_t>(K), 0);
  std::set<std::pair<NodeId, NodeId>> pairs;
  std::vector<std::set<NodeId>> halo(static_cast<std::size_t>(K));
  for (NodeId u = 0; u < ds.num_nodes(); ++u) {
    std::set<PartId> others;
    for (NodeId v : row_of(ds.graph, u)) {
      if (part[v] == part[u]) continue;
      pairs.insert({std::min(u, v), std::max(u, v)});
      others.insert(part[v]);
      ref.cut_entries[part[u]] += 1;
      halo[part[u]].insert(v);
    }
    ref.comm_volume += static_cast<std::int64_t>(others.size());
  }
  ref.edge_cut = static_cast<std::int64_t>(pairs.size());
  for (const auto& h : halo) ref.halo.push_back(static_cast<std::int64_t>(h.size()));
  return ref;
}

}  // namespace

TEST_CASE("partition metrics match their definitions, from compute_metrics and from the shard writer's pass", "[partition][verify]") {
  test::ScratchDir dir;
  SbmOptions o;
  o.num_nodes = 3000;
  o.num_classes = 4;
  o.feature_dim = 2;
  const Dataset sbm = generate_sbm(o);
  // A directed graph with repeated entries and self-loops: pairs listed from one end only, and
  // rows long enough for the writer's counting pass.
  RmatOptions ro;
  ro.scale = 10;
  ro.edge_factor = 24;
  Dataset rmat = generate_rmat(ro, CleanOptions{});
  add_random_node_data(rmat, 2, 3, 0.5, 0.2, 7);
  REQUIRE_FALSE(rmat.cleaning.symmetric);
  // The same made symmetric with its repeated entries kept: the branch-free path's repeat check.
  CleanOptions sym;
  sym.symmetrize = true;
  Dataset rmat_sym = generate_rmat(ro, sym);
  add_random_node_data(rmat_sym, 2, 3, 0.5, 0.2, 7);
  REQUIRE(rmat_sym.cleaning.symmetric);
  bool repeats = false;
  for (NodeId u = 0; u < rmat_sym.num_nodes() && !repeats; ++u) {
    const auto nb = row_of(rmat_sym.graph, u);
    for (std::size_t i = 1; i < nb.size(); ++i) repeats = repeats || nb[i] == nb[i - 1];
  }
  REQUIRE(repeats);
  int case_no = 0;
  for (const Dataset* ds : {&sbm, static_cast<const Dataset*>(&rmat), static_cast<const Dataset*>(&rmat_sym)})
    // K = 64 uses the last bit of the branch-free path's shard mask; K = 65 takes the general path.
    for (int K : {1, 5, 64, 65}) {
      PartitionResult r;
      r.config = config(PartitionMethod::kRandom, K);
      r.config.cost_fanouts = {4, 3};  // not the default: the writer must use the result's cost model
      r.assignment = make_partitioner(PartitionMethod::kRandom)->partition(*ds, r.config);
      const PartitionMetrics walked = compute_metrics(*ds, r.assignment, r.config);
      const ReferenceMetrics ref = reference_metrics(*ds, r.assignment, K);
      const char* name = ds == &sbm ? "sbm" : ds == &rmat ? "rmat" : "rmat-sym";
      INFO(name << " K=" << K);
      CHECK(walked.edge_cut == ref.edge_cut);
      CHECK(walked.comm_volume == ref.comm_volume);
      for (int k = 0; k < K; ++k) {
        CHECK(walked.shards[k].cut_entries == ref.cut_entries[k]);
        CHECK(walked.shards[k].halo == ref.halo[k]);
      }
      if (K > 1) CHECK(walked.edge_cut > 0);
      CHECK(walked.cost_fanouts == std::vector<int>{4, 3});
      // The writer, with parts packed into its 32-bit table, searched, and its 64-bit table.
      for (int table : {0, 1, 2}) {
        INFO("table " << table);
        const std::string out = dir / std::string("p").append(std::to_string(case_no++));
        const PartitionMetrics written = write_partitioned(*ds, dir / "none", r, out, {.pack_parts = table == 0, .narrow_ids = table != 2});
        CHECK(metrics_to_json(written) == metrics_to_json(walked));
        // What partition.json holds (its doubles are parsed back to within an ulp, so the counts).
        const PartitionMetrics stored = load_partition_info(out).metrics;
        CHECK(stored.edge_cut == ref.edge_cut);
        CHECK(stored.comm_volume == ref.comm_volume);
        for (int k = 0; k < K; ++k) CHECK(stored.shards[k].halo == ref.halo[k]);
      }
    }
}

TEST_CASE("METIS cuts two cliques at their bridge, deterministically", "[partition][metis]") {
  Dataset ds = two_cliques();
  auto p = make_partitioner(PartitionMethod::kMetis)->partition(ds, config(PartitionMethod::kMetis, 2));
  CHECK(cut_of(ds, p) == 1);
  CHECK(p[0] != p[7]);
  CHECK(make_partitioner(PartitionMethod::kMetis)->partition(ds, config(PartitionMethod::kMetis, 2)) == p);
  // K = 1 puts everything in part 0.
  auto one = make_partitioner(PartitionMethod::kMetis)->partition(ds, config(PartitionMethod::kMetis, 1));
  CHECK(std::all_of(one.begin(), one.end(), [](PartId x) { return x == 0; }));
}

TEST_CASE("METIS multi-constraint balance gives every part its share of each key", "[partition][metis]") {
  SbmOptions o;
  o.num_nodes = 4000;
  o.num_classes = 4;
  o.train_fraction = 0.1;
  o.val_fraction = 0.1;
  Dataset ds = generate_sbm(o);
  PartitionConfig c = config(PartitionMethod::kMetis, 4);
  c.balance = {BalanceKey::kNodes, BalanceKey::kTrain, BalanceKey::kVal, BalanceKey::kTest, BalanceKey::kEdges};
  auto p = make_partitioner(c.method)->partition(ds, c);
  PartitionMetrics m = compute_metrics(ds, p, 4);
  CHECK(m.nodes.ratio() <= 1.05);
  CHECK(m.train.ratio() <= 1.05);
  CHECK(m.val.ratio() <= 1.05);
  CHECK(m.test.ratio() <= 1.05);
  CHECK(m.edges.ratio() <= 1.05);
}

TEST_CASE("balancing labels lowers the shards' divergence from the global label mix", "[partition][metis]") {
  ReadOptions sym;
  Dataset ds = read_dataset(test::sample("cora.npz"), sym);
  PartitionConfig plain = config(PartitionMethod::kMetis, 4);
  PartitionConfig labels = plain;
  labels.balance = {BalanceKey::kNodes, BalanceKey::kLabels};
  auto mp = compute_metrics(ds, make_partitioner(plain.method)->partition(ds, plain), 4);
  auto ml = compute_metrics(ds, make_partitioner(labels.method)->partition(ds, labels), 4);
  INFO("max KL plain " << mp.max_label_kl << ", label-balanced " << ml.max_label_kl);
  CHECK(ml.max_label_kl < mp.max_label_kl / 4);
  CHECK(ml.mean_label_entropy > mp.mean_label_entropy);
}

TEST_CASE("entropy edge weights are symmetric, positive and favour similar neighbours", "[partition]") {
  Dataset ds = read_dataset(test::sample("cora.npz"), {});
  auto w = entropy_edge_weights(ds);
  REQUIRE(w.size() == static_cast<std::size_t>(ds.graph.num_edges()));
  std::int64_t same_sum = 0, diff_sum = 0, same_n = 0, diff_n = 0;
  for (NodeId u = 0; u < ds.num_nodes(); ++u) {
    const auto nb = row_of(ds.graph, u);
    for (std::size_t i = 0; i < nb.size(); ++i) {
      const NodeId v = nb[i];
      const auto back = row_of(ds.graph, v);
      const auto j = std::lower_bound(back.begin(), back.end(), u) - back.begin();
      const std::int64_t wuv = w[ds.graph.indptr()[u] + static_cast<EdgeId>(i)], wvu = w[ds.graph.indptr()[v] + j];
      REQUIRE(wuv == wvu);
      REQUIRE(wuv >= 1);
      (ds.labels[u] == ds.labels[v] ? same_sum : diff_sum) += wuv;
      (ds.labels[u] == ds.labels[v] ? same_n : diff_n) += 1;
    }
  }
  // Edges inside a class weigh more on average than edges across classes.
  CHECK(static_cast<double>(same_sum) / static_cast<double>(same_n) > 1.1 * static_cast<double>(diff_sum) / static_cast<double>(diff_n));
  PartitionConfig c = config(PartitionMethod::kMetis, 4);
  c.edge_weights = EdgeWeighting::kEntropy;
  auto p = make_partitioner(c.method)->partition(ds, c);
  CHECK(compute_metrics(ds, p, 4).nodes.ratio() <= 1.05);
}

TEST_CASE("bad partitioning requests are clear errors", "[partition][bad-input]") {
  Dataset ds = two_cliques();
  auto metis = make_partitioner(PartitionMethod::kMetis);
  CHECK_THROWS_WITH(metis->partition(ds, config(PartitionMethod::kMetis, 0)), Contains("--parts must be at least 1"));
  CHECK_THROWS_WITH(metis->partition(ds, config(PartitionMethod::kMetis, 9)), Contains("exceeds the 8 nodes"));
  CHECK_THROWS_WITH(parse_method("kway"), Contains("unknown partitioning method 'kway'") && Contains("metis, metis-ml, random, ldg, fennel"));
  CHECK_THROWS_WITH(parse_balance("nodes,weight"), Contains("unknown --balance key 'weight'"));
  Dataset no_split = drawn(4, {{0, 1}, {2, 3}});
  PartitionConfig c = config(PartitionMethod::kMetis, 2);
  c.balance = {BalanceKey::kTrain};
  CHECK_THROWS_WITH(metis->partition(no_split, c), Contains("--balance train") && Contains("no training split"));
  c.balance = {BalanceKey::kNodes};
  c.edge_weights = EdgeWeighting::kEntropy;
  CHECK_THROWS_WITH(metis->partition(no_split, c), Contains("no features"));
  c.method = PartitionMethod::kLdg;
  CHECK_THROWS_WITH(make_partitioner(c.method)->partition(no_split, c), Contains("--edge-weights entropy works with --method metis or metis-ml only"));
  CHECK_THROWS_WITH(load_dataset("/nonexistent/dataset"), Contains("/nonexistent/dataset") && Contains("no such dataset folder"));
}

TEST_CASE("shards on disk pass the serial verifier, which catches tampering", "[partition][verify]") {
  test::ScratchDir dir;
  Dataset src = read_dataset(test::sample("cora.npz"), {});
  save_dataset(src, dir / "cora");
  Dataset ds = load_dataset(dir / "cora");
  for (auto [method, k] : {std::pair{PartitionMethod::kMetis, 3}, std::pair{PartitionMethod::kRandom, 4}, std::pair{PartitionMethod::kLdg, 2}}) {
    INFO(method_name(method) << " K=" << k);
    PartitionResult r;
    r.config = config(method, k);
    r.assignment = make_partitioner(method)->partition(ds, r.config);
    const std::string out = dir / ("p-" + method_name(method));
    write_partitioned(ds, dir / "cora", r, out, {});
    auto v = verify_partition(dir / "cora", out);
    INFO((v.errors.empty() ? "" : v.errors[0]));
    CHECK(v.ok());
    PartitionInfo info = load_partition_info(out);
    CHECK(info.book.parts() == k);
    CHECK(info.metrics.edge_cut == compute_metrics(ds, r.assignment, k).edge_cut);
    Shard s = load_shard(info, 0);
    CHECK(s.graph.num_nodes() == info.book.size(0));
    CHECK(s.features.is_mapped());
  }
  SECTION("a flipped byte in a shard is a checksum error naming the file") {
    const std::string f = dir / "p-metis/part-1/features.npy";
    {
      std::fstream io(f, std::ios::in | std::ios::out | std::ios::binary);
      io.seekp(500);
      io.put('\x42');
    }
    auto v = verify_partition(dir / "cora", dir / "p-metis");
    REQUIRE_FALSE(v.ok());
    CHECK_THAT(v.errors[0], Contains("part-1/features.npy") && Contains("checksum"));
  }
  SECTION("a partition of another dataset is refused") {
    save_dataset(read_dataset(test::sample("citeseer.npz"), {}), dir / "citeseer");
    auto v = verify_partition(dir / "citeseer", dir / "p-metis");
    REQUIRE_FALSE(v.ok());
    CHECK_THAT(v.errors[0], Contains("made from dataset 'cora'"));
  }
}

namespace {
// Equal JSON, objects' keys in the same order, doubles within a relative 1e-15.
bool json_close(const boost::json::value& a, const boost::json::value& b) {
  if (a.is_number() || b.is_number()) {  // int64 and uint64 alike
    if (!a.is_number() || !b.is_number()) return false;
    if (!a.is_double() && !b.is_double()) return boost::json::serialize(a) == boost::json::serialize(b);
    const double x = a.to_number<double>(), y = b.to_number<double>();
    return std::fabs(x - y) <= 1e-15 * std::max(std::fabs(x), std::fabs(y));
  }
  if (a.kind() != b.kind()) return false;
  if (a.is_object()) {
    const auto &x = a.get_object(), &y = b.get_object();
    if (x.size() != y.size()) return false;
    for (auto i = x.begin(), j = y.begin(); i != x.end(); ++i, ++j)
      if (i->key() != j->key() || !json_close(i->value(), j->value())) {
        UNSCOPED_INFO("differs at key '" << std::string(i->key()) << "'");
        return false;
      }
    return true;
  }
  if (a.is_array()) {
    const auto &x = a.get_array(), &y = b.get_array();
    if (x.size() != y.size()) return false;
    for (std::size_t i = 0; i < x.size(); ++i)
      if (!json_close(x[i], y[i])) return false;
    return true;
  }
  return a == b;
}
}  // namespace

TEST_CASE("partition.json is one PartitionInfo: written from it, read back into it, kept by the shards, bad keys named", "[partition][verify]") {
  test::ScratchDir dir;
  const Dataset ds = saved_cora(dir);
  PartitionResult r = random_parts(ds, 3);
  r.seconds = 0.25;  // a double that Boost 1.81 reads back exactly (see PartitionInfo::metrics_as_written)
  write_partitioned(ds, dir / "cora", r, dir / "p", {});
  const PartitionInfo info = load_partition_info(dir / "p");
  const std::string path = info.json_path();
  auto text_of = [](const std::string& file) {
    std::ifstream in(file, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
  };
  const std::string text = text_of(path);
  // Written again from what was read (the metrics as written): the keys, their order and every
  // value survive the round trip, doubles to within Boost 1.81's reading (an ulp or two).
  boost::json::value again = boost::json::value_from(info);
  again.as_object()["metrics"] = info.metrics_as_written;
  CHECK(json_close(again, boost::json::parse(text)));
  CHECK(info.parameters.method == PartitionMethod::kRandom);
  CHECK(info.parameters.seed == r.config.seed);
  CHECK(info.partition_seconds == 0.25);
  REQUIRE(info.parts.size() == 3);
  CHECK(info.parts[1].path == (fs::path(dir / "p") / "part-1").string());
  CHECK(info.parts[1].nodes == info.book.size(1));

  // The loaded shards keep what was parsed (ShardView finds the other parts through it).
  const Shard s = load_shard(info, 1);
  REQUIRE(s.info != nullptr);
  CHECK(s.info->parts.size() == 3);
  CHECK(load_shard_for_rank(info, 0, 3).info != nullptr);
  CHECK(load_shard_for_rank(info, 0, 2).info != nullptr);
  CHECK(load_shard_rows(info, 1).info == nullptr);
  CHECK(shard_from_dataset(ds).info == nullptr);

  // One error per bad file, naming the file and the key.
  auto error_of = [&](const std::function<void(boost::json::object&)>& edit) {
    boost::json::object o = read_json_file(path).as_object();
    edit(o);
    write_json_file(path, o);
    std::string what;
    try {
      load_partition_info(dir / "p");
    } catch (const InputError& e) {
      what = e.what();
    }
    write_text_file_atomic(path, text);
    return what;
  };
  CHECK(error_of([](boost::json::object& o) { o["dataset"].as_object()["num_nodes"] = "many"; }) ==
        path + ": key 'dataset.num_nodes': expected an integer, found \"many\"");
  CHECK(error_of([](boost::json::object& o) { o["num_parts"] = 0; }) == path + ": key 'num_parts': 0, expected a positive number of parts");
  CHECK(error_of([](boost::json::object& o) { o["parts"].as_array()[2].as_object().erase("halo"); }) == path + ": key 'halo': missing, expected an integer");
  CHECK(error_of([](boost::json::object& o) { o["metrics"].as_object().erase("edge_cut"); }) == path + ": key 'edge_cut': missing, expected an integer");
  CHECK(error_of([](boost::json::object& o) { o["parameters"].as_object()["method"] = "bogus"; }) ==
        path + ": key 'parameters.method': unknown partitioning method 'bogus', expected one of: metis, metis-ml, random, ldg, fennel, labels");
  CHECK(error_of([](boost::json::object& o) { o["parameters"].as_object()["seed"] = -1; }) ==
        path + ": key 'parameters.seed': expected a non-negative integer, found -1");
  CHECK(error_of([](boost::json::object& o) { o.erase("partition_seconds"); }) == path + ": key 'partition_seconds': missing, expected a number");
  CHECK(text_of(path) == text);
  CHECK_NOTHROW(load_partition_info(dir / "p"));
}

TEST_CASE("shards store neighbour, split, halo and original ids as int32 and labels as int8, and a version-1 partition with int64 ones loads, verifies and merges as it is", "[partition][verify][ids]") {
  test::ScratchDir dir;
  const Dataset ds = saved_cora(dir);
  PartitionResult r = random_parts(ds, 3);
  write_partitioned(ds, dir / "cora", r, dir / "p", {});
  const std::string json = (fs::path(dir / "p") / "partition.json").string();
  std::vector<std::vector<NodeId>> ids, labels, orig, train, halo;
  for (PartId k = 0; k < 3; ++k) {
    const Shard s = load_shard(load_partition_info(dir / "p"), k);
    CHECK(s.graph.narrow_ids());
    CHECK(s.labels.element_bytes() == 1);  // Cora's 7 classes
    CHECK(s.orig_ids.element_bytes() == 4);
    CHECK(s.train_idx.element_bytes() == 4);
    CHECK(s.test_idx.element_bytes() == 4);
    CHECK(s.halo_nodes.element_bytes() == 4);
    REQUIRE_FALSE(s.train_idx.empty());
    REQUIRE_FALSE(s.halo_nodes.empty());
    ids.push_back(ids_of(s.graph));
    labels.push_back(s.labels.widened());
    orig.push_back(s.orig_ids.widened());
    train.push_back(s.train_idx.widened());
    halo.push_back(s.halo_nodes.widened());
    for (std::size_t i = 0; i < labels.back().size(); ++i) CHECK(labels.back()[i] == ds.labels[static_cast<std::size_t>(orig.back()[i])]);
  }
  const int two = parts_of_rank(3, 0, 2).second - parts_of_rank(3, 0, 2).first == 2 ? 0 : 1;  // the rank that merges two parts
  const Shard merged_narrow = load_shard_for_rank(load_partition_info(dir / "p"), two, 2);
  REQUIRE(merged_narrow.merged_parts == 2);
  CHECK(merged_narrow.graph.narrow_ids());
  {
    // The second part's ids and features are that part's own file pages, mapped after the
    // first's (the writer places them so), not a copy.
    REQUIRE(merged_narrow.labels.get_if<std::int8_t>() != nullptr);
    REQUIRE(merged_narrow.orig_ids.get_if<std::int32_t>() != nullptr);
    const PartId second = parts_of_rank(3, two, 2).first + 1;
    const std::string part_dir = fs::canonical(fs::path(dir / "p") / ("part-" + std::to_string(second))).string();
    const auto& ids = merged_narrow.graph.narrow_indices();
    CHECK(test::mapped_file_at(ids.data() + ids.size() - 1) == part_dir + "/indices.npy");
    CHECK(test::mapped_file_at(merged_narrow.features.data() + merged_narrow.features.size() - 1) == part_dir + "/features.npy");
    // (Cora's parts' labels and original ids take a page or two: mostly the copied page.)
  }

  const std::vector<NodeId> merged_train = merged_narrow.train_idx.widened(), merged_halo = merged_narrow.halo_nodes.widened();
  CHECK(merged_narrow.train_idx.element_bytes() == 4);

  // Rewritten as version 1 wrote it: int64 ids, labels and splits (listed with their checksums), version 1.
  auto widen = [&](std::initializer_list<PartId> parts) {
    boost::json::object o = read_json_file(json).as_object();
    o["version"] = 1;
    for (const PartId k : parts) {
      auto& part = o["parts"].as_array()[static_cast<std::size_t>(k)].as_object();
      const std::string pdir = (fs::path(dir / "p") / ("part-" + std::to_string(k))).string();
      part["arrays"].as_object()["indices"] = write_listed_array(pdir, "indices", ids[static_cast<std::size_t>(k)]);
      part["arrays"].as_object()["labels"] = write_listed_array(pdir, "labels", labels[static_cast<std::size_t>(k)]);
      part["arrays"].as_object()["orig_ids"] = write_listed_array(pdir, "orig_ids", orig[static_cast<std::size_t>(k)]);
      part["arrays"].as_object()["train_idx"] = write_listed_array(pdir, "train_idx", train[static_cast<std::size_t>(k)]);
      part["arrays"].as_object()["halo_nodes"] = write_listed_array(pdir, "halo_nodes", halo[static_cast<std::size_t>(k)]);
    }
    write_json_file(json, o);
  };
  widen({0, 1, 2});
  const PartitionInfo info = load_partition_info(dir / "p");
  for (PartId k = 0; k < 3; ++k) {
    const Shard s = load_shard(info, k);
    CHECK_FALSE(s.graph.narrow_ids());
    CHECK(ids_of(s.graph) == ids[static_cast<std::size_t>(k)]);
    CHECK(s.labels.element_bytes() == 8);
    CHECK(s.labels.widened() == labels[static_cast<std::size_t>(k)]);
    CHECK(s.orig_ids.widened() == orig[static_cast<std::size_t>(k)]);
    CHECK(s.train_idx.element_bytes() == 8);
    CHECK(s.train_idx.widened() == train[static_cast<std::size_t>(k)]);
    CHECK(s.halo_nodes.element_bytes() == 8);
    CHECK(s.halo_nodes.widened() == halo[static_cast<std::size_t>(k)]);
  }
  CHECK(verify_partition(dir / "cora", dir / "p").ok());
  const Shard merged_wide = load_shard_for_rank(info, two, 2);
  CHECK_FALSE(merged_wide.graph.narrow_ids());
  CHECK(ids_of(merged_wide.graph) == ids_of(merged_narrow.graph));
  CHECK(merged_wide.labels.widened() == merged_narrow.labels.widened());
  CHECK(merged_wide.orig_ids.widened() == merged_narrow.orig_ids.widened());
  CHECK(merged_wide.train_idx.widened() == merged_train);
  CHECK(merged_wide.halo_nodes.widened() == merged_halo);
  // Version 1's files were not placed to follow one another: copied into a spill file instead.
  CHECK(test::mapped_file_at(merged_wide.graph.wide_indices().data() + merged_wide.graph.num_edges() - 1).find("indices.npy") == std::string::npos);

  // Parts of one rank at two widths (a partition no writer makes) are refused, not mixed.
  WriteOptions replace;
  replace.overwrite = true;
  write_partitioned(ds, dir / "cora", r, dir / "p", replace);
  widen({parts_of_rank(3, two, 2).first});
  CHECK_THROWS_WITH(load_shard_for_rank(load_partition_info(dir / "p"), two, 2), Contains("different widths"));
}

TEST_CASE("edge weights travel with their edges into the shards, rows sorted, the verifier checks them", "[partition][verify]") {
  test::ScratchDir dir;
  // Cora has rows of every length (up to 168 neighbours), so both the short-row sort and the
  // counting placement of long rows are exercised, with K below and above a row's length.
  Dataset ds = read_dataset(test::sample("cora.npz"), {});
  auto weights_of = [&](std::int64_t salt) {
    std::vector<std::int64_t> w;
    for (NodeId u = 0; u < ds.num_nodes(); ++u)
      for (NodeId v : row_of(ds.graph, u)) w.push_back((std::min(u, v) * 31 + std::max(u, v) * salt) % 97 + 1);
    return Array<std::int64_t>(std::move(w));
  };
  ds.edge_weights = weights_of(7);
  save_dataset(ds, dir / "w");
  for (int k : {3, 40}) {
    INFO("K=" << k);
    const std::string out = dir / ("p" + std::to_string(k));
    write_random_parts(ds, dir / "w", k, out);
    auto v = verify_partition(dir / "w", out);
    INFO((v.errors.empty() ? "" : v.errors[0]));
    CHECK(v.ok());
    const PartitionInfo info = load_partition_info(out);
    std::int64_t weighted = 0;
    for (PartId p = 0; p < k; ++p) {
      const Shard s = load_shard(info, p);
      REQUIRE(s.edge_weights.size() == static_cast<std::size_t>(s.graph.num_edges()));
      for (NodeId i = 0; i < s.graph.num_nodes(); ++i) {
        const auto nb = row_of(s.graph, i);
        CHECK(std::is_sorted(nb.begin(), nb.end()));
        const NodeId u = s.orig_ids[i];
        for (std::size_t j = 0; j < nb.size(); ++j) {
          const NodeId w = info.book.owner(nb[j]) == p ? s.orig_ids[nb[j] - info.book.begin(p)] : -1;
          if (w < 0) continue;  // remote: its old id is another shard's; the verifier covers it
          CHECK(s.edge_weights[s.graph.indptr()[i] + static_cast<EdgeId>(j)] == (std::min(u, w) * 31 + std::max(u, w) * 7) % 97 + 1);
          ++weighted;
        }
      }
    }
    CHECK(weighted > 0);
  }
  SECTION("shards without weights for a weighted dataset, and the reverse, are reported once per shard") {
    ds.edge_weights = Array<std::int64_t>();
    save_dataset(ds, dir / "plain");
    write_random_parts(ds, dir / "plain", 3, dir / "p-plain");
    auto missing = verify_partition(dir / "w", dir / "p-plain");
    REQUIRE(missing.errors.size() == 3);
    CHECK_THAT(missing.errors[0], Contains("part-0") && Contains("edge_weights.npy: missing"));
    auto extra = verify_partition(dir / "plain", dir / "p3");
    REQUIRE(extra.errors.size() == 3);
    CHECK_THAT(extra.errors[0], Contains("edge_weights.npy: present"));
  }
  SECTION("weights that differ from the dataset's are reported") {
    ds.edge_weights = weights_of(11);
    save_dataset(ds, dir / "w2");
    auto v = verify_partition(dir / "w2", dir / "p3");
    REQUIRE_FALSE(v.ok());
    CHECK_THAT(v.errors[0], Contains("edge_weights.npy") && Contains("differ"));
  }
}

TEST_CASE("the writer's packed part-in-id table, its partition-book search and its 64-bit table write the same bytes", "[partition][verify]") {
  // The search is what graphs too large to pack (over 2^32 / 2^ceil(log2 K) nodes) take, and the
  // 64-bit table what graphs of over 2^32 nodes take; both are forced here on Cora, weighted, with
  // K below and above many rows' lengths.
  test::ScratchDir dir;
  Dataset ds = read_dataset(test::sample("cora.npz"), {});
  std::vector<std::int64_t> w;
  for (NodeId u = 0; u < ds.num_nodes(); ++u)
    for (NodeId v : row_of(ds.graph, u)) w.push_back((std::min(u, v) * 13 + std::max(u, v)) % 31 + 1);
  ds.edge_weights = Array<std::int64_t>(std::move(w));
  save_dataset(ds, dir / "w");
  auto bytes_of = [](const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
  };
  for (int k : {2, 3, 40}) {
    const std::string packed = dir / ("packed" + std::to_string(k));
    write_random_parts(ds, dir / "w", k, packed);
    for (const char* mode : {"searched", "wide"}) {
      INFO("K=" << k << " " << mode);
      const std::string other_dir = dir / (std::string(mode) + std::to_string(k));
      write_random_parts(ds, dir / "w", k, other_dir, {.pack_parts = false, .narrow_ids = std::string(mode) == "searched"});
      CHECK(verify_partition(dir / "w", other_dir).ok());
      std::int64_t files = 0;
      for (const auto& entry : fs::recursive_directory_iterator(packed)) {
        if (entry.path().extension() != ".npy") continue;
        const fs::path other = fs::path(other_dir) / fs::relative(entry.path(), packed);
        INFO(entry.path().string());
        CHECK(bytes_of(entry.path()) == bytes_of(other));
        ++files;
      }
      CHECK(files == 11 * k);  // per part: indptr, indices, edge_weights, features, labels, 3 splits, halo_nodes, halo_owner, orig_ids
    }
  }
}

TEST_CASE("a weighted dataset's shard without edges has an empty edge_weights.npy, which the verifier accepts", "[partition][verify]") {
  test::ScratchDir dir;
  //  0 - 1 - 2 - 3 (weights 5, 6, 7), 4 and 5 isolated: part 1 gets only 4 and 5, so no edges.
  Dataset ds = drawn(6, {{0, 1}, {1, 2}, {2, 3}});
  std::vector<std::int64_t> w;
  for (NodeId u = 0; u < ds.num_nodes(); ++u)
    for (NodeId v : row_of(ds.graph, u)) w.push_back(std::min(u, v) + 5);
  ds.edge_weights = Array<std::int64_t>(std::move(w));
  save_dataset(ds, dir / "d");
  PartitionResult r;
  r.config = config(PartitionMethod::kRandom, 2);
  r.assignment = {0, 0, 0, 0, 1, 1};
  write_partitioned(ds, dir / "d", r, dir / "p", {});
  auto v = verify_partition(dir / "d", dir / "p");
  INFO((v.errors.empty() ? "" : v.errors[0]));
  CHECK(v.ok());
  CHECK(load_shard(load_partition_info(dir / "p"), 1).graph.num_edges() == 0);
}

TEST_CASE("shards larger than the writer's chunks: a hub row longer than a chunk, weights and features", "[partition][verify]") {
  test::ScratchDir dir;
  // A hub joined to 70,000 leaves in a ring: the hub's row is longer than a write chunk (64K
  // entries), the ring's rows fill several chunks, and 3 features x 70,001 rows span chunks too.
  const NodeId leaves = 70000;
  std::vector<std::pair<NodeId, NodeId>> e;
  for (NodeId v = 1; v <= leaves; ++v) {
    e.emplace_back(0, v);
    e.emplace_back(v, v % leaves + 1);
  }
  Dataset ds = drawn(leaves + 1, e);
  std::vector<std::int64_t> w;
  for (NodeId u = 0; u < ds.num_nodes(); ++u)
    for (NodeId v : row_of(ds.graph, u)) w.push_back((u + v) % 13 + 1);
  ds.edge_weights = Array<std::int64_t>(std::move(w));
  std::vector<float> f;
  for (NodeId u = 0; u < ds.num_nodes(); ++u)
    for (int c = 0; c < 3; ++c) f.push_back(static_cast<float>(u * 3 + c));
  ds.features = Array<float>(std::move(f));
  ds.feature_dim = 3;
  save_dataset(ds, dir / "star");
  const PartitionResult r = write_random_parts(ds, dir / "star", 2, dir / "p");
  auto v = verify_partition(dir / "star", dir / "p");
  INFO((v.errors.empty() ? "" : v.errors[0]));
  CHECK(v.ok());
  const PartitionInfo info = load_partition_info(dir / "p");
  const PartId hub_part = r.assignment[0];
  const Shard s = load_shard(info, hub_part);
  CHECK(s.graph.degree(s.book.to_local(relabel(r.assignment, 2).new_of_old[0])) == leaves);
  CHECK(s.edge_weights.size() == static_cast<std::size_t>(s.graph.num_edges()));
}

TEST_CASE("multilevel METIS: coarsened by label propagation, METIS on the coarsest graph, refined back, balanced, near METIS's cut, verified", "[partition][metis][verify]") {
  test::ScratchDir dir;
  for (const SampleGraph& c : {SampleGraph{test::sample("4elt.graph"), false}, {test::sample("cora.npz"), false}, {test::sample("soc-Slashdot0902.txt.gz"), true}}) {
    INFO(c.path);
    std::string ddir;
    Dataset ds = saved_sample(c, dir, ddir);
    PartitionResult r;
    r.config = config(PartitionMethod::kMetisMl, 4);
    r.config.coarse_nodes = 300;  // these graphs are small: force several levels
    r.assignment = make_partitioner(PartitionMethod::kMetisMl)->partition(ds, r.config);
    CHECK(make_partitioner(PartitionMethod::kMetisMl)->partition(ds, r.config) == r.assignment);  // deterministic
    const PartitionMetrics ml = compute_metrics(ds, r.assignment, 4);
    CHECK(ml.nodes.ratio() <= 1.0 + r.config.imbalance);
    // The quality target, 1.15x METIS's cut (a random split cuts about 3/4 of the edges),
    // under docs/results/partition.md's protocol: both balancing nodes and edges, several levels
    // (n/16 coarse nodes), the mean ratio of seeds 0-2, since one seed's cut on a mesh varies.
    double ratios = 0;
    for (std::uint64_t seed : {0, 1, 2}) {
      PartitionConfig both = config(PartitionMethod::kMetis, 4, seed);
      both.balance = {BalanceKey::kNodes, BalanceKey::kEdges};
      const std::int64_t metis_cut = compute_metrics(ds, make_partitioner(PartitionMethod::kMetis)->partition(ds, both), both).edge_cut;
      both.method = PartitionMethod::kMetisMl;
      both.coarse_nodes = ds.num_nodes() / 16;
      const std::int64_t ml_cut = compute_metrics(ds, make_partitioner(PartitionMethod::kMetisMl)->partition(ds, both), both).edge_cut;
      INFO("seed " << seed << ": cut multilevel " << ml_cut << ", METIS " << metis_cut);
      ratios += static_cast<double>(ml_cut) / static_cast<double>(metis_cut);
    }
    CHECK(ratios / 3 <= 1.15);
    const std::string out = ddir + "-ml";
    write_partitioned(ds, ddir, r, out, {});
    auto v = verify_partition(ddir, out);
    INFO((v.errors.empty() ? "" : v.errors[0]));
    CHECK(v.ok());
  }
  // Several constraints at once, as METIS's vertex weights.
  SbmOptions o;
  o.num_nodes = 4000;
  o.num_classes = 4;
  o.train_fraction = 0.1;
  Dataset sbm = generate_sbm(o);
  PartitionConfig c = config(PartitionMethod::kMetisMl, 4);
  c.coarse_nodes = 300;
  c.balance = {BalanceKey::kNodes, BalanceKey::kTrain, BalanceKey::kEdges};
  const PartitionMetrics m = compute_metrics(sbm, make_partitioner(c.method)->partition(sbm, c), 4);
  CHECK(m.nodes.ratio() <= 1.05);
  CHECK(m.train.ratio() <= 1.05);
  CHECK(m.edges.ratio() <= 1.05);
}

TEST_CASE("real graphs: partition, write and verify (4elt, copter2, Cora, Slashdot, Amazon-Photo)", "[partition][verify][golden]") {
  test::ScratchDir dir;
  std::vector<SampleGraph> cases = {{test::sample("4elt.graph"), false}, {test::sample("copter2.graph.gz"), false},
                                    {test::sample("cora.npz"), false}, {test::sample("soc-Slashdot0902.txt.gz"), true}};
  if (auto amazon = test::shared_dataset("amazon-photo/amazon_electronics_photo.npz"); !amazon.empty()) cases.push_back({amazon, true});
  else WARN("../shared/datasets/amazon-photo not present: Amazon-Photo skipped");
  for (const SampleGraph& c : cases) {
    INFO(c.path);
    std::string ddir;
    Dataset ds = saved_sample(c, dir, ddir);
    for (PartitionMethod m : {PartitionMethod::kMetis, PartitionMethod::kFennel}) {
      PartitionResult r;
      r.config = config(m, 4);
      r.assignment = make_partitioner(m)->partition(ds, r.config);
      PartitionMetrics met = compute_metrics(ds, r.assignment, 4);
      CHECK(met.nodes.ratio() <= 1.04);
      const std::string out = ddir + "-" + method_name(m);
      write_partitioned(ds, ddir, r, out, {});
      auto v = verify_partition(ddir, out);
      INFO((v.errors.empty() ? "" : v.errors[0]));
      CHECK(v.ok());
    }
  }
}

TEST_CASE("label-skewed parts are equal runs of the nodes in label order, unlabelled nodes last", "[partition]") {
  //  labels by node:  1  0  -  1  0  2  0  2   ("-": unlabelled), no edges needed
  Dataset ds;
  ds.graph = CsrGraph(Array<EdgeId>(std::vector<EdgeId>(9, 0)), Array<NodeId>(std::vector<NodeId>{}));
  ds.num_classes = 3;
  ds.labels = Array<std::int64_t>(std::vector<std::int64_t>{1, 0, -1, 1, 0, 2, 0, 2});
  // Classes in order, unlabelled last: {1 4 6} {0 3} {5 7} {2}, each class in a seeded order, cut
  // into four runs of two. Whatever the order inside a class: two of class 0 in part 0, its third
  // with one of class 1 in part 1, class 1's other with one of class 2 in part 2, class 2's other
  // with the unlabelled node in part 3.
  for (std::uint64_t seed : {0, 1, 2}) {
    PartitionConfig cfg = config(PartitionMethod::kLabels, 4);
    cfg.seed = seed;
    const std::vector<PartId> p = make_partitioner(PartitionMethod::kLabels)->partition(ds, cfg);
    INFO("seed " << seed);
    CHECK(std::count(p.begin(), p.end(), 0) == 2);
    CHECK(std::count(p.begin(), p.end(), 1) == 2);
    CHECK((p[1] == 0) + (p[4] == 0) + (p[6] == 0) == 2);
    CHECK((p[1] == 1) + (p[4] == 1) + (p[6] == 1) == 1);
    CHECK((p[0] == 1) + (p[3] == 1) == 1);
    CHECK((p[0] == 2) + (p[3] == 2) == 1);
    CHECK((p[5] == 2) + (p[7] == 2) == 1);
    CHECK(p[2] == 3);
  }
  Dataset unlabelled;
  unlabelled.graph = CsrGraph(Array<EdgeId>(std::vector<EdgeId>(9, 0)), Array<NodeId>(std::vector<NodeId>{}));
  CHECK_THROWS_WITH(make_partitioner(PartitionMethod::kLabels)->partition(unlabelled, config(PartitionMethod::kLabels, 2)), Catch::Contains("has no labels"));

  // On Cora (7 classes) at K = 8 every shard is nearly one class: far below the global entropy.
  Dataset cora = read_dataset(test::sample("cora.npz"), {});
  const auto m = compute_metrics(cora, make_partitioner(PartitionMethod::kLabels)->partition(cora, config(PartitionMethod::kLabels, 8)), 8);
  INFO("mean shard entropy " << m.mean_label_entropy << " bits, global " << m.global_label_entropy);
  CHECK(m.nodes.ratio() < 1.01);
  CHECK(m.mean_label_entropy < m.global_label_entropy / 3);
  CHECK(m.max_label_kl > 1);
}
