// The IGB-Het-shaped generator and the knowledge-graph generator (hetero.hpp).
#include "datasets/hetero.hpp"

#include <algorithm>
#include <bit>
#include <charconv>
#include <cmath>
#include <span>
#include <utility>

#include <boost/random/normal_distribution.hpp>
#include <boost/random/uniform_real_distribution.hpp>

#include "datasets/error.hpp"
#include "datasets/random.hpp"
#include "datasets/splits.hpp"

namespace shardgnn {

namespace {

enum Stream : std::uint64_t { kLayout, kEdges, kMeans, kFeatures, kSplit };
enum Type : int { kPaper, kAuthor, kInstitute, kFos, kTypes };
const char* const kTypeNames[kTypes] = {"paper", "author", "institute", "fos"};
// IGB-Het's edges do not repeat, cites holds both directions and self-loops are a model's choice.
constexpr CleanOptions kClean{.symmetrize = true, .drop_self_loops = true, .drop_duplicates = true};

std::string fmt(double x) {
  char buf[32];
  return std::string(buf, std::to_chars(buf, buf + sizeof buf, x).ptr);
}

// The class-mean features and the random split both generators make, checked alike.
template <class Fail>
void check_features_and_split(const Fail& fail, int feature_dim, double separation, double noise, double train, double val) {
  if (feature_dim < 1) fail("--feature-dim must be at least 1, got " + std::to_string(feature_dim));
  if (!std::isfinite(separation) || separation < 0) fail("--separation must be a finite number >= 0, got " + fmt(separation));
  if (!std::isfinite(noise) || noise < 0) fail("--noise must be a finite number >= 0, got " + fmt(noise));
  if (!(train >= 0 && val >= 0 && train + val <= 1.0 + 1e-9))
    fail("--train and --val must be fractions summing to at most 1, got " + fmt(train) + " and " + fmt(val));
}

void check(const HeteroOptions& o) {
  auto fail = [](const std::string& what) { throw InputError("hetero generator: " + what); };
  if (o.papers < 1) fail("--papers must be at least 1, got " + std::to_string(o.papers));
  if (o.papers > (std::int64_t{1} << 40)) fail("--papers must be at most 2^40, got " + std::to_string(o.papers));
  if (o.classes < 1 || o.classes > 32767) fail("--classes must be in 1..32767, got " + std::to_string(o.classes));
  for (const auto& [name, x] : {std::pair{"--cites", o.cites}, {"--authors", o.authors}, {"--topics", o.topics}, {"--affiliations", o.affiliations}})
    if (!std::isfinite(x) || x < 0 || x > 1000) fail(std::string(name) + " must be in [0, 1000], got " + fmt(x));
  if (!std::isfinite(o.homophily) || o.homophily < 0 || o.homophily > 1) fail("--homophily must be in [0, 1], got " + fmt(o.homophily));
  check_features_and_split(fail, o.feature_dim, o.separation, o.noise, o.train_fraction, o.val_fraction);
  for (const std::string& t : o.featureless)
    if (std::find(std::begin(kTypeNames), std::end(kTypeNames), t) == std::end(kTypeNames))
      fail("--featureless names an unknown type '" + t + "' (paper, author, institute, fos)");
}

// A seeded bijection of [0, n): Relabel on the next power of two, walked until it lands below n
// (cycle walking: a permutation's cycle through a value below n comes back below n), under two
// steps on average. It scatters a type's popular and same-class nodes over its ids without a table.
class Scatter {
 public:
  Scatter(std::int64_t n, std::uint64_t seed) : n_(static_cast<std::uint64_t>(n)), relabel_(std::max(1, static_cast<int>(std::bit_width(n_ - 1))), seed) {}
  std::int64_t operator()(std::uint64_t j) const {
    do j = relabel_(j);
    while (j >= n_);
    return static_cast<std::int64_t>(j);
  }

