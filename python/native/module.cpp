// shardgnn's native core for Python (the package `shardgnn`, python/shardgnn/): the partitioned
// graph, the distributed sampler and the feature store, with no torch in the process's link, so
// that it serves whatever torch the user has. Arrays cross as numpy views of the batch or the
// shard that holds them (no copy); the view keeps its owner alive.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "comm/communicator.hpp"
#include "comm/launcher.hpp"
#include "datasets/builder.hpp"
#include "datasets/dataset.hpp"
#include "datasets/error.hpp"
#include "datasets/feature_dtype.hpp"
#include "partition/input.hpp"
#include "sampler/config.hpp"
#include "sampler/examples.hpp"
#include "sampler/feature_store.hpp"
#include "sampler/halo.hpp"
#include "sampler/pipeline.hpp"
#include "sampler/rebalance.hpp"
#include "sampler/sampler.hpp"
#include "sampler/seed_scheduler.hpp"
#include "sampler/shard_view.hpp"

namespace py = pybind11;
namespace fs = std::filesystem;
using namespace shardgnn;

namespace {

// MPI and the world, brought up once per process (or adopted from mpi4py) and ended by finalize(),
// which the package registers with atexit.
struct Runtime {
  std::unique_ptr<comm::Environment> env;
  std::optional<comm::Communicator> world;
  comm::Communicator::CoreShare cores;
};
Runtime& runtime() {
  static Runtime r;
  return r;
}
const comm::Communicator& world() {
  Runtime& r = runtime();
  if (!r.world) {
    static int argc = 1;
    static char name[] = "python";
    static char* args[] = {name, nullptr};
    static char** argv = args;
    r.env = std::make_unique<comm::Environment>(argc, argv, /*threads=*/true, "shardgnn (python)");
    r.world.emplace(comm::Communicator::world());
    r.cores = r.world->core_share();
  }
  return *r.world;
}

// A numpy array viewing `n` elements of T at `data`, [rows, cols] when cols > 0, kept alive by `owner`.
template <class T>
py::array view(const T* data, std::int64_t rows, std::int64_t cols, py::handle owner) {
  if (cols > 0) return py::array_t<T>({rows, cols}, {cols * static_cast<std::int64_t>(sizeof(T)), static_cast<std::int64_t>(sizeof(T))}, data, owner);
  return py::array_t<T>({rows}, {static_cast<std::int64_t>(sizeof(T))}, data, owner);
}
py::array view(const IntArray& a, py::handle owner) {
  return a.visit([&](auto s) { return view(s.data(), static_cast<std::int64_t>(s.size()), 0, owner); });
}
// The feature rows as stored: float32, or 2-byte values as uint16 bits (widen() converts them).
py::array features_view(const FeatureTable& f, std::int64_t rows, py::handle owner) {
  if (f.feature_dim == 0) return py::array_t<float>(std::vector<py::ssize_t>{rows, 0});
  if (f.feature_dtype == FeatureDtype::kFloat32) return view(f.features.data(), rows, f.feature_dim, owner);
  return view(f.features16.data(), rows, f.feature_dim, owner);
}

// One rank's part of a partitioned dataset (its parts merged when there are more parts than
// ranks), or a dataset folder in one process, as `shardgnn train` loads them (partition/input.hpp):
// checksums verified, collective over the world.
struct Partition {
  std::string dir;
  Input in;
  const Shard& shard() const { return in.shard; }
  const DatasetMeta& meta() const { return in.meta; }
};

std::shared_ptr<Partition> open_partition(const std::string& dir, const std::string& scratch) {
  auto p = std::make_shared<Partition>();
  p->dir = dir;
  load_input(world(), dir, scratch, "is read", p->in);
  return p;
}

// What a batch's arrays view: the sampled batch itself.
struct Batch {
  MiniBatch mb;
  std::int64_t num_classes = 0;
  bool multilabel = false;
  bool relation_ids = false;  // its blocks carry each edge's relation
};

// A loader's sampling over a partition: the shards as this rank reads them, the distributed
// sampler and the feature store with its cache, on a communicator of their own. Collective to
// build; `check` (local: what the loader cannot take) runs first, under agree.
struct Sampling {
  std::shared_ptr<Partition> part;
  comm::Communicator comm;
  std::unique_ptr<ShardView> shards;
  std::unique_ptr<DistSampler> sampler;
  std::unique_ptr<FeatureStore> features;

  Sampling(std::shared_ptr<Partition> p, SamplerConfig c, const std::function<void(const Partition&)>& check)
      : part(std::move(p)), comm(world().dup()) {
    c.prefetch = 0;  // Python takes its batches on its own thread
    comm::agree(comm, [&] {
      validate(c);
      resolve_relation_fanouts(c, part->shard().schema);  // a typed graph's fanouts apply per relation
      check(*part);
    });
    shards = std::make_unique<ShardView>(part->shard(), comm, c.node_local);
    sampler = std::make_unique<DistSampler>(*shards, comm, c);
    features = std::make_unique<FeatureStore>(*shards, comm);
    features->build_cache(c, sampler.get());
  }
};

SamplerConfig sampler_config(std::vector<int> fanouts, int batch_size, std::uint64_t seed) {
  SamplerConfig c;
  c.fanouts = std::move(fanouts);
  c.batch_size = batch_size;
  c.seed = seed;
  return c;
}

// An epoch's batches through the prefetch pipeline (sampler/pipeline.hpp): `depth` batches sampled
// and fetched ahead on a thread of its own, on the loader's communicator, while Python trains on
// the current one (0: each batch made when asked). Python's lock is released while a batch is
// made or waited for, so the user's other threads run meanwhile.
class Epochs {
 public:
  Epochs(std::shared_ptr<Partition> part, SamplerConfig c, int depth, const std::function<void(const Partition&)>& check)
      : s(std::move(part), c, [&](const Partition& p) {
          if (depth < 0) throw InputError("prefetch: " + std::to_string(depth) + ", expected 0 or more batches");
          check(p);
        }),
        // The thread samples while Python all-reduces on the world: that needs an MPI that allows it.
        depth_(comm::thread_multiple() ? depth : 0) {}

