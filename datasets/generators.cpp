// Synthetic graphs, seeded and reproducible on every platform.
//  - R-MAT: D. Chakrabarti, Y. Zhan, C. Faloutsos, "R-MAT: A Recursive Model for Graph Mining",
//    SDM 2004, with the parameters and the random vertex relabelling of the Graph500 benchmark
//    (graph500.org, "Kernel 1" generator specification).
//  - Stochastic block model: P. W. Holland, K. B. Laskey, S. Leinhardt, "Stochastic blockmodels:
//    First steps", Social Networks 5(2), 1983; here in its planted-partition form (one intra-class
//    probability, one inter-class probability) with Gaussian class-conditional features, as in the
//    synthetic node-classification benchmarks of the GNN literature.
#include "datasets/generators.hpp"

#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <numeric>
#include <span>
#include <stdexcept>
#include <utility>
#include <vector>

#include <boost/random/normal_distribution.hpp>
#include <boost/random/uniform_int_distribution.hpp>
#include <boost/random/uniform_real_distribution.hpp>

#include "datasets/error.hpp"
#include "datasets/fileio.hpp"
#include "datasets/random.hpp"
#include "datasets/splits.hpp"

namespace shardgnn {

namespace {

// Streams of one generator, each seeded on its own (see derive_seed).
enum Stream : std::uint64_t { kRmatEdges, kRmatPermutation, kSbmClasses, kSbmEdges, kSbmMeans, kSbmFeatures, kSbmSplit, kSbmProfiles, kSbmLabelSets };
// The SBM draws each undirected edge once, in either direction, and may draw it twice.
constexpr CleanOptions kSbmClean{.symmetrize = true, .drop_self_loops = true, .drop_duplicates = true};

// The shortest text that reads back as the same double, so sources and messages lose nothing.
std::string fmt_double(double x) {
  char buf[32];
  return std::string(buf, std::to_chars(buf, buf + sizeof buf, x).ptr);
}

bool is_probability(double p) { return std::isfinite(p) && p >= 0.0 && p <= 1.0; }

void check_rmat_options(const RmatOptions& o) {
  if (o.scale < 1 || o.scale > 40)
    throw InputError("R-MAT: scale must be in 1..40 (2^scale nodes), got " + std::to_string(o.scale));
  if (o.edge_factor < 1)
    throw InputError("R-MAT: edge factor must be at least 1, got " + std::to_string(o.edge_factor));
  if (static_cast<std::uint64_t>(o.edge_factor) > (std::uint64_t{1} << (62 - o.scale)))
    throw InputError("R-MAT: edge_factor * 2^scale is too large (over 2^62 edges) for scale " + std::to_string(o.scale) +
                     " and edge factor " + std::to_string(o.edge_factor));
  if (!is_probability(o.a) || !is_probability(o.b) || !is_probability(o.c))
    throw InputError("R-MAT: the probabilities a, b, c must each be in [0, 1], got a=" + fmt_double(o.a) +
                     " b=" + fmt_double(o.b) + " c=" + fmt_double(o.c));
  // A little slack so that e.g. a=0.25, b=0.25, c=0.5 (d=0) is not refused for rounding.
  if (o.a + o.b + o.c > 1.0 + 1e-9)
    throw InputError("R-MAT: a + b + c must be at most 1 (d = 1 - a - b - c), got " + fmt_double(o.a + o.b + o.c));
}

void check_sbm_options(const SbmOptions& o) {
  if (o.num_classes < 1) throw InputError("SBM: number of classes must be at least 1, got " + std::to_string(o.num_classes));
  if (o.num_nodes < o.num_classes)
    throw InputError("SBM: number of nodes (" + std::to_string(o.num_nodes) + ") must be at least the number of classes (" +
                     std::to_string(o.num_classes) + ")");
  if (!std::isfinite(o.avg_degree) || o.avg_degree < 0)
    throw InputError("SBM: average degree must be a finite number >= 0, got " + fmt_double(o.avg_degree));
  if (!is_probability(o.homophily)) throw InputError("SBM: homophily must be in [0, 1], got " + fmt_double(o.homophily));
  if (o.feature_dim < 1) throw InputError("SBM: feature dimension must be at least 1, got " + std::to_string(o.feature_dim));
  if (!std::isfinite(o.class_separation) || o.class_separation < 0)
    throw InputError("SBM: class separation must be a finite number >= 0, got " + fmt_double(o.class_separation));
  if (!std::isfinite(o.feature_noise) || o.feature_noise < 0)
    throw InputError("SBM: feature noise must be a finite number >= 0, got " + fmt_double(o.feature_noise));
  if (!is_probability(o.train_fraction)) throw InputError("SBM: train fraction must be in [0, 1], got " + fmt_double(o.train_fraction));
  if (!is_probability(o.val_fraction)) throw InputError("SBM: validation fraction must be in [0, 1], got " + fmt_double(o.val_fraction));
  if (o.train_fraction + o.val_fraction > 1.0 + 1e-9)
    throw InputError("SBM: train and validation fractions must sum to at most 1, got " +
                     fmt_double(o.train_fraction + o.val_fraction));
  if (o.multilabel < 0) throw InputError("SBM: --multilabel takes a label count >= 1, got " + std::to_string(o.multilabel));
  if (o.multilabel > 0 && (o.labels_per_node < 1 || o.labels_per_node > o.multilabel))
    throw InputError("SBM: --labels-per-node must be in [1, " + std::to_string(o.multilabel) + "], got " + std::to_string(o.labels_per_node));
  // Both directions of every draw are stored, with 64-bit offsets.
  const double draws = std::round(static_cast<double>(o.num_nodes) * o.avg_degree / 2.0);
  if (draws > 0x1p61)
    throw InputError("SBM: num_nodes * avg_degree / 2 is too large (" + fmt_double(draws) + " edges, at most 2^61)");
}

}  // namespace

void generate_rmat_stream(const RmatOptions& options, std::size_t chunk, const EdgeSink& sink) {
  check_rmat_options(options);
  const int scale = options.scale;
  const std::int64_t m = static_cast<std::int64_t>(options.edge_factor) << scale;
  chunk = std::max<std::size_t>(chunk, 1);
  std::vector<NodeId> src(std::min<std::size_t>(chunk, static_cast<std::size_t>(m))), dst(src.size());

  // Each level picks one quadrant of the adjacency matrix, a = (0,0), b = (0,1), c = (1,0),
  // d = (1,1), by comparing a uniform 32-bit number against the cumulative probabilities scaled
  // by 2^32 (an error under 2.4e-10 per probability). Each 64-bit draw of the engine serves two
  // levels, and the bits are computed without branches: this loop runs scale * m times, the
  // quadrants are too evenly mixed for a branch predictor, and a uniform_real_distribution per
  // level made it several times slower.
  auto threshold = [](double p) { return static_cast<std::uint64_t>(std::floor(p * 4294967296.0)); };
  const std::uint64_t ta = threshold(options.a), tab = threshold(options.a + options.b),
                      tabc = threshold(options.a + options.b + options.c);
  // Graph500 relabels vertices so that the high-degree ones are not clustered at low ids (which
  // would flatter any partitioner that splits by id range).
  const Relabel relabel(scale, derive_seed(options.seed, kRmatPermutation));

  Rng rng(derive_seed(options.seed, kRmatEdges));
  for (std::int64_t done = 0; done < m;) {
    const auto count = static_cast<std::size_t>(std::min<std::int64_t>(m - done, static_cast<std::int64_t>(src.size())));
    for (std::size_t e = 0; e < count; ++e) {
      std::uint64_t u = 0, v = 0;
      auto descend = [&](std::uint64_t r) {
        const std::uint64_t row = r >= tab;
        const std::uint64_t col = static_cast<std::uint64_t>((r >= ta) & (r < tab)) | static_cast<std::uint64_t>(r >= tabc);
        u = (u << 1) | row;
        v = (v << 1) | col;
      };
      int level = 0;
      for (; level + 2 <= scale; level += 2) {
        const std::uint64_t bits = rng();
        descend(bits >> 32);
        descend(bits & 0xffffffffu);
      }
      if (level < scale) descend(rng() >> 32);
      src[e] = static_cast<NodeId>(options.permute ? relabel(u) : u);
      dst[e] = static_cast<NodeId>(options.permute ? relabel(v) : v);
    }
    sink(std::span<const NodeId>(src.data(), count), std::span<const NodeId>(dst.data(), count));
    done += static_cast<std::int64_t>(count);
  }
}

EdgeList generate_rmat_edges(const RmatOptions& options) {
  check_rmat_options(options);
  EdgeList edges;
  edges.num_nodes = std::int64_t{1} << options.scale;
  const std::int64_t m = static_cast<std::int64_t>(options.edge_factor) << options.scale;
  edges.src.reserve(static_cast<std::size_t>(m));
  edges.dst.reserve(static_cast<std::size_t>(m));
  generate_rmat_stream(options, std::size_t{1} << 20, [&](std::span<const NodeId> src, std::span<const NodeId> dst) {
    edges.src.insert(edges.src.end(), src.begin(), src.end());
    edges.dst.insert(edges.dst.end(), dst.begin(), dst.end());
  });
  return edges;
}

std::string rmat_name(const RmatOptions& options) { return "rmat-s" + std::to_string(options.scale) + "-e" + std::to_string(options.edge_factor); }

std::string rmat_source(const RmatOptions& options) {
  return "generated: R-MAT scale=" + std::to_string(options.scale) + " edge_factor=" + std::to_string(options.edge_factor) + " a=" + fmt_double(options.a) +
         " b=" + fmt_double(options.b) + " c=" + fmt_double(options.c) + " permute=" + (options.permute ? "true" : "false") +
         " seed=" + std::to_string(options.seed);
}

Dataset generate_rmat(const RmatOptions& options, const CleanOptions& clean) {
  BuiltGraph built = build_csr(generate_rmat_edges(options), clean);
  Dataset ds;
  ds.name = rmat_name(options);
  ds.source = rmat_source(options);
  ds.graph = std::move(built.graph);
  ds.cleaning = built.report;
  return ds;
}

namespace {

// `n` feature rows of `dim` values, row i made by fill(i, row) in order, kept in ds as `as`:
// float32 as made, or each row narrowed as soon as it is made.
template <class Fill>
void put_features(Dataset& ds, std::size_t n, std::size_t dim, FeatureDtype as, Fill fill) {
  ds.feature_dim = static_cast<std::int64_t>(dim);
  ds.feature_dtype = as;
  if (as == FeatureDtype::kFloat32) {
    std::vector<float> x(n * dim);
    for (std::size_t i = 0; i < n; ++i) fill(i, x.data() + i * dim);
    ds.features = Array<float>(std::move(x));
    return;
  }
  std::vector<std::uint16_t> bits(n * dim);
  std::vector<float> row(dim);
  for (std::size_t i = 0; i < n; ++i) {
    fill(i, row.data());
    if (const std::size_t bad = narrow_values(as, row.data(), dim, bits.data() + i * dim); bad < dim)
      throw_feature_overflow(as, "generated features: node " + std::to_string(i), row[bad]);
  }
  ds.features16 = Array<std::uint16_t>(std::move(bits));
}

}  // namespace

void add_random_node_data(Dataset& ds, int feature_dim, int num_classes, double train_fraction, double val_fraction, std::uint64_t seed,
                          FeatureDtype feature_dtype) {
  if (feature_dim < 1) throw InputError("--feature-dim must be at least 1, got " + std::to_string(feature_dim));
  if (num_classes < 1) throw InputError("--classes must be at least 1, got " + std::to_string(num_classes));
  const std::int64_t n = ds.num_nodes();
  {
    Rng rng(derive_seed(seed, 0xfea7));
    boost::random::normal_distribution<float> normal(0.0f, 1.0f);
    put_features(ds, static_cast<std::size_t>(n), static_cast<std::size_t>(feature_dim), feature_dtype, [&](std::size_t, float* row) {
      for (int d = 0; d < feature_dim; ++d) row[d] = normal(rng);
    });
  }
  std::vector<std::int64_t> labels(static_cast<std::size_t>(n));
  {
    Rng rng(derive_seed(seed, 0x1abe1));
    boost::random::uniform_int_distribution<std::int64_t> pick(0, num_classes - 1);
    for (auto& l : labels) l = pick(rng);
  }
  ds.num_classes = num_classes;
  ds.labels = Array<std::int64_t>(std::move(labels));
  assign_random_split(ds, train_fraction, val_fraction, derive_seed(seed, 0x5b117));
}

namespace {

// The SBM's graph built by `build` (in memory or through bucket files) from `produce`, which hands
// every drawn edge to a sink; then the class-dependent features and the split.
using SbmBuild = std::function<std::pair<CsrGraph, CleanReport>(std::int64_t num_nodes, std::int64_t draws,
                                                                  const std::function<void(const EdgeSink&)>& produce)>;

// The multi-label SBM: each block's profile of labels_per_node distinct labels; a node has each
// label of its block's profile with probability kProfileKeep and any other with kStrayLabel. The
// block is the node's single label until here, so the split (of all nodes) stays as drawn.
void give_label_sets(Dataset& ds, const SbmOptions& o) {
  constexpr double kProfileKeep = 0.9, kStrayLabel = 0.01;
  const std::int64_t L = o.multilabel, row = label_row_bytes(L);
  std::vector<std::vector<char>> in_profile(static_cast<std::size_t>(o.num_classes), std::vector<char>(static_cast<std::size_t>(L), 0));
  {
    Rng rng(derive_seed(o.seed, kSbmProfiles));
    std::vector<std::int64_t> order(static_cast<std::size_t>(L));
    for (auto& profile : in_profile) {
      std::iota(order.begin(), order.end(), std::int64_t{0});
      seeded_shuffle(std::span<std::int64_t>(order), rng);
      for (int k = 0; k < o.labels_per_node; ++k) profile[static_cast<std::size_t>(order[static_cast<std::size_t>(k)])] = 1;
    }
  }
  std::vector<std::uint8_t> bits(static_cast<std::size_t>(ds.num_nodes() * row), 0);
  Rng rng(derive_seed(o.seed, kSbmLabelSets));
  boost::random::uniform_real_distribution<double> unit(0.0, 1.0);
  for (NodeId v = 0; v < ds.num_nodes(); ++v) {
    const auto& profile = in_profile[static_cast<std::size_t>(ds.labels[static_cast<std::size_t>(v)])];
    for (std::int64_t c = 0; c < L; ++c)
      if (unit(rng) < (profile[static_cast<std::size_t>(c)] ? kProfileKeep : kStrayLabel)) set_label(bits.data() + v * row, c);
  }
  ds.labels = {};
  ds.multilabel = true;
  ds.num_classes = L;
  ds.label_bits = Array<std::uint8_t>(std::move(bits));
  ds.name += "-ml" + std::to_string(L);
  ds.source += " multilabel=" + std::to_string(L) + " labels_per_node=" + std::to_string(o.labels_per_node);
}

Dataset sbm_dataset(const SbmOptions& options, const SbmBuild& build) {
  check_sbm_options(options);
  const std::int64_t n = options.num_nodes;
  const int num_classes = options.num_classes;
  const std::size_t nz = static_cast<std::size_t>(n);

  // Balanced classes: i % C gives sizes that differ by at most one; the shuffle scatters them over ids.
  std::vector<std::int64_t> labels(nz);
  for (std::size_t i = 0; i < nz; ++i) labels[i] = static_cast<std::int64_t>(i % static_cast<std::size_t>(num_classes));
  {
    Rng rng(derive_seed(options.seed, kSbmClasses));
    seeded_shuffle(std::span<std::int64_t>(labels), rng);
  }

  // Nodes ordered by class (a counting sort): class c owns members[offset[c] .. offset[c+1]), and
  // the nodes of all other classes are the two ranges around it, so both kinds of draw are O(1).
  std::vector<std::int64_t> offset(static_cast<std::size_t>(num_classes) + 1, 0);
  for (std::int64_t c : labels) ++offset[static_cast<std::size_t>(c) + 1];
  std::partial_sum(offset.begin(), offset.end(), offset.begin());
  std::vector<NodeId> members(nz);
  {
    std::vector<std::int64_t> next(offset.begin(), offset.end() - 1);
    for (std::size_t i = 0; i < nz; ++i) {
      const auto c = static_cast<std::size_t>(labels[i]);
      members[static_cast<std::size_t>(next[c]++)] = static_cast<NodeId>(i);
    }
  }

  const std::int64_t draws = std::llround(static_cast<double>(n) * options.avg_degree / 2.0);
  auto produce = [&](const EdgeSink& sink) {
    constexpr std::int64_t kChunk = std::int64_t{1} << 20;
    std::vector<NodeId> src(static_cast<std::size_t>(std::min(draws, kChunk))), dst(src.size());
    Rng rng(derive_seed(options.seed, kSbmEdges));
    boost::random::uniform_int_distribution<std::int64_t> any_node(0, n - 1);
    boost::random::uniform_real_distribution<double> unit(0.0, 1.0);
    for (std::int64_t done = 0; done < draws;) {
      const auto count = static_cast<std::size_t>(std::min(draws - done, kChunk));
      for (std::size_t e = 0; e < count; ++e) {
        const NodeId u = any_node(rng);
        const std::size_t c = static_cast<std::size_t>(labels[static_cast<std::size_t>(u)]);
        const std::int64_t lo = offset[c], size = offset[c + 1] - offset[c];
        const bool intra = unit(rng) < options.homophily;
        std::int64_t pos;
        // With a single class there is no other class to draw from: every edge stays inside it.
        if (intra || size == n) {
          pos = lo + boost::random::uniform_int_distribution<std::int64_t>(0, size - 1)(rng);
        } else {
          pos = boost::random::uniform_int_distribution<std::int64_t>(0, n - size - 1)(rng);
          if (pos >= lo) pos += size;
        }
        src[e] = u;
        dst[e] = members[static_cast<std::size_t>(pos)];
      }
      sink(std::span<const NodeId>(src.data(), count), std::span<const NodeId>(dst.data(), count));
      done += static_cast<std::int64_t>(count);
    }
  };
  auto [graph, report] = build(n, draws, produce);
  std::vector<NodeId>().swap(members);

  const std::size_t dim = static_cast<std::size_t>(options.feature_dim);
  std::vector<double> means(static_cast<std::size_t>(num_classes) * dim);
  {
    Rng rng(derive_seed(options.seed, kSbmMeans));
    // A unit normal scaled by hand, because Boost's normal_distribution refuses sigma = 0.
    boost::random::normal_distribution<double> normal(0.0, 1.0);
    for (double& mu : means) mu = options.class_separation * normal(rng);
  }
  Dataset ds;
  ds.name = "sbm-n" + std::to_string(n) + "-c" + std::to_string(num_classes);
  ds.source = "generated: SBM num_nodes=" + std::to_string(n) + " num_classes=" + std::to_string(num_classes) +
              " avg_degree=" + fmt_double(options.avg_degree) + " homophily=" + fmt_double(options.homophily) +
              " feature_dim=" + std::to_string(options.feature_dim) + " class_separation=" + fmt_double(options.class_separation) +
              " feature_noise=" + fmt_double(options.feature_noise) + " train_fraction=" + fmt_double(options.train_fraction) +
              " val_fraction=" + fmt_double(options.val_fraction) + " seed=" + std::to_string(options.seed);
  ds.graph = std::move(graph);
  ds.cleaning = report;
  {
    Rng rng(derive_seed(options.seed, kSbmFeatures));
    boost::random::normal_distribution<double> normal(0.0, 1.0);
    put_features(ds, nz, dim, options.feature_dtype, [&](std::size_t i, float* x) {
      const double* mu = means.data() + static_cast<std::size_t>(labels[i]) * dim;
      for (std::size_t d = 0; d < dim; ++d) x[d] = static_cast<float>(mu[d] + options.feature_noise * normal(rng));
    });
  }
  ds.num_classes = num_classes;
  ds.labels = Array<std::int64_t>(std::move(labels));

  // Every node is labelled, so a random split of the labelled nodes is a split of all nodes.
  assign_random_split(ds, options.train_fraction, options.val_fraction, derive_seed(options.seed, kSbmSplit));
  if (options.multilabel > 0) give_label_sets(ds, options);
  return ds;
}

}  // namespace

Dataset generate_sbm(const SbmOptions& options) {
  return sbm_dataset(options, [](std::int64_t n, std::int64_t draws, const std::function<void(const EdgeSink&)>& produce) {
    BuiltGraph built = build_csr_streamed(n, draws, produce, kSbmClean);
    return std::pair<CsrGraph, CleanReport>{std::move(built.graph), built.report};
  });
}

Dataset generate_sbm_bounded(const SbmOptions& options, const std::string& scratch, std::uint64_t memory) {
  return sbm_dataset(options, [&](std::int64_t n, std::int64_t draws, const std::function<void(const EdgeSink&)>& produce) {
    const ExternalCsr built = build_csr_external(n, draws, produce, kSbmClean, scratch, memory);
    return std::pair<CsrGraph, CleanReport>{map_csr(built), built.report};
  });
}

void write_edge_list(const std::string& path, const EdgeList& edges) {
  if (edges.src.size() != edges.dst.size())
    throw std::invalid_argument("write_edge_list: " + std::to_string(edges.src.size()) + " sources but " +
                                std::to_string(edges.dst.size()) + " destinations");
  write_file_atomic(path, [&](std::FILE* f) {
    // Formatting by hand into one big buffer: fprintf per edge is several times slower, and the
    // benchmark writes about a gigabyte.
    constexpr std::size_t kBuffer = std::size_t{1} << 20;
    constexpr std::size_t kMaxLine = 2 * 20 + 2;  // two int64s, a tab and a newline
    std::vector<char> buf(kBuffer);
    char* const begin = buf.data();
    char* const flush_at = begin + kBuffer - kMaxLine;
    char* p = begin;
    auto flush = [&] {
      const std::size_t len = static_cast<std::size_t>(p - begin);
      if (std::fwrite(begin, 1, len, f) != len)
        throw InputError(path, "", std::string("write failed: ") + std::strerror(errno));
      p = begin;
    };
    const std::size_t m = edges.src.size();
    for (std::size_t e = 0; e < m; ++e) {
      p = std::to_chars(p, begin + kBuffer, edges.src[e]).ptr;
      *p++ = '\t';
      p = std::to_chars(p, begin + kBuffer, edges.dst[e]).ptr;
      *p++ = '\n';
      if (p >= flush_at) flush();
    }
    flush();
  });
}

}  // namespace shardgnn
