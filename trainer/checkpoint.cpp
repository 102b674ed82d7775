#include "trainer/checkpoint.hpp"

#include "model/dist_embedding.hpp"
#include "trainer/data_parallel.hpp"
#include "trainer/task.hpp"

#include <torch/csrc/jit/serialization/export.h>
#include <torch/csrc/jit/serialization/pickler.h>
#include <torch/serialize.h>
#include <torch/csrc/jit/serialization/pickle.h>
#include <caffe2/serialize/in_memory_adapter.h>
#include <caffe2/serialize/inline_container.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <limits>
#include <map>
#include <set>
#include <unordered_map>
#include <span>
#include <sstream>
#include <type_traits>
#include <string_view>

#include "datasets/array_dir.hpp"
#include "datasets/error.hpp"
#include "datasets/fileio.hpp"

namespace shardgnn {

namespace fs = std::filesystem;

namespace {

constexpr const char* kFormat = "shardgnn-checkpoint";
// Version 3: a pickled dictionary of plain values and tensors (version 2 was a TorchScript
// archive, whose code torch compiles on load: a damaged one crashed that compiler).
constexpr std::int64_t kVersion = 4;

// The whole file goes through stdio from memory: torch's zip writer finishes its archive in a
// destructor, where a write error (a full disk) could only abort the process.
void write_bytes_atomic(const std::string& path, const std::vector<char>& bytes) {
  write_file_atomic(path, [&](std::FILE* f) {
    if (!bytes.empty() && std::fwrite(bytes.data(), 1, bytes.size(), f) != bytes.size())
      throw InputError(path, "", std::string("write failed: ") + std::strerror(errno));
  });
}

// `value` as torch.save writes it: a zip of an untagged pickle (no TorchScript type tags, which
// torch.load(weights_only=True) refuses) and the tensors' storages. Python reads it with torch.load.
std::vector<char> pickle_archive(const c10::IValue& value) {
  std::vector<char> pickle;
  torch::jit::Pickler pickler([&](const char* data, std::size_t n) { pickle.insert(pickle.end(), data, data + n); }, /*tensor_table=*/nullptr,
                              /*type_renamer=*/nullptr, /*memoized_class_types=*/nullptr, /*get_tensor_id=*/nullptr, /*tag_aggregates=*/false);
  pickler.protocol();
  pickler.pushIValue(value);
  pickler.stop();
  std::vector<char> bytes;
  {
    caffe2::serialize::PyTorchStreamWriter writer([&](const void* data, std::size_t n) {
      bytes.insert(bytes.end(), static_cast<const char*>(data), static_cast<const char*>(data) + n);
      return n;
    });
    torch::jit::writeArchiveAndTensors("data", pickle.data(), pickle.size(), pickler.tensorData(), writer);
  }  // the writer finishes the zip when destroyed
  return bytes;
}

// A checkpoint's checksum rides in its zip archive's comment, which torch and unzip ignore: the
// CRC-32 of the archive as torch wrote it (comment length 0), checked before torch parses a byte.
constexpr char kSealTag[] = "shardgnn-crc32 ";
constexpr std::size_t kSealBytes = sizeof kSealTag - 1 + 8;
constexpr std::size_t kEndRecordBytes = 22;  // the zip end-of-central-directory record, comment excluded

void seal(std::vector<char>& zip) {
  if (zip.size() < kEndRecordBytes || zip[zip.size() - 2] != 0 || zip[zip.size() - 1] != 0)
    throw std::logic_error("checkpoint: torch's archive does not end in a bare zip end record");
  const std::string seal = kSealTag + hex32(crc32_of(std::as_bytes(std::span(zip))));
  zip[zip.size() - 2] = static_cast<char>(kSealBytes & 0xff);
  zip[zip.size() - 1] = static_cast<char>(kSealBytes >> 8);
  zip.insert(zip.end(), seal.begin(), seal.end());
}

// torch's messages carry a backtrace after the first line; one line is enough here.
std::string first_line(const char* what) {
  std::string s(what);
  return s.substr(0, s.find('\n'));
}

// A whole file's bytes (torch's reader takes them from memory).
std::vector<char> file_bytes(const std::string& path) {
  const MappedFile m = map_file(path);
  return {reinterpret_cast<const char*>(m.bytes.data()), reinterpret_cast<const char*>(m.bytes.data()) + m.bytes.size()};
}

// torch.save's archive unpickled; torch's refusal is an InputError naming `path`, after `what`.
c10::IValue unpickle(const std::string& path, const std::vector<char>& archive, const std::string& what) {
  try {
    return torch::pickle_load(archive);
  } catch (const c10::Error& e) {
    throw InputError(path, "", what + first_line(e.what_without_backtrace()));
  } catch (const std::exception& e) {
    throw InputError(path, "", what + first_line(e.what()));
  }
}

// The archive torch wrote, from a sealed file's bytes, once its checksum holds.
std::vector<char> unseal(const std::string& path) {
  std::vector<char> bytes = file_bytes(path);
  const std::size_t n = bytes.size();
  const bool sealed = n >= kEndRecordBytes + kSealBytes && std::string_view(bytes.data() + n - kSealBytes, sizeof kSealTag - 1) == kSealTag;
  if (!sealed) {
    // A whole zip archive without the seal is most likely a checkpoint of format 2 or earlier.
    const bool zip = n >= kEndRecordBytes && std::string_view(bytes.data(), 4) == "PK\x03\x04" &&
                     std::string_view(bytes.data() + n - kEndRecordBytes, 4) == "PK\x05\x06";
    throw InputError(path, "", zip ? "damaged checkpoint: no shardgnn checksum at its end; a whole archive, so probably written by a shardgnn older than "
                                     "checkpoint format 3, which this build cannot resume (start over with --force)"
                                   : "damaged checkpoint: no shardgnn checksum at its end (truncated, or not a shardgnn checkpoint)");
  }
  const std::string want(bytes.data() + n - 8, 8);
  bytes.resize(n - kSealBytes);
  bytes[bytes.size() - 2] = 0;
  bytes[bytes.size() - 1] = 0;
  const std::string have = hex32(crc32_of(std::as_bytes(std::span(bytes))));
  if (have != want) throw InputError(path, "", "damaged checkpoint: checksum " + have + " differs from the recorded " + want + " (file changed or corrupt)");
  return bytes;
}

// The optimiser keeps its per-parameter state under a key made from the parameter's TensorImpl:
// its address as text in libtorch 1.13, the address itself in 2.x.
template <class State>
typename State::key_type state_key(const State&, const torch::Tensor& p) {
  if constexpr (std::is_same_v<typename State::key_type, std::string>) {
    std::ostringstream key;
    key << p.unsafeGetTensorImpl();
    return key.str();
  } else {
    return p.unsafeGetTensorImpl();
  }
}

std::vector<torch::Tensor> optimizer_params(const torch::optim::Optimizer& o) {
  std::vector<torch::Tensor> params;
  for (const auto& group : o.param_groups())
    for (const auto& p : group.params()) params.push_back(p);
  return params;
}

// A tensor, or an empty one where the state has none yet (before the first step).
torch::Tensor or_empty(const torch::Tensor& t) { return t.defined() ? t.detach().to(torch::kCPU).contiguous() : torch::Tensor(torch::empty({0})); }

// Lists of element type Any: typed lists pickle through torch.jit helpers that
// torch.load(weights_only=True) refuses.
c10::impl::GenericList tensor_list(const std::vector<torch::Tensor>& v) {
  c10::impl::GenericList l(c10::AnyType::get());
  for (const auto& t : v) l.push_back(or_empty(t));
  return l;
}

}  // namespace

std::string CheckpointIdentity::describe() const {
  return model + " (hidden " + std::to_string(hidden) + ", " + std::to_string(layers) + " layers" + (model == "gat" ? ", " + std::to_string(heads) + " heads" : "") +
         ", " + optimizer + ", seed " + std::to_string(seed) + ") on '" + dataset + "' (" + std::to_string(num_nodes) + " nodes, " + std::to_string(in) +
         " features, " + std::to_string(classes) + " classes), partition " + partition;
}

void save_checkpoint(const std::string& path, const CheckpointIdentity& id, const torch::nn::Module& model, const torch::optim::Optimizer& optimizer,
                     const TrainState& state) {
  c10::impl::GenericDict d(c10::StringType::get(), c10::AnyType::get());
  d.insert("format", std::string(kFormat));
  d.insert("version", kVersion);
  d.insert("model_name", id.model);
  d.insert("optimizer_name", id.optimizer);
  d.insert("dataset", id.dataset);
  d.insert("hidden", id.hidden);
  d.insert("layers", id.layers);
  d.insert("heads", id.heads);
  d.insert("in_features", id.in);
  d.insert("classes", id.classes);
  d.insert("num_nodes", id.num_nodes);
  d.insert("seed", static_cast<std::int64_t>(id.seed));
  d.insert("partition", id.partition);
  if (!id.model_card.empty()) d.insert("model_card", id.model_card);
  d.insert("ranks", static_cast<std::int64_t>(state.ranks));
  d.insert("next_epoch", static_cast<std::int64_t>(state.next_epoch));
  d.insert("best_val", state.best_val);
  d.insert("best_epoch", static_cast<std::int64_t>(state.best_epoch));
  d.insert("bad_evals", static_cast<std::int64_t>(state.bad_evals));
  d.insert("next_step", state.next_step);
  d.insert("step_loss_sum", state.step_loss_sum);
  d.insert("step_correct", state.step_correct);
  d.insert("step_examples", state.step_examples);
  c10::Dict<std::string, torch::Tensor> weights;
  for (const auto& item : model.named_parameters()) weights.insert(item.key(), or_empty(item.value()));
  for (const auto& item : model.named_buffers()) weights.insert(item.key(), or_empty(item.value()));
  d.insert("model", weights);
  d.insert("best", tensor_list(state.best));
  // The optimiser's state per parameter, in parameter order (its options come from the config
  // and the learning-rate schedule, which a resumed run recomputes).
  std::vector<torch::Tensor> a, b, c;
  c10::impl::GenericList steps(c10::AnyType::get());
  for (const auto& p : optimizer_params(optimizer)) {
    const auto it = optimizer.state().find(state_key(optimizer.state(), p));
    const torch::optim::OptimizerParamState* st = it == optimizer.state().end() ? nullptr : it->second.get();
    if (const auto* adam = dynamic_cast<const torch::optim::AdamParamState*>(st)) {
      steps.push_back(adam->step());
      a.push_back(adam->exp_avg());
      b.push_back(adam->exp_avg_sq());
      c.push_back(adam->max_exp_avg_sq());
    } else if (const auto* sgd = dynamic_cast<const torch::optim::SGDParamState*>(st)) {
      steps.push_back(1);
      a.push_back(sgd->momentum_buffer());
      b.emplace_back();
      c.emplace_back();
    } else {
      steps.push_back(0);  // no state yet
      a.emplace_back();
      b.emplace_back();
      c.emplace_back();
    }
  }
  d.insert("opt_steps", steps);
  d.insert("opt_a", tensor_list(a));
  d.insert("opt_b", tensor_list(b));
  d.insert("opt_c", tensor_list(c));
  std::vector<char> bytes = pickle_archive(d);
  seal(bytes);
  try {
    write_bytes_atomic(path, bytes);
  } catch (const InputError& e) {
    throw InputError(std::string("checkpoint not written, the previous one (if any) is intact: ") + e.what());
  }
}

namespace {

// A checkpoint's root dictionary, read as torch unpickled it: every lookup fails as an InputError
// naming the file.
struct StoredCheckpoint {
  const std::string& path;
  c10::impl::GenericDict d;