  // Collective: the next batch, or none after the epoch's last.
  std::shared_ptr<Batch> next() {
    if (!pipe_) return nullptr;
    std::optional<MiniBatch> mb;
    try {
      py::gil_scoped_release unlocked;
      mb = pipe_->next();
    } catch (...) {
      pipe_.reset();  // its thread has ended with the error
      throw;
    }
    if (!mb) {
      pipe_.reset();
      return nullptr;
    }
    // Where the job stands, for the line a lost peer's deadline prints.
    comm::set_position("training (python loader)", mb->epoch, mb->step, steps_);
    auto b = std::make_shared<Batch>();
    b->mb = std::move(*mb);
    b->num_classes = s.part->shard().num_classes;
    b->multilabel = s.part->shard().multilabel;
    b->relation_ids = s.part->shard().schema.relation_ids();
    return b;
  }
  // Collective: ends the epoch before its last batch (every rank after the same number of next()),
  // so that every rank's thread leaves the same sampling collectives behind.
  void end() {
    if (!pipe_) return;
    py::gil_scoped_release unlocked;
    pipe_->stop_early();
    pipe_.reset();
  }
  // Begins `epoch` at `first_step` of its `steps` (produce: how a step's batch is made; empty: the
  // sampler's schedule). Returns steps.
  std::int64_t start(std::int64_t epoch, std::int64_t steps, std::int64_t first_step, Prefetcher::Produce produce) {
    end();
    if (first_step < 0 || first_step > steps) throw py::index_error("step " + std::to_string(first_step) + " of " + std::to_string(steps));
    steps_ = steps;
    py::gil_scoped_release unlocked;
    pipe_ = std::make_unique<Prefetcher>(*s.sampler, *s.features, epoch, steps, depth_, first_step, Prefetcher::Stage{}, std::move(produce));
    return steps;
  }

  Sampling s;

 private:
  int depth_;
  std::int64_t steps_ = 0;
  std::unique_ptr<Prefetcher> pipe_;
};

// What a node loader takes beyond the fanouts and the batch (NeighborLoader's keywords).
struct LoaderOptions {
  std::string split = "train";
  bool shuffle = true;
  std::uint64_t seed = 0;
  std::string seed_sampling = "shard";
  bool drop_last = false;
  int prefetch = 2;
};

SamplerConfig loader_config(std::vector<int> fanouts, int batch_size, const LoaderOptions& o) {
  SamplerConfig c = sampler_config(std::move(fanouts), batch_size, o.seed);
  // Seeds drawn from every rank's training nodes are anyone's: their labels come from their owners.
  c.remote_seeds = o.seed_sampling != "shard";
  return c;
}

// The batches of one split: the sampler's own shuffled schedule of training seeds (or one drawn
// from every rank's by a seed sampling other than the shard's), or an unshuffled split's fixed
// batches (the same every epoch, cut once). drop_last: a rank's last, short batch is left out
// (as an empty batch while another rank still has seeds).
class Loader {
 public:
  Loader(std::shared_ptr<Partition> part, std::vector<int> fanouts, int batch_size, LoaderOptions o)
      : sampling_(parse_seed_sampling(o.seed_sampling)),
        drop_last_(o.drop_last),
        e_(std::move(part), loader_config(std::move(fanouts), batch_size, o), o.prefetch, [&](const Partition&) {
          if (o.split != "train" && o.split != "val" && o.split != "test" && o.split != "all")
            throw InputError("split '" + o.split + "': expected train, val, test or all");
          if (sampling_ != SeedSampling::kShard && !(o.split == "train" && o.shuffle))
            throw InputError("seed_sampling '" + o.seed_sampling + "' draws training seeds: it needs split='train' and shuffle=True");
          if (sampling_ != SeedSampling::kShard && o.drop_last)
            throw InputError("drop_last: seed_sampling '" + o.seed_sampling + "' sizes every rank's batches alike already; drop_last takes seed_sampling='shard'");
        }) {
    if (sampling_ != SeedSampling::kShard) {
      scheduler_ = std::make_unique<SeedScheduler>(*e_.s.sampler, SeedScheduler::Options{RebalancePolicy::kNone, sampling_, 1.2, o.seed, nullptr});
      e_.s.comm.check_all(scheduler_->pool_size() > 0, "seed_sampling '" + o.seed_sampling + "': the partition has no labelled training nodes");
    }
    if (o.split == "train" && o.shuffle) return;
    const Shard& sh = e_.s.part->shard();
    std::vector<NodeId> seeds;
    if (o.split == "all") {
      for (NodeId v = sh.book.begin(sh.part); v < sh.book.end(sh.part); ++v) seeds.push_back(v);
    } else {
      seeds = (o.split == "train" ? sh.train_idx : o.split == "val" ? sh.val_idx : sh.test_idx).widened();
    }
    fixed_ = e_.s.sampler->eval_batches(seeds);
    if (drop_last_) drop_short(*fixed_);
  }