 private:
  std::uint64_t n_;
  Relabel relabel_;
};

// One node type's layout: slot j in [0, n) holds a node of class j % K, and the class's nodes by
// popularity are the slots y, y + K, y + 2K, ...; Scatter maps slots to the type's ids.
struct TypeLayout {
  NodeId begin = 0;
  std::int64_t n = 0;
  int classes = 1;
  Scatter scatter;
  // A node drawn by popularity: the slot's rank is floor(count * u^2), so a rank below x * count
  // has probability sqrt(x), a skew toward popular nodes as real citation and authorship show.
  NodeId draw(int y, double u) const {
    const std::int64_t in_class = y < n ? (n - y + classes - 1) / classes : 0;
    if (in_class == 0) return draw_any(u);
    const auto r = std::min(in_class - 1, static_cast<std::int64_t>(static_cast<double>(in_class) * u * u));
    return begin + scatter(static_cast<std::uint64_t>(y + r * classes));
  }
  NodeId draw_any(double u) const {
    const auto j = std::min(n - 1, static_cast<std::int64_t>(static_cast<double>(n) * u * u));
    return begin + scatter(static_cast<std::uint64_t>(j));
  }
};

// Per-type entries after symmetrising, relative to the average per id: the bucket files split ids
// into equal ranges, so the densest type's rows set how much one bucket holds.
double densest_over_average(const HeteroOptions& o, const std::vector<std::int64_t>& n) {
  const double P = static_cast<double>(n[kPaper]), A = static_cast<double>(n[kAuthor]);
  const double entries[kTypes] = {P * (2 * o.cites + o.authors + o.topics), P * o.authors + A * o.affiliations, A * o.affiliations,
                                  P * o.topics};
  double total = 0, nodes = 0, densest = 0;
  for (int t = 0; t < kTypes; ++t) total += entries[t], nodes += static_cast<double>(n[static_cast<std::size_t>(t)]);
  if (total == 0) return 1;
  for (int t = 0; t < kTypes; ++t) densest = std::max(densest, entries[t] / static_cast<double>(n[static_cast<std::size_t>(t)]));
  return std::max(1.0, densest / (total / nodes));
}

}  // namespace

std::vector<std::int64_t> hetero_type_counts(std::int64_t papers) {
  // IGB-Het's tiny, small, medium and full (papers, authors, institutes, fields of study).
  static constexpr double kIgbh[4][kTypes] = {{100000, 357041, 8738, 84220},
                                             {1000000, 1926066, 14751, 190449},
                                             {10000000, 15544654, 23256, 415054},
                                             {269346174, 277220883, 26918, 712960}};
  const double p = static_cast<double>(papers);
  std::vector<std::int64_t> n(kTypes);
  n[kPaper] = papers;
  int seg = 0;
  while (seg < 2 && p > kIgbh[seg + 1][kPaper]) ++seg;
  for (int t = 1; t < kTypes; ++t) {
    double x;
    if (p <= kIgbh[0][kPaper]) {
      x = kIgbh[0][t] * p / kIgbh[0][kPaper];
    } else {
      const double slope = std::log(kIgbh[seg + 1][t] / kIgbh[seg][t]) / std::log(kIgbh[seg + 1][kPaper] / kIgbh[seg][kPaper]);
      x = kIgbh[seg][t] * std::pow(p / kIgbh[seg][kPaper], slope);
    }
    n[static_cast<std::size_t>(t)] = std::max<std::int64_t>(1, std::llround(x));
  }
  return n;
}

double hetero_expected_draws(const HeteroOptions& o) {
  const auto n = hetero_type_counts(o.papers);
  return static_cast<double>(n[kPaper]) * (o.cites + o.authors + o.topics) + static_cast<double>(n[kAuthor]) * o.affiliations;
}

Dataset generate_hetero(const HeteroOptions& o, const std::string& scratch, std::uint64_t memory) {
  check(o);
  const std::vector<std::int64_t> n = hetero_type_counts(o.papers);
  const int K = o.classes;
  std::vector<TypeLayout> layout;
  NodeId next = 0;
  for (int t = 0; t < kTypes; ++t) {
    const std::int64_t nt = n[static_cast<std::size_t>(t)];
    layout.push_back(TypeLayout{next, nt, K, Scatter(nt, derive_seed(derive_seed(o.seed, kLayout), static_cast<std::uint64_t>(t)))});
    next += nt;
  }
  const NodeId total = next;
  // Each node's class, from the layout's slots (4 bytes a node, the generator's one per-node table).
  std::vector<std::int32_t> cls(static_cast<std::size_t>(total));
  for (const TypeLayout& L : layout)
    for (std::int64_t j = 0; j < L.n; ++j) cls[static_cast<std::size_t>(L.begin + L.scatter(static_cast<std::uint64_t>(j)))] = static_cast<std::int32_t>(j % K);

  const auto draws = static_cast<std::int64_t>(std::ceil(hetero_expected_draws(o)));
  auto produce = [&](const EdgeSink& sink) {
    constexpr std::size_t kChunk = std::size_t{1} << 20;
    std::vector<NodeId> src, dst;
    src.reserve(kChunk + 4096);
    dst.reserve(kChunk + 4096);
    Rng rng(derive_seed(o.seed, kEdges));
    boost::random::uniform_real_distribution<double> unit(0.0, 1.0);
    auto count = [&](double mean) { return static_cast<int>(mean) + (unit(rng) < mean - std::floor(mean) ? 1 : 0); };
    auto draw_from = [&](NodeId u, int type, double mean) {
      const int y = cls[static_cast<std::size_t>(u)];
      for (int k = count(mean); k > 0; --k) {
        const bool same = unit(rng) < o.homophily;
        const double r = unit(rng);
        src.push_back(u);
        dst.push_back(same ? layout[static_cast<std::size_t>(type)].draw(y, r) : layout[static_cast<std::size_t>(type)].draw_any(r));
      }
      if (src.size() >= kChunk) {
        sink(src, dst);
        src.clear();
        dst.clear();
      }
    };
    for (NodeId p = layout[kPaper].begin; p < layout[kPaper].begin + layout[kPaper].n; ++p) {
      draw_from(p, kPaper, o.cites);
      draw_from(p, kAuthor, o.authors);
      draw_from(p, kFos, o.topics);
    }
    for (NodeId a = layout[kAuthor].begin; a < layout[kAuthor].begin + layout[kAuthor].n; ++a) draw_from(a, kInstitute, o.affiliations);
    if (!src.empty()) sink(src, dst);
  };

  Dataset ds;
  if (scratch.empty()) {
    BuiltGraph built = build_csr_streamed(total, draws, produce, kClean);
    ds.graph = std::move(built.graph);
    ds.cleaning = built.report;
  } else {
    const auto budget = static_cast<std::uint64_t>(static_cast<double>(memory) / densest_over_average(o, n));
    const ExternalCsr built = build_csr_external(total, draws, produce, kClean, scratch, budget);
    ds.graph = map_csr(built);
    ds.cleaning = built.report;
  }

  std::vector<NodeType> types;
  for (int t = 0; t < kTypes; ++t) {
    const bool none = std::find(o.featureless.begin(), o.featureless.end(), kTypeNames[t]) != o.featureless.end();
    types.push_back(NodeType{kTypeNames[t], n[static_cast<std::size_t>(t)], none ? 0 : o.feature_dim});
  }
  // Rows u -> v hold relation (type of u, type of v); the reverses are what symmetrising added.
  ds.schema = GraphSchema(types,
                          {{"paper", "cites", "paper"},
                           {"paper", "written_by", "author"},
                           {"author", "affiliated_to", "institute"},
                           {"paper", "topic", "fos"},
                           {"author", "rev_written_by", "paper"},
                           {"institute", "rev_affiliated_to", "author"},
                           {"fos", "rev_topic", "paper"}},
                          "hetero generator");
  ds.type_features.resize(kTypes);
  const auto dim = static_cast<std::size_t>(o.feature_dim);
  for (int t = 0; t < kTypes; ++t) {
    if (types[static_cast<std::size_t>(t)].feature_dim == 0) continue;
    const TypeLayout& L = layout[static_cast<std::size_t>(t)];
    // A unit normal scaled by hand, because Boost's normal_distribution refuses sigma = 0.
    boost::random::normal_distribution<double> normal(0.0, 1.0);
    std::vector<double> means(static_cast<std::size_t>(K) * dim);
    Rng mean_rng(derive_seed(derive_seed(o.seed, kMeans), static_cast<std::uint64_t>(t)));
    for (double& mu : means) mu = o.separation * normal(mean_rng);
    Rng rng(derive_seed(derive_seed(o.seed, kFeatures), static_cast<std::uint64_t>(t)));
    std::vector<float> x(static_cast<std::size_t>(L.n) * dim);
    for (std::int64_t i = 0; i < L.n; ++i) {
      const double* mu = means.data() + static_cast<std::size_t>(cls[static_cast<std::size_t>(L.begin + i)]) * dim;
      float* row = x.data() + static_cast<std::size_t>(i) * dim;
      for (std::size_t d = 0; d < dim; ++d) row[d] = static_cast<float>(mu[d] + o.noise * normal(rng));
    }
    ds.type_features[static_cast<std::size_t>(t)] = Array<float>(std::move(x));
  }

  std::vector<std::int64_t> labels(static_cast<std::size_t>(total), -1);
  for (NodeId p = layout[kPaper].begin; p < layout[kPaper].begin + layout[kPaper].n; ++p) labels[static_cast<std::size_t>(p)] = cls[static_cast<std::size_t>(p)];
  std::vector<std::int32_t>().swap(cls);
  ds.num_classes = K;
  ds.labels = Array<std::int64_t>(std::move(labels));
  assign_random_split(ds, o.train_fraction, o.val_fraction, derive_seed(o.seed, kSplit));

  ds.name = "hetero-p" + std::to_string(o.papers);
  std::string featureless;
  for (const std::string& t : o.featureless) featureless += (featureless.empty() ? "" : ",") + t;
  ds.source = "generated: hetero papers=" + std::to_string(o.papers) + " classes=" + std::to_string(K) + " cites=" + fmt(o.cites) +
              " authors=" + fmt(o.authors) + " topics=" + fmt(o.topics) + " affiliations=" + fmt(o.affiliations) +
              " homophily=" + fmt(o.homophily) + " feature_dim=" + std::to_string(o.feature_dim) +
              (featureless.empty() ? "" : " featureless=" + featureless) + " separation=" + fmt(o.separation) +
              " noise=" + fmt(o.noise) + " train_fraction=" + fmt(o.train_fraction) + " val_fraction=" + fmt(o.val_fraction) +
              " seed=" + std::to_string(o.seed);
  return ds;
}

double kg_expected_draws(const KgOptions& o) { return static_cast<double>(o.entities) * o.relations * o.degree; }

void check_kg(const KgOptions& o) {
  auto fail = [](const std::string& what) { throw InputError("kg generator: " + what); };
  if (o.entities < 1 || o.entities > (std::int64_t{1} << 40)) fail("--entities must be in 1..2^40, got " + std::to_string(o.entities));
  if (o.relations < 1 || o.relations > 16383) fail("--relations must be in 1..16383, got " + std::to_string(o.relations));
  if (o.classes < 1 || o.classes > 32767) fail("--classes must be in 1..32767, got " + std::to_string(o.classes));
  if (!std::isfinite(o.degree) || o.degree < 0 || o.degree > 1000) fail("--degree must be in [0, 1000], got " + fmt(o.degree));
  if (!std::isfinite(o.signal) || o.signal < 0 || o.signal > 1) fail("--signal must be in [0, 1], got " + fmt(o.signal));
  check_features_and_split(fail, o.feature_dim, o.separation, o.noise, o.train_fraction, o.val_fraction);
}

Dataset generate_kg(const KgOptions& o) {
  check_kg(o);
  const int K = o.classes, R = o.relations;
  const TypeLayout layout{0, o.entities, K, Scatter(o.entities, derive_seed(o.seed, kLayout))};
  std::vector<std::int32_t> cls(static_cast<std::size_t>(o.entities));
  for (std::int64_t j = 0; j < o.entities; ++j) cls[static_cast<std::size_t>(layout.scatter(static_cast<std::uint64_t>(j)))] = static_cast<std::int32_t>(j % K);

  EdgeList edges;
  edges.num_nodes = o.entities;
  const auto draws = static_cast<std::size_t>(std::ceil(kg_expected_draws(o)));
  edges.src.reserve(draws);
  edges.dst.reserve(draws);
  edges.relation.reserve(draws);
  Rng rng(derive_seed(o.seed, kEdges));
  boost::random::uniform_real_distribution<double> unit(0.0, 1.0);
  const int whole = static_cast<int>(o.degree);
  for (NodeId u = 0; u < o.entities; ++u)
    for (int r = 0; r < R; ++r)
      for (int k = whole + (unit(rng) < o.degree - whole ? 1 : 0); k > 0; --k) {
        const bool follows = unit(rng) < o.signal;
        const double x = unit(rng);
        edges.src.push_back(u);
        edges.dst.push_back(follows ? layout.draw((cls[static_cast<std::size_t>(u)] + r) % K, x) : layout.draw_any(x));
        edges.relation.push_back(r);
      }
  // Relation r's reverse is rev_r, R + r, and the other way round.
  for (std::int32_t r = 0; r < 2 * R; ++r) edges.reverse_relation.push_back(r < R ? R + r : r - R);

  Dataset ds;
  std::vector<Relation> relations;
  for (int r = 0; r < R; ++r) relations.push_back({"entity", "r" + std::to_string(r), "entity"});
  for (int r = 0; r < R; ++r) relations.push_back({"entity", "rev_r" + std::to_string(r), "entity"});
  ds.schema = GraphSchema({NodeType{"entity", o.entities, o.feature_dim}}, relations, "kg generator", true);
  BuiltGraph built = build_csr(std::move(edges), kClean);
  ds.graph = std::move(built.graph);
  ds.edge_relations = Array<std::int32_t>(std::move(built.relations));
  ds.cleaning = built.report;

  const auto dim = static_cast<std::size_t>(o.feature_dim);
  boost::random::normal_distribution<double> normal(0.0, 1.0);
  std::vector<double> means(static_cast<std::size_t>(K) * dim);
  Rng mean_rng(derive_seed(o.seed, kMeans));
  for (double& mu : means) mu = o.separation * normal(mean_rng);
  Rng feature_rng(derive_seed(o.seed, kFeatures));
  std::vector<float> x(static_cast<std::size_t>(o.entities) * dim);
  for (std::int64_t i = 0; i < o.entities; ++i) {
    const double* mu = means.data() + static_cast<std::size_t>(cls[static_cast<std::size_t>(i)]) * dim;
    for (std::size_t d = 0; d < dim; ++d) x[static_cast<std::size_t>(i) * dim + d] = static_cast<float>(mu[d] + o.noise * normal(feature_rng));
  }
  ds.type_features.resize(1);
  ds.type_features[0] = Array<float>(std::move(x));
  ds.num_classes = K;
  ds.labels = Array<std::int64_t>(std::vector<std::int64_t>(cls.begin(), cls.end()));
  assign_random_split(ds, o.train_fraction, o.val_fraction, derive_seed(o.seed, kSplit));
  ds.name = "kg-e" + std::to_string(o.entities) + "-r" + std::to_string(R);
  ds.source = "generated: kg entities=" + std::to_string(o.entities) + " relations=" + std::to_string(R) + " classes=" + std::to_string(K) +
              " degree=" + fmt(o.degree) + " signal=" + fmt(o.signal) + " feature_dim=" + std::to_string(o.feature_dim) +
              " separation=" + fmt(o.separation) + " noise=" + fmt(o.noise) + " train_fraction=" + fmt(o.train_fraction) +
              " val_fraction=" + fmt(o.val_fraction) + " seed=" + std::to_string(o.seed);
  return ds;
}

}  // namespace shardgnn