  c10::IValue read(const char* key) const {
    const auto it = d.find(c10::IValue(std::string(key)));
    if (it == d.end()) throw InputError(path, "", std::string("not a shardgnn checkpoint (no '") + key + "' entry)");
    return it->value();
  }
  std::vector<torch::Tensor> tensors(const char* key, std::size_t count) const {
    const c10::IValue v = read(key);
    if (!v.isTensorList() && !v.isList()) throw InputError(path, "", std::string("damaged checkpoint: '") + key + "' is not a list of tensors");
    std::vector<torch::Tensor> out;
    for (const c10::IValue& t : v.toListRef()) out.push_back(t.toTensor());
    if (out.size() != count)
      throw InputError(path, "", std::string("damaged checkpoint: '") + key + "' holds " + std::to_string(out.size()) + " tensors, expected " + std::to_string(count));
    return out;
  }
  // A stored tensor goes in place of `like` only with the same shape and dtype.
  torch::Tensor restore(const torch::Tensor& from, const torch::Tensor& like, const std::string& what) const {
    if (from.sizes() != like.sizes() || from.scalar_type() != like.scalar_type())
      throw InputError(path, "", "damaged checkpoint: " + what + " has shape " + c10::str(from.sizes()) + ", expected " + c10::str(like.sizes()));
    return from.to(like.device()).clone();
  }
};

// The file's root dictionary, once its checksum holds and torch has unpickled it.
c10::impl::GenericDict read_root(const std::string& path) {
  const c10::IValue root = unpickle(path, unseal(path), "not a readable checkpoint: ");
  if (!root.isGenericDict()) throw InputError(path, "", "not a shardgnn checkpoint (not a dictionary)");
  return root.toGenericDict();
}

// A resumed run must train what the checkpoint holds: the same format, model, optimiser and data.
void check_identity(const StoredCheckpoint& ck, const CheckpointIdentity& id) {
  const c10::IValue format = ck.read("format");
  if (!format.isString() || format.toStringRef() != kFormat) throw InputError(ck.path, "", "not a shardgnn checkpoint");
  const std::int64_t version = ck.read("version").toInt();
  if (version != kVersion && version != 3)
    throw InputError(ck.path, "", "checkpoint format version " + std::to_string(version) + ", this build reads versions 3 and " + std::to_string(kVersion));
  CheckpointIdentity got;
  got.model = ck.read("model_name").toStringRef();
  got.optimizer = ck.read("optimizer_name").toStringRef();
  got.dataset = ck.read("dataset").toStringRef();
  got.hidden = ck.read("hidden").toInt();
  got.layers = ck.read("layers").toInt();
  got.heads = ck.read("heads").toInt();
  got.in = ck.read("in_features").toInt();
  got.classes = ck.read("classes").toInt();
  got.num_nodes = ck.read("num_nodes").toInt();
  got.seed = static_cast<std::uint64_t>(ck.read("seed").toInt());
  got.partition = version >= 4 ? ck.read("partition").toStringRef() : id.partition;  // version 3 did not record it
  if (got.describe() != id.describe())
    throw InputError(ck.path, "", "the checkpoint is of " + got.describe() + ", this run trains " + id.describe() +
                                      " (use another --checkpoint-dir, or --force to start over)");
}

// The run's counters; the best weights come later, once the optimiser's parameters are known.
TrainState read_train_state(const StoredCheckpoint& ck) {
  TrainState s;
  s.next_epoch = static_cast<int>(ck.read("next_epoch").toInt());
  s.best_val = ck.read("best_val").toDouble();
  s.best_epoch = static_cast<int>(ck.read("best_epoch").toInt());
  s.bad_evals = static_cast<int>(ck.read("bad_evals").toInt());
  s.next_step = ck.read("next_step").toInt();
  s.step_loss_sum = ck.read("step_loss_sum").toDouble();
  s.step_correct = ck.read("step_correct").toDouble();
  s.step_examples = ck.read("step_examples").toDouble();
  s.ranks = ck.read("version").toInt() >= 4 ? static_cast<int>(ck.read("ranks").toInt()) : 0;
  if (s.next_epoch < 0 || s.next_step < 0)
    throw InputError(ck.path, "", "damaged checkpoint: epoch " + std::to_string(s.next_epoch) + ", step " + std::to_string(s.next_step));
  return s;
}

using ModelCopies = std::vector<std::pair<torch::Tensor, torch::Tensor>>;  // (destination, value)

// The stored value of every parameter and buffer of `model`, checked, not yet copied in.
ModelCopies read_model(const StoredCheckpoint& ck, torch::nn::Module& model) {
  const c10::IValue weights_value = ck.read("model");
  if (!weights_value.isGenericDict()) throw InputError(ck.path, "", "damaged checkpoint: 'model' is not a dictionary");
  const c10::impl::GenericDict weights = weights_value.toGenericDict();
  ModelCopies model_copies;
  auto take = [&](const std::string& name, const torch::Tensor& dest) {
    const auto it = weights.find(c10::IValue(name));
    if (it == weights.end()) throw InputError(ck.path, "", "damaged checkpoint: no weights for '" + name + "'");
    model_copies.emplace_back(dest, ck.restore(it->value().toTensor(), dest, "'" + name + "'"));
  };
  for (const auto& item : model.named_parameters()) take(item.key(), item.value());
  for (const auto& item : model.named_buffers()) take(item.key(), item.value());
  return model_copies;
}

// The optimiser's state as save_checkpoint lists it: a step count and three tensors per parameter.
struct StoredOptimizer {
  std::vector<std::int64_t> steps;
  std::vector<torch::Tensor> a, b, c;
};

StoredOptimizer read_optimizer(const StoredCheckpoint& ck, std::size_t params) {
  const c10::IValue steps_value = ck.read("opt_steps");
  if (!steps_value.isIntList() && !steps_value.isList()) throw InputError(ck.path, "", "damaged checkpoint: 'opt_steps' is not a list");
  StoredOptimizer o;
  for (const c10::IValue& v : steps_value.toListRef()) o.steps.push_back(v.toInt());
  if (o.steps.size() != params)
    throw InputError(ck.path, "", "damaged checkpoint: optimiser state for " + std::to_string(o.steps.size()) + " parameters, expected " + std::to_string(params));
  o.a = ck.tensors("opt_a", params);
  o.b = ck.tensors("opt_b", params);
  o.c = ck.tensors("opt_c", params);
  return o;
}

// The best epoch's parameters (none before the first validation), onto `device`.
std::vector<torch::Tensor> read_best(const StoredCheckpoint& ck, const std::vector<torch::Tensor>& params, const torch::Device& device) {
  const auto best = ck.read("best");
  std::vector<torch::Tensor> best_stored;
  for (const c10::IValue& t : best.toListRef()) best_stored.push_back(t.toTensor());
  if (!best_stored.empty() && best_stored.size() != params.size())
    throw InputError(ck.path, "", "damaged checkpoint: best weights for " + std::to_string(best_stored.size()) + " tensors, expected " + std::to_string(params.size()));
  std::vector<torch::Tensor> out;
  for (std::size_t i = 0; i < best_stored.size(); ++i) out.push_back(ck.restore(best_stored[i], params[i], "best weights " + std::to_string(i)).to(device));
  return out;
}

using OptimizerStates = std::vector<std::unique_ptr<torch::optim::OptimizerParamState>>;

// The optimiser's per-parameter state objects, built and checked; null where a parameter has none.
OptimizerStates optimizer_states(const StoredCheckpoint& ck, const StoredOptimizer& o, const std::vector<torch::Tensor>& params, bool adam) {
  OptimizerStates opt_states(params.size());
  for (std::size_t i = 0; i < params.size(); ++i) {
    if (o.steps[i] == 0) continue;
    const std::string what = "optimiser state " + std::to_string(i);
    if (o.steps[i] < 0) throw InputError(ck.path, "", "damaged checkpoint: optimiser step " + std::to_string(o.steps[i]));
    if (adam) {
      auto st = std::make_unique<torch::optim::AdamParamState>();
      st->step(o.steps[i]);
      st->exp_avg(ck.restore(o.a[i], params[i], what));
      st->exp_avg_sq(ck.restore(o.b[i], params[i], what));
      if (o.c[i].numel() > 0) st->max_exp_avg_sq(ck.restore(o.c[i], params[i], what));
      opt_states[i] = std::move(st);
    } else if (o.a[i].numel() > 0) {  // SGD keeps state only as a momentum buffer
      auto st = std::make_unique<torch::optim::SGDParamState>();
      st->momentum_buffer(ck.restore(o.a[i], params[i], what));
      opt_states[i] = std::move(st);
    }
  }
  return opt_states;
}

// The one step that changes the model and the optimiser, after every check has passed.
void install(ModelCopies& model_copies, torch::optim::Optimizer& optimizer, const std::vector<torch::Tensor>& params, OptimizerStates& opt_states) {
  torch::NoGradGuard no_grad;
  for (auto& [dest, value] : model_copies) dest.copy_(value);
  optimizer.state().clear();
  for (std::size_t i = 0; i < params.size(); ++i)
    if (opt_states[i]) optimizer.state()[state_key(optimizer.state(), params[i])] = std::move(opt_states[i]);
}

}  // namespace

void load_checkpoint(const std::string& path, const CheckpointIdentity& id, torch::nn::Module& model, torch::optim::Optimizer& optimizer, TrainState& state,
                     const torch::Device& device) {
  const StoredCheckpoint ck{path, read_root(path)};
  try {
    check_identity(ck, id);
    TrainState s = read_train_state(ck);
    // Everything is read and checked before the model or the optimiser is touched.
    ModelCopies model_copies = read_model(ck, model);
    const std::vector<torch::Tensor> params = optimizer_params(optimizer);
    const StoredOptimizer stored = read_optimizer(ck, params.size());
    // The best epoch's model: its parameters, then its buffers (batch normalisation's statistics).
    s.best = read_best(ck, state_tensors(model), device);
    OptimizerStates opt_states = optimizer_states(ck, stored, params, dynamic_cast<torch::optim::Adam*>(&optimizer) != nullptr);
    install(model_copies, optimizer, params, opt_states);
    state = std::move(s);
  } catch (const c10::Error& e) {
    throw InputError(path, "", "damaged checkpoint: " + first_line(e.what_without_backtrace()));
  } catch (const InputError&) {
    throw;
  } catch (const std::exception& e) {
    throw InputError(path, "", "damaged checkpoint: " + first_line(e.what()));
  }
}

namespace {
constexpr char kEmbeddingFormat[] = "shardgnn-embeddings";

// "DIR/checkpoint-embeddings-rank1-" and its epoch and step: "DIR/checkpoint-embeddings-rank1-epoch3-step0.pt".
std::string embeddings_prefix(const std::string& path, int rank) {
  const fs::path p(path);
  return (p.parent_path() / (p.stem().string() + "-embeddings-rank" + std::to_string(rank) + "-")).string();
}
std::string embeddings_path(const std::string& path, const TrainState& state, int rank) {
  return embeddings_prefix(path, rank) + "epoch" + std::to_string(state.next_epoch) + "-step" + std::to_string(state.next_step) + ".pt";
}
}  // namespace

TrainState checkpoint_state(const std::string& path) {
  StoredCheckpoint ck{path, read_root(path)};
  return read_train_state(ck);
}

void save_embeddings(const std::string& path, const TrainState& state, const TypedEmbeddings& tables, int rank) {
  c10::impl::GenericDict d(c10::StringType::get(), c10::AnyType::get());
  d.insert("format", std::string(kEmbeddingFormat));
  d.insert("rank", static_cast<std::int64_t>(rank));
  d.insert("next_epoch", static_cast<std::int64_t>(state.next_epoch));
  d.insert("next_step", state.next_step);
  for (const int t : tables.types()) {
    const SparseEmbedding& e = tables.table(t).local();
    const std::string n = std::to_string(t);
    const std::vector<NodeId>& ids = tables.dataset_ids(t);
    d.insert("ids" + n, torch::tensor(std::vector<std::int64_t>(ids.begin(), ids.end()), torch::kInt64));
    d.insert("rows" + n, or_empty(e.rows()));
    d.insert("first" + n, or_empty(e.first()));
    d.insert("second" + n, or_empty(e.second()));
    d.insert("steps" + n, or_empty(e.steps()));
  }
  std::vector<char> bytes = pickle_archive(d);
  seal(bytes);
  const std::string file = embeddings_path(path, state, rank);
  try {
    write_bytes_atomic(file, bytes);
  } catch (const InputError& e) {
    throw InputError(std::string("checkpoint not written, the previous one (if any) is intact: ") + e.what());
  }
}

void drop_old_embeddings(const std::string& path, const TrainState& state, int rank) {
  const std::string prefix = embeddings_prefix(path, rank), keep = embeddings_path(path, state, rank);
  const fs::path dir = fs::path(path).parent_path().empty() ? fs::path(".") : fs::path(path).parent_path();
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const std::string name = (fs::path(path).parent_path() / entry.path().filename()).string();
    if (name.rfind(prefix, 0) == 0 && name != keep) fs::remove(entry.path(), ec);  // a leftover only costs disk
  }
}

