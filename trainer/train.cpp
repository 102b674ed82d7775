#include "trainer/train.hpp"
#include "datasets/stopwatch.hpp"

#include <algorithm>
#include <c10/core/impl/DeviceGuardImplInterface.h>
#include <torch/cuda.h>
#include <torch/nn.h>
#include <torch/optim.h>
#include <torch/utils.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <optional>
#include <thread>

#include "datasets/error.hpp"
#include <boost/json.hpp>

#include "datasets/array_dir.hpp"
#include "datasets/fileio.hpp"
#include "datasets/memory_limit.hpp"
#include "datasets/random.hpp"
#include "sampler/feature_store.hpp"
#include "sampler/huge_pages.hpp"
#include "sampler/examples.hpp"
#include "sampler/pipeline.hpp"
#include "sampler/rebalance.hpp"
#include "sampler/sampler.hpp"
#include "sampler/seed_scheduler.hpp"
#include "trainer/checkpoint.hpp"
#include "trainer/device.hpp"
#include "model/dist_embedding.hpp"
#include "sampler/typed_features.hpp"
#include "trainer/data_parallel.hpp"
#include "trainer/evaluate.hpp"
#include "model/gemm.hpp"
#include "model/gnn.hpp"
#include "trainer/op_profile.hpp"
#include "trainer/staging.hpp"
#include "trainer/stop.hpp"
#include "trainer/task.hpp"

namespace fs = std::filesystem;

// The kernels OpenBLAS runs on (blas_core). Weak: null with another BLAS.
extern "C" char* openblas_get_corename(void) __attribute__((weak));

namespace shardgnn {

namespace {


// Every fanout -1: the sampler's neighbourhoods are the whole ones.
bool every_neighbour(const std::vector<int>& fanouts) {
  return std::all_of(fanouts.begin(), fanouts.end(), [](int f) { return f < 0; });
}

std::unique_ptr<torch::optim::Optimizer> make_optimizer(const TrainConfig& c, std::vector<torch::Tensor> params) {
  if (c.optim.kind == OptimizerKind::kSgd)
    return std::make_unique<torch::optim::SGD>(std::move(params), torch::optim::SGDOptions(c.optim.lr).momentum(c.optim.momentum).weight_decay(c.optim.weight_decay));
  return std::make_unique<torch::optim::Adam>(std::move(params), torch::optim::AdamOptions(c.optim.lr).weight_decay(c.optim.weight_decay));
}

// The best epoch's model is all of its state (state_tensors: parameters and buffers).
std::vector<torch::Tensor> clone_parameters(const torch::nn::Module& m) {
  std::vector<torch::Tensor> out;
  for (const auto& p : state_tensors(m)) out.push_back(p.detach().clone());
  return out;
}

void assign_parameters(torch::nn::Module& m, const std::vector<torch::Tensor>& values) {
  torch::NoGradGuard no_grad;
  auto params = state_tensors(m);
  for (std::size_t i = 0; i < params.size() && i < values.size(); ++i) params[i].copy_(values[i]);
}

}  // namespace

namespace {

// What learns: the task, the model on its device, its optimiser and the gradients' all-reduce,
// over the communicator of this thread (gradients, metrics, full inference).
struct Learner {
  comm::Communicator comm;
  torch::Device device = torch::kCPU;
  std::unique_ptr<Task> task;  // what is learnt: the head's width, the loss, the metrics, the best model's score
  Gnn model{nullptr};
  std::unique_ptr<torch::optim::Optimizer> optimizer;
  NcclHandle nccl;  // GPUs: the gradients' sums, when every rank has one and the build NCCL
  std::unique_ptr<GradientAllreducer> allreducer;
  std::unique_ptr<BatchStager> stager;  // batches onto the device, ahead of their steps
  explicit Learner(comm::Communicator c) : comm(std::move(c)) {}
};

// What feeds it: the shards, the samplers, the feature store and the seed schedule, over a
// communicator of their own (the prefetch thread's).
struct Feeds {
  comm::Communicator comm;
  std::unique_ptr<ShardView> shards;  // what the sampler and the feature store read directly
  std::unique_ptr<DistSampler> sampler;
  std::unique_ptr<DistSampler> all_neighbours;  // with --eval full: validation through every neighbour of the validation nodes
  std::unique_ptr<FeatureStore> features;
  std::unique_ptr<SeedScheduler> scheduler;  // which seeds each rank trains, epoch by epoch
  std::unique_ptr<Examples> examples;        // what a training example is: the task's nodes or edges
  int prefetch = 0;                          // batches sampled ahead (SamplerConfig::prefetch)
  bool full_fanouts = false;                 // every fanout -1: the sampler's neighbourhoods are the whole ones
  explicit Feeds(comm::Communicator c) : comm(std::move(c)) {}
};

// What validation and the final scoring read beyond the learner and the feeds.
struct Scoring {
  const Shard& shard;
  std::int64_t chunk = 0;  // EvalConfig::chunk
  std::vector<NodeId> val_nodes;  // this rank's validation nodes checked each epoch (EvalConfig::sample)
  // Their sampled batches, kept from the first validation on when they fit `budget` on every
  // rank: later validations then only compute.
  std::vector<KeptBatch> val_batches;
  enum class Cache { kUntried, kKept, kOff } cache = Cache::kUntried;
  std::size_t budget = 0;  // bytes
  explicit Scoring(const Shard& s) : shard(s) {}
};

// Where the run is saved, as what, and how far it got.
struct Checkpoints {
  std::string path;  // "" without --checkpoint-dir
  bool resume_from_file = false;
  std::string resumed_note;  // how a resume on another rank count goes on, for the log
  CheckpointIdentity identity;
  TrainState state;
  ModelCard card;  // what the weights are, written beside them (its JSON is in the identity too)
};

// What names a partition: its method and parts, the CRC-32 of its book and that of every shard
// file's CRC-32, so that a re-partition with the same sizes is another partition.
std::string partition_fingerprint(const Shard& shard) {
  if (!shard.info) return "not partitioned";
  const PartitionInfo& info = *shard.info;
  std::vector<NodeId> offsets;
  for (PartId p = 0; p < info.book.parts(); ++p) offsets.push_back(info.book.begin(p));
  offsets.push_back(info.book.num_nodes());
  std::string crcs;  // every shard file's CRC-32 as partition.json lists it
  for (const PartEntry& e : info.parts)
    for (const auto& [name, array] : e.arrays)
      if (const auto* crc = array.is_object() ? array.as_object().if_contains("crc32") : nullptr; crc && crc->is_string()) crcs += crc->as_string();
  char hex[17];
  std::snprintf(hex, sizeof hex, "%08x%08x", crc32_of(std::as_bytes(std::span<const NodeId>(offsets))), crc32_of(std::as_bytes(std::span<const char>(crcs))));
  return info.method + ", " + std::to_string(info.book.parts()) + " parts, " + hex;
}

// A checkpoint written by another rank count over the same partition: the weights, the optimiser
// and the early-stopping state carry over exactly, and the following epochs draw as a run on
// `ranks` ranks would. An epoch stopped inside goes on at the next epoch's start: its remaining
// seeds were split over the old rank count and have no place on the new one.
void resume_elsewhere(Checkpoints& k, int ranks) {
  TrainState& st = k.state;
  if (st.ranks == 0 || st.ranks == ranks) return;
  k.resumed_note = " (the checkpoint was written by " + std::to_string(st.ranks) + " ranks; this run has " + std::to_string(ranks) + ", whose epochs draw as a " +
                   std::to_string(ranks) + "-rank run's";
  if (st.next_step > 0) {
    k.resumed_note += "; epoch " + std::to_string(st.next_epoch + 1) + " stopped after its step " + std::to_string(st.next_step) +
                      " and its other steps are skipped";
    ++st.next_epoch;
    st.next_step = 0;
    st.step_loss_sum = st.step_correct = st.step_examples = 0;
  }
  k.resumed_note += ")";
}

CheckpointIdentity checkpoint_identity(const TrainConfig& cfg, const SamplerConfig& scfg, const ModelSpec& spec, const Shard& shard, const std::string& dataset,
                                       const Task& task) {
  CheckpointIdentity id;
  // A spec file by its content: a file edited between runs is another model.
  id.model = cfg.model.spec.empty() ? model_label(cfg.model) : spec.name + " (spec " + hex32(spec_checksum(spec)) + ")";
  id.optimizer = optimizer_name(cfg.optim.kind);
  id.dataset = dataset;
  id.hidden = cfg.model.spec.empty() ? cfg.model.hidden : 0;  // a spec's widths are in its checksum
  id.layers = static_cast<std::int64_t>(scfg.fanouts.size());
  id.heads = cfg.model.spec.empty() && (cfg.model.kind == ModelKind::kGat || cfg.model.kind == ModelKind::kRgat) ? cfg.model.heads : 0;
  id.in = shard.feature_dim;
  id.classes = task.output_width();
  id.num_nodes = shard.book.num_nodes();
  id.seed = cfg.seed;
  id.partition = partition_fingerprint(shard);
  return id;
}

// What the weights are: the model as built (its spec checked, widths resolved), its task and the
// graph it runs on.
ModelCard model_card(const TrainConfig& cfg, const GnnImpl& model, const Shard& shard, const CheckpointIdentity& id) {
  ModelCard card;
  card.spec = model.options.spec();
  card.in = model.options.in();
  card.out = model.options.out();
  card.precision = model.options.precision();
  card.task = cfg.task == TaskKind::kLink ? "link" : shard.multilabel ? "label-sets" : "classes";
  if (cfg.task == TaskKind::kLink) card.scorer = scorer_name(cfg.link.scorer);
  card.schema = shard.schema;
  card.feature_dtype = feature_dtype_name(shard.feature_dtype);
  card.feature_norm = feature_norm_name(shard.feature_norm);
  card.dataset = id.dataset;
  card.partition = id.partition;
  return card;
}

// Collective: the checkpoint (nothing without a path). A typed graph's embedding rows first, each
// rank its own, then rank 0's checkpoint file (and `also`, under the same agreement), then the
// embedding files of earlier checkpoints go: a checkpoint never names rows that are not written.
void write_checkpoint(const Learner& l, const Checkpoints& k, const std::function<void()>& also = {}) {
  const TypedEmbeddings* tables = k.path.empty() ? nullptr : l.model->embeddings();
  if (tables) comm::agree(l.comm, [&] { save_embeddings(k.path, k.state, *tables, l.comm.rank()); });
  comm::agree(l.comm, [&] {
    if (l.comm.rank() == 0 && !k.path.empty()) save_checkpoint(k.path, k.identity, *l.model, *l.optimizer, k.state);
    if (also) also();
  });
  if (tables) comm::agree(l.comm, [&] { drop_old_embeddings(k.path, k.state, l.comm.rank()); });
}

}  // namespace

// The trainer's parts, built once by the constructor and used by the loop's steps below. The
// learner's communicator is dup()ed before the feeds' on every rank (declaration order).
struct detail::TrainerParts {
  const Shard& shard;
  std::string dataset;
  TrainConfig cfg;
  SamplerConfig scfg;
  ModelSpec spec;  // the built-in or the spec file --model names, read and checked once by every rank
  comm::Communicator::CoreShare cores;
  std::string threads_from;  // what decided the torch threads, for the start-of-run line
  Learner learn;
  Feeds feeds;
  Scoring scoring;
  Checkpoints ckpt;