  // Collective: begins `epoch` at `first_step`; returns its steps (the same on every rank; a rank
  // whose seeds run out gets empty batches, which it must still take).
  std::int64_t begin_epoch(std::int64_t epoch, std::int64_t first_step) {
    if (fixed_) {
      const auto& fixed = *fixed_;
      return e_.start(epoch, static_cast<std::int64_t>(fixed.size()), first_step, [this, &fixed, epoch](std::int64_t step) {
        return produce_batch(*e_.s.sampler, *e_.s.features, fixed[static_cast<std::size_t>(step)], epoch, step);
      });
    }
    if (scheduler_) scheduler_->assign(epoch);
    else if (drop_last_) install_full_batches(epoch);
    return e_.start(epoch, e_.s.sampler->steps_in_epoch(epoch), first_step, {});
  }

 private:
  // The epoch's shuffled seeds without the short batch at their end (the order the sampler's own
  // schedule takes, so that the other batches are those of drop_last=False).
  void install_full_batches(std::int64_t epoch) {
    std::vector<NodeId> seeds = e_.s.sampler->shuffled_seeds(epoch);
    const std::int64_t B = e_.s.sampler->config().batch_size, full = static_cast<std::int64_t>(seeds.size()) / B;
    seeds.resize(static_cast<std::size_t>(full * B));
    e_.s.sampler->set_schedule(epoch, std::move(seeds), B, e_.s.comm.allreduce(full, comm::Op::kMax));
  }
  // Collective: fixed batches without this rank's short last one, then without the steps that are
  // empty on every rank.
  void drop_short(std::vector<std::vector<NodeId>>& batches) const {
    const auto B = static_cast<std::size_t>(e_.s.sampler->config().batch_size);
    std::int64_t used = 0;
    for (std::size_t k = 0; k < batches.size(); ++k) {
      if (batches[k].size() < B) batches[k].clear();
      if (!batches[k].empty()) used = static_cast<std::int64_t>(k) + 1;
    }
    batches.resize(static_cast<std::size_t>(e_.s.comm.allreduce(used, comm::Op::kMax)));
  }

  SeedSampling sampling_;
  bool drop_last_;

 public:
  Epochs e_;

 private:
  std::unique_ptr<SeedScheduler> scheduler_;
  std::optional<std::vector<std::vector<NodeId>>> fixed_;
};

// Link prediction's batches over a partition with an edge split (`shardgnn data split-edges`):
// this rank's training edges (u < v, u owned here) in an order keyed by seed, epoch and rank, each
// with `negatives` corrupted destinations, their endpoints the batch's seeds, the positives cut
// from the sampled blocks unless `exclude` is off: `train --task link`'s examples (EdgeExamples).
class LinkLoader {
 public:
  LinkLoader(std::shared_ptr<Partition> part, std::vector<int> fanouts, int batch_size, int negatives, std::uint64_t seed, bool exclude, int prefetch)
      : e_(std::move(part), link_config(std::move(fanouts), batch_size, seed), prefetch, [&](const Partition& p) {
          if (negatives < 0) throw InputError("negatives: " + std::to_string(negatives) + ", expected 0 or more");
          const Shard& sh = p.shard();
          if (!sh.edge_split)
            throw InputError(p.dir, "", "no held-out edges: link prediction needs a dataset split by `shardgnn data split-edges` before partitioning");
          examples_ = std::make_unique<EdgeExamples>(sh, batch_size, negatives, seed, exclude);
          examples_->check(SeedSampling::kShard, 0, sh.schema.typed());
        }) {}
  std::int64_t edges() const { return examples_->own(); }
  // Collective: `epoch`'s steps (the most any rank has), begun at `first_step`.
  std::int64_t begin_epoch(std::int64_t epoch, std::int64_t first_step) {
    return e_.start(epoch, examples_->steps(*e_.s.sampler, epoch), first_step, examples_->producer(*e_.s.sampler, *e_.s.features, epoch));
  }

 private:
  static SamplerConfig link_config(std::vector<int> fanouts, int batch_size, std::uint64_t seed) {
    SamplerConfig c = sampler_config(std::move(fanouts), batch_size, seed);
    c.remote_seeds = true;  // a pair's ends are anyone's nodes
    return c;
  }
  std::unique_ptr<EdgeExamples> examples_;  // before e_: its check fills it

 public:
  Epochs e_;
};

// Whole neighbourhoods, layer by layer, over every node (DGL's and PyG's layer-wise inference):
// this rank's own rows then its halo's form a layer's table; `exchange` fills the halo rows from
// their owners (one all-to-all a layer), and the owned rows' full in-neighbourhoods index that
// table (`indptr` over owned rows, `indices` as table rows), so a layer's output for every owned
// node is computed from the previous layer's rows without sampling.
class Layerwise {
 public:
  explicit Layerwise(std::shared_ptr<Partition> p) : part_(std::move(p)), comm_(world().dup()) {
    comm::agree(comm_, [&] { rows_ = neighbour_rows(part_->shard()); });
    plan_ = ask_halo(part_->shard(), comm_);
  }
  std::int64_t num_own() const { return part_->shard().graph.num_nodes(); }
  std::int64_t num_halo() const { return plan_.n_halo; }
  const Shard& shard() const { return part_->shard(); }
  const std::vector<std::int64_t>& rows() const { return rows_; }