namespace {

// An embedding file's entries, checked to be one.
struct EmbeddingFile {
  std::string file;
  c10::impl::GenericDict d;

  explicit EmbeddingFile(const std::string& f) : file(f), d(c10::StringType::get(), c10::AnyType::get()) {
    const c10::IValue root = unpickle(file, unseal(file), "not a readable embedding file: ");
    if (!root.isGenericDict()) throw InputError(file, "", "not a shardgnn embedding file (not a dictionary)");
    d = root.toGenericDict();
    if (!has("format") || !get("format").isString() || get("format").toStringRef() != kEmbeddingFormat) throw InputError(file, "", "not a shardgnn embedding file");
  }
  bool has(const std::string& key) const { return d.contains(key); }
  c10::IValue get(const std::string& key) const {
    if (!d.contains(key)) throw InputError(file, "", "no entry '" + key + "' (not the embedding rows of this run)");
    return d.at(key);
  }
  torch::Tensor tensor(const std::string& key) const {
    const c10::IValue v = get(key);
    if (!v.isTensor()) throw InputError(file, "", "entry '" + key + "' is not a tensor");
    const torch::Tensor x = v.toTensor();
    return x.numel() == 0 ? torch::Tensor() : x;
  }
};

std::string missing_rows(int rank) { return "missing: the checkpoint's embedding rows of rank " + std::to_string(rank) + " (the checkpoint folder must hold every rank's)"; }

}  // namespace