  TrainerParts(const Shard& s, std::string ds, const comm::Communicator& world, TrainConfig c, SamplerConfig sc)
      : shard(s),
        dataset(std::move(ds)),
        cfg(std::move(c)),
        scfg(std::move(sc)),
        learn(world.dup()),
        feeds(world.dup()),
        scoring(s) {
    // The prefetch thread communicates while this thread all-reduces: that needs an MPI that
    // granted MPI_THREAD_MULTIPLE. Without it, sample on this thread (every rank sees the same).
    if (!comm::thread_multiple()) scfg.prefetch = 0;
    // Rebalanced, class-balanced or global seeds may belong to other ranks: their labels come from
    // owners. So may a link batch's endpoints.
    scfg.remote_seeds = cfg.balance.rebalance != RebalancePolicy::kNone || cfg.balance.seed_sampling != SeedSampling::kShard || cfg.task == TaskKind::kLink;
    feeds.prefetch = scfg.prefetch;
    feeds.full_fanouts = every_neighbour(scfg.fanouts);
    scoring.chunk = cfg.eval.chunk;
  }
};

using detail::TrainerParts;

namespace {

// A typed graph trains R-GCN, R-GAT or a spec on its labelled nodes' classes, and those built-ins
// train typed graphs only; per-relation fanouts are resolved against the graph's schema.
void check_typed(const TrainConfig& c, SamplerConfig& sc, const Shard& shard, const std::string& dataset) {
  resolve_relation_fanouts(sc, shard.schema);
  const GraphSchema& schema = shard.schema;
  // The built-ins name their graph kind; a spec file's layers are checked with the spec.
  const bool builtin = c.model.spec.empty();
  const bool relational = builtin && (c.model.kind == ModelKind::kRgcn || c.model.kind == ModelKind::kRgat);
  if (!schema.typed()) {
    if (relational)
      throw InputError("--model " + model_name(c.model.kind) + " trains typed graphs; dataset '" + dataset + "' has one node type (use sage, gcn or gat)");
    return;
  }
  const std::string what = "dataset '" + dataset + "' is a typed graph (" + std::to_string(schema.num_types()) + " node types, " +
                           std::to_string(schema.relations().size()) + " relations)";
  if (builtin && !relational) throw InputError(what + ": train it with --model rgcn or --model rgat (or a spec file)");
  if (c.balance.personalize_epochs > 0) throw InputError(what + ": --personalize fine-tunes untyped models");
}

// This rank's share of a validation sample of at most `limit` nodes over all ranks (0 = all), the
// same every epoch so that epochs compare on equal terms: each rank keeps its proportional part,
// picked by a seeded shuffle of its own validation nodes. Collective over `comm`.
std::vector<NodeId> validation_nodes(const Shard& shard, const comm::Communicator& comm, std::int64_t limit, std::uint64_t seed) {
  std::vector<NodeId> val(shard.val_idx.begin(), shard.val_idx.end());
  const std::vector<std::int64_t> counts = comm.allgather(static_cast<std::int64_t>(val.size()));
  std::int64_t before = 0, total = 0;
  for (int r = 0; r < comm.size(); ++r) {
    if (r < comm.rank()) before += counts[static_cast<std::size_t>(r)];
    total += counts[static_cast<std::size_t>(r)];
  }
  if (limit == 0 || limit >= total) return val;
  // Shares as differences of rounded-down prefix shares: they add up to `limit` exactly.
  __extension__ using Wide = __int128;  // limit * prefix may pass 2^63
  const auto share = [&](std::int64_t prefix) { return static_cast<std::int64_t>(static_cast<Wide>(limit) * prefix / total); };
  const std::int64_t keep = share(before + static_cast<std::int64_t>(val.size())) - share(before);
  Rng rng(derive_seed(seed, 0x7a11da7eULL + static_cast<std::uint64_t>(comm.rank())));
  seeded_shuffle(std::span<NodeId>(val), rng);
  val.resize(static_cast<std::size_t>(keep));
  std::sort(val.begin(), val.end());
  return val;
}

// The constructor's steps, in order. The first three are local (no collectives): the
// constructor runs them under comm::agree, so that a refusal anywhere ends every rank.

// The options, the task and its examples, each refusing what it cannot take.
void choose_task(TrainerParts& s) {
  const TrainConfig& c = s.cfg;
  validate(c);
  validate(s.scfg);
  // A task's own weights (the MLP pair scorer's) draw their start from the run's seed, not from
  // whatever the global generator held: unseeded, link runs differed from run to run.
  torch::manual_seed(derive_seed(c.seed, 0x7a5c));
  s.learn.task = make_task(c, s.shard);
  s.learn.task->check(s.shard, s.dataset);
  check_typed(c, s.scfg, s.shard, s.dataset);
  if (c.task == TaskKind::kLink)
    s.feeds.examples = std::make_unique<EdgeExamples>(s.shard, s.scfg.batch_size, c.link.negatives, c.seed, c.link.exclude_positives);
  else
    s.feeds.examples = std::make_unique<NodeExamples>(s.shard, s.scfg.batch_size);
  s.feeds.examples->check(c.balance.seed_sampling, c.balance.personalize_epochs, s.shard.schema.typed());
}

// The model's spec (built-in or file), checked against the data and the task (hops, widths,
// relations) before anything trains: a spec that cannot be built is a usage error (exit 2).
void declare_model(TrainerParts& s) {
  const TrainConfig& c = s.cfg;
  const auto hops = static_cast<std::int64_t>(s.scfg.fanouts.size());
  try {
    s.spec = model_spec(c.model, hops);
    const SpecContext ctx{s.shard.feature_dim, s.learn.task->output_width(), hops, s.shard.schema.typed(), c.model.precision};
    s.spec = check_spec(std::move(s.spec), ctx, c.model.spec.empty() ? "--model " + s.spec.name : c.model.spec);
  } catch (const InputError& e) {
    throw comm::UsageFault(e.what());
  }
  // GCN normalises by each node's degree in the whole graph, which a block (seeing only the
  // batch's sampled edges) does not know: exact over full neighbourhoods, unbiased over sampled ones.
  s.scfg.with_degrees = uses(s.spec, LayerKind::kGcn);
}

// The device, the levers and the checkpoint folder.
void check_run(TrainerParts& s) {
  const TrainConfig& c = s.cfg;
  Learner& l = s.learn;
  l.device = resolve_device(c.device.name, s.cores.local_rank);
  // The limits are CPU rates for float32 work, and on a GPU the profiler sees only launches.
  if (c.levers.profile_steps > 0 && (!l.device.is_cpu() || c.model.precision != Precision::kFloat32))
    throw InputError("--profile-ops profiles float32 training on the CPU (--device cpu --precision fp32)");
  if (c.levers.slow_rank >= l.comm.size())
    throw InputError("--simulate-slowdown " + std::to_string(c.levers.slow_rank) + ":" + std::to_string(c.levers.slowdown) + ": there is no rank " +
                     std::to_string(c.levers.slow_rank) + " (the job has " + std::to_string(l.comm.size()) + " rank" + (l.comm.size() == 1 ? "" : "s") +
                     ", 0 to " + std::to_string(l.comm.size() - 1) + ")");
  if (!c.files.checkpoint_dir.empty()) {
    s.ckpt.path = (fs::path(c.files.checkpoint_dir) / "checkpoint.pt").string();
    if (fs::exists(s.ckpt.path) && !c.files.resume && !c.files.overwrite)
      throw InputError(s.ckpt.path, "", "a checkpoint exists: pass --resume to continue it or --force to start over");
  }
}

// Collective: what the run is (its checkpoint identity), that it has examples, the validation
// sample, the memory the kept validation batches may take, and whether a checkpoint resumes it.
void plan_run(TrainerParts& s) {
  const TrainConfig& c = s.cfg;
  Learner& l = s.learn;
  Checkpoints& k = s.ckpt;
  k.identity = checkpoint_identity(c, s.scfg, s.spec, s.shard, s.dataset, *l.task);
  const auto train_total = l.comm.allreduce<std::int64_t>(s.feeds.examples->own(), comm::Op::kSum);
  l.comm.check_all(train_total > 0, "dataset '" + s.dataset + "' has no " + s.feeds.examples->name());
  s.scoring.val_nodes = validation_nodes(s.shard, l.comm, c.eval.sample, c.seed);
  // An eighth of the node's usable memory, shared by its ranks.
  s.scoring.budget = usable_memory_bytes() / 8 / static_cast<std::size_t>(s.cores.ranks_on_node);
  if (!k.path.empty() && c.files.resume) {
    const bool here = fs::exists(k.path);
    const auto seen = l.comm.allreduce<std::int32_t>(here ? 1 : 0, comm::Op::kSum);
    l.comm.check_all(seen == 0 || seen == l.comm.size(), k.path + ": visible on some ranks only (the checkpoint folder must be shared)");
    k.resume_from_file = seen > 0;
  }
}

// Collective: the model from rank 0's weights on its device, its card, its optimiser and the
// gradients' all-reduce.
void build_model(TrainerParts& s) {
  const TrainConfig& c = s.cfg;
  Learner& l = s.learn;
  // Threads from the binding: the rank's share of the cores its mask allows, never more than
  // torch's default (the physical cores it counts), which a rank alone on its cores keeps.
  s.threads_from = set_rank_threads(c.device.threads, s.cores);
  torch::manual_seed(c.seed);
  GnnOptions mo(s.spec, s.shard.feature_dim, l.task->output_width());
  mo.schema(s.shard.schema).precision(c.model.precision).spec_file(c.model.spec);
  l.model = Gnn(mo);
  // Every rank's batch is a slice of one global batch: batch norm takes its statistics (one rank
  // keeps torch's own, the same numbers).
  if (l.comm.size() > 1 && uses(s.spec, Norm::kBatch)) l.model->synchronise_batch_norm(&l.comm);
  // The task's own weights (a pair scorer's) train, travel and checkpoint with the model's.
  for (const auto& [name, module] : l.task->modules()) l.model->register_module(name, module);
  s.ckpt.card = model_card(c, *l.model, s.shard, s.ckpt.identity);
  boost::json::value card = card_to_json(s.ckpt.card);
  card.as_object().erase("weights");
  s.ckpt.identity.model_card = boost::json::serialize(card);
  l.model->to(l.device);
  broadcast_parameters(*l.model, l.comm);
  l.optimizer = make_optimizer(c, l.model->parameters());
  // A GPU of its own: devices picked by node-local rank (a bare "cuda"), no more ranks than GPUs.
  const bool own_gpu = c.device.name == "cuda" && s.cores.ranks_on_node <= static_cast<int>(torch::cuda::device_count());
  l.nccl = nccl_connect(l.comm, l.device, own_gpu);
  l.allreducer = std::make_unique<GradientAllreducer>(*l.model, l.comm, l.nccl.get());
  l.stager = std::make_unique<BatchStager>(l.device);
}

// Collective: the checkpoint's model and optimiser when resuming. Returns the checkpoint as
// written (resume_elsewhere moves a stop mid-epoch to the next epoch): what names its embedding
// files, and how many ranks wrote them.
TrainState resume_model(TrainerParts& s) {
  Learner& l = s.learn;
  Checkpoints& k = s.ckpt;
  TrainState written;
  if (k.resume_from_file) {
    comm::agree(l.comm, [&] { load_checkpoint(k.path, k.identity, *l.model, *l.optimizer, k.state, l.device); });
    written.next_epoch = k.state.next_epoch;
    written.next_step = k.state.next_step;
    written.ranks = k.state.ranks;
    resume_elsewhere(k, l.comm.size());
  }
  k.state.ranks = l.comm.size();
  return written;
}

// Collective: the shards, the samplers, the feature store and its cache, a featureless typed
// graph's embeddings, and the seed schedule.
void build_feeds(TrainerParts& s, const TrainState& written) {
  const TrainConfig& c = s.cfg;
  const Shard& shard = s.shard;
  Learner& l = s.learn;
  Feeds& f = s.feeds;
  l.comm.check_all(!(shard.feature_dim > 0 && shard.feature_dtype == FeatureDtype::kFloat16 && s.scfg.wire_dtype == WireDtype::kBFloat16),
                   "--wire-dtype bf16: the partition stores float16 features, which travel as they are stored (leave the option out)");
  f.shards = std::make_unique<ShardView>(shard, f.comm, s.scfg.node_local);
  f.sampler = std::make_unique<DistSampler>(*f.shards, f.comm, s.scfg);
  f.features = std::make_unique<FeatureStore>(*f.shards, f.comm);
  f.features->build_cache(s.scfg, f.sampler.get());
  if (const TypedFeatureStore* typed = f.features->typed(); typed != nullptr && shard.schema.featureless()) {
    SparseEmbeddingOptions eo;
    eo.optimizer = c.embedding.optimizer;
    eo.lr = c.embedding.lr;
    l.model->use_embeddings(std::make_shared<TypedEmbeddings>(*typed, shard.schema, l.model->input_width(), eo, derive_seed(c.seed, 0xe3bedULL), l.comm));
    // Every validation gathers embedding rows from their owners (collective): each rank samples
    // its batches again rather than keeping a count of its own.
    s.scoring.cache = Scoring::Cache::kOff;
    if (s.ckpt.resume_from_file)
      comm::agree(l.comm, [&] { load_embeddings(s.ckpt.path, written, *l.model->embeddings(), l.comm.rank(), written.ranks); });
  }
  // A typed graph's final scoring over whole neighbourhoods goes through a sampler taking every
  // neighbour (layer-wise inference runs the homogeneous layers).
  if (c.eval.mode == EvalMode::kFull || (shard.schema.typed() && c.eval.final_full && c.eval.final_test)) {
    // Full-neighbourhood validation needs only the validation nodes' L-hop neighbourhoods, not
    // layer-wise inference over every node: a sampler that takes every neighbour gives exactly those.
    SamplerConfig all = s.scfg;
    all.fanouts.assign(all.fanouts.size(), -1);
    for (auto& hop : all.relation_fanouts) hop.assign(hop.size(), -1);
    all.prefetch = 0;
    f.all_neighbours = std::make_unique<DistSampler>(*f.shards, f.comm, all);
  }
  f.scheduler = std::make_unique<SeedScheduler>(*f.sampler, SeedScheduler::Options{c.balance.rebalance, c.balance.seed_sampling, c.balance.remote_seed_factor, c.seed,
                                                                                   f.examples.get()});
  l.comm.check_all(c.balance.seed_sampling == SeedSampling::kShard || f.scheduler->pool_size() > 0,
                   "--seed-sampling " + seed_sampling_name(c.balance.seed_sampling) + ": dataset '" + s.dataset + "' has no labelled training nodes");
}

}  // namespace

Trainer::Trainer(const Shard& shard, const std::string& dataset, const comm::Communicator& world, TrainConfig config, SamplerConfig sampler)
    : s_(std::make_unique<TrainerParts>(shard, dataset, world, std::move(config), std::move(sampler))) {
  TrainerParts& s = *s_;
  s.cores = s.learn.comm.core_share();
  // Local checks first, agreed on by every rank before any collective work.
  comm::agree(s.learn.comm, [&] {
    choose_task(s);
    declare_model(s);
    check_run(s);
  });
  plan_run(s);
  build_model(s);
  const TrainState written = resume_model(s);
  build_feeds(s, written);
}

Trainer::~Trainer() = default;

std::uint64_t Trainer::weights_checksum() const { return parameters_checksum(*s_->learn.model); }
bool Trainer::validation_batches_kept() const noexcept { return s_->scoring.cache == Scoring::Cache::kKept; }
std::string Trainer::device_name() const { return s_->learn.device.str(); }
std::string Trainer::threads_text() const { return shardgnn::threads_text(s_->threads_from); }
std::string Trainer::gradient_path() const { return s_->learn.allreducer->path(); }
const FeatureStore& Trainer::features() const noexcept { return *s_->feeds.features; }
std::string Trainer::gemm_backend() const { return s_->learn.device.is_cpu() && s_->cfg.model.precision == Precision::kFloat32 ? cpu_gemm_backend() : "torch"; }

std::string blas_core() { return openblas_get_corename ? openblas_get_corename() : ""; }
std::int64_t Trainer::num_parameters() const {
  std::int64_t n = 0;
  for (const auto& p : s_->learn.model->parameters()) n += p.numel();
  return n;
}

namespace {

// The model on this epoch's validation nodes (without `with_test`), or on the whole validation and
// test sets.
SplitMetrics evaluate(Learner& l, Feeds& f, Scoring& v, EvalMode mode, bool with_test) {
  // Link prediction scores its held-out pairs from full inference's rows, every time.
  if (f.examples->scores_whole_neighbourhoods()) mode = EvalMode::kFull, with_test = true;
  if (!with_test) {
    using C = Scoring::Cache;
    if (v.cache == C::kKept) return evaluate_kept(*l.task, l.model, v.val_batches, l.device, l.comm);
    DistSampler& sampler = mode == EvalMode::kFull ? *f.all_neighbours : *f.sampler;
    if (v.cache == C::kOff) return evaluate_sampled(*l.task, l.model, sampler, *f.features, l.device, v.val_nodes, {});
    const SplitMetrics m = evaluate_sampled(*l.task, l.model, sampler, *f.features, l.device, v.val_nodes, {}, &v.val_batches, v.budget);
    // Every rank must take the same path next time (sampling is collective).
    const bool all = l.comm.allreduce<std::int32_t>(v.val_batches.empty() && !v.val_nodes.empty() ? 0 : 1, comm::Op::kMin) == 1;
    v.cache = all ? C::kKept : C::kOff;
    if (!all) v.val_batches = {};
    return m;
  }
  if (mode == EvalMode::kSampled)
    return evaluate_sampled(*l.task, l.model, *f.sampler, *f.features, l.device, v.shard.val_idx.widened(), v.shard.test_idx.widened());
  if (l.model->typed())
    return evaluate_sampled(*l.task, l.model, *f.all_neighbours, *f.features, l.device, v.shard.val_idx.widened(), v.shard.test_idx.widened());
  // Full-neighbourhood inference allocates layer by layer through torch: the training batches'
  // idle feature buffers go back to the system first (mapped again by the next epoch).
  huge_buffer_pool_trim();
  return evaluate_full(*l.task, l.model, v.shard, l.comm, l.device, v.chunk);
}

// What one step adds to its epoch's sums.
struct StepResult {
  double compute_s = 0;  // forward, backward and optimiser step (the all-reduce excluded)
  double examples = 0;   // the labelled seeds of all ranks
  double local_examples = 0;  // of this rank
  bool stop = false;  // some rank was asked to stop (stop_here): every rank stops after this step
};

// One step of data-parallel training: forward and backward on this rank's batch, the gradients
// averaged over all ranks' examples, an optimiser step (skipped when no rank had any). This
// rank's loss sum and training statistic (Task::train_stat_sum) are added to `sums` (float64 [2])
// on the device, which the host reads once an epoch: no step waits for the device to report them.
// `stop_here` travels with the gradients, so the ranks agree on stopping without a collective.
StepResult train_step(const Task& task, Gnn& model, torch::optim::Optimizer& optimizer, GradientAllreducer& allreducer, const BatchStager& stager,
                      const MiniBatch& mb, torch::Tensor& sums, bool stop_here) {
  auto t0 = Clock::now();
  optimizer.zero_grad();
  StepResult r;
  std::vector<double> extras{stop_here ? 1.0 : 0.0};  // ranks asked to stop
  if (mb.seeds().empty()) model->skip_batch();
  else {
    const BatchTensors t = stager.take(mb);
    const torch::Tensor output = model->forward(t);
    const torch::Tensor loss = task.loss_sum(output, t);
    loss.backward();
    torch::NoGradGuard no_grad;
    const torch::Tensor stat = task.train_stat_sum(output, t);
    sums.add_(torch::stack({loss.detach().to(torch::kDouble), stat.to(torch::kDouble)}));
    // Counted on the host, where the targets are.
    r.local_examples = static_cast<double>(task.examples(mb));
  }
  r.compute_s = since(t0);
  r.examples = allreducer.average(r.local_examples, extras);
  t0 = Clock::now();
  // Embedding rows' gradients, averaged as the dense ones, to their owners: every rank every step
  // (collective).
  model->step_embeddings(r.examples > 0 ? 1.0 / r.examples : 0.0);
  if (r.examples > 0) optimizer.step();
  r.compute_s += since(t0);
  r.stop = extras[0] > 0;
  return r;
}

// One rank's epoch of training steps, summed.
struct EpochSums {
  double lr = 0;
  std::int64_t steps = 0, seeds = 0;
  double wait_s = 0, compute_s = 0, sample_work_s = 0;  // waiting for batches, compute, the producer's own work
  double loss_sum = 0, train_stat = 0, examples = 0;  // train_stat: Task::train_stat_sum's
  double slowdown = 1;  // the simulated slowdown applied to compute
  std::int64_t profiled_steps = 0;
  double profiled_s = 0;  // their compute
  std::int64_t first_step = 0;    // > 0: resumed inside the epoch (the sums above include the steps before)
  std::vector<InnerValidation> inner;  // validations inside the epoch (EvalConfig::fraction)
  double inner_eval_s = 0;             // their time
  std::int64_t stopped_after = 0;  // > 0: stopped on a signal after this many steps (the sums are theirs)
};

// The pipeline of one epoch's training batches, made as the examples say and staged for the
// device on the producer's side.
Prefetcher training_batches(const Examples& examples, DistSampler& sampler, FeatureStore& features, const BatchStager& stager, int depth, std::int64_t epoch,
                            std::int64_t steps, std::int64_t first_step) {
  Prefetcher::Stage stage;
  if (stager.copies()) stage = [&stager](MiniBatch& mb) { stager.stage(mb); };
  return Prefetcher(sampler, features, epoch, steps, depth, first_step, std::move(stage), examples.producer(sampler, features, epoch));
}

// Dropout draws from torch's generator and the model's own keyed stream: reseeding both per
// (epoch, step, rank) makes a run resumed at any step draw what an uninterrupted one would.
void seed_dropout(Gnn& model, std::uint64_t seed, int rank, std::int64_t epoch, std::int64_t step) {
  const std::uint64_t epoch_seed = epoch_stream_seed(seed, epoch, 0x7a1e0000ULL + static_cast<std::uint64_t>(rank));
  const std::uint64_t step_seed = derive_seed(epoch_seed, static_cast<std::uint64_t>(step));
  torch::manual_seed(step_seed);
  model->reseed_dropout(step_seed);
}

// Trains one epoch over the seeds the scheduler installed, batches sampled and fetched by the
// prefetch pipeline (collective: every rank runs the same number of steps).
// With `recorder`, TrainConfig::profile_steps steps from the middle of the epoch are recorded op
// by op: past the first (which warms the allocator and caches up) and past the prefetch thread's
// start, when it samples several batches ahead on the same cores.
// A stop signal on any rank ends the epoch after the step in progress (stopped_after).
EpochSums train_epoch(Learner& l, Feeds& f, Scoring& v, const Checkpoints& k, const TrainConfig& c, int epoch, Progress& progress, OpRecorder* recorder) {
  const int rank = l.comm.rank();
  const auto t_start = Clock::now();
  EpochSums e;
  if (k.state.next_epoch == epoch && k.state.next_step > 0) {
    e.first_step = k.state.next_step;
    e.loss_sum = k.state.step_loss_sum;
    e.train_stat = k.state.step_correct;
    e.examples = k.state.step_examples;
  }
  e.lr = lr_at(c, epoch);
  for (auto& group : l.optimizer->param_groups()) group.options().set_lr(e.lr);
  l.model->train();
  e.slowdown = rank == c.levers.slow_rank && c.levers.slowdown > 1 ? c.levers.slowdown : 1.0;
  e.steps = f.examples->steps(*f.sampler, epoch);
  l.comm.check_all(e.first_step < e.steps, k.path + ": resumes at step " + std::to_string(e.first_step + 1) + " of epoch " +
                                               std::to_string(epoch + 1) + ", which has " + std::to_string(e.steps) + " steps here (another partition or --batch?)");
  progress.start_epoch(epoch, c.epochs, e.steps);
  Prefetcher pipe = training_batches(*f.examples, *f.sampler, *f.features, *l.stager, f.prefetch, epoch, e.steps, e.first_step);
  // Validations inside the epoch every `inner` steps (none after its last: the epoch's own follows).
  const std::int64_t inner = c.eval.fraction > 0 ? std::max<std::int64_t>(1, std::llround(c.eval.fraction * static_cast<double>(e.steps))) : 0;
  // This rank's loss sum and training statistic over the epoch's steps, kept on the device.
  torch::Tensor sums = torch::zeros({2}, torch::TensorOptions().dtype(torch::kDouble).device(l.device));
  double local_examples = 0;
  const std::int64_t first_recorded = std::max<std::int64_t>(e.first_step + 1, (e.steps - c.levers.profile_steps) / 2);
  for (std::int64_t step = e.first_step; step < e.steps; ++step) {
    comm::set_position("training", epoch, step, e.steps);
    if (rank == 0 && epoch == c.levers.stop_epoch && step == c.levers.stop_step) request_stop(SIGTERM);
    seed_dropout(l.model, c.seed, l.comm.rank(), epoch, step);
    const auto t0 = Clock::now();
    std::optional<MiniBatch> mb = pipe.next();
    e.wait_s += since(t0);
    // Link prediction's seeds are its training edges (what a rebalancing plan moves).
    e.seeds += f.examples->count(*mb);
    const bool record = recorder != nullptr && step >= first_recorded && step < first_recorded + c.levers.profile_steps;
    if (record) recorder->start();
    StepResult r = train_step(*l.task, l.model, *l.optimizer, *l.allreducer, *l.stager, *mb, sums, stop_signal() != 0);
    if (record) {
      recorder->stop();
      ++e.profiled_steps;
      e.profiled_s += r.compute_s;
    }
    // Slower hardware, simulated: the rank is busy (factor - 1) times longer. Sleeping leaves
    // the core to others, as a slower device would.
    if (e.slowdown != 1.0 && r.compute_s > 0) {
      std::this_thread::sleep_for(std::chrono::duration<double>(r.compute_s * (e.slowdown - 1)));
      r.compute_s *= e.slowdown;
    }
    e.compute_s += r.compute_s;
    e.examples += r.examples;
    local_examples += r.local_examples;
    // The mean loss of this rank's steps so far, read from the device only when the line is drawn.
    progress.step(step + 1, [&] { return local_examples > 0 ? sums[0].item<double>() / local_examples : 0.0; });
    if (r.stop && step + 1 < e.steps) {
      e.stopped_after = step + 1;
      pipe.stop_early();
      break;
    }
    if (inner > 0 && (step + 1) % inner == 0 && step + 1 < e.steps) {
      // The pipeline pauses with the batches it sampled ahead kept, leaving the sampler's
      // communicators to the validation, and goes on after it.
      const auto t_inner = Clock::now();
      const double trained = since(t_start) - e.inner_eval_s;
      pipe.pause();
      comm::set_position("validation", epoch, step + 1, e.steps);
      const double score = l.task->selection_score(evaluate(l, f, v, c.eval.mode, /*with_test=*/false).val);
      e.inner.push_back({step + 1, score, l.comm.allreduce(trained, comm::Op::kMax)});
      e.inner_eval_s += since(t_inner);
      pipe.resume();
    }
  }
  e.sample_work_s += pipe.work_seconds();
  // Every rank's sums, read from the device once (every rank gets here after the same steps).
  const torch::Tensor host = sums.to(torch::kCPU);
  std::vector<double> total{host[0].item<double>(), host[1].item<double>()};
  l.comm.allreduce_inplace(std::span<double>(total), comm::Op::kSum);
  e.loss_sum += total[0];
  e.train_stat += total[1];
  return e;
}

// The counters an epoch's record is the difference of.
struct Counters {
  SamplerCounters sampler;
  FeatureCounters features;
  double allreduce_s = 0;
};
Counters counters(const DistSampler& sampler, const FeatureStore& features, const GradientAllreducer& allreducer) {
  return {sampler.counters(), features.counters(), allreducer.seconds()};
}

// Rank `rank`'s share of the epoch: its sums and what its counters moved from `before` to `now`.
RankEpoch rank_share(int rank, const EpochSums& e, const Counters& before, const Counters& now, double train_s, double eval_s) {
  const SamplerCounters sc = now.sampler - before.sampler;
  const FeatureCounters fc = now.features - before.features;
  RankEpoch me;
  me.rank = rank;
  me.seeds = e.seeds;
  me.steps = e.steps;
  me.sampled_edges = sc.sampled_edges;
  me.remote_sampled_rows = sc.remote_rows_sampled;
  me.node_local_sampled_rows = sc.node_local_rows_sampled;
  me.remote_rows = fc.remote_rows;
  me.cache_hits = fc.cache_hits;
  me.node_local_rows = fc.node_local_rows;
  me.bytes_sent = static_cast<double>(sc.bytes_sent + fc.bytes_sent);
  me.bytes_received = static_cast<double>(sc.bytes_received + fc.bytes_received);
  me.sample_s = sc.sample_s + sc.exchange_s;
  me.fetch_s = fc.local_gather_s + fc.cache_s + fc.node_local_s + fc.remote_s;
  me.batch_wait_s = e.wait_s;
  me.compute_s = e.compute_s;
  me.allreduce_s = now.allreduce_s - before.allreduce_s;
  me.busy_s = e.compute_s + e.sample_work_s;
  me.slowdown = e.slowdown;
  me.eval_s = eval_s;
  me.train_s = train_s;
  return me;
}

// The epoch's record from this rank's sums (loss and training statistic are already summed over
// ranks by the all-reduce) and every rank's share: means and totals over ranks, and the imbalance.
void summarize(EpochRecord& r, const EpochSums& e) {
  r.lr = e.lr;
  r.steps = e.steps;
  r.loss = e.examples > 0 ? e.loss_sum / e.examples : 0;
  r.train_acc = e.examples > 0 ? e.train_stat / e.examples : 0;
  const auto P = static_cast<double>(r.ranks.size());
  double max_busy = 0, mean_busy = 0;
  for (const RankEpoch& k : r.ranks) {
    max_busy = std::max(max_busy, k.busy_s);
    mean_busy += k.busy_s / P;
    r.sample_wait_s += k.batch_wait_s / P;
    r.compute_s += k.compute_s / P;
    r.allreduce_s += k.allreduce_s / P;
    r.bytes_sent += k.bytes_sent;
    r.bytes_received += k.bytes_received;
    r.eval_s += k.eval_s / P;
    r.train_s = std::max(r.train_s, k.train_s);
  }
  r.imbalance = mean_busy > 0 ? max_busy / mean_busy : 1.0;
}

// Keeps the parameters of the best validation score (Task::selection_score) so far; true when the
// last `patience` validations brought no improvement (0: never).
bool keep_best(TrainState& state, const torch::nn::Module& model, int epoch, double score, int patience) {
  if (score > state.best_val) {
    state.best_val = score;
    state.best_epoch = epoch;
    state.best = clone_parameters(model);
    state.bad_evals = 0;
  } else {
    ++state.bad_evals;
  }
  return patience > 0 && state.bad_evals >= patience;
}

// Rank 0's metrics file (appended to when resuming) and the folders it and the checkpoint need.
void open_log(const comm::Communicator& comm, const RunFiles& files, bool append, std::optional<MetricsLog>& log) {
  comm::agree(comm, [&] {
    if (comm.rank() != 0) return;
    if (!files.metrics.empty() && fs::path(files.metrics).has_parent_path()) fs::create_directories(fs::path(files.metrics).parent_path());
    log.emplace(files.metrics, append);
    if (!files.checkpoint_dir.empty()) fs::create_directories(files.checkpoint_dir);
  });
}

// Rank 0 checkpoints the epoch and logs its record; a failure fails every rank.
void save_epoch(const Learner& l, const Checkpoints& k, const EpochRecord& r, std::optional<MetricsLog>& log) {
  comm::set_position("checkpoint", r.epoch);
  const comm::LongWaits writing(comm::kLongWaitFactor);  // the other ranks wait for rank 0's write
  write_checkpoint(l, k, [&] {
    if (log) log->write(r);
  });
}

// Ends a run stopped by a signal: rank 0 checkpoints where it stands (when `save`: inside an epoch)
// and says what happened and how to go on. `epoch` is the next epoch to run of `epochs`, `step`
// its next step (0: an epoch boundary) of `steps`.
void stop(const Learner& l, const Checkpoints& k, TrainResult& result, Progress& progress, int epoch, int epochs, std::int64_t step, std::int64_t steps,
          bool save) {
  result.stop_signal = l.comm.allreduce<std::int32_t>(stop_signal(), comm::Op::kMax);
  result.checkpointed = !k.path.empty();
  if (save) {
    comm::set_position("checkpoint", epoch, step, steps);
    const comm::LongWaits writing(comm::kLongWaitFactor);
    write_checkpoint(l, k);
  }
  std::string where = step > 0 ? "after step " + std::to_string(step) + " of " + std::to_string(steps) + " of epoch " + std::to_string(epoch + 1)
                               : "after epoch " + std::to_string(epoch);
  result.stop_message = std::string("stopped by ") + signal_name(result.stop_signal) + " " + where + " of " + std::to_string(epochs) +
                        (result.checkpointed ? "; " + k.path + " holds it: run the same command with --resume to continue"
                                             : "; no --checkpoint-dir, so nothing to resume from");
  progress.clear_line();
}

// After the epochs: the best model of `state` restored and evaluated (through the sampler, and
// over full neighbourhoods when asked), and its weights written by rank 0.
void finish(Learner& l, Feeds& f, Scoring& v, const TrainState& state, const EvalConfig& eval, const RunFiles& files, const ModelCard& card, TrainResult& result) {
  comm::set_position("final evaluation");
  const comm::LongWaits scoring(comm::kLongWaitFactor);  // whole neighbourhoods, unequal per rank
  // Embedding rows are not kept per validation: with them, the last epoch's model is the one
  // scored and saved (its weights and rows belong together).
  result.last_model = l.model->embeddings() != nullptr;
  if (!state.best.empty() && !result.last_model) assign_parameters(*l.model, state.best);
  result.best_epoch = state.best_epoch;
  result.best_val = state.best_val;
  result.score = std::string(l.task->selection_name());
  result.tested = eval.final_test;
  auto t0 = Clock::now();
  if (eval.final_test && (eval.final_full || f.examples->scores_whole_neighbourhoods())) {
    result.full = evaluate(l, f, v, EvalMode::kFull, /*with_test=*/true);
    result.full_s = since(t0);
    result.has_full = true;
  }
  // With every fanout -1 the sampler's neighbourhoods are the full ones: score them once.
  result.sampled_is_full = result.has_full && (f.full_fanouts || f.examples->scores_whole_neighbourhoods());
  if (result.sampled_is_full) {
    result.sampled = result.full;
  } else if (eval.final_test) {
    t0 = Clock::now();
    result.sampled = evaluate(l, f, v, EvalMode::kSampled, /*with_test=*/true);
    result.sampled_s = since(t0);
  }
  const std::string weights = !files.weights.empty()          ? files.weights
                              : !files.checkpoint_dir.empty() ? (fs::path(files.checkpoint_dir) / "weights.pt").string()
                                                              : std::string();
  if (!weights.empty())
    comm::agree(l.comm, [&] {
      if (l.comm.rank() == 0) {
        save_weights(weights, *l.model);
        write_model_card(card_path(weights), card, weights);
      }
    });
}

// Entropy-Aware Training's personalisation phase (Deshmukh et al. 2023): each rank fine-tunes its
// own copy of the model on its own shard's training nodes, without gradient averaging, then scores
// its own test nodes with it. The model is this rank's copy from here on (the shared weights were
// saved by finish). Sampling stays collective, so every rank runs the same steps.
void personalize(Learner& l, Feeds& f, const Shard& shard, const TrainConfig& c, TrainResult& result) {
  auto optimizer = make_optimizer(c, l.model->parameters());
  l.model->synchronise_batch_norm(nullptr);  // each rank trains its own copy now
  for (int i = 0; i < c.balance.personalize_epochs; ++i) {
    // Epochs past the shared ones are never scheduled: the sampler draws this rank's own seeds.
    const std::int64_t epoch = c.epochs + i;
    l.model->train();
    const std::int64_t steps = f.sampler->steps_in_epoch(epoch);
    Prefetcher pipe = training_batches(*f.examples, *f.sampler, *f.features, *l.stager, f.prefetch, epoch, steps, 0);
    for (std::int64_t step = 0; step < steps; ++step) {
      comm::set_position("personalization", epoch, step, steps);
      seed_dropout(l.model, c.seed, l.comm.rank(), epoch, step);
      const std::optional<MiniBatch> mb = pipe.next();
      // No gradient all-reduce carries a stop request here: every rank is asked each step.
      if (const int signal = l.comm.allreduce<std::int32_t>(stop_signal(), comm::Op::kMax); signal != 0) {
        pipe.stop_early();
        result.stop_signal = signal;
        result.stop_message = "stopped during --personalize, after the shared model had finished training";
        return;
      }
      if (l.task->examples(*mb) == 0) continue;
      optimizer->zero_grad();
      const BatchTensors t = l.stager->take(*mb);
      const torch::Tensor loss = l.task->loss_mean(l.model->forward(t), t);
      loss.backward();
      optimizer->step();
    }
  }
  result.personalized_full = f.all_neighbours != nullptr;
  DistSampler& sampler = result.personalized_full ? *f.all_neighbours : *f.sampler;
  result.personalized = evaluate_sampled(*l.task, l.model, sampler, *f.features, l.device, {}, shard.test_idx.widened());
}

}  // namespace

SplitMetrics Trainer::evaluate_sampled() { return evaluate(s_->learn, s_->feeds, s_->scoring, EvalMode::kSampled, /*with_test=*/true); }

TrainResult Trainer::fit() {
  TrainerParts& s = *s_;
  const TrainConfig& c = s.cfg;
  Learner& l = s.learn;
  Feeds& f = s.feeds;
  Checkpoints& k = s.ckpt;
  TrainState& state = k.state;
  TrainResult result;
  result.start_epoch = state.next_epoch;
  Progress progress(c.files.progress && l.comm.rank() == 0);
  if (k.resume_from_file)
    progress.message("resuming " + k.path + " at epoch " + std::to_string(state.next_epoch + 1) + " of " + std::to_string(c.epochs) + k.resumed_note);
  std::optional<MetricsLog> log;
  open_log(l.comm, c.files, k.resume_from_file, log);
  std::optional<OpRecorder> recorder;
  if (c.levers.profile_steps > 0) recorder.emplace();
  std::int64_t profiled_steps = 0;
  double profiled_s = 0;
  const auto t_train = Clock::now();
  // A checkpoint of a run that stopped early has nothing left to train.
  result.stopped_early = c.eval.patience > 0 && state.bad_evals >= c.eval.patience;
  for (int epoch = state.next_epoch; epoch < c.epochs && !result.stopped_early; ++epoch) {
    const auto t_epoch = Clock::now();
    EpochRecord r;
    r.epoch = epoch;
    SeedScheduler::Assignment plan = f.scheduler->assign(epoch);
    r.rebalance = std::move(plan.policy);
    r.plan_load = std::move(plan.load);
    r.moved = plan.moved;
    r.blas_core = blas_core();
    r.gemm = gemm_backend();
    const Counters before = counters(*f.sampler, *f.features, *l.allreducer);
    const EpochSums sums = train_epoch(l, f, s.scoring, k, c, epoch, progress, recorder && epoch == result.start_epoch ? &*recorder : nullptr);
    profiled_steps += sums.profiled_steps;
    profiled_s += sums.profiled_s;
    if (sums.stopped_after > 0) {
      state.next_epoch = epoch;
      state.next_step = sums.stopped_after;
      state.step_loss_sum = sums.loss_sum;
      state.step_correct = sums.train_stat;
      state.step_examples = sums.examples;
      stop(l, k, result, progress, epoch, c.epochs, sums.stopped_after, sums.steps, /*save=*/true);
      return result;
    }
    const double train_s = since(t_epoch) - sums.inner_eval_s;
    r.inner = sums.inner;
    const auto t_eval = Clock::now();
    if ((epoch + 1) % c.eval.every == 0 || epoch + 1 == c.epochs) {
      comm::set_position("validation", epoch);
      r.val = evaluate(l, f, s.scoring, c.eval.mode, /*with_test=*/false).val;
      r.evaluated = true;
      result.stopped_early = keep_best(state, *l.model, epoch, l.task->selection_score(r.val), c.eval.patience);
    }
    r.ranks = l.comm.allgather(rank_share(l.comm.rank(), sums, before, counters(*f.sampler, *f.features, *l.allreducer), train_s, since(t_eval) + sums.inner_eval_s));
    summarize(r, sums);
    std::vector<SeedScheduler::RankWork> work;
    for (const RankEpoch& k : r.ranks) work.push_back({k.seeds, k.busy_s});
    f.scheduler->update_costs(work, r.plan_load);
    r.epoch_s = l.comm.allreduce(since(t_epoch), comm::Op::kMax);
    state.next_epoch = epoch + 1;
    state.next_step = 0;
    state.step_loss_sum = state.step_correct = state.step_examples = 0;
    save_epoch(l, k, r, log);
    comm::set_position("end of epoch", epoch);
    progress.end_epoch(r);
    result.history.push_back(r);
    // A stop asked for during validation (or on the epoch's last step) takes effect here, with
    // the epoch's checkpoint just written.
    if (l.comm.allreduce<std::int32_t>(stop_signal(), comm::Op::kMax) != 0) {
      stop(l, k, result, progress, epoch + 1, c.epochs, 0, 0, /*save=*/false);
      return result;
    }
    if (result.stopped_early)
      progress.message("early stop: no better validation " + std::string(l.task->selection_name()) + " in " + std::to_string(c.eval.patience) +
                       " validations (best " + std::to_string(state.best_val) + " at epoch " + std::to_string(state.best_epoch + 1) + ")");
  }
  result.train_s = since(t_train);
  if (profiled_steps > 0) {
    // Every rank measures the rates at once (memory bandwidth shared as in training); a failure
    // anywhere fails every rank before the collectives of finish().
    comm::agree(l.comm, [&] {
      result.op_profile = recorder->profile(profiled_steps);
      result.op_profile->step_s = profiled_s;
    });
  }
  finish(l, f, s.scoring, state, c.eval, c.files, k.card, result);
  if (c.balance.personalize_epochs > 0) personalize(l, f, s.shard, c, result);
  return result;
}

}  // namespace shardgnn
