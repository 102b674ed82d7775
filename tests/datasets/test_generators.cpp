// Synthetic generators: R-MAT (Chakrabarti et al. 2004, Graph500 parameters) must be skewed and
// reproducible; the stochastic block model must be balanced, clean, as homophilous as asked, and
// learnable from its features.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <limits>
#include <numeric>
#include <set>
#include <sstream>
#include <string>
#include <unordered_map>
#include <vector>

#include <catch2/catch.hpp>

#include "datasets/error.hpp"
#include "datasets/generators.hpp"
#include "test_paths.hpp"
#include "tests/graph_rows.hpp"

using namespace shardgnn;

namespace {

// Total (in + out) degree of every node of a raw edge list.
std::vector<std::int64_t> total_degrees(const EdgeList& edges) {
  std::vector<std::int64_t> deg(static_cast<std::size_t>(edges.num_nodes), 0);
  for (std::size_t e = 0; e < edges.src.size(); ++e) {
    ++deg[static_cast<std::size_t>(edges.src[e])];
    ++deg[static_cast<std::size_t>(edges.dst[e])];
  }
  return deg;
}

// Share of all edge endpoints held by the `fraction` of nodes with the highest degree.
double top_share(std::vector<std::int64_t> deg, double fraction) {
  std::sort(deg.begin(), deg.end(), std::greater<>());
  const auto k = static_cast<std::size_t>(std::ceil(fraction * static_cast<double>(deg.size())));
  const double top = static_cast<double>(std::accumulate(deg.begin(), deg.begin() + static_cast<std::ptrdiff_t>(k), std::int64_t{0}));
  return top / static_cast<double>(std::accumulate(deg.begin(), deg.end(), std::int64_t{0}));
}

bool has_edge(const CsrGraph& g, NodeId u, NodeId v) {
  auto row = row_of(g, u);
  return std::binary_search(row.begin(), row.end(), v);
}

// Fraction of (directed) CSR entries whose endpoints share a class.
double intra_class_fraction(const Dataset& ds) {
  std::int64_t intra = 0;
  for (NodeId u = 0; u < ds.num_nodes(); ++u)
    for (NodeId v : row_of(ds.graph, u)) intra += ds.labels[static_cast<std::size_t>(u)] == ds.labels[static_cast<std::size_t>(v)];
  return static_cast<double>(intra) / static_cast<double>(ds.graph.num_edges());
}

// Nearest-class-mean classifier fitted on the training nodes; accuracy on the test nodes.
double nearest_mean_accuracy(const Dataset& ds) {
  const auto dim = static_cast<std::size_t>(ds.feature_dim);
  const auto classes = static_cast<std::size_t>(ds.num_classes);
  std::vector<double> mean(classes * dim, 0.0);
  std::vector<std::int64_t> count(classes, 0);
  for (NodeId u : ds.train_idx) {
    const auto c = static_cast<std::size_t>(ds.labels[static_cast<std::size_t>(u)]);
    ++count[c];
    for (std::size_t d = 0; d < dim; ++d) mean[c * dim + d] += ds.features[static_cast<std::size_t>(u) * dim + d];
  }
  for (std::size_t c = 0; c < classes; ++c)
    for (std::size_t d = 0; d < dim; ++d) mean[c * dim + d] /= static_cast<double>(std::max<std::int64_t>(count[c], 1));
  std::int64_t correct = 0;
  for (NodeId u : ds.test_idx) {
    std::size_t best = 0;
    double best_dist = std::numeric_limits<double>::infinity();
    for (std::size_t c = 0; c < classes; ++c) {
      double dist = 0;
      for (std::size_t d = 0; d < dim; ++d) {
        const double diff = ds.features[static_cast<std::size_t>(u) * dim + d] - mean[c * dim + d];
        dist += diff * diff;
      }
      if (dist < best_dist) best_dist = dist, best = c;
    }
    correct += static_cast<std::int64_t>(best) == ds.labels[static_cast<std::size_t>(u)];
  }
  return static_cast<double>(correct) / static_cast<double>(ds.test_idx.size());
}

template <class T>
std::vector<T> to_vector(const Array<T>& a) {
  return std::vector<T>(a.begin(), a.end());
}
std::vector<std::int64_t> to_vector(const IntArray& a) { return a.widened(); }

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream os;
  os << in.rdbuf();
  return os.str();
}

}  // namespace