void load_embeddings(const std::string& path, const TrainState& state, TypedEmbeddings& tables, int rank, int written_by, bool rows_only) {
  if (tables.types().empty()) return;
  const int ranks = tables.table(tables.types().front()).book().parts();
  const int writers = written_by == 0 ? ranks : written_by;
  // This rank's rows by dataset id. The writers' files are read one at a time from this rank's
  // own on, until every row is found: as many ranks over the same partition read their own alone.
  struct Wanted {
    std::unordered_map<NodeId, std::int64_t> at;  // dataset id -> own row
    std::vector<char> filled;
  };
  std::vector<Wanted> wanted(tables.types().size());
  std::int64_t missing = 0;
  for (std::size_t i = 0; i < wanted.size(); ++i) {
    const std::vector<NodeId>& ids = tables.dataset_ids(tables.types()[i]);
    wanted[i].at.reserve(ids.size());
    for (std::size_t j = 0; j < ids.size(); ++j) wanted[i].at.emplace(ids[j], static_cast<std::int64_t>(j));
    wanted[i].filled.assign(ids.size(), 0);
    missing += static_cast<std::int64_t>(ids.size());
  }
  for (int i = 0; i < writers && missing > 0; ++i) {
    const int r = (rank + i) % writers;
    const std::string file = embeddings_path(path, state, r);
    if (!fs::exists(file)) throw InputError(file, "", missing_rows(r));
    const EmbeddingFile f(file);
    for (std::size_t w = 0; w < wanted.size(); ++w) {
      const int t = tables.types()[w];
      const std::string n = std::to_string(t);
      const SparseEmbedding& e = tables.table(t).local();
      // Rows only: the table keeps its own (unused) optimizer state, whichever the file holds.
      const auto state_of = [&](const std::string& key, const torch::Tensor& own) { return rows_only ? own : f.tensor(key); };
      if (!f.has("ids" + n)) {
        const bool any_ids = std::any_of(tables.types().begin(), tables.types().end(), [&](int u) { return f.has("ids" + std::to_string(u)); });
        if (any_ids) throw InputError(file, "", "holds no rows of node type " + n + " (another dataset's featureless types?)");
        if (writers != ranks || r != rank)
          throw InputError(file, "", "written by " + std::to_string(writers) + " ranks before embedding files kept their rows' node ids: resume on " +
                                         std::to_string(writers) + " ranks over the same partition");
        // Such a file holds this rank's rows as they are.
        if (!tables.table(t).local().restore(f.tensor("rows" + n), state_of("first" + n, e.first()), state_of("second" + n, e.second()),
                                             state_of("steps" + n, e.steps())))
          throw InputError(file, "", "its rows of node type " + n + " differ in shape from this run's table (another --hidden or optimizer)");
        missing -= static_cast<std::int64_t>(wanted[w].filled.size());
        std::fill(wanted[w].filled.begin(), wanted[w].filled.end(), 1);
        continue;
      }
      const torch::Tensor ids = f.tensor("ids" + n);
      if (!ids.defined()) continue;
      const torch::Tensor theirs = ids.to(torch::kInt64).contiguous().view(-1);
      const std::int64_t* v = theirs.data_ptr<std::int64_t>();
      std::vector<std::int64_t> from, to;
      for (std::int64_t j = 0; j < theirs.numel(); ++j)
        if (const auto it = wanted[w].at.find(v[j]); it != wanted[w].at.end()) {
          if (wanted[w].filled[static_cast<std::size_t>(it->second)]++)
            throw InputError(file, "entry 'ids" + n + "'", "node " + std::to_string(v[j]) + " has rows in two files of the checkpoint");
          from.push_back(j);
          to.push_back(it->second);
        }
      if (from.empty()) continue;
      missing -= static_cast<std::int64_t>(from.size());
      const torch::Tensor src = torch::tensor(from, torch::kInt64), at = torch::tensor(to, torch::kInt64);
      const auto pick = [&](const torch::Tensor& x) { return x.defined() && x.size(0) == theirs.numel() ? x.index_select(0, src) : x; };
      const auto state_rows = [&](const std::string& key, const torch::Tensor& own) { return rows_only ? (own.defined() ? own.index_select(0, at) : own) : pick(f.tensor(key)); };
      if (!tables.table(t).local().restore_rows(at, pick(f.tensor("rows" + n)), state_rows("first" + n, e.first()), state_rows("second" + n, e.second()),
                                                state_rows("steps" + n, e.steps())))
        throw InputError(file, "", "its rows of node type " + n + " differ in shape from this run's table (another --hidden or optimizer)");
    }
  }
  for (std::size_t w = 0; w < wanted.size(); ++w)
    if (const auto lacking = std::count(wanted[w].filled.begin(), wanted[w].filled.end(), 0); lacking > 0)
      throw InputError(embeddings_path(path, state, 0), "", "the checkpoint's embedding files hold no rows for " + std::to_string(lacking) + " of rank " +
                                                                std::to_string(rank) + "'s nodes of type " + std::to_string(tables.types()[w]) +
                                                                " (written for another dataset?)");
}