  // Collective: the table of `own` ([num_own, width] float32 rows of this rank's nodes, in id
  // order): those rows, then the halo's from their owners. A wrong shape on any rank is an
  // InputError on every rank.
  py::array_t<float> exchange(py::array_t<float, py::array::c_style | py::array::forcecast> own) {
    const std::int64_t width = own.ndim() == 2 ? own.shape(1) : -1;
    comm::agree(comm_, [&] {
      if (own.ndim() != 2 || own.shape(0) != num_own())
        throw InputError("exchange: expected this rank's rows, shape [" + std::to_string(num_own()) + ", width], got " + std::to_string(own.ndim()) +
                         " dimensions" + (own.ndim() >= 1 ? " of " + std::to_string(own.shape(0)) + " rows" : std::string()));
    });
    const std::int64_t widest = comm_.allreduce(width, comm::Op::kMax), narrowest = comm_.allreduce(width, comm::Op::kMin);
    if (widest != narrowest)
      throw InputError("exchange: the ranks' rows are " + std::to_string(narrowest) + " to " + std::to_string(widest) + " wide; every rank passes one width");
    std::vector<float> halo;
    {
      py::gil_scoped_release unlocked;
      halo = exchange_halo_rows(plan_, std::span<const float>(own.data(), static_cast<std::size_t>(own.size())), width, comm_);
    }
    py::array_t<float> table({num_own() + num_halo(), width});
    float* out = table.mutable_data();
    std::copy_n(own.data(), own.size(), out);
    std::copy(halo.begin(), halo.end(), out + own.size());
    return table;
  }