TEST_CASE("R-MAT generates edge_factor * 2^scale edges with ids in range", "[generators]") {
  RmatOptions o;
  o.scale = GENERATE(1, 5, 10, 13);
  o.edge_factor = GENERATE(1, 16);
  o.permute = GENERATE(false, true);
  const EdgeList e = generate_rmat_edges(o);
  const std::int64_t n = std::int64_t{1} << o.scale;
  CHECK(e.num_nodes == n);
  REQUIRE(e.src.size() == static_cast<std::size_t>(o.edge_factor * n));
  REQUIRE(e.dst.size() == e.src.size());
  CHECK(e.weight.empty());
  CHECK(std::all_of(e.src.begin(), e.src.end(), [&](NodeId u) { return u >= 0 && u < n; }));
  CHECK(std::all_of(e.dst.begin(), e.dst.end(), [&](NodeId u) { return u >= 0 && u < n; }));
}

TEST_CASE("R-MAT is reproducible from its seed", "[generators]") {
  RmatOptions o;
  o.scale = 12;
  o.seed = 42;
  const EdgeList a = generate_rmat_edges(o);
  const EdgeList b = generate_rmat_edges(o);
  CHECK(a.src == b.src);
  CHECK(a.dst == b.dst);

  o.seed = 43;
  const EdgeList c = generate_rmat_edges(o);
  std::size_t same = 0;
  for (std::size_t e = 0; e < a.src.size(); ++e) same += a.src[e] == c.src[e] && a.dst[e] == c.dst[e];
  // Hub-to-hub edges coincide by chance now and then; most edges must not.
  CHECK(same < a.src.size() / 20);
}

TEST_CASE("R-MAT relabelling is a seeded permutation of the vertex ids", "[generators]") {
  RmatOptions o;
  o.scale = 11;
  o.seed = 7;
  o.permute = false;
  const EdgeList plain = generate_rmat_edges(o);
  o.permute = true;
  const EdgeList permuted = generate_rmat_edges(o);

  // The same edges, each endpoint mapped through one consistent bijection.
  std::unordered_map<NodeId, NodeId> map;
  bool consistent = true;
  auto record = [&](NodeId from, NodeId to) {
    auto [it, inserted] = map.emplace(from, to);
    consistent = consistent && it->second == to;
  };
  for (std::size_t e = 0; e < plain.src.size(); ++e) {
    record(plain.src[e], permuted.src[e]);
    record(plain.dst[e], permuted.dst[e]);
  }
  CHECK(consistent);
  std::set<NodeId> images;
  std::size_t moved = 0;
  for (auto [from, to] : map) {
    images.insert(to);
    moved += from != to;
  }
  CHECK(images.size() == map.size());
  CHECK(moved > map.size() * 9 / 10);

  // Without relabelling the hubs sit at the lowest ids (quadrant a is the top-left one); after it,
  // the highest-degree node is anywhere.
  auto argmax = [](const std::vector<std::int64_t>& d) { return std::max_element(d.begin(), d.end()) - d.begin(); };
  CHECK(argmax(total_degrees(plain)) == 0);

  // Another seed relabels differently.
  o.seed = 8;
  const EdgeList other = generate_rmat_edges(o);
  o.permute = false;
  const EdgeList other_plain = generate_rmat_edges(o);
  std::size_t differ = 0;
  std::unordered_map<NodeId, NodeId> other_map;
  for (std::size_t e = 0; e < other.src.size(); ++e) other_map.emplace(other_plain.src[e], other.src[e]);
  for (auto [from, to] : other_map)
    if (auto it = map.find(from); it != map.end()) differ += it->second != to;
  CHECK(differ > other_map.size() / 2);
}