void save_weights(const std::string& path, const torch::nn::Module& model) {
  c10::Dict<std::string, at::Tensor> dict;
  for (const auto& item : model.named_parameters()) dict.insert(item.key(), item.value().detach().to(torch::kCPU).contiguous());
  for (const auto& item : model.named_buffers()) dict.insert(item.key(), item.value().detach().to(torch::kCPU).contiguous());
  write_bytes_atomic(path, pickle_archive(c10::IValue(dict)));
}

namespace {

std::string shape_text(c10::IntArrayRef sizes) {
  std::string t = "[";
  for (std::size_t i = 0; i < sizes.size(); ++i) t += (i ? ", " : "") + std::to_string(sizes[i]);
  return t + "]";
}

// Each storage record of a weights archive must be as long as the storage the pickle declares
// for it: torch's reader takes a record cut short into a storage of the declared size (the zip's
// own CRCs can be valid), and the tensor would read past what the file held. Records and storages
// are matched by size, as a multiset (the pickle's record keys are not visible from here).
void check_storages(const std::string& path, const std::vector<char>& bytes, const std::map<std::string, torch::Tensor>& w) {
  std::multiset<std::uint64_t> declared;
  std::set<const void*> seen;
  for (const auto& [key, t] : w) {
    const auto nbytes = static_cast<std::uint64_t>(t.storage().nbytes());
    if (nbytes > 0 && seen.insert(t.storage().data()).second) declared.insert(nbytes);
  }
  try {
    // Over the bytes already read, not a copy of them.
    caffe2::serialize::PyTorchStreamReader reader(std::make_shared<caffe2::serialize::MemoryReadAdapter>(bytes.data(), static_cast<off_t>(bytes.size())));
    for (const std::string& name : reader.getAllRecords()) {
      if (name.rfind("data/", 0) != 0) continue;
      const auto size = static_cast<std::uint64_t>(std::get<1>(reader.getRecord(name)));
      if (size == 0) continue;
      const auto it = declared.find(size);
      if (it == declared.end())
        throw InputError(path, "record '" + name + "'", "damaged weights file: " + std::to_string(size) + " bytes, the size of none of its tensors' storages");
      declared.erase(it);
    }
  } catch (const c10::Error& e) {
    throw InputError(path, "", "not a weights file in torch.save's format: " + first_line(e.what_without_backtrace()));
  }
  if (!declared.empty())
    throw InputError(path, "", "damaged weights file: a tensor's storage of " + std::to_string(*declared.begin()) + " bytes has no record of that size");
}

// A weights file's {name: tensor} dictionary.
std::map<std::string, torch::Tensor> read_tensor_dict(const std::string& path) {
  const std::vector<char> bytes = file_bytes(path);
  const c10::IValue root = unpickle(path, bytes, "not a weights file in torch.save's format: ");
  if (!root.isGenericDict()) throw InputError(path, "", "not a weights file: expected a dictionary of tensors (shardgnn train's weights.pt)");
  std::map<std::string, torch::Tensor> w;
  for (const auto& entry : root.toGenericDict()) {
    if (!entry.key().isString()) throw InputError(path, "", "not a weights file: a key is not a string");
    const std::string key = entry.key().toStringRef();
    if (!entry.value().isTensor()) throw InputError(path, "entry '" + key + "'", "expected a tensor");
    w[key] = entry.value().toTensor();
  }
  check_storages(path, bytes, w);
  return w;
}

}  // namespace

