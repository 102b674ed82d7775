// A folder of .npy arrays described by a JSON "arrays" object ({name: {file, dtype, shape,
// crc32}}): the shared mechanics of the dataset folder and the partitioned dataset's shards.
#pragma once

#include <boost/json.hpp>
#include <cstdint>
#include <string>
#include <vector>

#include "datasets/array.hpp"
#include "datasets/graph.hpp"
#include "datasets/int_array.hpp"
#include "datasets/npy.hpp"

namespace shardgnn {

// Writes `dir`/`name`.npy (atomically) and returns its entry for the "arrays" object. `data_at`
// as npy_header's.
boost::json::object write_listed_array(const std::string& dir, const std::string& name, DType dtype, const void* data,
                                       const std::vector<std::int64_t>& shape, std::int64_t data_at = -1);

// The same for data produced in pieces (see write_npy_streamed).
boost::json::object write_listed_array_streamed(const std::string& dir, const std::string& name, DType dtype,
                                                const std::vector<std::int64_t>& shape, const std::function<void(const NpySink&)>& fill,
                                                std::int64_t data_at = -1);

template <class T>
boost::json::object write_listed_array(const std::string& dir, const std::string& name, const std::vector<T>& v, std::int64_t data_at = -1) {
  return write_listed_array(dir, name, dtype_of<T>(), v.data(), {static_cast<std::int64_t>(v.size())}, data_at);
}

// Hands `n` 64-bit ids to `out` as int32 (through `buf`) when `narrow` (every id then fits: the
// caller knows their range), else as they are: what the writers of a CSR's ids share.
inline void sink_ids(const NpySink& out, const std::int64_t* ids, std::size_t n, bool narrow, std::vector<std::int32_t>& buf) {
  if (!narrow) return out(ids, n * sizeof(std::int64_t));
  buf.assign(ids, ids + n);
  out(buf.data(), n * sizeof(std::int32_t));
}

// A CSR's ids as `name`.npy at the graph's width, narrowed to int32 when `narrow` asks and they
// are wider.
boost::json::object write_listed_indices(const std::string& dir, const std::string& name, const CsrGraph& g, bool narrow);

// The path of the file listed for `name` (confined to `dir`), or an InputError.
std::string listed_file(const std::string& dir, const boost::json::object& arrays, const std::string& json_path, const std::string& name);

// Maps the array `name` listed in `arrays` (read from `json_path`) and checks its dtype (T's, or
// `stored` for T holding another type's bits) and its shape against `expected`. A missing entry
// is an error when `required`, else an empty array.
template <class T>
Array<T> load_listed_array(const std::string& dir, const boost::json::object& arrays, const std::string& json_path,
                           const std::string& name, const std::vector<std::int64_t>& expected, bool required, DType stored = dtype_of<T>());

// Maps a CSR listed as "indptr" (n + 1 offsets) and "indices" (m ids, int32 or int64 as
// listed), checking that the offsets start at 0 and end at m (O(1)).
CsrGraph load_listed_csr(const std::string& dir, const boost::json::object& arrays, const std::string& json_path, std::int64_t n, std::int64_t m);

// The signed integer array `name` listed in `arrays` at the width its listing gives (int8, int16,
// int32 or int64; int64 where the listing names none), its file checked against it and its shape
// against `expected`. A missing entry is an error when `required`, else an empty array.
IntArray load_listed_ints(const std::string& dir, const boost::json::object& arrays, const std::string& json_path, const std::string& name,
                          const std::vector<std::int64_t>& expected, bool required);
// Writes `values` (1-d) as `name`.npy in the signed type `as` (whose range holds every value: the
// caller knows it), converted a chunk at a time; `data_at` as npy_header's.
boost::json::object write_listed_ints(const std::string& dir, const std::string& name, const IntArray& values, DType as, std::int64_t data_at = -1);

// The length recorded for a 1-d array, or the rows of an `ndim`-d one (0 when absent).
std::int64_t listed_length(const boost::json::object& arrays, const std::string& json_path, const std::string& name, std::size_t ndim = 1);

// Compares every listed file's CRC-32 with the recorded one; appends one line per problem.
void verify_listed_checksums(const std::string& dir, const boost::json::object& arrays, const std::string& json_path,
                             std::vector<std::string>& errors);

std::string hex32(std::uint32_t v);

}  // namespace shardgnn
