#include "trainer/checkpoint.hpp"

#include <torch/csrc/jit/serialization/export.h>
#include <torch/csrc/jit/serialization/pickler.h>
#include <torch/serialize.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <span>
#include <string_view>

#include "datasets/array_dir.hpp"
#include "datasets/error.hpp"
#include "datasets/fileio.hpp"

namespace shardgnn {

namespace {

constexpr const char* kFormat = "shardgnn-checkpoint";
constexpr std::int64_t kVersion = 2;
constexpr std::int64_t kOldestVersion = 1;  // no step: always an epoch boundary

// The whole file goes through stdio from memory: torch's zip writer finishes its archive in a
// destructor, where a write error (a full disk) could only abort the process.
void write_bytes_atomic(const std::string& path, const std::vector<char>& bytes) {
  write_file_atomic(path, [&](std::FILE* f) {
    if (!bytes.empty() && std::fwrite(bytes.data(), 1, bytes.size(), f) != bytes.size())
      throw InputError(path, "", std::string("write failed: ") + std::strerror(errno));
  });
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

// The archive torch wrote, from a sealed file's bytes, once its checksum holds.
std::vector<char> unseal(const std::string& path) {
  std::vector<char> bytes;
  {
    const MappedFile m = map_file(path);
    bytes.assign(reinterpret_cast<const char*>(m.bytes.data()), reinterpret_cast<const char*>(m.bytes.data()) + m.bytes.size());
  }
  const std::size_t n = bytes.size();
  const bool sealed = n >= kEndRecordBytes + kSealBytes && std::string_view(bytes.data() + n - kSealBytes, sizeof kSealTag - 1) == kSealTag;
  if (!sealed) throw InputError(path, "", "damaged checkpoint: no shardgnn checksum at its end (truncated, or not written by shardgnn)");
  const std::string want(bytes.data() + n - 8, 8);
  bytes.resize(n - kSealBytes);
  bytes[bytes.size() - 2] = 0;
  bytes[bytes.size() - 1] = 0;
  const std::string have = hex32(crc32_of(std::as_bytes(std::span(bytes))));
  if (have != want) throw InputError(path, "", "damaged checkpoint: checksum " + have + " differs from the recorded " + want + " (file changed or corrupt)");
  return bytes;
}

// Built by append: GCC 12 warns falsely (-Wrestrict) on "literal" + std::string&&.
std::string best_key(std::size_t i) {
  std::string key = "p";
  key += std::to_string(i);
  return key;
}

// torch's messages carry a backtrace after the first line; one line is enough here.
std::string first_line(const char* what) {
  std::string s(what);
  return s.substr(0, s.find('\n'));
}

}  // namespace

std::string CheckpointIdentity::describe() const {
  return model + " (hidden " + std::to_string(hidden) + ", " + std::to_string(layers) + " layers" + (model == "gat" ? ", " + std::to_string(heads) + " heads" : "") +
         ", " + optimizer + ", seed " + std::to_string(seed) + ") on '" + dataset + "' (" + std::to_string(num_nodes) + " nodes, " + std::to_string(in) +
         " features, " + std::to_string(classes) + " classes)";
}

void save_checkpoint(const std::string& path, const CheckpointIdentity& id, const torch::nn::Module& model, const torch::optim::Optimizer& optimizer,
                     const TrainState& state) {
  torch::serialize::OutputArchive a;
  a.write("format", c10::IValue(std::string(kFormat)));
  a.write("version", c10::IValue(kVersion));
  a.write("model_name", c10::IValue(id.model));
  a.write("optimizer_name", c10::IValue(id.optimizer));
  a.write("dataset", c10::IValue(id.dataset));
  a.write("hidden", c10::IValue(id.hidden));
  a.write("layers", c10::IValue(id.layers));
  a.write("heads", c10::IValue(id.heads));
  a.write("in_features", c10::IValue(id.in));  // keys become TorchScript names: "in" is reserved
  a.write("classes", c10::IValue(id.classes));
  a.write("num_nodes", c10::IValue(id.num_nodes));
  a.write("seed", c10::IValue(static_cast<std::int64_t>(id.seed)));
  a.write("next_epoch", c10::IValue(static_cast<std::int64_t>(state.next_epoch)));
  a.write("best_val", c10::IValue(state.best_val));
  a.write("best_epoch", c10::IValue(static_cast<std::int64_t>(state.best_epoch)));
  a.write("bad_evals", c10::IValue(static_cast<std::int64_t>(state.bad_evals)));
  a.write("next_step", c10::IValue(state.next_step));
  a.write("step_loss_sum", c10::IValue(state.step_loss_sum));
  a.write("step_correct", c10::IValue(state.step_correct));
  a.write("step_examples", c10::IValue(state.step_examples));
  torch::serialize::OutputArchive m, o, b;
  model.save(m);
  a.write("model", m);
  optimizer.save(o);
  a.write("optimizer", o);
  for (std::size_t i = 0; i < state.best.size(); ++i) b.write(best_key(i), state.best[i]);
  a.write("best_count", c10::IValue(static_cast<std::int64_t>(state.best.size())));
  a.write("best", b);
  std::vector<char> bytes;
  a.save_to([&](const void* data, std::size_t n) -> std::size_t {
    bytes.insert(bytes.end(), static_cast<const char*>(data), static_cast<const char*>(data) + n);
    return n;
  });
  seal(bytes);
  try {
    write_bytes_atomic(path, bytes);
  } catch (const InputError& e) {
    throw InputError(std::string("checkpoint not written, the previous one (if any) is intact: ") + e.what());
  }
}

void load_checkpoint(const std::string& path, const CheckpointIdentity& id, torch::nn::Module& model, torch::optim::Optimizer& optimizer, TrainState& state,
                     const torch::Device& device) {
  const std::vector<char> archive = unseal(path);
  torch::serialize::InputArchive a;
  try {
    a.load_from(archive.data(), archive.size(), device);
  } catch (const c10::Error& e) {
    throw InputError(path, "", "not a readable checkpoint: " + first_line(e.what_without_backtrace()));
  } catch (const std::exception& e) {  // TorchScript's parser reports with its own types
    throw InputError(path, "", "not a readable checkpoint: " + first_line(e.what()));
  }
  auto read = [&](const char* key) {
    c10::IValue v;
    if (!a.try_read(key, v)) throw InputError(path, "", std::string("not a shardgnn checkpoint (no '") + key + "' entry)");
    return v;
  };
  try {
    const c10::IValue format = read("format");
    if (!format.isString() || format.toStringRef() != kFormat) throw InputError(path, "", "not a shardgnn checkpoint");
    const std::int64_t version = read("version").toInt();
    if (version < kOldestVersion || version > kVersion)
      throw InputError(path, "", "checkpoint format version " + std::to_string(version) + ", this build reads " + std::to_string(kOldestVersion) + " to " +
                                     std::to_string(kVersion));
    CheckpointIdentity got;
    got.model = read("model_name").toStringRef();
    got.optimizer = read("optimizer_name").toStringRef();
    got.dataset = read("dataset").toStringRef();
    got.hidden = read("hidden").toInt();
    got.layers = read("layers").toInt();
    got.heads = read("heads").toInt();
    got.in = read("in_features").toInt();
    got.classes = read("classes").toInt();
    got.num_nodes = read("num_nodes").toInt();
    got.seed = static_cast<std::uint64_t>(read("seed").toInt());
    if (got.describe() != id.describe())
      throw InputError(path, "", "the checkpoint is of " + got.describe() + ", this run trains " + id.describe() +
                                     " (use another --checkpoint-dir, or --force to start over)");
    TrainState s;
    s.next_epoch = static_cast<int>(read("next_epoch").toInt());
    s.best_val = read("best_val").toDouble();
    s.best_epoch = static_cast<int>(read("best_epoch").toInt());
    s.bad_evals = static_cast<int>(read("bad_evals").toInt());
    if (version >= 2) {
      s.next_step = read("next_step").toInt();
      s.step_loss_sum = read("step_loss_sum").toDouble();
      s.step_correct = read("step_correct").toDouble();
      s.step_examples = read("step_examples").toDouble();
      if (s.next_step < 0) throw InputError(path, "", "damaged checkpoint: step " + std::to_string(s.next_step));
    }
    torch::serialize::InputArchive m, o, b;
    if (!a.try_read("model", m) || !a.try_read("optimizer", o) || !a.try_read("best", b)) throw InputError(path, "", "incomplete checkpoint");
    const std::int64_t best_count = read("best_count").toInt();
    for (std::int64_t i = 0; i < best_count; ++i) {
      torch::Tensor t;
      b.read(best_key(static_cast<std::size_t>(i)), t);
      s.best.push_back(t.to(device));
    }
    model.load(m);
    optimizer.load(o);
    state = std::move(s);
  } catch (const c10::Error& e) {
    throw InputError(path, "", "damaged checkpoint: " + first_line(e.what_without_backtrace()));
  } catch (const InputError&) {
    throw;
  } catch (const std::exception& e) {
    throw InputError(path, "", "damaged checkpoint: " + first_line(e.what()));
  }
}

void save_weights(const std::string& path, const torch::nn::Module& model) {
  c10::Dict<std::string, at::Tensor> dict;
  for (const auto& item : model.named_parameters()) dict.insert(item.key(), item.value().detach().to(torch::kCPU).contiguous());
  for (const auto& item : model.named_buffers()) dict.insert(item.key(), item.value().detach().to(torch::kCPU).contiguous());
  // torch::pickle_save, but without TorchScript's type tags: a tagged dict unpickles through
  // torch.jit._pickle.restore_type_tag, which torch.load(weights_only=True), the default since
  // PyTorch 2.6, refuses. Untagged, the archive holds only tensors, storages and a dict.
  std::vector<char> pickle;
  torch::jit::Pickler pickler([&](const char* data, std::size_t n) { pickle.insert(pickle.end(), data, data + n); }, /*tensor_table=*/nullptr,
                              /*type_renamer=*/nullptr, /*memoized_class_types=*/nullptr, /*get_tensor_id=*/nullptr, /*tag_aggregates=*/false);
  pickler.protocol();
  pickler.pushIValue(c10::IValue(dict));
  pickler.stop();
  std::vector<char> bytes;
  {
    caffe2::serialize::PyTorchStreamWriter writer([&](const void* data, std::size_t n) {
      bytes.insert(bytes.end(), static_cast<const char*>(data), static_cast<const char*>(data) + n);
      return n;
    });
    torch::jit::writeArchiveAndTensors("data", pickle.data(), pickle.size(), pickler.tensorData(), writer);
  }  // the writer finishes the zip when destroyed
  write_bytes_atomic(path, bytes);
}

}  // namespace shardgnn