namespace {

// Every parameter `model` has must be in `w` with its shape, and nothing else may be; then its
// values are copied in, and the model goes to `device` in eval mode.
void fill_model(Gnn& model, const std::map<std::string, torch::Tensor>& w, const std::string& path, const std::string& what, const torch::Device& device) {
  torch::NoGradGuard no_grad;
  std::size_t matched = 0;
  // Parameters and buffers (batch normalisation's running statistics) alike.
  auto named = model->named_parameters();
  for (const auto& item : model->named_buffers()) named.insert(item.key(), item.value());
  for (auto& item : named) {
    const auto it = w.find(item.key());
    if (it == w.end()) throw InputError(path, "", "lacks entry '" + item.key() + "' (" + what + ")");
    if (it->second.sizes() != item.value().sizes())
      throw InputError(path, "entry '" + item.key() + "'", "has shape " + shape_text(it->second.sizes()) + ", " + what + " needs " +
                                                               shape_text(item.value().sizes()));
    item.value().copy_(it->second);
    ++matched;
  }
  if (matched != w.size())
    for (const auto& [key, t] : w)
      if (named.find(key) == nullptr)
        throw InputError(path, "entry '" + key + "'", "is not a parameter of " + what);
  model->to(device);
  model->eval();
}

// Entry `prefix`conv<l>.<name> of a weights dictionary, a `dims`-d floating-point tensor; else an
// InputError naming the file, the entry and the model `what` the other entries describe.
const torch::Tensor& layer_entry(const std::map<std::string, torch::Tensor>& w, const std::string& path, const std::string& prefix, std::int64_t l,
                                 const std::string& name, std::int64_t dims, const std::string& what) {
  const std::string key = prefix + "conv" + std::to_string(l) + "." + name;
  const auto it = w.find(key);
  if (it == w.end()) throw InputError(path, "", "lacks entry '" + key + "' (" + what + ")");
  if (it->second.dim() != dims || !it->second.is_floating_point())
    throw InputError(path, "entry '" + key + "'", "expected a " + std::to_string(dims) + "-d floating-point tensor, found " + shape_text(it->second.sizes()));
  return it->second;
}

// R-GCN or R-GAT weights (their entries under "rgnn."), read against the typed graph's schema.
Gnn load_relational_weights(const std::string& path, const std::map<std::string, torch::Tensor>& w, const GraphSchema* schema, const torch::Device& device) {
  const auto has = [&](const std::string& key) { return w.count(key) > 0; };
  if (schema == nullptr || !schema->typed())
    throw InputError(path, "", "an R-GCN or R-GAT model (rgnn.* entries): it runs on a typed graph, and this input has one node type");
  ModelConfig mc;
  mc.dropout = 0;
  mc.kind = has("rgnn.conv0.loop_weight") ? ModelKind::kRgcn : ModelKind::kRgat;
  const std::string key = mc.kind == ModelKind::kRgcn ? "loop_weight" : "self_fc.weight";
  std::int64_t layers = 0;
  while (has("rgnn.conv" + std::to_string(layers) + "." + key)) ++layers;
  const auto entry = [&](std::int64_t l, const std::string& name, std::int64_t dims) -> const torch::Tensor& {
    return layer_entry(w, path, "rgnn.", l, name, dims, model_name(mc.kind) + ", " + std::to_string(layers) + " layers");
  };
  if (layers == 0) throw InputError(path, "", "no first layer: expected rgnn.conv0.loop_weight (R-GCN) or rgnn.conv0.self_fc.weight (R-GAT)");
  std::int64_t hidden = 0, out = 0;
  if (mc.kind == ModelKind::kRgcn) {
    hidden = entry(0, "loop_weight", 2).size(0);
    out = entry(layers - 1, "loop_weight", 2).size(1);
    if (has("rgnn.conv0.basis")) mc.bases = static_cast<int>(std::clamp<std::int64_t>(entry(0, "basis", 3).size(0), 0, std::numeric_limits<int>::max()));
  } else {
    hidden = entry(0, "self_fc.weight", 2).size(1);
    mc.heads = static_cast<int>(std::clamp<std::int64_t>(entry(0, "bias", 2).size(0), 0, std::numeric_limits<int>::max()));
    out = entry(layers - 1, "bias", 2).size(1);
  }
  const auto width_ok = [](std::int64_t x) { return x >= 1 && x <= (std::int64_t{1} << 20); };
  if (!width_ok(hidden) || !width_ok(out) || layers > 64 || (mc.kind == ModelKind::kRgat && (mc.heads < 1 || hidden % mc.heads != 0)))
    throw InputError(path, "", "widths hidden " + std::to_string(hidden) + ", out " + std::to_string(out) + " make no " + model_name(mc.kind));
  mc.hidden = static_cast<int>(hidden);
  GnnOptions o(mc, 0, out, layers);
  o.schema(*schema);
  Gnn model(o);
  // The model's entries are named as the model names them now, without the old "rgnn." prefix.
  std::map<std::string, torch::Tensor> renamed;
  for (const auto& [key, t] : w) renamed[key.rfind("rgnn.", 0) == 0 ? key.substr(5) : key] = t;
  fill_model(model, renamed, path, "a " + model_name(mc.kind) + " of " + std::to_string(layers) + " layers over the input's schema", device);
  return model;
}

}  // namespace