TEST_CASE("R-MAT degrees are heavily skewed, unlike a uniform random graph", "[generators]") {
  RmatOptions o;
  o.scale = 14;
  o.edge_factor = 16;
  const EdgeList rmat = generate_rmat_edges(o);
  // a = b = c = d = 1/4 draws every endpoint uniformly: an Erdos-Renyi-like multigraph of the same size.
  RmatOptions uniform = o;
  uniform.a = uniform.b = uniform.c = 0.25;
  const EdgeList er = generate_rmat_edges(uniform);

  const double mean = 2.0 * static_cast<double>(rmat.src.size()) / static_cast<double>(rmat.num_nodes);  // 32
  const auto rmat_deg = total_degrees(rmat);
  const auto er_deg = total_degrees(er);
  const double rmat_max = static_cast<double>(*std::max_element(rmat_deg.begin(), rmat_deg.end()));
  const double er_max = static_cast<double>(*std::max_element(er_deg.begin(), er_deg.end()));
  const double rmat_top = top_share(rmat_deg, 0.01), er_top = top_share(er_deg, 0.01);
  const auto rmat_isolated = std::count(rmat_deg.begin(), rmat_deg.end(), 0);
  INFO("mean " << mean << ", max R-MAT " << rmat_max << " ER " << er_max << ", top 1% share R-MAT " << rmat_top << " ER "
               << er_top << ", isolated R-MAT " << rmat_isolated);
  CHECK(rmat_max > 100 * mean);
  CHECK(er_max < 2.5 * mean);
  CHECK(rmat_top > 0.25);
  CHECK(er_top < 0.03);
  // Heavy tails come with many nodes that no edge touches.
  CHECK(rmat_isolated > rmat.num_nodes / 10);
}

TEST_CASE("generate_rmat builds a named dataset through the cleaning options", "[generators]") {
  RmatOptions o;
  o.scale = 10;
  o.edge_factor = 8;

  const Dataset raw = generate_rmat(o, CleanOptions{});
  CHECK(raw.name == "rmat-s10-e8");
  CHECK(raw.source.find("R-MAT") != std::string::npos);
  CHECK(raw.num_nodes() == 1024);
  CHECK(raw.graph.num_edges() == 8 * 1024);
  CHECK(raw.feature_dim == 0);
  CHECK(raw.features.empty());
  CHECK(raw.num_classes == 0);
  CHECK(raw.labels.empty());
  CHECK(raw.train_idx.empty());

  const Dataset clean = generate_rmat(o, CleanOptions{.symmetrize = true, .drop_self_loops = true, .drop_duplicates = true});
  CHECK(clean.cleaning.input_entries == 8 * 1024);
  CHECK(clean.cleaning.output_entries == clean.graph.num_edges());
  CHECK(clean.cleaning.duplicates_dropped > 0);  // hubs attract repeated edges
  const CsrGraph& g = clean.graph;
  for (NodeId u = 0; u < g.num_nodes(); ++u) {
    auto row = row_of(g, u);
    REQUIRE(std::adjacent_find(row.begin(), row.end(), std::greater_equal<>()) == row.end());
    for (NodeId v : row) {
      REQUIRE(v != u);
      REQUIRE(has_edge(g, v, u));
    }
  }
}

TEST_CASE("R-MAT refuses bad options", "[generators]") {
  auto bad = [](auto change) {
    RmatOptions o;
    o.scale = 4;
    change(o);
    return o;
  };
  CHECK_THROWS_AS(generate_rmat_edges(bad([](RmatOptions& o) { o.scale = 0; })), InputError);
  CHECK_THROWS_AS(generate_rmat_edges(bad([](RmatOptions& o) { o.scale = 41; })), InputError);
  CHECK_THROWS_AS(generate_rmat_edges(bad([](RmatOptions& o) { o.edge_factor = 0; })), InputError);
  CHECK_THROWS_AS(generate_rmat_edges(bad([](RmatOptions& o) { o.edge_factor = -3; })), InputError);
  CHECK_THROWS_AS(generate_rmat_edges(bad([](RmatOptions& o) { o.scale = 40, o.edge_factor = 1 << 30; })), InputError);
  CHECK_THROWS_AS(generate_rmat_edges(bad([](RmatOptions& o) { o.a = -0.1; })), InputError);
  CHECK_THROWS_AS(generate_rmat_edges(bad([](RmatOptions& o) { o.b = 1.5; })), InputError);
  CHECK_THROWS_AS(generate_rmat_edges(bad([](RmatOptions& o) { o.c = std::nan(""); })), InputError);
  CHECK_THROWS_AS(generate_rmat_edges(bad([](RmatOptions& o) { o.a = 0.6, o.b = 0.3, o.c = 0.2; })), InputError);
  CHECK_THROWS_WITH(generate_rmat_edges(bad([](RmatOptions& o) { o.scale = 0; })), Catch::Contains("scale"));
  CHECK_THROWS_AS(generate_rmat(bad([](RmatOptions& o) { o.scale = 0; }), CleanOptions{}), InputError);
  // d = 0 exactly is allowed.
  CHECK_NOTHROW(generate_rmat_edges(bad([](RmatOptions& o) { o.a = 0.5, o.b = 0.25, o.c = 0.25; })));
}

