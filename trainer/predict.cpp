#include "trainer/predict.hpp"

#include <boost/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <vector>

#include "datasets/array_dir.hpp"
#include "datasets/error.hpp"
#include "datasets/fileio.hpp"
#include "datasets/npy.hpp"
#include "trainer/evaluate.hpp"

namespace fs = std::filesystem;

namespace shardgnn {

namespace {

using Clock = std::chrono::steady_clock;
double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

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

// Each owned row's output position (-1: not written): its dataset id, or its place in `nodes`.
std::vector<std::int64_t> positions(const Shard& shard, std::span<const std::int64_t> nodes, std::int64_t total_nodes) {
  const std::size_t n_own = static_cast<std::size_t>(shard.graph.num_nodes());
  std::vector<std::int64_t> pos(n_own, -1);
  for (std::size_t i = 0; i < n_own; ++i) {
    const std::int64_t d = shard.orig_ids[i];
    if (d < 0 || d >= total_nodes)
      throw InputError(shard.dir, "part " + std::to_string(shard.part), "orig_ids.npy holds " + std::to_string(d) + ", outside the dataset's " +
                                                                            std::to_string(total_nodes) + " nodes");
    pos[i] = d;
  }
  if (nodes.empty()) return pos;
  // (dataset id, output position), sorted by id, searched once per owned row.
  std::vector<std::pair<std::int64_t, std::int64_t>> wanted(nodes.size());
  for (std::size_t p = 0; p < nodes.size(); ++p) wanted[p] = {nodes[p], static_cast<std::int64_t>(p)};
  std::sort(wanted.begin(), wanted.end());
  for (std::size_t i = 0; i < n_own; ++i) {
    const auto at = std::lower_bound(wanted.begin(), wanted.end(), std::pair{pos[i], std::int64_t{-1}});
    pos[i] = at != wanted.end() && at->first == pos[i] ? at->second : -1;
  }
  return pos;
}

// A tensor's bytes on the host, contiguous.
torch::Tensor host_rows(const torch::Tensor& t) { return t.to(torch::kCPU).contiguous(); }

}  // namespace

PredictResult predict(Gnn& model, const Shard& shard, const Task& task, bool score, const comm::Communicator& comm, const torch::Device& device,
                      const PredictOptions& o) {
  const std::int64_t L = model->options.layers();
  const std::int64_t layer = o.layer < 0 ? L - 1 : o.layer;
  const int rank = comm.rank(), ranks = comm.size();
  comm::agree(comm, [&] {
    if (layer > L) throw InputError("--layer " + std::to_string(layer) + ": the model has " + std::to_string(L) + " layers (0 = the input features)");
    if (rank == 0) check_output_dir(o.out_dir, o.overwrite);  // before the work, not after it
  });
  const std::int64_t total_nodes = comm.allreduce<std::int64_t>(shard.graph.num_nodes(), comm::Op::kSum);
  comm::agree(comm, [&] {
    if (!o.original_ids.empty() && static_cast<std::int64_t>(o.original_ids.size()) != total_nodes)
      throw InputError("the dataset's node_ids.npy has " + std::to_string(o.original_ids.size()) + " entries, the input " + std::to_string(total_nodes) + " nodes");
  });

  PredictResult res;
  res.layer = layer;
  auto t0 = Clock::now();
  torch::Tensor emb;
  const torch::Tensor output = full_inference(model, shard, comm, device, o.chunk, kEvalSrcBytes, kEvalKeptBlockBytes, layer, &emb);
  if (score) {
    const std::unique_ptr<TaskMetrics> metrics = task.make_metrics(shard.val_idx.size());
    metrics->add_full(output, shard);
    res.metrics = metrics->reduce(comm);
  }
  const torch::Tensor emb_host = host_rows(emb.to(torch::kFloat));
  const torch::Tensor pred_host = task.predictions(output);
  res.inference_s = since(t0);
  t0 = Clock::now();

  const std::int64_t rows = o.nodes.empty() ? total_nodes : static_cast<std::int64_t>(o.nodes.size());
  res.rows = rows;
  res.width = emb_host.size(1);
  std::vector<std::int64_t> pred_shape{rows};
  for (std::int64_t d = 1; d < pred_host.dim(); ++d) pred_shape.push_back(pred_host.size(d));
  const DType pred_dtype = pred_host.scalar_type() == torch::kLong ? DType::kInt64 : DType::kFloat32;
  if (pred_host.scalar_type() != torch::kLong && pred_host.scalar_type() != torch::kFloat) throw std::logic_error("predict: predictions must be int64 or float32");
  std::vector<OutFile> files{out_file("embeddings", DType::kFloat32, {rows, res.width}), out_file("predictions", pred_dtype, pred_shape),
                             out_file("node_ids", DType::kInt64, {rows})};
  const std::size_t emb_bytes = files[0].row_bytes, pred_bytes = files[1].row_bytes;

  // Phase one: every written row, as (position, embedding, prediction), to the rank writing it.
  const std::vector<std::int64_t> first = write_ranges(rows, ranks);
  std::vector<std::int64_t> pos;
  comm::agree(comm, [&] { pos = positions(shard, o.nodes, total_nodes); });
  const std::size_t record = sizeof(std::int64_t) + emb_bytes + pred_bytes;
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
  const auto* emb_p = static_cast<const std::uint8_t*>(emb_host.data_ptr());
  const auto* pred_p = static_cast<const std::uint8_t*>(pred_host.data_ptr());
  for (std::size_t i = 0; i < pos.size(); ++i) {
    if (dest[i] < 0) continue;
    std::uint8_t* w = send.data() + at[static_cast<std::size_t>(dest[i])];
    std::memcpy(w, &pos[i], sizeof(std::int64_t));
    std::memcpy(w + sizeof(std::int64_t), emb_p + i * emb_bytes, emb_bytes);
    std::memcpy(w + sizeof(std::int64_t) + emb_bytes, pred_p + i * pred_bytes, pred_bytes);
    at[static_cast<std::size_t>(dest[i])] += static_cast<std::int64_t>(record);
  }
  std::vector<std::uint8_t> got = comm.alltoallv<std::uint8_t>(send, counts).data;
  std::vector<std::uint8_t>().swap(send);

  // This rank's range of rows, each placed once.
  const std::int64_t mine0 = first[static_cast<std::size_t>(rank)], mine = first[static_cast<std::size_t>(rank) + 1] - mine0;
  std::vector<std::vector<std::uint8_t>> slices(files.size());
  for (std::size_t f = 0; f < files.size(); ++f) slices[f].resize(static_cast<std::size_t>(mine) * files[f].row_bytes);
  // Each row once: two shards listing one dataset node (a damaged partition) or none listing it
  // is an error every rank reports.
  const auto original = [&](std::int64_t p) {
    const std::int64_t d = o.nodes.empty() ? p : o.nodes[static_cast<std::size_t>(p)];
    return o.original_ids.empty() ? d : o.original_ids[static_cast<std::size_t>(d)];
  };
  comm::agree(comm, [&] {
    std::vector<char> placed(static_cast<std::size_t>(mine), 0);
    for (std::size_t off = 0; off + record <= got.size(); off += record) {
      std::int64_t p = 0;
      std::memcpy(&p, got.data() + off, sizeof p);
      const std::int64_t k = p - mine0;
      if (k < 0 || k >= mine) throw std::logic_error("predict: row " + std::to_string(p) + " sent to the wrong rank");
      if (placed[static_cast<std::size_t>(k)])
        throw InputError(shard.dir, "", "two shards' orig_ids.npy list node " + std::to_string(original(p)) + " (run `shardgnn partition verify`)");
      placed[static_cast<std::size_t>(k)] = 1;
      std::memcpy(slices[0].data() + k * emb_bytes, got.data() + off + sizeof p, emb_bytes);
      std::memcpy(slices[1].data() + k * pred_bytes, got.data() + off + sizeof p + emb_bytes, pred_bytes);
    }
    if (const auto hole = std::find(placed.begin(), placed.end(), 0) - placed.begin(); hole < mine)
      throw InputError(shard.dir, "", "no shard's orig_ids.npy lists node " + std::to_string(original(mine0 + hole)) + " (run `shardgnn partition verify`)");
  });
  std::vector<std::uint8_t>().swap(got);
  auto* ids = reinterpret_cast<std::int64_t*>(slices[2].data());
  for (std::int64_t k = 0; k < mine; ++k) ids[k] = original(mine0 + k);

  // Phase two: rank 0 makes the folder and the files at their full size; each rank writes its range.
  std::string tmp;
  comm::agree(comm, [&] {
    if (rank != 0) return;
    tmp = begin_dir_atomic(o.out_dir, o.overwrite);
    try {
      for (const OutFile& f : files) {
        const std::uint64_t size = f.header.size() + static_cast<std::uint64_t>(rows) * f.row_bytes;
        create_filled_file((fs::path(tmp) / (f.name + ".npy")).string(), std::as_bytes(std::span(f.header)), size);
      }
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
        const auto bytes = std::as_bytes(std::span(slices[f]));
        crcs[f] = crc32_of(bytes);
        if (!bytes.empty()) write_at((fs::path(tmp) / (files[f].name + ".npy")).string(), files[f].header.size() + mine0 * files[f].row_bytes, bytes);
      }
    });
    const auto all_crcs = comm.allgatherv<std::uint32_t>(crcs).data;
    comm::agree(comm, [&] {
      if (rank != 0) return;
      boost::json::object arrays;
      for (std::size_t f = 0; f < files.size(); ++f) {
        std::uint32_t crc = crc32_of(std::as_bytes(std::span(files[f].header)));
        for (int r = 0; r < ranks; ++r)
          crc = crc32_concat(crc, all_crcs[static_cast<std::size_t>(r) * files.size() + f],
                             static_cast<std::uint64_t>(first[static_cast<std::size_t>(r) + 1] - first[static_cast<std::size_t>(r)]) * files[f].row_bytes);
        boost::json::array shape;
        for (const std::int64_t d : files[f].shape) shape.push_back(d);
        arrays[files[f].name] = {{"file", files[f].name + ".npy"}, {"dtype", dtype_descr(files[f].dtype)}, {"shape", shape}, {"crc32", hex32(crc)}};
      }
      const GnnOptions& m = model->options;
      boost::json::object meta{{"format", kFormat},
                               {"version", 1},
                               {"created", o.created},
                               {"model",
                                {{"kind", model_name(m.kind())}, {"layers", m.layers()}, {"in", m.in()}, {"hidden", m.hidden()}, {"heads", m.heads()}, {"out", m.out()}}},
                               {"weights", o.weights},
                               {"input", o.input},
                               {"dataset", o.dataset},
                               {"layer", layer},
                               {"rows", rows},
                               {"nodes", o.nodes.empty() ? "all" : "subset"},
                               {"ranks", ranks},
                               {"arrays", arrays}};
      write_text_file_atomic((fs::path(tmp) / "predictions.json").string(), boost::json::serialize(meta) + "\n");
      commit_dir_atomic(tmp, o.out_dir, o.overwrite);
    });
  } catch (...) {
    std::error_code ec;
    if (rank == 0) fs::remove_all(tmp, ec);
    throw;
  }
  res.write_s = since(t0);
  return res;
}

}  // namespace shardgnn