namespace {

// Weights from before model cards: the model read off the entries' names and shapes.
Gnn load_legacy_weights(const std::string& path, const std::map<std::string, torch::Tensor>& w, const torch::Device& device, const GraphSchema* schema) {
  const auto has = [&](const std::string& key) { return w.count(key) > 0; };
  if (has("rgnn.conv0.loop_weight") || has("rgnn.conv0.self_fc.weight")) return load_relational_weights(path, w, schema, device);
  ModelConfig mc;
  mc.dropout = 0;
  std::string weight = "fc.weight";
  if (has("conv0.fc_self.weight")) {
    mc.kind = ModelKind::kSage;
    weight = "fc_self.weight";
  } else if (has("conv0.attn_l")) {
    mc.kind = ModelKind::kGat;
  } else if (has("conv0.fc.weight")) {
    mc.kind = ModelKind::kGcn;
  } else {
    throw InputError(path, "", "no first layer: expected conv0.fc_self.weight (GraphSAGE), conv0.attn_l (GAT) or conv0.fc.weight (GCN)");
  }
  std::int64_t layers = 0;
  while (has("conv" + std::to_string(layers) + "." + weight)) ++layers;
  const auto entry = [&](std::int64_t l, const std::string& name, std::int64_t dims) -> const torch::Tensor& {
    return layer_entry(w, path, "", l, name, dims, model_name(mc.kind) + ", " + std::to_string(layers) + " layers");
  };
  const std::int64_t in = entry(0, weight, 2).size(1);
  std::int64_t out = 0, hidden = 1;
  if (mc.kind == ModelKind::kGat) {
    mc.heads = static_cast<int>(std::clamp<std::int64_t>(entry(0, "attn_l", 3).size(1), 0, std::numeric_limits<int>::max()));
    out = entry(layers - 1, "attn_l", 3).size(2);
    hidden = layers > 1 ? entry(0, weight, 2).size(0) : mc.heads;
  } else {
    out = entry(layers - 1, weight, 2).size(0);
    if (layers > 1) hidden = entry(0, weight, 2).size(0);
  }
  // The widths must make a model, and each layer's entries fit the chain of widths, before one is
  // built: a crafted file must not size a model of gigabytes or divide by zero heads.
  const auto width_ok = [](std::int64_t w) { return w >= 1 && w <= std::numeric_limits<int>::max(); };
  if (!width_ok(in) || !width_ok(out) || !width_ok(hidden) || (mc.kind == ModelKind::kGat && (mc.heads < 1 || hidden % mc.heads != 0)))
    throw InputError(path, "", "widths in " + std::to_string(in) + ", hidden " + std::to_string(hidden) + ", out " + std::to_string(out) +
                                   (mc.kind == ModelKind::kGat ? ", heads " + std::to_string(mc.heads) : "") + " make no model");
  for (std::int64_t l = 0; l < layers; ++l) {
    const std::int64_t want_in = l == 0 ? in : hidden, want_out = l + 1 == layers ? out : hidden;
    const torch::Tensor& wl = entry(l, weight, 2);
    const std::int64_t rows = mc.kind == ModelKind::kGat ? (l + 1 == layers ? out * mc.heads : hidden) : want_out;
    if (wl.size(0) != rows || wl.size(1) != want_in)
      throw InputError(path, "entry 'conv" + std::to_string(l) + "." + weight + "'", "has shape " + shape_text(wl.sizes()) + ", the layers before and after it need [" +
                                                                                     std::to_string(rows) + ", " + std::to_string(want_in) + "]");
  }
  mc.hidden = static_cast<int>(hidden);
  Gnn model(GnnOptions(mc, in, out, layers));
  // A link-prediction model's MLP pair scorer (its weights saved with the layers').
  if (has("scorer.fc1.weight")) model->register_module("scorer", PairScorer(out, ScorerKind::kMlp));
  // Every parameter the widths imply must be there with its shape, and nothing else may be.
  fill_model(model, w, path, "a " + model_name(mc.kind) + " of " + std::to_string(layers) + " layers", device);
  return model;
}

}  // namespace