TEST_CASE("write_edge_list writes tab-separated lines atomically", "[generators]") {
  test::ScratchDir dir;
  EdgeList e;
  e.num_nodes = std::numeric_limits<std::int64_t>::max();
  e.src = {0, 12, std::numeric_limits<std::int64_t>::max() - 1, 5};
  e.dst = {1, 3, 9, std::numeric_limits<std::int64_t>::max() - 1};
  const std::string path = dir / "edges.tsv";
  write_edge_list(path, e);
  CHECK(read_text(path) == "0\t1\n12\t3\n9223372036854775806\t9\n5\t9223372036854775806\n");

  // Enough edges to cross the writer's buffer several times, and nothing left beside the file.
  RmatOptions o;
  o.scale = 16;
  const EdgeList big = generate_rmat_edges(o);
  write_edge_list(path, big);
  const std::string text = read_text(path);
  std::istringstream in(text);
  std::size_t lines = 0;
  bool match = true;
  for (NodeId u, v; in >> u >> v; ++lines) match = match && lines < big.src.size() && big.src[lines] == u && big.dst[lines] == v;
  CHECK(match);
  CHECK(lines == big.src.size());
  CHECK(std::count(text.begin(), text.end(), '\t') == static_cast<std::ptrdiff_t>(big.src.size()));
  CHECK(std::distance(std::filesystem::directory_iterator(dir.str()), std::filesystem::directory_iterator()) == 1);

  const EdgeList empty;
  write_edge_list(path, empty);
  CHECK(read_text(path).empty());
  CHECK_THROWS(write_edge_list(dir / "no-such-folder/edges.tsv", e));
}

TEST_CASE("SBM classes are exactly balanced and scattered over the ids", "[generators]") {
  SbmOptions o;
  o.num_nodes = GENERATE(10, 1003, 10007);
  o.num_classes = GENERATE(1, 3, 10);
  o.avg_degree = 4;
  const Dataset ds = generate_sbm(o);
  CHECK(ds.num_nodes() == o.num_nodes);
  CHECK(ds.num_classes == o.num_classes);
  REQUIRE(ds.labels.size() == static_cast<std::size_t>(o.num_nodes));
  std::vector<std::int64_t> size(static_cast<std::size_t>(o.num_classes), 0);
  for (std::int64_t y : ds.labels) {
    REQUIRE(y >= 0);
    REQUIRE(y < o.num_classes);
    ++size[static_cast<std::size_t>(y)];
  }
  const auto [lo, hi] = std::minmax_element(size.begin(), size.end());
  CHECK(*hi - *lo <= 1);
  if (o.num_nodes > 1000 && o.num_classes > 1) {
    // Not i % C: a shuffled assignment leaves far fewer neighbouring ids with consecutive classes.
    std::int64_t periodic = 0;
    for (std::size_t i = 1; i < ds.labels.size(); ++i) periodic += ds.labels[i] == (ds.labels[i - 1] + 1) % o.num_classes;
    CHECK(periodic < o.num_nodes / 2);
  }
}

