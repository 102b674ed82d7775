#include "trainer/predict.hpp"
#include "datasets/stopwatch.hpp"

#include <boost/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <numeric>
#include <vector>

#include "datasets/array_dir.hpp"
#include "datasets/error.hpp"
#include "datasets/fileio.hpp"
#include "datasets/npy.hpp"
#include "sampler/pipeline.hpp"
#include "sampler/typed_features.hpp"
#include "trainer/checkpoint.hpp"
#include "model/dist_embedding.hpp"
#include "trainer/evaluate.hpp"

namespace fs = std::filesystem;

namespace shardgnn {

namespace {


constexpr const char* kFormat = "shardgnn-predictions";

// One output file: its name, dtype and shape, the bytes of a row, and where its rows begin.
struct OutFile {
  std::string name;
  DType dtype;
  std::vector<std::int64_t> shape;
  std::string header;
  std::size_t row_bytes = 0;
};

OutFile out_file(std::string name, DType dtype, std::vector<std::int64_t> shape) {
  OutFile f{std::move(name), dtype, std::move(shape), {}, 0};
  f.header = npy_header(f.dtype, f.shape);
  f.row_bytes = dtype_size(f.dtype);
  for (std::size_t d = 1; d < f.shape.size(); ++d) f.row_bytes *= static_cast<std::size_t>(f.shape[d]);
  return f;
}

// The first output row each rank writes: even ranges, rank r's is [first[r], first[r + 1]).
std::vector<std::int64_t> write_ranges(std::int64_t rows, int ranks) {
  std::vector<std::int64_t> first(static_cast<std::size_t>(ranks) + 1);
  for (int r = 0; r <= ranks; ++r) first[static_cast<std::size_t>(r)] = rows * r / ranks;
  return first;
}

// Each owned row's output position (-1: not written): its dataset id (orig_ids, range-checked
// when the shard was loaded), or its place in `nodes`.
std::vector<std::int64_t> positions(const Shard& shard, std::span<const std::int64_t> nodes) {
  std::vector<std::int64_t> pos = shard.orig_ids.widened();
  if (nodes.empty()) return pos;
  // (dataset id, output position), sorted by id, searched once per owned row.
  std::vector<std::pair<std::int64_t, std::int64_t>> wanted(nodes.size());
  for (std::size_t p = 0; p < nodes.size(); ++p) wanted[p] = {nodes[p], static_cast<std::int64_t>(p)};
  std::sort(wanted.begin(), wanted.end());
  for (std::int64_t& d : pos) {
    const auto at = std::lower_bound(wanted.begin(), wanted.end(), std::pair{d, std::int64_t{-1}});
    d = at != wanted.end() && at->first == d ? at->second : -1;
  }
  return pos;
}

// The input's id of output row `p`.
std::int64_t original_id(const PredictOptions& o, std::int64_t p) {
  const std::int64_t d = o.nodes.empty() ? p : o.nodes[static_cast<std::size_t>(p)];
  return o.original_ids.empty() ? d : o.original_ids[static_cast<std::size_t>(d)];
}

// The output rows one rank writes, [first, first + count), as one buffer per file.
struct Slices {
  std::int64_t first = 0, count = 0;
  std::vector<std::vector<std::uint8_t>> bytes;
};

// Collective, phase one: every written row, as a record (position, embedding, prediction), to
// the rank whose range holds it, and this rank's range assembled. Two shards listing one dataset
// node (a damaged partition), or none listing it, is an error every rank reports.
Slices route_rows(const Shard& shard, const PredictOptions& o, const std::vector<OutFile>& files, std::span<const std::int64_t> first,
                  const torch::Tensor& emb, const torch::Tensor& pred, const comm::Communicator& comm) {
  const int ranks = comm.size();
  const std::size_t emb_bytes = files[0].row_bytes, pred_bytes = files[1].row_bytes, record = sizeof(std::int64_t) + emb_bytes + pred_bytes;
  const std::vector<std::int64_t> pos = positions(shard, o.nodes);
  std::vector<std::int64_t> counts(static_cast<std::size_t>(ranks), 0);
  std::vector<int> dest(pos.size(), -1);
  for (std::size_t i = 0; i < pos.size(); ++i) {
    if (pos[i] < 0) continue;
    dest[i] = static_cast<int>(std::upper_bound(first.begin(), first.end(), pos[i]) - first.begin()) - 1;
    counts[static_cast<std::size_t>(dest[i])] += static_cast<std::int64_t>(record);
  }
  std::vector<std::int64_t> at(static_cast<std::size_t>(ranks), 0);
  for (int r = 1; r < ranks; ++r) at[static_cast<std::size_t>(r)] = at[static_cast<std::size_t>(r) - 1] + counts[static_cast<std::size_t>(r) - 1];
  std::vector<std::uint8_t> send(static_cast<std::size_t>(at.back() + counts.back()));
  const auto* emb_p = static_cast<const std::uint8_t*>(emb.data_ptr());
  const auto* pred_p = static_cast<const std::uint8_t*>(pred.data_ptr());
  for (std::size_t i = 0; i < pos.size(); ++i) {
    if (dest[i] < 0) continue;
    std::uint8_t* w = send.data() + at[static_cast<std::size_t>(dest[i])];
    std::memcpy(w, &pos[i], sizeof(std::int64_t));
    std::memcpy(w + sizeof(std::int64_t), emb_p + i * emb_bytes, emb_bytes);
    std::memcpy(w + sizeof(std::int64_t) + emb_bytes, pred_p + i * pred_bytes, pred_bytes);
    at[static_cast<std::size_t>(dest[i])] += static_cast<std::int64_t>(record);
  }
  const std::vector<std::uint8_t> got = comm.alltoallv<std::uint8_t>(send, counts).data;
  std::vector<std::uint8_t>().swap(send);

  Slices s;
  s.first = first[static_cast<std::size_t>(comm.rank())];
  s.count = first[static_cast<std::size_t>(comm.rank()) + 1] - s.first;
  s.bytes.resize(files.size());
  for (std::size_t f = 0; f < files.size(); ++f) s.bytes[f].resize(static_cast<std::size_t>(s.count) * files[f].row_bytes);
  comm::agree(comm, [&] {
    std::vector<char> placed(static_cast<std::size_t>(s.count), 0);
    for (std::size_t off = 0; off + record <= got.size(); off += record) {
      std::int64_t p = 0;
      std::memcpy(&p, got.data() + off, sizeof p);
      const std::int64_t k = p - s.first;
      if (k < 0 || k >= s.count) throw std::logic_error("predict: row " + std::to_string(p) + " sent to the wrong rank");
      if (placed[static_cast<std::size_t>(k)])
        throw InputError(shard.dir, "", "two shards' orig_ids.npy list node " + std::to_string(original_id(o, p)) + " (run `shardgnn partition verify`)");
      placed[static_cast<std::size_t>(k)] = 1;
      std::memcpy(s.bytes[0].data() + k * emb_bytes, got.data() + off + sizeof p, emb_bytes);
      std::memcpy(s.bytes[1].data() + k * pred_bytes, got.data() + off + sizeof p + emb_bytes, pred_bytes);
    }
    if (const auto hole = std::find(placed.begin(), placed.end(), 0) - placed.begin(); hole < s.count)
      throw InputError(shard.dir, "", "no shard's orig_ids.npy lists node " + std::to_string(original_id(o, s.first + hole)) + " (run `shardgnn partition verify`)");
  });
  auto* ids = reinterpret_cast<std::int64_t*>(s.bytes[2].data());
  for (std::int64_t k = 0; k < s.count; ++k) ids[k] = original_id(o, s.first + k);
  return s;
}

// Collective, phase two: rank 0 makes the temporary folder and the files at their full size,
// every rank writes its range, rank 0 combines the ranges' CRC-32s into each file's, writes
// predictions.json (`meta` and the arrays) and puts the folder in place. Nothing is left on failure.
void write_output(const std::vector<OutFile>& files, const Slices& s, std::span<const std::int64_t> first, boost::json::object meta,
                  const PredictOptions& o, const comm::Communicator& comm) {
  const int rank = comm.rank();
  std::string tmp;
  comm::agree(comm, [&] {
    if (rank != 0) return;
    tmp = begin_dir_atomic(o.out_dir, o.overwrite);
    try {
      for (const OutFile& f : files)
        create_filled_file((fs::path(tmp) / (f.name + ".npy")).string(), std::as_bytes(std::span(f.header)), f.header.size() + static_cast<std::uint64_t>(f.shape[0]) * f.row_bytes);
    } catch (...) {
      std::error_code ec;
      fs::remove_all(tmp, ec);
      throw;
    }
  });
  try {
    {
      std::vector<char> name(tmp.begin(), tmp.end());
      comm.broadcast_vector(name, 0);
      tmp.assign(name.begin(), name.end());
    }
    std::vector<std::uint32_t> crcs(files.size(), 0);
    comm::agree(comm, [&] {
      for (std::size_t f = 0; f < files.size(); ++f) {
        const auto bytes = std::as_bytes(std::span(s.bytes[f]));
        crcs[f] = crc32_of(bytes);
        if (!bytes.empty()) write_at((fs::path(tmp) / (files[f].name + ".npy")).string(), files[f].header.size() + s.first * files[f].row_bytes, bytes);
      }
    });
    const auto all_crcs = comm.allgatherv<std::uint32_t>(crcs).data;
    comm::agree(comm, [&] {
      if (rank != 0) return;
      boost::json::object arrays;
      for (std::size_t f = 0; f < files.size(); ++f) {
        std::uint32_t crc = crc32_of(std::as_bytes(std::span(files[f].header)));
        for (std::size_t r = 0; r + 1 < first.size(); ++r)
          crc = crc32_concat(crc, all_crcs[r * files.size() + f], static_cast<std::uint64_t>(first[r + 1] - first[r]) * files[f].row_bytes);
        boost::json::array shape;
        for (const std::int64_t d : files[f].shape) shape.push_back(d);
        arrays[files[f].name] = {{"file", files[f].name + ".npy"}, {"dtype", dtype_descr(files[f].dtype)}, {"shape", shape}, {"crc32", hex32(crc)}};
      }
      meta["arrays"] = std::move(arrays);
      write_text_file_atomic((fs::path(tmp) / "predictions.json").string(), boost::json::serialize(meta) + "\n");
      commit_dir_atomic(tmp, o.out_dir, o.overwrite);
    });
  } catch (...) {
    std::error_code ec;
    if (rank == 0) fs::remove_all(tmp, ec);
    throw;
  }
}

}  // namespace

namespace {

// A typed graph's model over every owned node, in batches of kTypedBatch with every
// neighbour (the sampler the trainer's final full-neighbourhood score uses; layer-wise inference
// runs the homogeneous layers), the rows of featureless types from the run's per-rank embedding
// files. Collective over `comm`. Returns the output rows of the owned nodes; `emb` gets their rows
// after `layer` layers.
constexpr int kTypedBatch = 1024;
torch::Tensor typed_inference(Gnn& model, const Shard& shard, const comm::Communicator& comm, const torch::Device& device, std::int64_t layer,
                              const PredictOptions& o, torch::Tensor& emb) {
  const comm::Communicator feeds = comm.dup();
  SamplerConfig sc;
  const std::int64_t L = model->options.layers();
  sc.fanouts.assign(static_cast<std::size_t>(L), -1);
  sc.relation_fanouts.assign(static_cast<std::size_t>(L), std::vector<int>(shard.schema.relations().size(), -1));
  sc.batch_size = kTypedBatch;
  sc.prefetch = 0;
  sc.cache_policy = CachePolicy::kNone;
  const ShardView view(shard, feeds, sc.node_local);
  DistSampler sampler(view, feeds, sc);
  FeatureStore features(view, feeds);
  features.build_cache(sc, nullptr);
  if (shard.schema.featureless()) {
    auto tables = std::make_shared<TypedEmbeddings>(*features.typed(), shard.schema, model->input_width(), SparseEmbeddingOptions{}, 0, comm);
    comm::agree(comm, [&] {
      if (o.checkpoint.empty())
        throw InputError(o.weights, "", "the graph has node types without features, whose learnt rows live in the run folder's embedding files: pass the run folder");
      const TrainState written = checkpoint_state(o.checkpoint);
      load_embeddings(o.checkpoint, written, *tables, comm.rank(), written.ranks, /*rows_only=*/true);
    });
    model->use_embeddings(tables);
  }
  std::vector<NodeId> own(static_cast<std::size_t>(shard.graph.num_nodes()));
  std::iota(own.begin(), own.end(), shard.book.begin(shard.part));
  const auto batches = sampler.eval_batches(own);
  model->eval();
  torch::NoGradGuard no_grad;
  std::vector<torch::Tensor> outs, embs;
  for (std::size_t step = 0; step < batches.size(); ++step) {
    const MiniBatch mb = produce_batch(sampler, features, batches[step], kEvalEpoch, static_cast<std::int64_t>(step));
    if (mb.seeds().empty()) {
      model->skip_batch();
      continue;
    }
    const BatchTensors t = to_tensors(mb, device);
    torch::Tensor kept;
    outs.push_back(model->forward(t, layer, &kept));
    embs.push_back(kept);
  }
  model->use_embeddings(nullptr);
  const std::int64_t width = layer == 0 ? model->input_width() : model->layer_out_dim(layer - 1);
  emb = embs.empty() ? torch::zeros({0, width}) : torch::cat(embs);
  return outs.empty() ? torch::zeros({0, model->options.out()}) : torch::cat(outs);
}

}  // namespace

PredictResult predict(Gnn& model, const Shard& shard, const Task& task, bool score, const comm::Communicator& comm, const torch::Device& device,
                      const PredictOptions& o) {
  const std::int64_t L = model->options.layers();
  const std::int64_t layer = o.layer < 0 ? L - 1 : o.layer;
  const std::int64_t total_nodes = shard.book.num_nodes();
  comm::agree(comm, [&] {
    if (layer > L) throw InputError("--layer " + std::to_string(layer) + ": the model has " + std::to_string(L) + " layers (0 = the input features)");
    if (!o.original_ids.empty() && static_cast<std::int64_t>(o.original_ids.size()) != total_nodes)
      throw InputError("the dataset's node_ids.npy has " + std::to_string(o.original_ids.size()) + " entries, the input " + std::to_string(total_nodes) + " nodes");
    if (comm.rank() == 0) check_output_dir(o.out_dir, o.overwrite);  // before the work, not after it
  });

  PredictResult res;
  res.layer = layer;
  auto t0 = Clock::now();
  torch::Tensor emb;
  const torch::Tensor output = model->typed() ? typed_inference(model, shard, comm, device, layer, o, emb)
                                              : full_inference(model, shard, comm, device, o.chunk, kEvalSrcBytes, kEvalKeptBlockBytes, layer, &emb);
  if (score) res.metrics = score_full(task, output, shard, comm);
  const torch::Tensor emb_host = emb.to(torch::kCPU, torch::kFloat).contiguous();
  const torch::Tensor pred_host = task.predictions(output);
  res.inference_s = since(t0);
  t0 = Clock::now();

  res.rows = o.nodes.empty() ? total_nodes : static_cast<std::int64_t>(o.nodes.size());
  res.width = emb_host.size(1);
  std::vector<std::int64_t> pred_shape{res.rows};
  for (std::int64_t d = 1; d < pred_host.dim(); ++d) pred_shape.push_back(pred_host.size(d));
  if (pred_host.scalar_type() != torch::kLong && pred_host.scalar_type() != torch::kFloat) throw std::logic_error("predict: predictions must be int64 or float32");
  const DType pred_dtype = pred_host.scalar_type() == torch::kLong ? DType::kInt64 : DType::kFloat32;
  const std::vector<OutFile> files{out_file("embeddings", DType::kFloat32, {res.rows, res.width}), out_file("predictions", pred_dtype, pred_shape),
                                   out_file("node_ids", DType::kInt64, {res.rows})};
  const std::vector<std::int64_t> first = write_ranges(res.rows, comm.size());
  const Slices slices = route_rows(shard, o, files, first, emb_host, pred_host, comm);
  const GnnOptions& m = model->options;
  boost::json::array types;  // a typed graph's node types: their rows, contiguous in dataset order
  if (o.nodes.empty())
    for (int t = 0; t < m.schema().num_types(); ++t)
      types.push_back({{"name", m.schema().types()[static_cast<std::size_t>(t)].name}, {"first", m.schema().begin(t)},
                       {"count", m.schema().types()[static_cast<std::size_t>(t)].count}});
  write_output(files, slices, first,
               {{"format", kFormat},
                {"node_types", types},
                {"version", 1},
                {"created", o.created},
                {"model", {{"name", m.spec().name}, {"layers", m.layers()}, {"in", m.in()}, {"out", m.out()}, {"spec", boost::json::value_from(m.spec())}}},
                {"weights", o.weights},
                {"input", o.input},
                {"dataset", o.dataset},
                {"layer", layer},
                {"rows", res.rows},
                {"nodes", o.nodes.empty() ? "all" : "subset"},
                {"ranks", comm.size()}},
               o, comm);
  res.write_s = since(t0);
  return res;
}

}  // namespace shardgnn