Gnn model_from_card(const ModelCard& card, const std::string& card_file) {
  GnnOptions o(card.spec, card.in, card.out);
  o.schema(card.schema).precision(card.precision).spec_file(card_file);
  Gnn model(o);
  // A link model's MLP or DistMult pair scorer trains and is saved with the layers.
  if (card.task == "link" && card.scorer != "dot") model->register_module("scorer", PairScorer(card.out, parse_scorer(card.scorer)));
  return model;
}

LoadedWeights load_weights(const std::string& path, const torch::Device& device, const GraphSchema* schema) {
  LoadedWeights loaded;
  const std::string card_file = card_path(path);
  if (!fs::exists(card_file)) {
    const std::map<std::string, torch::Tensor> w = read_tensor_dict(path);
    loaded.model = load_legacy_weights(path, w, device, schema);
    loaded.note = path + " has no model card (" + fs::path(card_file).filename().string() + "): the model was read off its tensors' names and shapes";
    return loaded;
  }
  loaded.card = read_model_card(card_file);
  check_card_weights(*loaded.card, card_file, path);
  if (schema != nullptr) check_card_schema(*loaded.card, card_file, *schema, "the input");
  const std::map<std::string, torch::Tensor> w = read_tensor_dict(path);
  loaded.model = model_from_card(*loaded.card, card_file);
  fill_model(loaded.model, w, path, "the model its card " + card_file + " describes", device);
  return loaded;
}

}  // namespace shardgnn