TEST_CASE("SBM graphs are symmetric, without self-loops or duplicates", "[generators]") {
  SbmOptions o;
  o.num_nodes = 5000;
  o.avg_degree = GENERATE(0.0, 3.0, 20.0);
  o.homophily = GENERATE(0.0, 0.8, 1.0);
  const Dataset ds = generate_sbm(o);
  const CsrGraph& g = ds.graph;
  REQUIRE(g.num_nodes() == 5000);
  for (NodeId u = 0; u < g.num_nodes(); ++u) {
    auto row = row_of(g, u);
    // Strictly ascending rows: sorted and duplicate-free.
    REQUIRE(std::adjacent_find(row.begin(), row.end(), std::greater_equal<>()) == row.end());
    for (NodeId v : row) {
      REQUIRE(v != u);
      REQUIRE(has_edge(g, v, u));
    }
  }
  // round(n * d / 2) undirected draws, less the self-loops and repeats that cleaning removes (about
  // 2% at the densest setting here: 50000 draws among the 1.25M node pairs inside classes).
  const double expected = static_cast<double>(o.num_nodes) * o.avg_degree;
  CHECK(static_cast<double>(g.num_edges()) <= expected);
  CHECK(static_cast<double>(g.num_edges()) >= 0.95 * expected);
  CHECK(ds.cleaning.input_entries == std::llround(expected / 2));
}

TEST_CASE("SBM edges fall inside a class with the probability asked for", "[generators]") {
  SbmOptions o;
  o.num_nodes = 20000;
  o.homophily = GENERATE(0.0, 0.1, 0.5, 0.8, 0.95, 1.0);
  const Dataset ds = generate_sbm(o);
  const double measured = intra_class_fraction(ds);
  INFO("homophily " << o.homophily << ", measured " << measured);
  CHECK(std::abs(measured - o.homophily) < 0.03);
  if (o.homophily == 0.0) CHECK(measured == 0.0);
  if (o.homophily == 1.0) CHECK(measured == 1.0);

  o.num_classes = 1;
  CHECK(intra_class_fraction(generate_sbm(o)) == 1.0);  // a single class has nowhere else to go
}

TEST_CASE("SBM features separate the classes", "[generators]") {
  SbmOptions o;  // 10000 nodes, 10 classes, 64 dims, separation 1, noise 1
  const Dataset ds = generate_sbm(o);
  REQUIRE(ds.feature_dim == 64);
  REQUIRE(ds.features.size() == static_cast<std::size_t>(o.num_nodes) * 64);
  CHECK(std::all_of(ds.features.begin(), ds.features.end(), [](float x) { return std::isfinite(x); }));

  // Each coordinate is mu + noise, so its variance about the class mean is noise^2 = 1 and its
  // variance about 0 is separation^2 + noise^2 = 2 (640 class-mean draws: within 20%).
  double total_sq = 0;
  for (float x : ds.features) total_sq += static_cast<double>(x) * x;
  const double second_moment = total_sq / static_cast<double>(ds.features.size());
  CHECK(second_moment == Approx(2.0).epsilon(0.2));

  // Class means are ~11 apart against unit noise: a nearest-mean classifier is all but perfect.
  const double accuracy = nearest_mean_accuracy(ds);
  INFO("nearest-class-mean test accuracy " << accuracy);
  CHECK(accuracy > 0.99);

  // The ratio of separation to noise sets the difficulty: at 0.2 the task is between chance (0.1)
  // and solved (about 0.53 over seeds 1-5), so the generator can make tasks a GNN must work for.
  o.class_separation = 0.2;
  const double hard = nearest_mean_accuracy(generate_sbm(o));
  INFO("separation 0.2: accuracy " << hard);
  CHECK(hard > 0.35);
  CHECK(hard < 0.75);
}