 private:
  std::shared_ptr<Partition> part_;
  comm::Communicator comm_;
  std::vector<std::int64_t> rows_;
  HaloPlan plan_;
};

// Sums (or takes the min or max of) a contiguous numpy array over every rank, in place.
void allreduce_inplace(py::buffer b, const std::string& op) {
  const py::buffer_info info = b.request(/*writable=*/true);
  const comm::Op o = op == "sum" ? comm::Op::kSum : op == "min" ? comm::Op::kMin : op == "max" ? comm::Op::kMax
                                                                                               : throw py::value_error("op '" + op + "': expected sum, min or max");
  const auto n = static_cast<std::size_t>(info.size);
  bool contiguous = true;
  for (py::ssize_t i = info.ndim - 1, stride = info.itemsize; i >= 0; stride *= info.shape[static_cast<std::size_t>(i)], --i)
    contiguous = contiguous && (info.shape[static_cast<std::size_t>(i)] == 1 || info.strides[static_cast<std::size_t>(i)] == stride);
  if (!contiguous) throw py::value_error("allreduce_: the array must be C-contiguous");
  const comm::Communicator& w = world();
  const char kind = py::dtype(info).kind();
  if (kind == 'f' && info.itemsize == 4) w.allreduce_inplace(std::span(static_cast<float*>(info.ptr), n), o);
  else if (kind == 'f' && info.itemsize == 8) w.allreduce_inplace(std::span(static_cast<double*>(info.ptr), n), o);
  else if (kind == 'i' && info.itemsize == 8) w.allreduce_inplace(std::span(static_cast<std::int64_t*>(info.ptr), n), o);
  else if (kind == 'i' && info.itemsize == 4) w.allreduce_inplace(std::span(static_cast<std::int32_t*>(info.ptr), n), o);
  else throw py::value_error("allreduce_: float32, float64, int32 or int64 arrays, not '" + info.format + "'");
}

// One class per node, -1 unlabelled.
void read_classes(const py::array& a, std::int64_t num_nodes, Dataset& ds) {
  const auto y = py::array_t<std::int64_t, py::array::c_style | py::array::forcecast>::ensure(a);
  if (!y || y.ndim() != 1 || y.shape(0) != num_nodes)
    throw InputError("y: expected one class per node (-1: unlabelled), shape [" + std::to_string(num_nodes) + "], or label sets [" + std::to_string(num_nodes) +
                     ", classes] of 0 and 1");
  std::int64_t classes = 0;
  for (std::int64_t i = 0; i < num_nodes; ++i) {
    if (y.data()[i] < -1) throw InputError("y[" + std::to_string(i) + "]: " + std::to_string(y.data()[i]) + ", expected a class >= 0 or -1 (unlabelled)");
    classes = std::max(classes, y.data()[i] + 1);
  }
  ds.num_classes = classes;
  ds.labels = IntArray(Array<std::int64_t>(std::vector<std::int64_t>(y.data(), y.data() + num_nodes)));
}

// A set of labels per node: row i's nonzero columns (PyG's multi-label `y`, [N, C] of 0 and 1).
void read_label_sets(const py::array& a, std::int64_t num_nodes, Dataset& ds) {
  const auto y = py::array_t<std::int64_t, py::array::c_style | py::array::forcecast>::ensure(a);
  if (!y || y.shape(0) != num_nodes || y.shape(1) < 1)
    throw InputError("y: label sets take shape [num_nodes = " + std::to_string(num_nodes) + ", classes >= 1] of 0 and 1");
  const std::int64_t C = y.shape(1), row = label_row_bytes(C);
  std::vector<std::uint8_t> bits(static_cast<std::size_t>(num_nodes * row), 0);
  const auto v = y.unchecked<2>();
  for (std::int64_t i = 0; i < num_nodes; ++i)
    for (std::int64_t c = 0; c < C; ++c) {
      if (v(i, c) != 0 && v(i, c) != 1) throw InputError("y[" + std::to_string(i) + "][" + std::to_string(c) + "]: " + std::to_string(v(i, c)) + ", expected 0 or 1");
      if (v(i, c) == 1) set_label(bits.data() + i * row, c);
    }
  ds.num_classes = C;
  ds.multilabel = true;
  ds.label_bits = Array<std::uint8_t>(std::move(bits));
}

// A dataset folder from arrays (write_dataset in the package): the graph from its edges (src to
// dst, PyG's edge_index), cleaned as `data convert` cleans, then features, labels and splits,
// checked and written atomically by save_dataset.
void write_dataset(const std::string& dir, py::array_t<std::int64_t, py::array::c_style | py::array::forcecast> edge_index, std::int64_t num_nodes,
                   std::optional<py::array_t<float, py::array::c_style | py::array::forcecast>> x,
                   std::optional<py::array> y,
                   std::optional<py::array_t<std::int64_t, py::array::c_style | py::array::forcecast>> train,
                   std::optional<py::array_t<std::int64_t, py::array::c_style | py::array::forcecast>> val,
                   std::optional<py::array_t<std::int64_t, py::array::c_style | py::array::forcecast>> test, const std::string& name, bool symmetrize,
                   bool overwrite, const std::string& feature_dtype) {
  const std::optional<FeatureDtype> dtype = feature_dtype_named(feature_dtype);
  if (!dtype) throw InputError("feature_dtype '" + feature_dtype + "': expected float32, float16 or bfloat16");
  if (edge_index.ndim() != 2 || edge_index.shape(0) != 2) throw InputError("edge_index: expected shape [2, E], got " + std::to_string(edge_index.ndim()) + " dimensions");
  if (num_nodes < 0) throw InputError("num_nodes: " + std::to_string(num_nodes) + ", expected 0 or more");
  const std::int64_t E = edge_index.shape(1);
  const auto e = edge_index.unchecked<2>();
  EdgeList edges;
  edges.num_nodes = num_nodes;
  edges.src.resize(static_cast<std::size_t>(E));
  edges.dst.resize(static_cast<std::size_t>(E));
  for (std::int64_t i = 0; i < E; ++i)
    for (int r = 0; r < 2; ++r) {
      const std::int64_t v = e(r, i);
      if (v < 0 || v >= num_nodes)
        throw InputError("edge_index[" + std::to_string(r) + "][" + std::to_string(i) + "]: node " + std::to_string(v) + ", expected an id in [0, " + std::to_string(num_nodes) + ")");
      (r == 0 ? edges.src : edges.dst)[static_cast<std::size_t>(i)] = v;
    }
  CleanOptions clean;
  clean.symmetrize = symmetrize;
  clean.drop_self_loops = true;
  clean.drop_duplicates = true;
  BuiltGraph built = build_csr(std::move(edges), clean);
  Dataset ds;
  ds.name = name;
  ds.source = "python: shardgnn.write_dataset";
  ds.graph = std::move(built.graph);
  ds.cleaning = built.report;
  if (x) {
    if (x->ndim() != 2 || x->shape(0) != num_nodes) throw InputError("x: expected shape [num_nodes = " + std::to_string(num_nodes) + ", F]");
    ds.feature_dim = x->shape(1);
    ds.feature_dtype = *dtype;
    if (*dtype == FeatureDtype::kFloat32) {
      ds.features = Array<float>(std::vector<float>(x->data(), x->data() + x->size()));
    } else {
      // Stored 2 bytes a value, as `data convert --feature-dtype` stores them.
      std::vector<std::uint16_t> narrow(static_cast<std::size_t>(x->size()));
      const auto n = static_cast<std::size_t>(x->size());
      if (const std::size_t at = narrow_values(*dtype, x->data(), n, narrow.data()); at < n)
        throw_feature_overflow(*dtype, "x[" + std::to_string(at / static_cast<std::size_t>(ds.feature_dim)) + "]", x->data()[at]);
      ds.features16 = Array<std::uint16_t>(std::move(narrow));
    }
  }
  if (y && y->ndim() == 2) read_label_sets(*y, num_nodes, ds);
  else if (y) read_classes(*y, num_nodes, ds);
  const auto split = [&](const char* what, const auto& ids, IntArray& out) {
    if (!ids) return;
    std::vector<std::int64_t> v(ids->data(), ids->data() + ids->size());
    for (std::size_t i = 0; i < v.size(); ++i)
      if (v[i] < 0 || v[i] >= num_nodes) throw InputError(std::string(what) + "[" + std::to_string(i) + "]: node " + std::to_string(v[i]) + " out of range");
    out = IntArray(Array<std::int64_t>(std::move(v)));
  };
  split("train_idx", train, ds.train_idx);
  split("val_idx", val, ds.val_idx);
  split("test_idx", test, ds.test_idx);
  save_dataset(ds, dir, overwrite);
}

}  // namespace

