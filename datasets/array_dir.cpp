#include "datasets/array_dir.hpp"

#include <algorithm>
#include <cstdio>
#include <filesystem>

#include "datasets/error.hpp"
#include "datasets/fileio.hpp"
#include "datasets/json_util.hpp"

namespace fs = std::filesystem;

namespace shardgnn {

std::string hex32(std::uint32_t v) {
  char buf[9];
  std::snprintf(buf, sizeof buf, "%08x", v);
  return buf;
}

namespace {
// The "arrays" entry of a file just written, with its CRC.
boost::json::object listed_entry(const std::string& file, DType dtype, const std::vector<std::int64_t>& shape, std::uint32_t crc) {
  boost::json::array js;
  for (auto d : shape) js.push_back(d);
  return {{"file", file}, {"dtype", dtype_descr(dtype)}, {"shape", js}, {"crc32", hex32(crc)}};
}
}  // namespace

boost::json::object write_listed_array(const std::string& dir, const std::string& name, DType dtype, const void* data,
                                       const std::vector<std::int64_t>& shape, std::int64_t data_at) {
  const std::string file = name + ".npy";
  return listed_entry(file, dtype, shape, write_npy((fs::path(dir) / file).string(), dtype, data, shape, data_at));
}

boost::json::object write_listed_array_streamed(const std::string& dir, const std::string& name, DType dtype,
                                                const std::vector<std::int64_t>& shape, const std::function<void(const NpySink&)>& fill,
                                                std::int64_t data_at) {
  const std::string file = name + ".npy";
  return listed_entry(file, dtype, shape, write_npy_streamed((fs::path(dir) / file).string(), dtype, shape, fill, data_at));
}

boost::json::object write_listed_indices(const std::string& dir, const std::string& name, const CsrGraph& g, bool narrow) {
  const std::vector<std::int64_t> shape = {g.num_edges()};
  if (g.narrow_ids()) return write_listed_array(dir, name, DType::kInt32, g.narrow_indices().data(), shape);
  const auto ids = g.wide_indices().span();
  if (!narrow) return write_listed_array(dir, name, DType::kInt64, ids.data(), shape);
  return write_listed_array_streamed(dir, name, DType::kInt32, shape, [&](const NpySink& out) {
    constexpr std::size_t kChunk = std::size_t{1} << 20;  // 4 MiB of output at a time
    std::vector<std::int32_t> buf;
    for (std::size_t i = 0; i < ids.size(); i += kChunk) sink_ids(out, ids.data() + i, std::min(kChunk, ids.size() - i), true, buf);
  });
}

namespace {
std::string show_shape(const std::vector<std::int64_t>& s) {
  std::string t = "(";
  for (std::size_t i = 0; i < s.size(); ++i) t += (i ? ", " : "") + std::to_string(s[i]);
  return t + ")";
}
}  // namespace

std::string listed_file(const std::string& dir, const boost::json::object& arrays, const std::string& json_path, const std::string& name) {
  auto* entry = arrays.if_contains(name);
  if (!entry) throw InputError(json_path, "key 'arrays." + name + "'", "missing, this array is required");
  if (!entry->is_object()) throw InputError(json_path, "key 'arrays." + name + "'", "expected an object");
  return confined_path(dir, json_string(entry->get_object(), "file", json_path), json_path, "arrays." + name + ".file");
}

template <class T>
Array<T> load_listed_array(const std::string& dir, const boost::json::object& arrays, const std::string& json_path,
                           const std::string& name, const std::vector<std::int64_t>& expected, bool required, DType stored) {
  auto* entry = arrays.if_contains(name);
  if (!entry) {
    if (required) throw InputError(json_path, "key 'arrays." + name + "'", "missing, this array is required");
    return {};
  }
  NpyBuffer buf = map_npy(listed_file(dir, arrays, json_path, name));
  Array<T> arr = npy_view<T>(buf, static_cast<int>(expected.size()), stored);
  if (buf.header.shape != expected)
    throw InputError(buf.origin, at_byte(0), "shape " + show_shape(buf.header.shape) + ", expected " + show_shape(expected) + " from " + fs::path(json_path).filename().string());
  return arr;
}

CsrGraph load_listed_csr(const std::string& dir, const boost::json::object& arrays, const std::string& json_path, std::int64_t n, std::int64_t m) {
  auto indptr = load_listed_array<EdgeId>(dir, arrays, json_path, "indptr", {n + 1}, true);
  if (indptr[0] != 0 || indptr[static_cast<std::size_t>(n)] != m)
    throw InputError((fs::path(dir) / "indptr.npy").string(), "", "must start at 0 and end at the " + std::to_string(m) + " edges listed");
  // The listing says the width; the file's own header is then checked against it.
  const auto* entry = arrays.if_contains("indices");
  const auto* dtype = entry && entry->is_object() ? entry->get_object().if_contains("dtype") : nullptr;
  if (dtype && dtype->is_string() && dtype->get_string() == dtype_descr(DType::kInt32))
    return CsrGraph(std::move(indptr), load_listed_array<std::int32_t>(dir, arrays, json_path, "indices", {m}, true));
  return CsrGraph(std::move(indptr), load_listed_array<NodeId>(dir, arrays, json_path, "indices", {m}, true));
}

IntArray load_listed_ints(const std::string& dir, const boost::json::object& arrays, const std::string& json_path, const std::string& name,
                          const std::vector<std::int64_t>& expected, bool required) {
  const auto* entry = arrays.if_contains(name);
  const auto* dtype = entry && entry->is_object() ? entry->get_object().if_contains("dtype") : nullptr;
  const std::string listed = dtype && dtype->is_string() ? std::string(dtype->get_string()) : dtype_descr(DType::kInt64);
  if (listed == dtype_descr(DType::kInt8)) return load_listed_array<std::int8_t>(dir, arrays, json_path, name, expected, required);
  if (listed == dtype_descr(DType::kInt16)) return load_listed_array<std::int16_t>(dir, arrays, json_path, name, expected, required);
  if (listed == dtype_descr(DType::kInt32)) return load_listed_array<std::int32_t>(dir, arrays, json_path, name, expected, required);
  if (listed == dtype_descr(DType::kInt64)) return load_listed_array<std::int64_t>(dir, arrays, json_path, name, expected, required);
  throw InputError(json_path, "key 'arrays." + name + ".dtype'", "'" + listed + "', expected one of '<i8', '<i4', '<i2', '|i1'");
}

boost::json::object write_listed_ints(const std::string& dir, const std::string& name, const IntArray& values, DType as, std::int64_t data_at) {
  const std::vector<std::int64_t> shape = {static_cast<std::int64_t>(values.size())};
  return write_listed_array_streamed(dir, name, as, shape, [&](const NpySink& out) {
    auto narrowed = [&]<class T>() {
      constexpr std::size_t kChunk = std::size_t{1} << 18;
      std::vector<T> buf;
      values.visit([&](auto s) {
        for (std::size_t i = 0; i < s.size(); i += kChunk) {
          const std::size_t n = std::min(kChunk, s.size() - i);
          buf.resize(n);
          std::transform(s.begin() + static_cast<std::ptrdiff_t>(i), s.begin() + static_cast<std::ptrdiff_t>(i + n), buf.begin(), [](auto v) { return static_cast<T>(v); });
          out(buf.data(), n * sizeof(T));
        }
      });
    };
    switch (as) {
      case DType::kInt8: return narrowed.template operator()<std::int8_t>();
      case DType::kInt16: return narrowed.template operator()<std::int16_t>();
      case DType::kInt32: return narrowed.template operator()<std::int32_t>();
      case DType::kInt64: return narrowed.template operator()<std::int64_t>();
      default: throw std::logic_error("write_listed_ints: " + dtype_descr(as) + " is not a signed integer type");
    }
  }, data_at);
}

std::int64_t listed_length(const boost::json::object& arrays, const std::string& json_path, const std::string& name, std::size_t ndim) {
  auto* entry = arrays.if_contains(name);
  if (!entry || !entry->is_object()) return 0;
  auto* shape = entry->get_object().if_contains("shape");
  if (!shape || !shape->is_array() || shape->get_array().size() != ndim || !shape->get_array()[0].is_int64())
    throw InputError(json_path, "key 'arrays." + name + ".shape'", "expected a " + std::to_string(ndim) + "-element list of integers");
  return shape->get_array()[0].get_int64();
}

void verify_listed_checksums(const std::string& dir, const boost::json::object& arrays, const std::string& json_path,
                             std::vector<std::string>& errors) {
  for (const auto& kv : arrays) {
    if (!kv.value().is_object()) continue;
    const auto& o = kv.value().get_object();
    std::string path;
    try {
      path = confined_path(dir, json_string(o, "file", json_path), json_path, "arrays." + std::string(kv.key()) + ".file");
    } catch (const InputError& e) {
      errors.push_back(e.what());
      continue;
    }
    const std::string want = o.contains("crc32") ? json_string(o, "crc32", json_path) : "";
    const std::string have = hex32(crc32_of_file(path));
    if (!want.empty() && have != want)
      errors.push_back(path + ": checksum " + have + " differs from the recorded " + want + " (file changed or corrupt)");
  }
}

template Array<float> load_listed_array<float>(const std::string&, const boost::json::object&, const std::string&, const std::string&, const std::vector<std::int64_t>&, bool, DType);
template Array<std::int64_t> load_listed_array<std::int64_t>(const std::string&, const boost::json::object&, const std::string&, const std::string&, const std::vector<std::int64_t>&, bool, DType);
template Array<std::int16_t> load_listed_array<std::int16_t>(const std::string&, const boost::json::object&, const std::string&, const std::string&, const std::vector<std::int64_t>&, bool, DType);
template Array<std::int8_t> load_listed_array<std::int8_t>(const std::string&, const boost::json::object&, const std::string&, const std::string&, const std::vector<std::int64_t>&, bool, DType);
template Array<std::int32_t> load_listed_array<std::int32_t>(const std::string&, const boost::json::object&, const std::string&, const std::string&, const std::vector<std::int64_t>&, bool, DType);
template Array<std::uint16_t> load_listed_array<std::uint16_t>(const std::string&, const boost::json::object&, const std::string&, const std::string&, const std::vector<std::int64_t>&, bool, DType);
template Array<std::uint8_t> load_listed_array<std::uint8_t>(const std::string&, const boost::json::object&, const std::string&, const std::string&, const std::vector<std::int64_t>&, bool, DType);

}  // namespace shardgnn