TEST_CASE("SBM splits are disjoint, cover every node and follow the fractions", "[generators]") {
  SbmOptions o;
  o.num_nodes = 10001;
  o.train_fraction = GENERATE(0.6, 0.1, 0.0, 1.0);
  o.val_fraction = GENERATE(0.0, 0.2);
  if (o.train_fraction + o.val_fraction > 1.0) return;
  const Dataset ds = generate_sbm(o);
  CHECK(static_cast<std::int64_t>(ds.train_idx.size()) == std::llround(o.train_fraction * 10001));
  CHECK(static_cast<std::int64_t>(ds.val_idx.size()) == std::llround(o.val_fraction * 10001));
  CHECK(ds.train_idx.size() + ds.val_idx.size() + ds.test_idx.size() == 10001);
  std::vector<int> seen(10001, 0);
  for (const IntArray* split : {&ds.train_idx, &ds.val_idx, &ds.test_idx}) {
    CHECK(std::is_sorted(split->begin(), split->end()));
    for (NodeId u : *split) ++seen[static_cast<std::size_t>(u)];
  }
  CHECK(std::all_of(seen.begin(), seen.end(), [](int s) { return s == 1; }));
}

TEST_CASE("SBM is reproducible from its seed", "[generators]") {
  SbmOptions o;
  o.num_nodes = 3000;
  o.feature_dim = 8;
  const Dataset a = generate_sbm(o);
  const Dataset b = generate_sbm(o);
  CHECK(a.name == b.name);
  CHECK(a.source == b.source);
  CHECK(to_vector(a.graph.indptr()) == to_vector(b.graph.indptr()));
  CHECK(ids_of(a.graph) == ids_of(b.graph));
  CHECK(to_vector(a.labels) == to_vector(b.labels));
  CHECK(to_vector(a.features) == to_vector(b.features));
  CHECK(to_vector(a.train_idx) == to_vector(b.train_idx));
  CHECK(to_vector(a.val_idx) == to_vector(b.val_idx));
  CHECK(to_vector(a.test_idx) == to_vector(b.test_idx));

  o.seed = 2;
  const Dataset c = generate_sbm(o);
  CHECK(to_vector(a.labels) != to_vector(c.labels));
  CHECK(ids_of(a.graph) != ids_of(c.graph));
  CHECK(to_vector(a.features) != to_vector(c.features));
  CHECK(to_vector(a.train_idx) != to_vector(c.train_idx));
}

TEST_CASE("SBM built through bucket files is the in-memory SBM", "[generators][external]") {
  SbmOptions o;
  o.num_nodes = 5000;
  o.feature_dim = 4;
  const Dataset a = generate_sbm(o);
  const test::ScratchDir scratch;
  // A budget of a few kilobytes forces many buckets.
  const Dataset b = generate_sbm_bounded(o, scratch.str(), 16 << 10);
  CHECK(b.graph.indptr().is_mapped());
  CHECK(a.name == b.name);
  CHECK(to_vector(a.graph.indptr()) == to_vector(b.graph.indptr()));
  CHECK(ids_of(a.graph) == ids_of(b.graph));
  CHECK(a.cleaning.duplicates_dropped == b.cleaning.duplicates_dropped);
  CHECK(a.cleaning.output_entries == b.cleaning.output_entries);
  CHECK(to_vector(a.labels) == to_vector(b.labels));
  CHECK(to_vector(a.features) == to_vector(b.features));
  CHECK(to_vector(a.train_idx) == to_vector(b.train_idx));
  CHECK(to_vector(a.test_idx) == to_vector(b.test_idx));
}

TEST_CASE("SBM refuses bad options", "[generators]") {
  auto bad = [](auto change) {
    SbmOptions o;
    o.num_nodes = 100;
    change(o);
    return o;
  };
  auto refuses = [&](auto change, const std::string& mentions) {
    CHECK_THROWS_AS(generate_sbm(bad(change)), InputError);
    CHECK_THROWS_WITH(generate_sbm(bad(change)), Catch::Contains(mentions));
  };
  refuses([](SbmOptions& o) { o.num_classes = 0; }, "classes");
  refuses([](SbmOptions& o) { o.num_nodes = 5; }, "nodes");
  refuses([](SbmOptions& o) { o.num_nodes = -1; }, "nodes");
  refuses([](SbmOptions& o) { o.avg_degree = -1; }, "degree");
  refuses([](SbmOptions& o) { o.avg_degree = std::numeric_limits<double>::infinity(); }, "degree");
  refuses([](SbmOptions& o) { o.homophily = 1.1; }, "homophily");
  refuses([](SbmOptions& o) { o.homophily = -0.1; }, "homophily");
  refuses([](SbmOptions& o) { o.feature_dim = 0; }, "feature dimension");
  refuses([](SbmOptions& o) { o.class_separation = -1; }, "separation");
  refuses([](SbmOptions& o) { o.feature_noise = std::nan(""); }, "noise");
  refuses([](SbmOptions& o) { o.train_fraction = 1.2; }, "train fraction");
  refuses([](SbmOptions& o) { o.val_fraction = -0.2; }, "validation fraction");
  refuses([](SbmOptions& o) { o.train_fraction = 0.7, o.val_fraction = 0.4; }, "sum");
  // Boundaries that are fine.
  CHECK_NOTHROW(generate_sbm(bad([](SbmOptions& o) { o.num_nodes = 10, o.avg_degree = 0; })));
  CHECK_NOTHROW(generate_sbm(bad([](SbmOptions& o) { o.train_fraction = 0.7, o.val_fraction = 0.3; })));
}

