// `shardgnn data convert|generate|info|validate`
#include <boost/algorithm/string/classification.hpp>
#include <boost/algorithm/string/split.hpp>
#include <boost/json.hpp>
#include <chrono>
#include <cstdio>
#include <iostream>

#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <optional>

#include "datasets/edge_split.hpp"
#include "datasets/error.hpp"
#include "datasets/feature_dtype.hpp"
#include "datasets/fileio.hpp"
#include "datasets/generators.hpp"
#include "datasets/hetero.hpp"
#include "datasets/memory_limit.hpp"
#include "datasets/npy.hpp"
#include "datasets/json_util.hpp"
#include "datasets/readers.hpp"
#include "datasets/splits.hpp"
#include "datasets/stats.hpp"
#include "datasets/step_log.hpp"
#include "datasets/writers.hpp"
#include "tools/cli.hpp"

namespace shardgnn::cli {

namespace {

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

constexpr const char* kMemoryLimitHelp =
    "memory the graph build may take, e.g. 4G (default: half the usable memory); a graph that needs more is built through bucket files on disk";

std::uint64_t memory_limit_option(const po::variables_map& vm) {
  return vm.count("memory-limit") ? parse_byte_size(vm["memory-limit"].as<std::string>(), "--memory-limit") : usable_memory_bytes() / 2;
}

// True (and says so) when the in-memory build would take more than `limit`: build through bucket
// files on disk instead.
bool build_on_disk(double in_memory, std::uint64_t limit, const char* what = "the graph") {
  if (in_memory <= static_cast<double>(limit)) return false;
  std::printf("building %s through files on disk: in memory it would take about %.1f GiB, over the %.1f GiB memory limit\n", what,
              in_memory / (1 << 30), static_cast<double>(limit) / (1 << 30));
  return true;
}

// R-MAT's edges straight to a CSR through bucket files in `scratch`, within `memory` bytes (see
// build_csr_external); the graph's arrays are views of files there.
Dataset generate_rmat_bounded(const RmatOptions& r, const CleanOptions& clean, const std::string& scratch, std::uint64_t memory) {
  const std::int64_t n = std::int64_t{1} << r.scale;
  const std::int64_t m = static_cast<std::int64_t>(r.edge_factor) << r.scale;
  const ExternalCsr built = build_csr_external(
      n, m, [&](const EdgeSink& sink) { generate_rmat_stream(r, std::size_t{1} << 20, sink); }, clean, scratch, memory);
  Dataset ds;
  ds.name = rmat_name(r);
  ds.source = rmat_source(r);
  ds.graph = map_csr(built);
  ds.cleaning = built.report;
  return ds;
}

// A scratch folder beside an output folder (the same file system), removed when it goes out of
// scope, however the command ends.
struct ScratchDir {
  std::string path;
  explicit ScratchDir(const std::string& out) : path(std::filesystem::absolute(out).lexically_normal().string() + ".scratch-" + std::to_string(::getpid())) {
    std::error_code ec;
    std::filesystem::create_directories(path, ec);
    if (ec) throw InputError(path, "", "cannot create a scratch folder: " + ec.message());
  }
  ~ScratchDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
};

void add_clean_options(po::options_description& o) {
  o.add_options()
      ("symmetrize", "add the missing reverse of every edge (make the graph undirected)")
      ("drop-self-loops", "remove edges (u, u)")
      ("drop-duplicates", "keep one copy of each edge (u, v)");
}

constexpr const char* kFeatureDtypeHelp =
    "store the features as float32, float16 or bfloat16 (2 bytes a value: half the disk and page cache; partition keeps it, training computes in float32)";

FeatureDtype feature_dtype_option(const po::variables_map& vm) {
  return vm.count("feature-dtype") ? parse_feature_dtype_option(vm["feature-dtype"].as<std::string>()) : FeatureDtype::kFloat32;
}

CleanOptions clean_options(const po::variables_map& vm) {
  CleanOptions c;
  c.symmetrize = vm.count("symmetrize") > 0;
  c.drop_self_loops = vm.count("drop-self-loops") > 0;
  c.drop_duplicates = vm.count("drop-duplicates") > 0;
  return c;
}

void print_cleaning(const CleanReport& r, const CleanOptions& c) {
  std::printf("  input entries        %lld\n", static_cast<long long>(r.input_entries));
  if (c.symmetrize) std::printf("  --symmetrize         added %lld reverse entries\n", static_cast<long long>(r.reverse_added));
  if (c.drop_self_loops) std::printf("  --drop-self-loops    removed %lld self-loops\n", static_cast<long long>(r.self_loops_dropped));
  if (c.drop_duplicates) std::printf("  --drop-duplicates    removed %lld duplicate entries\n", static_cast<long long>(r.duplicates_dropped));
  std::printf("  output entries       %lld\n", static_cast<long long>(r.output_entries));
}

void maybe_split(Dataset& ds, const po::variables_map& vm) {
  if (!vm.count("split")) return;
  if (ds.num_classes == 0) throw InputError("--split needs labels, and '" + ds.name + "' has none");
  assign_split(ds, parse_split_spec(vm["split"].as<std::string>(), vm["seed"].as<std::uint64_t>()));
}

void save_and_report(const Dataset& ds, const std::string& out, bool force, const CleanOptions& clean, double t_read, FeatureDtype features_as) {
  const auto t0 = Clock::now();
  save_dataset(ds, out, force, features_as);
  const std::string features = ds.schema.typed() ? std::to_string(ds.schema.num_types()) + " node types, " +
                                                      std::to_string(ds.schema.relations().size()) + " relations"
                                                : std::to_string(ds.feature_dim) + " features";
  std::printf("wrote %s: %lld nodes, %lld directed edges, %s, %lld classes, split %zu/%zu/%zu\n", out.c_str(),
              static_cast<long long>(ds.num_nodes()), static_cast<long long>(ds.graph.num_edges()), features.c_str(),
              static_cast<long long>(ds.num_classes), ds.train_idx.size(), ds.val_idx.size(), ds.test_idx.size());
  print_cleaning(ds.cleaning, clean);
  std::printf("  time                 read %.2f s, write %.2f s\n", t_read, seconds_since(t0));
}

int convert(const std::vector<std::string>& args) {
  g_command = "shardgnn data convert";
  po::options_description o("options");
  o.add_options()
      ("out,o", po::value<std::string>()->required(), "output dataset folder")
      ("format,f", po::value<std::string>()->default_value("auto"), "input format: auto, npz, metis, edgelist, ogb, graphsaint, igbh")
      ("add-reverse", "typed inputs (OGB's heterogeneous layout, IGB-Het): add each relation's reverse, <dst> rev_<name> <src>, as DGL's and PyG's loaders do; a relation within one type becomes undirected")
      ("relation-ids", "typed inputs: store each edge's relation (edge_relations.npy), as an input with several relations between one pair of types always does")
      ("igb-labels", po::value<std::string>()->default_value("19"), "IGB-Het: the label file, node_label_<this>.npy (19 or 2K)")
      ("name", po::value<std::string>()->default_value(""), "dataset name (default: from the input path)")
      ("num-nodes", po::value<std::int64_t>()->default_value(0), "edge lists: ids are 0-based and below this count (no relabelling)")
      ("ogb-split", po::value<std::string>()->default_value(""), "OGB: split folder under split/ (default: the only one)")
      ("split", po::value<std::string>(), "draw a split: random:TRAIN,VAL (fractions) or per-class:TRAIN,VAL (counts per class)")
      ("seed", po::value<std::uint64_t>()->default_value(0), "seed for --split")
      ("largest-component", "keep only the largest connected component (ignoring edge direction), as Shchur et al. evaluate Amazon and Coauthor graphs")
      ("normalize-features", po::value<std::string>()->default_value("none"), "none, or row: scale each feature row to sum 1 (Kipf & Welling's preprocessing)")
      ("memory-limit", po::value<std::string>(), kMemoryLimitHelp)
      ("feature-dtype", po::value<std::string>(), kFeatureDtypeHelp)
      ("force", "replace an existing output folder that holds a shardgnn dataset or partitioned dataset");
  add_clean_options(o);
  po::variables_map vm;
  if (!parse(args, "shardgnn data convert <input> --out <dir> [options]\n\n"
                   "Reads a graph in one of the supported formats and writes a dataset folder (meta.json + .npy\n"
                   "arrays) atomically. Sparse features are densified to float32. A dataset folder as input is\n"
                   "rewritten in this build's format (int32 ids where they fit; --feature-dtype to change its features').",
             o, {"input"}, vm))
    return 0;
  ReadOptions ro;
  try {
    ro.format = parse_input_format(vm["format"].as<std::string>());
  } catch (const InputError& e) {
    throw UsageError(e.what());  // a bad option value is a command-line error (exit 2)
  }
  ro.clean = clean_options(vm);
  ro.name = vm["name"].as<std::string>();
  ro.num_nodes = vm["num-nodes"].as<std::int64_t>();
  ro.ogb_split = vm["ogb-split"].as<std::string>();
  ro.add_reverse = vm.count("add-reverse") > 0;
  ro.relation_ids = vm.count("relation-ids") > 0;
  ro.clean.symmetrize |= ro.add_reverse;  // what it adds is reported as --symmetrize's reverse entries
  ro.igb_labels = vm["igb-labels"].as<std::string>();
  const FeatureDtype features_as = feature_dtype_option(vm);  // a bad name before the work, not after
  const auto t0 = Clock::now();
  const std::string norm = vm["normalize-features"].as<std::string>();
  if (norm != "none" && norm != "row") throw UsageError("unknown --normalize-features '" + norm + "', expected none or row");
  const std::string input = vm["input"].as<std::string>(), out = vm["out"].as<std::string>();
  const bool force = vm.count("force") > 0;
  check_output_dir(out, force);  // before the work, not after
  const std::uint64_t limit = memory_limit_option(vm);
  // A dataset folder (an older format version's, or to change its feature dtype) is rewritten as
  // this build writes one: its arrays as they are, ids 32 bits wide where they fit.
  if (std::error_code dir_ec; std::filesystem::exists(std::filesystem::path(input) / "meta.json", dir_ec)) {
    for (const char* opt : {"split", "largest-component", "symmetrize", "drop-self-loops", "drop-duplicates", "add-reverse", "relation-ids"})
      if (vm.count(opt)) throw UsageError(std::string("--") + opt + " does not apply to a dataset folder, which is rewritten as it is");
    for (const char* opt : {"format", "name", "num-nodes", "ogb-split", "normalize-features", "igb-labels"})
      if (!vm[opt].defaulted()) throw UsageError(std::string("--") + opt + " does not apply to a dataset folder, which is rewritten as it is");
    const Dataset ds = load_dataset(input);
    save_and_report(ds, out, force, CleanOptions{}, seconds_since(t0),
                    vm.count("feature-dtype") ? features_as : ds.feature_dtype);
    return 0;
  }
  std::optional<ScratchDir> scratch;
  Dataset ds;
  const InputFormat format = ro.format == InputFormat::kAuto ? detect_format(input) : ro.format;
  std::error_code ec;
  // About 12 bytes a line in a plain edge list, 4 times fewer gzipped.
  const double file_bytes = static_cast<double>(std::filesystem::file_size(input, ec)) * (input.ends_with(".gz") ? 4 : 1);
  if (format == InputFormat::kEdgeList && !ec && build_on_disk(in_memory_build_bytes(file_bytes / 12, ro.clean), limit)) {
    scratch.emplace(out);
    ds = read_edge_list_dataset_bounded(input, ro, scratch->path, limit);
  } else if (format == InputFormat::kNpz || format == InputFormat::kGraphsaint) {
    // These readers learn their sizes as they go and ask; the folder is removed however it ends.
    scratch.emplace(out);
    ro.disk = ReadOptions::Disk{scratch->path, limit, [limit](double bytes, const char* what) { return build_on_disk(bytes, limit, what); }};
    ds = read_dataset(input, ro);
  } else {
    ds = read_dataset(input, ro);
  }
  std::string kept;
  if (vm.count("largest-component")) {
    const NodeId before = ds.num_nodes();
    const std::int64_t components = keep_largest_component(ds);
    kept = "  --largest-component  kept " + std::to_string(ds.num_nodes()) + " of " + std::to_string(before) + " nodes (the largest of " +
           std::to_string(components) + " components)\n";
  }
  if (norm == "row") normalize_feature_rows(ds);
  maybe_split(ds, vm);
  save_and_report(ds, out, force, ro.clean, seconds_since(t0), features_as);
  std::printf("%s", kept.c_str());
  return 0;
}

// A generator's --out: required, and checked before the work rather than after (an existing
// folder only with --force).
std::string required_out(const po::variables_map& vm) {
  if (!vm.count("out")) throw UsageError("missing --out");
  const std::string out = vm["out"].as<std::string>();
  check_output_dir(out, vm.count("force") > 0);
  return out;
}

// The typed generators' class-mean features and random split (of `labelled`), and the memory limit.
void add_typed_generator_options(po::options_description& o, int& feature_dim, double& separation, double& noise, double& train, double& val,
                                 const std::string& labelled) {
  o.add_options()
      ("feature-dim", bound(feature_dim), "feature width of every type with features")
      ("separation", bound(separation), "std-dev of the class means, per feature")
      ("noise", bound(noise), "std-dev of a node's features around its class mean")
      ("train", bound(train), ("training fraction of the " + labelled).c_str())
      ("val", bound(val), ("validation fraction of the " + labelled + " (the rest is test)").c_str())
      ("memory-limit", po::value<std::string>(), kMemoryLimitHelp);
}

// `data generate hetero`: the options of HeteroOptions, and the graph built through bucket files
// when the in-memory build would not fit the memory limit.
int generate_hetero_cmd(const std::vector<std::string>& rest, po::options_description& o, po::variables_map& vm) {
  HeteroOptions h;
  std::string featureless;
  o.add_options()
      ("seed", bound(h.seed), "random seed")
      ("papers", bound(h.papers), "paper nodes; authors, institutes and fields of study follow IGB-Het's counts for as many papers")
      ("classes", bound(h.classes), "paper classes (IGB-Het's 19)")
      ("cites", bound(h.cites), "citations drawn per paper (undirected)")
      ("authors", bound(h.authors), "authors drawn per paper")
      ("topics", bound(h.topics), "fields of study drawn per paper")
      ("affiliations", bound(h.affiliations), "institutes drawn per author")
      ("homophily", bound(h.homophily), "probability that a drawn neighbour has the drawing node's class")
      ("featureless", po::value(&featureless), "comma-separated types stored without features (paper, author, institute, fos)");
  add_typed_generator_options(o, h.feature_dim, h.separation, h.noise, h.train_fraction, h.val_fraction, "papers");
  if (!parse(rest,
             "shardgnn data generate hetero --out <dir> [options]\n\n"
             "A typed graph with IGB-Het's schema: paper, author, institute and fos nodes; cites, written_by,\n"
             "affiliated_to and topic, and the reverses rev_written_by, rev_affiliated_to and rev_topic. Every\n"
             "node has a latent class (a paper's is its label); a drawn neighbour shares it with probability\n"
             "--homophily; features are the class's mean plus noise, weak alone, so the label shows in the\n"
             "paper's authors, topics and citations too: at 2,000 papers, 16 features, --separation 0.3,\n"
             "R-GCN and R-GAT (fanouts 10,5 per relation, 8 epochs) reach validation accuracy 0.55 and 0.59\n"
             "where the same model on features alone (fanouts 0,0) reaches 0.20 (docs/results/hetero.md).",
             o, {}, vm))
    return 0;
  const std::string out = required_out(vm);
  const FeatureDtype features_as = feature_dtype_option(vm);
  if (!featureless.empty()) boost::algorithm::split(h.featureless, featureless, boost::algorithm::is_any_of(","));
  const auto t0 = Clock::now();
  const std::uint64_t limit = memory_limit_option(vm);
  const CleanOptions c{true, true, true};
  std::optional<ScratchDir> scratch;
  Dataset ds;
  if (build_on_disk(in_memory_build_bytes(hetero_expected_draws(h), c), limit)) {
    scratch.emplace(out);
    ds = generate_hetero(h, scratch->path, limit);
  } else {
    ds = generate_hetero(h);
  }
  save_and_report(ds, out, vm.count("force") > 0, c, seconds_since(t0), features_as);
  return 0;
}

// `data generate kg`: the options of KgOptions; the graph is built in memory.
int generate_kg_cmd(const std::vector<std::string>& rest, po::options_description& o, po::variables_map& vm) {
  KgOptions k;
  o.add_options()
      ("seed", bound(k.seed), "random seed")
      ("entities", bound(k.entities), "entity nodes")
      ("relations", bound(k.relations), "relations between entities (each with its reverse rev_<name>)")
      ("classes", bound(k.classes), "entity classes (the labels)")
      ("degree", bound(k.degree), "edges drawn per entity and relation")
      ("signal", bound(k.signal), "probability that an edge of relation r joins class c to class (c + r) mod classes (else any entity)");
  add_typed_generator_options(o, k.feature_dim, k.separation, k.noise, k.train_fraction, k.val_fraction, "entities");
  if (!parse(rest,
             "shardgnn data generate kg --out <dir> [options]\n\n"
             "A knowledge graph: one node type, entity, and --relations relations r0, r1, ... between entities,\n"
             "each with its reverse rev_r<i>, stored with a relation id per edge. Every entity has a latent class,\n"
             "its label; relation r joins class c to class (c + r) mod --classes with probability --signal, else\n"
             "any entity; features are the class's mean plus noise, weak alone. With as many relations as\n"
             "classes, an entity's neighbours over all relations hold every class alike, so only the relation\n"
             "an edge came by tells the class: at the defaults (20,000 entities, 8 relations, 8 classes), R-GCN\n"
             "and R-GAT (fanouts 10,5 per relation, 10 epochs) reach test accuracy 1.00 where GraphSAGE, blind to\n"
             "relations, and the features alone (fanouts 0,0) reach 0.23; chance is 0.125 (docs/results/hetero.md).\n"
             "A lower --signal makes it harder.",
             o, {}, vm))
    return 0;
  const std::string out = required_out(vm);
  const FeatureDtype features_as = feature_dtype_option(vm);
  const auto t0 = Clock::now();
  const CleanOptions c{true, true, true};
  check_kg(k);
  // Four more bytes an edge and entry for its relation than build_csr's unweighted estimate.
  const double draws = kg_expected_draws(k), bytes = in_memory_build_bytes(draws, c) + 4 * draws * 3;
  if (const std::uint64_t limit = memory_limit_option(vm); bytes > static_cast<double>(limit)) {
    char what[160];
    std::snprintf(what, sizeof what, "building in memory would take about %.1f GiB, over the %.1f GiB memory limit (this generator has no on-disk build)",
                  bytes / (1 << 30), static_cast<double>(limit) / (1 << 30));
    throw InputError(std::string("kg generator: ") + what);
  }
  const Dataset ds = generate_kg(k);
  save_and_report(ds, out, vm.count("force") > 0, c, seconds_since(t0), features_as);
  return 0;
}

int generate(const std::vector<std::string>& args) {
  g_command = "shardgnn data generate";
  if (args.empty() || (args[0] != "rmat" && args[0] != "sbm" && args[0] != "hetero" && args[0] != "kg")) {
    if (!args.empty() && (args[0] == "--help" || args[0] == "-h")) {
      std::cout << "usage: shardgnn data generate rmat|sbm|hetero|kg --out <dir> [options]\n"
                   "  rmat    R-MAT graph with Graph500 parameters (structure only)\n"
                   "  sbm     stochastic block model with class-dependent Gaussian features and splits\n"
                   "  hetero  typed graph with IGB-Het's schema (papers, authors, institutes, fields of study)\n"
                   "  kg      knowledge graph: one entity type, many relations, a relation id per edge\n"
                   "Run 'shardgnn data generate rmat --help' for the options.\n";
      return 0;
    }
    throw UsageError("expected a generator: rmat, sbm, hetero or kg");
  }
  const std::string kind = args[0];
  const std::vector<std::string> rest(args.begin() + 1, args.end());
  g_command += " " + kind;
  po::options_description o("options");
  o.add_options()
      ("out,o", po::value<std::string>(), "output dataset folder")
      ("feature-dtype", po::value<std::string>(), kFeatureDtypeHelp)
      ("force", "replace an existing output folder that holds a shardgnn dataset or partitioned dataset");
  po::variables_map vm;
  if (kind == "rmat") {
    RmatOptions r;
    bool keep_order = false;
    int feature_dim = 0, classes = 10;
    double train = 0.1, val = 0.1;
    o.add_options()
        ("seed", bound(r.seed), "random seed")
        ("scale", bound(r.scale), "2^scale nodes")
        ("edge-factor", bound(r.edge_factor), "edges per node")
        ("a", bound(r.a), "R-MAT a")
        ("b", bound(r.b), "R-MAT b")
        ("c", bound(r.c), "R-MAT c (d = 1 - a - b - c)")
        ("no-permute", po::bool_switch(&keep_order), "keep R-MAT's vertex order (Graph500 permutes it)")
        ("feature-dim", bound(feature_dim), "also give every node random N(0,1) features of this size (for sampler benchmarks)")
        ("classes", bound(classes), "with --feature-dim: random labels in [0, classes)")
        ("train", bound(train), "with --feature-dim: training fraction of a random split")
        ("val", bound(val), "with --feature-dim: validation fraction")
        ("edge-list", po::value<std::string>(), "also (or only, without --out) write the raw edges as a text edge list")
        ("memory-limit", po::value<std::string>(), kMemoryLimitHelp);
    add_clean_options(o);
    if (!parse(rest, "shardgnn data generate rmat --out <dir> [options]", o, {}, vm)) return 0;
    if (!vm.count("out") && !vm.count("edge-list")) throw UsageError("give --out and/or --edge-list");
    if (vm.count("out")) check_output_dir(vm["out"].as<std::string>(), vm.count("force") > 0);  // before the work, not after
    const FeatureDtype features_as = feature_dtype_option(vm);
    r.permute = !keep_order;
    const auto t0 = Clock::now();
    if (vm.count("edge-list")) {
      EdgeList el = generate_rmat_edges(r);
      write_edge_list(vm["edge-list"].as<std::string>(), el);
      std::printf("wrote %s: %zu edges\n", vm["edge-list"].as<std::string>().c_str(), el.src.size());
    }
    if (vm.count("out")) {
      const std::string out = vm["out"].as<std::string>();
      const CleanOptions clean = clean_options(vm);
      const std::uint64_t limit = memory_limit_option(vm);
      std::optional<ScratchDir> scratch;
      Dataset ds;
      if (build_on_disk(in_memory_build_bytes(std::ldexp(static_cast<double>(r.edge_factor), r.scale), clean), limit)) {
        scratch.emplace(out);
        ds = generate_rmat_bounded(r, clean, scratch->path, limit);
      } else {
        steps::begin("build: edges drawn and built in memory");
        ds = generate_rmat(r, clean);
      }
      steps::begin("generate: features, labels and split");
      if (feature_dim > 0) add_random_node_data(ds, feature_dim, classes, train, val, r.seed, features_as);
      steps::begin("generate: dataset written");
      save_and_report(ds, out, vm.count("force") > 0, clean, seconds_since(t0), features_as);
      steps::end();
    }
    return 0;
  }
  if (kind == "hetero") return generate_hetero_cmd(rest, o, vm);
  if (kind == "kg") return generate_kg_cmd(rest, o, vm);
  SbmOptions s;
  o.add_options()
      ("seed", bound(s.seed), "random seed")
      ("nodes", bound(s.num_nodes), "number of nodes")
      ("classes", bound(s.num_classes), "number of classes (blocks)")
      ("avg-degree", bound(s.avg_degree), "expected undirected degree")
      ("homophily", bound(s.homophily), "expected fraction of edges inside a class")
      ("feature-dim", bound(s.feature_dim), "feature dimension")
      ("separation", bound(s.class_separation), "std-dev of the class means")
      ("noise", bound(s.feature_noise), "std-dev of the per-node feature noise")
      ("train", bound(s.train_fraction), "training fraction")
      ("val", bound(s.val_fraction), "validation fraction (the rest is test)")
      ("multilabel", bound(s.multilabel),
       "N > 0: a set of labels per node out of N, instead of one class (each block has --labels-per-node labels; a node has each of its "
       "block's with probability 0.9, any other with 0.01). Features show the block noisily, neighbours again: at 100k nodes, 10 blocks, "
       "N = 24, --separation 0.25, GraphSAGE (fanouts 10,10) reaches test micro-F1 0.91, the same model on features alone (fanouts 0,0) 0.42")
      ("labels-per-node", bound(s.labels_per_node), "with --multilabel: the labels of each block's profile")
      ("memory-limit", po::value<std::string>(), kMemoryLimitHelp);
  if (!parse(rest, "shardgnn data generate sbm --out <dir> [options]", o, {}, vm)) return 0;
  const std::string out = required_out(vm);
  const FeatureDtype features_as = feature_dtype_option(vm);
  s.feature_dtype = features_as;
  const auto t0 = Clock::now();
  const CleanOptions c{true, true, true};
  const std::uint64_t limit = memory_limit_option(vm);
  std::optional<ScratchDir> scratch;
  Dataset ds;
  // The edges drawn are n * avg-degree / 2; features and labels stay in memory either way.
  if (build_on_disk(in_memory_build_bytes(static_cast<double>(s.num_nodes) * s.avg_degree / 2, c), limit)) {
    scratch.emplace(out);
    ds = generate_sbm_bounded(s, scratch->path, limit);
  } else {
    ds = generate_sbm(s);
  }
  save_and_report(ds, out, vm.count("force") > 0, c, seconds_since(t0), features_as);
  return 0;
}

// Labelled nodes of each node type of a typed graph.
std::vector<std::int64_t> labelled_per_type(const Dataset& ds) {
  std::vector<std::int64_t> n(ds.schema.types().size(), 0);
  for (int t = 0; t < ds.schema.num_types(); ++t)
    for (NodeId v = ds.schema.begin(t); v < ds.schema.end(t); ++v) {
      bool any = false;
      for_each_label(ds, v, [&](std::int64_t) { any = true; });
      n[static_cast<std::size_t>(t)] += any ? 1 : 0;
    }
  return n;
}

boost::json::value types_json(const Dataset& ds) {
  if (!ds.schema.typed()) return nullptr;
  const auto labelled = labelled_per_type(ds);
  boost::json::array a;
  for (int t = 0; t < ds.schema.num_types(); ++t) {
    const NodeType& nt = ds.schema.types()[static_cast<std::size_t>(t)];
    a.push_back({{"name", nt.name}, {"count", nt.count}, {"first_id", ds.schema.begin(t)}, {"feature_dim", nt.feature_dim}, {"labelled", labelled[static_cast<std::size_t>(t)]}});
  }
  return a;
}

boost::json::value relations_json(const Dataset& ds) {
  if (!ds.schema.typed()) return nullptr;
  const auto entries = relation_entries(ds.graph, ds.schema, ds.edge_relations);
  boost::json::array a;
  for (std::size_t r = 0; r < entries.size(); ++r) {
    const Relation& rel = ds.schema.relations()[r];
    a.push_back({{"src", rel.src}, {"name", rel.name}, {"dst", rel.dst}, {"entries", entries[r]}});
  }
  return a;
}

boost::json::object stats_json(const Dataset& ds, const DatasetStats& s) {
  return {{"name", ds.name},
          {"nodes", s.nodes},
          {"undirected_edges", s.undirected_edges},
          {"directed_edges", s.directed_edges},
          {"feature_dim", s.feature_dim},
          {"feature_dtype", feature_dtype_name(ds.feature_dtype)},
          {"num_classes", s.num_classes},
          {"labelled_nodes", s.labelled},
          {"multilabel", s.multilabel},
          {"label_entries", s.label_entries},
          {"train", s.train},
          {"val", s.val},
          {"test", s.test},
          {"degree", {{"min", s.min_degree}, {"max", s.max_degree}, {"mean", s.mean_degree}, {"median", s.median_degree}}},
          {"isolated_nodes", s.isolated_nodes},
          {"self_loops", s.self_loops},
          {"duplicate_entries", s.duplicate_entries},
          {"unmatched_entries", s.unmatched_entries},
          {"symmetric", s.symmetric},
          {"edge_split", ds.edge_split ? boost::json::value{{"val", ds.val_pos.size() / 2}, {"test", ds.test_pos.size() / 2}, {"eval_negatives", ds.eval_negatives}}
                                       : boost::json::value(nullptr)},
          {"source", ds.source},
          {"node_types", types_json(ds)},
          {"relations", relations_json(ds)},
          {"relation_ids", ds.schema.relation_ids()}};
}

int info(const std::vector<std::string>& args) {
  g_command = "shardgnn data info";
  po::options_description o("options");
  o.add_options()("json", "print machine-readable JSON");
  po::variables_map vm;
  if (!parse(args, "shardgnn data info <dataset-dir> [--json]", o, {"dataset"}, vm)) return 0;
  const Dataset ds = load_dataset(vm["dataset"].as<std::string>());
  const DatasetStats s = compute_stats(ds);
  if (vm.count("json")) {
    std::cout << pretty_json(stats_json(ds, s));
    return 0;
  }
  auto ll = [](std::int64_t v) { return static_cast<long long>(v); };
  std::printf("dataset           %s\n", ds.name.c_str());
  std::printf("source            %s\n", ds.source.c_str());
  std::printf("nodes             %lld\n", ll(s.nodes));
  std::printf("edges             %lld undirected, %lld directed entries\n", ll(s.undirected_edges), ll(s.directed_edges));
  if (ds.schema.typed()) std::printf("features          per node type (%s)\n", feature_dtype_name(ds.feature_dtype).c_str());
  else std::printf("features          %lld (%s)\n", ll(s.feature_dim), feature_dtype_name(ds.feature_dtype).c_str());
  if (ds.schema.typed()) {
    const auto labelled = labelled_per_type(ds);
    for (int t = 0; t < ds.schema.num_types(); ++t) {
      const NodeType& nt = ds.schema.types()[static_cast<std::size_t>(t)];
      std::printf("node type         %s: %lld nodes (ids %lld..%lld), %lld features, %lld labelled\n", nt.name.c_str(), ll(nt.count), ll(ds.schema.begin(t)),
                  ll(ds.schema.end(t) - 1), ll(nt.feature_dim), ll(labelled[static_cast<std::size_t>(t)]));
    }
    const auto entries = relation_entries(ds.graph, ds.schema, ds.edge_relations);
    for (std::size_t r = 0; r < entries.size(); ++r)
      std::printf("relation          %s: %lld entries\n", ds.schema.relation_label(static_cast<int>(r)).c_str(), ll(entries[r]));
    if (ds.schema.relation_ids())
      std::printf("relation ids      one per edge (edge_relations.npy, %s): rows ordered by (relation, neighbour)\n",
                  dtype_descr(relation_dtype(ds.schema.relations().size())).c_str());
  }
  if (s.multilabel)
    std::printf("labels            %lld, several per node (multi-label): %lld set, %.2f per node, %lld nodes with at least one\n", ll(s.num_classes),
                ll(s.label_entries), s.nodes > 0 ? static_cast<double>(s.label_entries) / static_cast<double>(s.nodes) : 0.0, ll(s.labelled));
  else
    std::printf("classes           %lld (%lld labelled nodes)\n", ll(s.num_classes), ll(s.labelled));
  std::printf("split             train %lld, val %lld, test %lld\n", ll(s.train), ll(s.val), ll(s.test));
  std::printf("degree            min %lld, max %lld, mean %.2f, median %.1f\n", ll(s.min_degree), ll(s.max_degree), s.mean_degree, s.median_degree);
  std::printf("isolated nodes    %lld\n", ll(s.isolated_nodes));
  std::printf("self-loops        %lld\n", ll(s.self_loops));
  std::printf("duplicate entries %lld\n", ll(s.duplicate_entries));
  std::printf("symmetric         %s", s.symmetric ? "yes\n" : "no");
  if (!s.symmetric) std::printf(" (%lld entries lack their reverse; convert with --symmetrize)\n", ll(s.unmatched_entries));
  if (ds.edge_split) {
    std::printf("held-out edges    val %zu, test %zu (not in the graph), as many non-edges each", ds.val_pos.size() / 2, ds.test_pos.size() / 2);
    if (ds.eval_negatives > 0) std::printf(", %lld ranking negatives per positive", ll(ds.eval_negatives));
    std::printf("\n");
  }
  return 0;
}

int split_edges_cmd(const std::vector<std::string>& args) {
  g_command = "shardgnn data split-edges";
  po::options_description o("options");
  o.add_options()
      ("out,o", po::value<std::string>()->required(), "output dataset folder")
      ("val", po::value<double>()->default_value(0.05), "fraction of the undirected edges held out for validation")
      ("test", po::value<double>()->default_value(0.10), "fraction held out for testing")
      ("seed", po::value<std::uint64_t>()->default_value(0), "seed of the split and of the negatives")
      ("eval-negatives", po::value<std::int64_t>()->default_value(0), "non-neighbour destinations drawn per held-out edge, for MRR and Hits@K (OGB's protocol; 0: none)")
      ("val-edges", po::value<std::string>(), "pre-split: a text file of validation edges ('u v' lines, the input's ids); needs --test-edges")
      ("test-edges", po::value<std::string>(), "pre-split: a text file of test edges")
      ("force", "replace an existing output folder that holds a shardgnn dataset");
  po::variables_map vm;
  if (!parse(args, "shardgnn data split-edges <dataset-dir> --out <dir> [options]\n\n"
                   "Holds out undirected edges for link prediction: the output's graph keeps the training edges\n"
                   "(a held-out edge leaves in both directions), plus the validation and test edges, as many\n"
                   "non-edges each (AUC, AP) and, with --eval-negatives, non-neighbours to rank each against (MRR,\n"
                   "Hits@K). The graph must be undirected. Everything else carries over.",
             o, {"dataset"}, vm))
    return 0;
  const std::string out = vm["out"].as<std::string>();
  const bool force = vm.count("force") > 0;
  check_output_dir(out, force);  // before the work, not after
  EdgeSplitOptions so;
  so.val = vm["val"].as<double>();
  so.test = vm["test"].as<double>();
  so.seed = vm["seed"].as<std::uint64_t>();
  so.eval_negatives = vm["eval-negatives"].as<std::int64_t>();
  if (vm.count("val-edges")) so.val_file = vm["val-edges"].as<std::string>();
  if (vm.count("test-edges")) so.test_file = vm["test-edges"].as<std::string>();
  const auto t0 = Clock::now();
  const Dataset ds = load_dataset(vm["dataset"].as<std::string>());
  require_untyped(ds.schema, vm["dataset"].as<std::string>(), "data split-edges");
  ScratchDir scratch(out);
  EdgeSplitReport rep;
  const Dataset split = split_edges(ds, so, scratch.path, rep);
  save_dataset(split, out, force);
  std::printf("wrote %s: %lld nodes, %lld directed entries to train on; held out %lld validation and %lld test of %lld undirected edges, as many non-edges each",
              out.c_str(), static_cast<long long>(split.num_nodes()), static_cast<long long>(rep.train_entries), static_cast<long long>(rep.val),
              static_cast<long long>(rep.test), static_cast<long long>(rep.undirected_edges));
  if (so.eval_negatives > 0) std::printf(", %lld ranking negatives per held-out edge", static_cast<long long>(so.eval_negatives));
  std::printf(" (%.2f s)\n", seconds_since(t0));
  return 0;
}

int validate(const std::vector<std::string>& args) {
  g_command = "shardgnn data validate";
  po::options_description o("options");
  o.add_options()("json", "print machine-readable JSON");
  po::variables_map vm;
  if (!parse(args, "shardgnn data validate <dataset-dir> [--json]\n\n"
                   "Checks every file's checksum, the CSR invariants, id ranges, finite features, label range and\n"
                   "split consistency. Exit status 0 when valid, 1 otherwise.",
             o, {"dataset"}, vm))
    return 0;
  const std::string dir = vm["dataset"].as<std::string>();
  remove_stale_temporaries(dir);  // what a convert or generate that died left beside it
  const ValidationResult r = validate_dataset(dir);
  if (vm.count("json")) {
    boost::json::array errors, warnings;
    for (const auto& e : r.errors) errors.push_back(boost::json::string(e));
    for (const auto& w : r.warnings) warnings.push_back(boost::json::string(w));
    std::cout << pretty_json(boost::json::object{{"dataset", dir}, {"valid", r.ok()}, {"errors", errors}, {"warnings", warnings}});
  } else {
    for (const auto& w : r.warnings) std::printf("warning: %s\n", w.c_str());
    for (const auto& e : r.errors) std::fprintf(stderr, "%s: error: %s\n", g_command.c_str(), e.c_str());
    if (r.ok()) std::printf("%s: valid\n", dir.c_str());
  }
  return r.ok() ? 0 : 1;
}

int export_cmd(const std::vector<std::string>& args) {
  g_command = "shardgnn data export";
  po::options_description o("options");
  o.add_options()
      ("format,f", po::value<std::string>()->default_value("metis"),
       "metis (graph text, for gpmetis), edgelist (tab-separated, original ids), or igbh (a typed graph as IGB-Het's numpy folder, "
       "which MLPerf's GNN reference and DGL's IGB loaders read; splits are not part of it)")
      ("out,o", po::value<std::string>()->required(), "output file (igbh: folder)");
  po::variables_map vm;
  if (!parse(args, "shardgnn data export <dataset-dir> --format metis|edgelist|igbh --out PATH\n\n"
                   "A typed graph exports as its one graph over global ids (metis, edgelist) or per type and relation (igbh).",
             o, {"dataset"}, vm))
    return 0;
  const std::string fmt = vm["format"].as<std::string>();
  if (fmt != "metis" && fmt != "edgelist" && fmt != "igbh") throw UsageError("unknown --format '" + fmt + "', expected metis, edgelist or igbh");
  const Dataset ds = load_dataset(vm["dataset"].as<std::string>());
  const std::string out = vm["out"].as<std::string>();
  if (fmt == "metis") write_metis_graph(ds, out);
  else if (fmt == "edgelist") write_edge_list_file(ds, out);
  else write_igbh_layout(ds, out);
  std::printf("wrote %s (%s): %lld nodes, %lld directed entries\n", out.c_str(), fmt.c_str(), static_cast<long long>(ds.num_nodes()),
              static_cast<long long>(ds.graph.num_edges()));
  return 0;
}

}  // namespace

int data_main(const std::vector<std::string>& args) {
  const std::string usage =
      "usage: shardgnn data <convert|generate|info|validate|export|split-edges> [<args>]\n"
      "  convert    convert npz / METIS / edge list / OGB input into a dataset folder\n"
      "  generate   generate a synthetic dataset (rmat, sbm)\n"
      "  info       print statistics of a dataset folder\n"
      "  validate   check a dataset folder completely\n"
      "  export     write a dataset as METIS graph text or an edge list\n"
      "  split-edges  hold out edges for link prediction (training graph, val/test pairs, negatives)\n";
  if (args.empty() || args[0] == "--help" || args[0] == "-h") {
    std::cout << usage;
    return args.empty() ? 2 : 0;
  }
  const std::vector<std::string> rest(args.begin() + 1, args.end());
  if (args[0] == "convert") return convert(rest);
  if (args[0] == "generate") return generate(rest);
  if (args[0] == "info") return info(rest);
  if (args[0] == "validate") return validate(rest);
  if (args[0] == "export") return export_cmd(rest);
  if (args[0] == "split-edges") return split_edges_cmd(rest);
  throw UsageError("unknown data command '" + args[0] + "'");
}

}  // namespace shardgnn::cli