PYBIND11_MODULE(_shardgnn, m) {
  m.doc() = "shardgnn's partitioned graph, distributed sampler and feature store (see the package shardgnn)";
  // An InputError (a bad file or argument) is a ValueError naming the file and the position.
  py::register_exception<InputError>(m, "InputError", PyExc_ValueError);
  py::register_exception<comm::CollectiveError>(m, "CollectiveError", PyExc_RuntimeError);

  m.def("init", [] { world(); }, "Brings MPI up (or adopts mpi4py's): collective over every process of the job.");
  m.def("finalize", [] {
    Runtime& r = runtime();
    r.world.reset();
    r.env.reset();
  });
  m.def("keep_exit_status_for_proxy", [](int sender) { comm::keep_exit_status_for_proxy(static_cast<pid_t>(sender)); }, py::arg("sender"));
  m.def("rank", [] { return world().rank(); });
  m.def("size", [] { return world().size(); });
  m.def("local_rank", [] { return (world(), runtime().cores.local_rank); });
  m.def("local_size", [] { return (world(), runtime().cores.ranks_on_node); });
  m.def("barrier", [] { world().barrier(); });
  m.def("collective_timeout", [] { return comm::collective_timeout(); });
  m.def("set_collective_timeout", [](double seconds) {
    if (!(seconds > 0)) throw InputError("collective_timeout: " + std::to_string(seconds) + " seconds, expected more than 0");
    comm::set_collective_timeout(seconds);
  }, py::arg("seconds"));
  m.def("allreduce_", &allreduce_inplace, py::arg("array"), py::arg("op") = "sum");
  m.def("write_dataset", &write_dataset, py::arg("path"), py::arg("edge_index"), py::arg("num_nodes"), py::arg("x") = py::none(), py::arg("y") = py::none(),
        py::arg("train_idx") = py::none(), py::arg("val_idx") = py::none(), py::arg("test_idx") = py::none(), py::arg("name") = "python",
        py::arg("symmetrize") = true, py::arg("overwrite") = false, py::arg("feature_dtype") = "float32");
  m.def("broadcast_bytes", [](py::bytes data, int root) {
    const std::string s = data;
    std::vector<char> v(s.begin(), s.end());
    world().broadcast_vector(v, root);
    return py::bytes(v.data(), v.size());
  });

  py::class_<Dataset, std::shared_ptr<Dataset>>(m, "Dataset")
      .def(py::init([](const std::string& dir) { return std::make_shared<Dataset>(load_dataset(dir)); }), py::arg("path"))
      .def_property_readonly("name", [](const Dataset& d) { return d.name; })
      .def_property_readonly("num_nodes", &Dataset::num_nodes)
      .def_property_readonly("num_edges", [](const Dataset& d) { return d.graph.num_edges(); })
      .def_property_readonly("feature_dim", [](const Dataset& d) { return d.feature_dim; })
      .def_property_readonly("feature_dtype", [](const Dataset& d) { return feature_dtype_name(d.feature_dtype); })
      .def_property_readonly("num_classes", [](const Dataset& d) { return d.num_classes; })
      .def_property_readonly("multilabel", [](const Dataset& d) { return d.multilabel; })
      .def_property_readonly("typed", [](const Dataset& d) { return d.schema.typed(); })
      // A relation id per entry of `indices` (rows ordered by relation, then neighbour), or None
      // where relations follow from the end types.
      .def_property_readonly("edge_relations", [](py::object self) -> py::object {
        const Dataset& d = self.cast<const Dataset&>();
        if (!d.schema.relation_ids()) return py::none();
        return view(d.edge_relations, self);
      })
      .def_property_readonly("indptr", [](py::object self) {
        const Dataset& d = self.cast<const Dataset&>();
        return view(d.graph.indptr().data(), static_cast<std::int64_t>(d.graph.indptr().size()), 0, self);
      })
      .def_property_readonly("indices", [](py::object self) {
        const Dataset& d = self.cast<const Dataset&>();
        return d.graph.narrow_ids() ? view(d.graph.narrow_indices().data(), d.graph.num_edges(), 0, self)
                                    : view(d.graph.wide_indices().data(), d.graph.num_edges(), 0, self);
      })
      .def_property_readonly("features", [](py::object self) {
        const Dataset& d = self.cast<const Dataset&>();
        return features_view(d, d.num_nodes(), self);
      })
      .def_property_readonly("labels", [](py::object self) {
        const Dataset& d = self.cast<const Dataset&>();
        return d.multilabel ? view(d.label_bits.data(), d.num_nodes(), label_row_bytes(d.num_classes), self) : view(d.labels, self);
      })
      .def_property_readonly("train_idx", [](py::object self) { return view(self.cast<const Dataset&>().train_idx, self); })
      .def_property_readonly("val_idx", [](py::object self) { return view(self.cast<const Dataset&>().val_idx, self); })
      .def_property_readonly("test_idx", [](py::object self) { return view(self.cast<const Dataset&>().test_idx, self); });

  py::class_<Partition, std::shared_ptr<Partition>>(m, "Partition")
      .def(py::init(&open_partition), py::arg("path"), py::arg("scratch") = "")
      .def_property_readonly("name", [](const Partition& p) { return p.meta().name; })
      .def_property_readonly("num_parts", [](const Partition& p) { return p.shard().book.parts(); })
      .def_property_readonly("num_nodes", [](const Partition& p) { return p.meta().num_nodes; })
      .def_property_readonly("num_edges", [](const Partition& p) { return p.meta().num_edges; })
      .def_property_readonly("feature_dim", [](const Partition& p) { return p.meta().feature_dim; })
      .def_property_readonly("feature_dtype", [](const Partition& p) { return feature_dtype_name(p.meta().feature_dtype); })
      .def_property_readonly("num_classes", [](const Partition& p) { return p.meta().num_classes; })
      .def_property_readonly("multilabel", [](const Partition& p) { return p.meta().multilabel; })
      .def_property_readonly("node_range", [](const Partition& p) { return std::pair(p.shard().book.begin(p.shard().part), p.shard().book.end(p.shard().part)); })
      .def_property_readonly("offsets", [](const Partition& p) { return p.shard().book.offsets(); })
      .def_property_readonly("node_types", [](const Partition& p) {
        // A typed graph's types (name, count, feature width), in type order; empty for one type.
        std::vector<std::tuple<std::string, std::int64_t, std::int64_t>> v;
        for (const NodeType& t : p.meta().schema.types()) v.emplace_back(t.name, t.count, t.feature_dim);
        return v;
      })
      .def_property_readonly("relations", [](const Partition& p) {
        std::vector<std::tuple<std::string, std::string, std::string>> v;
        for (const Relation& r : p.meta().schema.relations()) v.emplace_back(r.src, r.name, r.dst);
        return v;
      })
      .def_property_readonly("features", [](py::object self) {
        const Partition& p = self.cast<const Partition&>();
        return features_view(p.shard(), p.shard().graph.num_nodes(), self);
      })
      .def_property_readonly("labels", [](py::object self) {
        const Partition& p = self.cast<const Partition&>();
        const Shard& s = p.shard();
        return s.multilabel ? view(s.label_bits.data(), s.graph.num_nodes(), label_row_bytes(s.num_classes), self) : view(s.labels, self);
      })
      .def_property_readonly("orig_ids", [](py::object self) { return view(self.cast<const Partition&>().shard().orig_ids, self); })
      .def_property_readonly("train_idx", [](py::object self) { return view(self.cast<const Partition&>().shard().train_idx, self); })
      .def_property_readonly("val_idx", [](py::object self) { return view(self.cast<const Partition&>().shard().val_idx, self); })
      .def_property_readonly("test_idx", [](py::object self) { return view(self.cast<const Partition&>().shard().test_idx, self); })
      .def("held_out", [](py::object self, const std::string& which) {
        // An edge split's held-out pairs whose first node this rank owns (global ids).
        const Shard& s = self.cast<const Partition&>().shard();
        const Array<NodeId>* a = which == "val_pos" ? &s.val_pos : which == "val_neg" ? &s.val_neg : which == "test_pos" ? &s.test_pos
                               : which == "test_neg" ? &s.test_neg : nullptr;
        if (a == nullptr) throw py::value_error("held_out '" + which + "': expected val_pos, val_neg, test_pos or test_neg");
        return view(a->data(), static_cast<std::int64_t>(a->size()) / 2, 2, self);
      }, py::arg("which"));

  py::class_<Batch, std::shared_ptr<Batch>>(m, "Batch")
      .def_property_readonly("batch_size", [](const Batch& b) { return static_cast<std::int64_t>(b.mb.seeds().size()); })
      .def_property_readonly("epoch", [](const Batch& b) { return b.mb.epoch; })
      .def_property_readonly("step", [](const Batch& b) { return b.mb.step; })
      .def_property_readonly("n_id", [](py::object self) {
        const auto& n = self.cast<const Batch&>().mb.input_nodes();
        return view(n.data(), static_cast<std::int64_t>(n.size()), 0, self);
      })
      .def_property_readonly("num_layers", [](const Batch& b) { return static_cast<std::int64_t>(b.mb.blocks.size()); })
      .def("block", [](py::object self, std::int64_t h) {
        const Batch& b = self.cast<const Batch&>();
        if (h < 0 || h >= static_cast<std::int64_t>(b.mb.blocks.size())) throw py::index_error("block " + std::to_string(h));
        const Block& k = b.mb.blocks[static_cast<std::size_t>(h)];
        return py::make_tuple(view(k.indptr.data(), static_cast<std::int64_t>(k.indptr.size()), 0, self),
                              view(k.indices.data(), static_cast<std::int64_t>(k.indices.size()), 0, self), k.num_src, k.num_dst);
      }, py::arg("layer"))
      .def("relations", [](py::object self, std::int64_t h) -> py::object {
        // Block h's edges' relations (int32, aligned with its indices) on a graph with relation ids.
        const Batch& b = self.cast<const Batch&>();
        if (h < 0 || h >= static_cast<std::int64_t>(b.mb.blocks.size())) throw py::index_error("block " + std::to_string(h));
        const Block& k = b.mb.blocks[static_cast<std::size_t>(h)];
        if (!b.relation_ids) return py::none();
        return view(k.relations.data(), static_cast<std::int64_t>(k.relations.size()), 0, self);
      }, py::arg("layer"))
      .def("edge_index", [](const Batch& b, std::int64_t h) {
        // Block h as PyG's [2, E] (source row, destination row), made in one pass: a new array,
        // since the block stores destinations as CSR.
        if (h < 0 || h >= static_cast<std::int64_t>(b.mb.blocks.size())) throw py::index_error("block " + std::to_string(h));
        const Block& k = b.mb.blocks[static_cast<std::size_t>(h)];
        const auto E = static_cast<std::int64_t>(k.indices.size());
        py::array_t<std::int64_t> out({std::int64_t{2}, E});
        std::int64_t* src = out.mutable_data();
        std::int64_t* dst = src + E;
        std::copy(k.indices.begin(), k.indices.end(), src);
        for (std::int64_t d = 0; d < k.num_dst; ++d)
          std::fill(dst + k.indptr[static_cast<std::size_t>(d)], dst + k.indptr[static_cast<std::size_t>(d) + 1], d);
        return out;
      }, py::arg("layer"))
      .def_property_readonly("x", [](py::object self) {
        const MiniBatch& mb = self.cast<const Batch&>().mb;
        return view(mb.features.data(), static_cast<std::int64_t>(mb.input_nodes().size()), mb.feature_dim, self);
      })
      .def_property_readonly("y", [](py::object self) -> py::object {
        const Batch& b = self.cast<const Batch&>();
        if (const auto* c = std::get_if<ClassTargets>(&b.mb.targets)) return view(c->classes.data(), static_cast<std::int64_t>(c->classes.size()), 0, self);
        if (const auto* l = std::get_if<LabelSetTargets>(&b.mb.targets)) {
          const auto rows = static_cast<std::int64_t>(b.mb.seeds().size());
          return view(l->words.data(), rows, rows > 0 ? static_cast<std::int64_t>(l->words.size()) / rows : (b.num_classes + 63) / 64, self);
        }
        return py::none();
      })
      .def_property_readonly("node_type", [](py::object self) -> py::object {
        const auto& t = self.cast<const Batch&>().mb.node_types;
        if (!self.cast<const Batch&>().mb.typed()) return py::none();
        return view(t.data(), static_cast<std::int64_t>(t.size()), 0, self);
      })
      .def("type_at", [](py::object self, int t) {
        const MiniBatch& mb = self.cast<const Batch&>().mb;
        if (t < 0 || t >= static_cast<int>(mb.type_at.size())) throw py::index_error("node type " + std::to_string(t));
        const auto& a = mb.type_at[static_cast<std::size_t>(t)];
        return view(a.data(), static_cast<std::int64_t>(a.size()), 0, self);
      }, py::arg("type"))
      .def("type_x", [](py::object self, int t) -> py::object {
        const MiniBatch& mb = self.cast<const Batch&>().mb;
        if (t < 0 || t >= static_cast<int>(mb.type_at.size())) throw py::index_error("node type " + std::to_string(t));
        const auto& rows = mb.type_features[static_cast<std::size_t>(t)];
        const auto n = static_cast<std::int64_t>(mb.type_at[static_cast<std::size_t>(t)].size());
        if (rows.empty()) return py::none();  // a type without features
        return view(rows.data(), n, n > 0 ? static_cast<std::int64_t>(rows.size()) / n : 0, self);
      }, py::arg("type"))
      .def("type_ids", [](py::object self, int t) {
        const MiniBatch& mb = self.cast<const Batch&>().mb;
        if (t < 0 || t >= static_cast<int>(mb.type_ids.size())) throw py::index_error("node type " + std::to_string(t));
        const auto& a = mb.type_ids[static_cast<std::size_t>(t)];
        return view(a.data(), static_cast<std::int64_t>(a.size()), 0, self);
      }, py::arg("type"))
      .def_property_readonly("pairs", [](py::object self) -> py::object {
        const auto* p = std::get_if<PairTargets>(&self.cast<const Batch&>().mb.targets);
        if (p == nullptr) return py::none();
        return view(p->rows.data(), static_cast<std::int64_t>(p->rows.size()) / 3, 3, self);
      });

  py::class_<LoaderOptions>(m, "LoaderOptions")
      .def(py::init<>())
      .def_readwrite("split", &LoaderOptions::split)
      .def_readwrite("shuffle", &LoaderOptions::shuffle)
      .def_readwrite("seed", &LoaderOptions::seed)
      .def_readwrite("seed_sampling", &LoaderOptions::seed_sampling)
      .def_readwrite("drop_last", &LoaderOptions::drop_last)
      .def_readwrite("prefetch", &LoaderOptions::prefetch);

  py::class_<Loader>(m, "Loader")
      .def(py::init<std::shared_ptr<Partition>, std::vector<int>, int, LoaderOptions>(), py::arg("partition"), py::arg("fanouts"), py::arg("batch_size"),
           py::arg("options"))
      .def("begin_epoch", &Loader::begin_epoch, py::arg("epoch"), py::arg("first_step"))
      .def("next", [](Loader& l) { return l.e_.next(); })
      .def("end", [](Loader& l) { l.e_.end(); });

  py::class_<LinkLoader>(m, "LinkLoader")
      .def(py::init<std::shared_ptr<Partition>, std::vector<int>, int, int, std::uint64_t, bool, int>(), py::arg("partition"), py::arg("fanouts"),
           py::arg("batch_size"), py::arg("negatives"), py::arg("seed"), py::arg("exclude"), py::arg("prefetch"))
      .def_property_readonly("edges", &LinkLoader::edges)
      .def("begin_epoch", &LinkLoader::begin_epoch, py::arg("epoch"), py::arg("first_step"))
      .def("next", [](LinkLoader& l) { return l.e_.next(); })
      .def("end", [](LinkLoader& l) { l.e_.end(); });

  py::class_<Layerwise>(m, "Layerwise")
      .def(py::init<std::shared_ptr<Partition>>(), py::arg("partition"))
      .def_property_readonly("num_own", &Layerwise::num_own)
      .def_property_readonly("num_halo", &Layerwise::num_halo)
      .def_property_readonly("indptr", [](py::object self) {
        const auto& g = self.cast<const Layerwise&>().shard().graph;
        return view(g.indptr().data(), static_cast<std::int64_t>(g.indptr().size()), 0, self);
      })
      .def_property_readonly("indices", [](py::object self) {
        const auto& r = self.cast<const Layerwise&>().rows();
        return view(r.data(), static_cast<std::int64_t>(r.size()), 0, self);
      })
      .def_property_readonly("halo_ids", [](py::object self) { return view(self.cast<const Layerwise&>().shard().halo_nodes, self); })
      .def("exchange", &Layerwise::exchange, py::arg("rows"));
}