TEST_CASE("add_random_node_data gives features, labels and a split of the asked sizes, seeded", "[generators]") {
  RmatOptions r;
  r.scale = 10;
  r.edge_factor = 4;
  Dataset a = generate_rmat(r, {true, true, true});
  add_random_node_data(a, 8, 5, 0.1, 0.2, 3);
  const std::int64_t n = a.num_nodes();
  CHECK(a.feature_dim == 8);
  CHECK(a.features.size() == static_cast<std::size_t>(n * 8));
  CHECK(a.num_classes == 5);
  const std::vector<std::int64_t> labels = a.labels.widened();
  CHECK(*std::max_element(labels.begin(), labels.end()) <= 4);
  CHECK(*std::min_element(labels.begin(), labels.end()) >= 0);
  CHECK(static_cast<double>(a.train_idx.size()) == Approx(0.1 * static_cast<double>(n)).margin(1));
  CHECK(static_cast<double>(a.val_idx.size()) == Approx(0.2 * static_cast<double>(n)).margin(1));
  double mean = 0;
  for (float x : a.features.span()) mean += x;
  CHECK(std::abs(mean / static_cast<double>(a.features.size())) < 0.05);
  Dataset b = generate_rmat(r, {true, true, true});
  add_random_node_data(b, 8, 5, 0.1, 0.2, 3);
  CHECK(std::equal(a.features.begin(), a.features.end(), b.features.begin()));
  CHECK(std::equal(a.train_idx.begin(), a.train_idx.end(), b.train_idx.begin(), b.train_idx.end()));
  CHECK_THROWS_AS(add_random_node_data(b, 0, 5, 0.1, 0.1, 1), InputError);
}

TEST_CASE("generators keep 2-byte features as the float32 ones narrowed, without a float32 matrix", "[generators][feature-dtype]") {
  SbmOptions o;
  o.num_nodes = 300;
  o.num_classes = 3;
  o.feature_dim = 7;
  const Dataset wide = generate_sbm(o);
  RmatOptions r;
  r.scale = 10;
  Dataset rmat = generate_rmat(r, {});
  Dataset rmat16 = generate_rmat(r, {});
  add_random_node_data(rmat, 5, 4, 0.1, 0.1, 3);
  for (const FeatureDtype t : {FeatureDtype::kFloat16, FeatureDtype::kBFloat16}) {
    INFO(feature_dtype_name(t));
    o.feature_dtype = t;
    const Dataset narrow = generate_sbm(o);
    CHECK(narrow.feature_dtype == t);
    CHECK(narrow.features.empty());
    std::vector<std::uint16_t> want(wide.features.size());
    narrow_values(t, wide.features.data(), want.size(), want.data());
    CHECK(std::equal(want.begin(), want.end(), narrow.features16.begin(), narrow.features16.end()));
    CHECK(wide.labels.widened() == narrow.labels.widened());

    add_random_node_data(rmat16, 5, 4, 0.1, 0.1, 3, t);
    want.assign(rmat.features.size(), 0);
    narrow_values(t, rmat.features.data(), want.size(), want.data());
    CHECK(std::equal(want.begin(), want.end(), rmat16.features16.begin(), rmat16.features16.end()));
  }
}
