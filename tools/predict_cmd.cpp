// `shardgnn predict RUN_DIR|WEIGHTS INPUT --out DIR` (the program shardgnn-predict, which the
// dispatcher execs): full-neighbourhood inference with a trained model on a partitioned dataset
// (under mpiexec, one or more parts per rank) or a dataset folder (one process), writing every
// node's embedding, prediction and id (trainer/predict.hpp).
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "comm/communicator.hpp"
#include "datasets/array_dir.hpp"
#include "datasets/error.hpp"
#include "datasets/fileio.hpp"
#include "datasets/npy.hpp"
#include "tools/cli.hpp"
#include "tools/mpi_program.hpp"
#include "tools/run_input.hpp"
#include "tools/run_report.hpp"
#include "trainer/checkpoint.hpp"
#include "trainer/device.hpp"
#include "trainer/predict.hpp"

namespace fs = std::filesystem;

namespace shardgnn::cli {

namespace {

// A run folder's weights.pt, or the file itself.
std::string weights_path(const std::string& model) {
  if (!fs::is_directory(model)) return model;
  const fs::path w = fs::path(model) / "weights.pt";
  if (!fs::exists(w)) throw InputError(model + ": a folder without weights.pt (a run folder gets it when training ends; or pass the weights file)");
  return w.string();
}

// The ids of --nodes: a 1-d integer .npy, or text with one id per line ('#' comments, blank lines
// skipped).
std::vector<std::int64_t> read_node_list(const std::string& path) {
  if (path.size() > 4 && path.compare(path.size() - 4, 4, ".npy") == 0) return npy_to_vector<std::int64_t>(map_npy(path), 1);
  std::ifstream in(path);
  if (!in) throw InputError(path, "", "cannot open the node list");
  std::vector<std::int64_t> ids;
  std::string line;
  for (std::int64_t no = 1; std::getline(in, line); ++no) {
    const auto b = line.find_first_not_of(" \t\r");
    if (b == std::string::npos || line[b] == '#') continue;
    const auto e = line.find_last_not_of(" \t\r") + 1;
    const std::string tok = line.substr(b, e - b);
    std::size_t used = 0;
    std::int64_t v = -1;
    try {
      v = std::stoll(tok, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != tok.size() || v < 0) throw InputError(path, "line " + std::to_string(no), "expected one non-negative node id, found '" + tok + "'");
    ids.push_back(v);
  }
  return ids;
}

// --nodes' ids (the input's ids: node_ids.npy's when the dataset was relabelled) as dataset ids,
// each known and at most once.
std::vector<std::int64_t> dataset_ids(const std::string& path, std::vector<std::int64_t> ids, std::span<const std::int64_t> original, std::int64_t nodes) {
  std::vector<std::pair<std::int64_t, std::int64_t>> by_original;  // (original id, dataset id), when relabelled
  if (!original.empty()) {
    by_original.reserve(original.size());
    for (std::size_t d = 0; d < original.size(); ++d) by_original.emplace_back(original[d], static_cast<std::int64_t>(d));
    std::sort(by_original.begin(), by_original.end());
  }
  if (ids.empty()) throw InputError(path, "", "lists no node ids");
  for (std::int64_t& v : ids) {
    const std::int64_t given = v;
    if (v < 0) throw InputError(path, "entry " + std::to_string(&v - ids.data() + 1), "node " + std::to_string(v) + ", expected a non-negative id");
    if (original.empty()) {
      if (v >= nodes) throw InputError(path, "entry " + std::to_string(&v - ids.data() + 1), "node " + std::to_string(v) + " is not in the dataset (ids 0 to " + std::to_string(nodes - 1) + ")");
      continue;
    }
    const auto at = std::lower_bound(by_original.begin(), by_original.end(), std::pair{v, std::int64_t{-1}});
    if (at == by_original.end() || at->first != v)
      throw InputError(path, "entry " + std::to_string(&v - ids.data() + 1), "node " + std::to_string(given) + " is not among the dataset's node_ids.npy");
    v = at->second;
  }
  std::vector<std::pair<std::int64_t, std::size_t>> sorted;  // (dataset id, entry)
  for (std::size_t i = 0; i < ids.size(); ++i) sorted.emplace_back(ids[i], i);
  std::sort(sorted.begin(), sorted.end());
  for (std::size_t i = 1; i < sorted.size(); ++i)
    if (sorted[i].first == sorted[i - 1].first)
      throw InputError(path, "entry " + std::to_string(sorted[i].second + 1),
                       "node " + std::to_string(original.empty() ? sorted[i].first : original[static_cast<std::size_t>(sorted[i].first)]) + " again (entry " +
                           std::to_string(sorted[i - 1].second + 1) + " lists it too)");
  return ids;
}

// The source dataset's node_ids.npy for a partitioned input, when its folder is still there and
// unchanged (the checksum of its meta.json that partition.json recorded); else none.
Dataset source_dataset(const PartitionInfo& info, std::string& note) {
  const fs::path meta = fs::path(info.dataset_dir) / "meta.json";
  if (info.dataset_dir.empty() || !fs::exists(meta)) {
    note = "the source dataset " + info.dataset_dir + " is not here: node_ids.npy holds dataset ids";
    return {};
  }
  if (hex32(crc32_of_file(meta.string())) != info.meta_crc32) {
    note = "the source dataset " + info.dataset_dir + " changed since it was partitioned: node_ids.npy holds dataset ids";
    return {};
  }
  return load_dataset(info.dataset_dir, Contents::trust);
}

// What the model's outputs are: --task, else its model card's task, else (weights from before
// cards) the run folder's result line (the score that selected it), else a pair scorer among the
// weights (link), else the input's labels.
TaskKind model_task(const std::string& task, const std::string& model, const LoadedWeights& loaded, const Shard& shard) {
  const TaskKind kind = parse_task(task);
  if (kind != TaskKind::kAuto) return kind;
  if (loaded.card) return parse_task(loaded.card->task);
  const Gnn& gnn = loaded.model;
  const fs::path metrics = fs::path(model) / "metrics.jsonl";
  if (fs::is_directory(model) && fs::exists(metrics))
    if (const RunMetrics run = load_run_metrics(metrics.string()); run.result) {
      if (run.result->score == "micro-F1") return TaskKind::kLabelSets;
      if (run.result->score == "AUC" || run.result->score == "MRR") return TaskKind::kLink;
      return TaskKind::kClasses;
    }
  if (gnn->named_children().contains("scorer")) return TaskKind::kLink;
  return shard.multilabel ? TaskKind::kLabelSets : TaskKind::kClasses;
}

std::unique_ptr<Task> make_predict_task(TaskKind kind, const Gnn& gnn) {
  const std::int64_t out = gnn->options.out();
  if (kind == TaskKind::kLabelSets) return std::make_unique<MultiLabelClassification>(out);
  if (kind != TaskKind::kLink) return std::make_unique<NodeClassification>(out);
  LinkConfig lc;
  const auto children = gnn->named_children();
  if (!children.contains("scorer")) return std::make_unique<LinkPrediction>(out, lc);  // the dot product
  PairScorer scorer(std::dynamic_pointer_cast<PairScorerImpl>(children["scorer"]));
  lc.scorer = scorer->kind();
  return std::make_unique<LinkPrediction>(out, lc, std::move(scorer));
}

}  // namespace

int predict_main(const std::vector<std::string>& args, const comm::Communicator& world) {
  require_launch_joined(world);
  PredictOptions po_;
  std::string nodes_file, scratch, device_name = "cpu", task_name = "auto";
  int threads = 0;
  bool quiet = false;
  po::options_description o("options");
  o.add_options()
      ("out", po::value(&po_.out_dir)->required(), "the folder to write: embeddings.npy, predictions.npy, node_ids.npy, predictions.json")
      ("force", po::bool_switch(&po_.overwrite), "replace DIR if it holds earlier predictions (or another shardgnn folder)")
      ("layer", bound(po_.layer), "embeddings after this many layers (0 = the input features, the model's depth = its outputs; -1 = the last hidden layer)")
      ("nodes", po::value(&nodes_file), "only these nodes, in this order: a 1-d integer .npy or a text file of one id per line (the input's ids, as node_ids.npy has them)")
      ("task", po::value(&task_name)->default_value("auto"),
       "what the outputs are: classes (argmax, int64), label-sets (each label's sigmoid, float32) or link (the embeddings the pair scorer "
       "scores, float32); auto: the run folder's result, else a pair scorer in the weights, else the input's labels, else classes")
      ("device", po::value(&device_name)->default_value("cpu"), "cpu, cuda (the node-local rank's GPU) or cuda:N")
      ("threads", bound(threads), "torch threads per rank (0 = OMP_NUM_THREADS, else the cores shared among the node's ranks)")
      ("chunk", bound(po_.chunk), "nodes per block of the layer-wise inference (0: blocks of about 4M edges)")
      ("scratch", po::value(&scratch), "with more parts than ranks: folder for the spill files a rank merges its parts into (default: $TMPDIR or /tmp)")
      ("quiet,q", po::bool_switch(&quiet), "no output but errors");
  add_collective_timeout_option(o);
  po::variables_map vm;
  bool help = false;
  comm::agree(world, [&] {
    help = !parse(args, "[mpiexec -n P] shardgnn predict <run-dir | weights.pt> <partitioned-dir | dataset-dir> --out DIR [options]", o, {"model", "input"}, vm);
  });
  if (help) return 0;
  const std::string input = vm["input"].as<std::string>();

  Input in;
  Gnn model{nullptr};
  LoadedWeights loaded;
  torch::Device device = torch::kCPU;
  std::string threads_from, note;
  Dataset source;
  std::vector<std::int64_t> nodes;
  {
    const comm::LongWaits start_up(comm::kLongWaitFactor);
    const auto cores = world.core_share();
    comm::agree(world, [&] {
      po_.weights = weights_path(vm["model"].as<std::string>());
      device = resolve_device(device_name, cores.local_rank);
      threads_from = set_rank_threads(threads, cores);
      // A run folder's checkpoint holds a typed graph's embedding rows (beside it, per rank).
      if (const fs::path ck = fs::path(vm["model"].as<std::string>()) / "checkpoint.pt"; fs::is_directory(vm["model"].as<std::string>()) && fs::exists(ck))
        po_.checkpoint = ck.string();
    });
    // The input first: a typed graph's model is read against its schema.
    load_input(world, input, scratch, "predicts", in);
    comm::agree(world, [&] {
      loaded = load_weights(po_.weights, device, &in.shard.schema);
      model = loaded.model;
      if (in.shard.schema.typed() != model->typed())
        throw InputError(input + ": " + (in.shard.schema.typed() ? "a typed graph" : "an untyped graph") + "; the model in " + po_.weights + " runs on " +
                         (model->typed() ? "typed ones" : "untyped ones"));
      if (!model->typed() && in.shard.feature_dim != model->options.in())
        throw InputError(input + ": nodes have " + std::to_string(in.shard.feature_dim) + " features, the model in " + po_.weights + " takes " +
                         std::to_string(model->options.in()));
      if (in.shard.info) source = source_dataset(*in.shard.info, note);
      const Dataset& ds = in.shard.info ? source : in.dataset;
      po_.original_ids = ds.node_ids.span();
      if (!nodes_file.empty()) nodes = dataset_ids(nodes_file, read_node_list(nodes_file), po_.original_ids, in.shard.book.num_nodes());
    });
  }
  po_.nodes = nodes;
  po_.input = input;
  po_.dataset = in.name;
  po_.created = utc_now();
  TaskKind kind = TaskKind::kClasses;
  comm::agree(world, [&] { kind = model_task(task_name, vm["model"].as<std::string>(), loaded, in.shard); });
  const std::unique_ptr<Task> task = make_predict_task(kind, model);
  // Scored when the data's labels (a link model: held-out edges) are what the model predicts (the
  // test score training printed).
  const bool score = kind == TaskKind::kLink ? world.all(in.shard.edge_split)
                                             : world.all(in.shard.num_classes == model->options.out() && in.shard.multilabel == (kind == TaskKind::kLabelSets));
  const PredictResult r = predict(model, in.shard, *task, score, world, device, po_);
  if (world.rank() == 0 && !quiet) {
    const GnnOptions& m = model->options;
    std::printf("predicted %lld nodes with %s (%lld layers, %lld -> %lld) from %s on '%s' (%s, %d rank%s, %s, %s): embeddings [%lld, %lld] after layer %lld\n",
                static_cast<long long>(r.rows), m.spec().name.c_str(), static_cast<long long>(m.layers()), static_cast<long long>(m.in()),
                static_cast<long long>(m.out()), po_.weights.c_str(), in.name.c_str(), in.kind.c_str(), world.size(), world.size() == 1 ? "" : "s",
                device.str().c_str(), threads_text(threads_from).c_str(), static_cast<long long>(r.rows), static_cast<long long>(r.width),
                static_cast<long long>(r.layer));
    if (!note.empty()) std::printf("%s\n", note.c_str());
    if (!loaded.note.empty()) std::printf("%s\n", loaded.note.c_str());
    if (r.metrics && r.metrics->test.kind == ScoreKind::kLinks)
      std::printf("validation %s (%lld edges), test %s (%lld edges), full neighbourhoods\n", headline_score(r.metrics->val).c_str(),
                  static_cast<long long>(r.metrics->val.count), headline_score(r.metrics->test).c_str(), static_cast<long long>(r.metrics->test.count));
    else if (r.metrics)
      std::printf("validation %s (%lld nodes), test %s, macro-F1 %.4f (%lld nodes), full neighbourhoods\n", headline_score(r.metrics->val).c_str(),
                  static_cast<long long>(r.metrics->val.count), headline_score(r.metrics->test).c_str(), r.metrics->test.macro_f1,
                  static_cast<long long>(r.metrics->test.count));
    std::printf("inference %.2f s, writing %.2f s: %s\n", r.inference_s, r.write_s, po_.out_dir.c_str());
    std::fflush(stdout);
  }
  if (!quiet) print_peak_memory(world);
  return 0;
}

}  // namespace shardgnn::cli

int main(int argc, char** argv) { return shardgnn::cli::run_mpi_program(argc, argv, "predict", /*threads=*/false, shardgnn::cli::predict_main); }
