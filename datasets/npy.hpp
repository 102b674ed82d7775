// The numpy .npy format (versions 1.0, 2.0, 3.0): header parsing with full validation, typed
// reads with range-checked conversion, zero-copy memory-mapped loads, and atomic writes.
// Nothing is ever unpickled: object arrays are refused with a clear error.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "datasets/array.hpp"

namespace shardgnn {

// kFloat16 is IEEE half ('<f2'): typed reads into float widen it; views see its bits as uint16.
enum class DType { kBool, kInt8, kUInt8, kInt16, kUInt16, kInt32, kUInt32, kInt64, kUInt64, kFloat16, kFloat32, kFloat64, kOther };

std::size_t dtype_size(DType t);
// The little-endian numpy descr of a dtype, e.g. "<i8", "|b1".
std::string dtype_descr(DType t);

template <class T>
constexpr DType dtype_of();
template <> constexpr DType dtype_of<std::int8_t>() { return DType::kInt8; }
template <> constexpr DType dtype_of<std::uint8_t>() { return DType::kUInt8; }
template <> constexpr DType dtype_of<std::int16_t>() { return DType::kInt16; }
template <> constexpr DType dtype_of<std::uint16_t>() { return DType::kUInt16; }
template <> constexpr DType dtype_of<std::int32_t>() { return DType::kInt32; }
template <> constexpr DType dtype_of<std::uint32_t>() { return DType::kUInt32; }
template <> constexpr DType dtype_of<std::int64_t>() { return DType::kInt64; }
template <> constexpr DType dtype_of<std::uint64_t>() { return DType::kUInt64; }
template <> constexpr DType dtype_of<float>() { return DType::kFloat32; }
template <> constexpr DType dtype_of<double>() { return DType::kFloat64; }

struct NpyHeader {
  std::string descr;            // as written in the file, e.g. "<f4", "<U19", "|O"
  DType dtype = DType::kOther;  // kOther for anything we cannot read as numbers
  bool big_endian = false;
  bool fortran_order = false;
  std::vector<std::int64_t> shape;
  std::size_t data_offset = 0;  // bytes from the start of the .npy to the data

  std::int64_t count() const;   // product of the shape (1 for a 0-d array)
};

// A parsed .npy living in memory: a view into a mapping, or bytes we inflated. `origin` names it in
// errors (a path, or "archive.npz:member.npy").
struct NpyBuffer {
  std::string origin;
  NpyHeader header;
  std::shared_ptr<const void> keeper;  // keeps `bytes` alive
  std::span<const std::byte> bytes;    // the whole .npy, header included
  std::uint64_t base_offset = 0;       // offset of `bytes` in its file, for error positions

  std::span<const std::byte> data() const { return bytes.subspan(header.data_offset); }
};

// Parses and validates the header of the .npy in `bytes`; checks the data size against the shape.
NpyHeader parse_npy_header(std::span<const std::byte> bytes, const std::string& origin, std::uint64_t base_offset = 0);
// The same for an .npy of `total_bytes` of which `prefix` holds the first (the header must lie in
// it): an array read as a stream.
NpyHeader parse_npy_header(std::span<const std::byte> prefix, const std::string& origin, std::uint64_t base_offset, std::uint64_t total_bytes);

// Receives the next piece of an array's raw data bytes.
using ByteSink = std::function<void(std::span<const std::byte>)>;

// An array whose data arrive in pieces: a mapped file, or an npz member inflated as it is read, so
// that a large one is never whole in memory.
struct NpyStream {
  std::string origin;
  NpyHeader header;
  std::uint64_t data_base = 0;  // offset of the data in its file, for error positions
  // Hands the data bytes (after the header) to the sink, in order; may be called again.
  std::function<void(const ByteSink&)> data;
};

// A mapped array as a stream.
NpyStream npy_stream(const NpyBuffer& buf);

// The elements of a numeric array converted to T as npy_to_vector converts them, handed to `fn`
// in order, at most `piece` at a time, with the index of each piece's first element.
template <class T>
void npy_for_each(const NpyStream& s, int expected_ndim, std::size_t piece, const std::function<void(std::span<const T>, std::uint64_t first)>& fn);

// Maps `path` read-only and parses its header.
NpyBuffer map_npy(const std::string& path);
// Reads only the header of the .npy at `path` (checked against the file's size), without mapping
// it.
NpyHeader read_npy_header(const std::string& path);

// Reads the array as T, converting between numeric types: integers must fit T exactly, floats to
// integers are refused, float64 -> float32 rounds. Errors name the origin and the offending element.
// `expected_ndim` < 0 accepts any shape.
template <class T>
std::vector<T> npy_to_vector(const NpyBuffer& buf, int expected_ndim = -1);

// Zero-copy view of a file whose dtype is exactly T (little-endian, C order): the on-disk format
// of shardgnn's own datasets. Anything else is an error naming the file.
template <class T>
Array<T> npy_view(const NpyBuffer& buf, int expected_ndim);
// The same for a file of dtype `stored`, whose elements T holds bit for bit (the same size):
// float16 or bfloat16 features as uint16.
template <class T>
Array<T> npy_view(const NpyBuffer& buf, int expected_ndim, DType stored);

// The bytes of an .npy header (magic, version 1.0, or 2.0 when it needs it, and the padded dict)
// for an array of this dtype and shape: its data start right after them, on a 64-byte boundary,
// or, with `data_at` >= 0, at an offset congruent to `data_at` modulo kNpyPage (the dict padded
// by up to kNpyPage - 1 spaces more, within numpy's default max_header_size): a shard's array
// placed so that it continues, page for page, the same array of the parts before it (data_at: the
// bytes those hold), which lets a rank serving several parts map them end to end (map_end_to_end).
constexpr std::int64_t kNpyPage = 4096;
std::string npy_header(DType dtype, std::span<const std::int64_t> shape, std::int64_t data_at = -1);

// Writes an array with the given shape as .npy version 1.0 (or 2.0 if the header needs it),
// atomically: to a temporary name in the same folder, fsync, rename. Returns the CRC-32 of the
// file's bytes, computed from memory while writing (no second read of the file).
std::uint32_t write_npy(const std::string& path, DType dtype, const void* data, std::span<const std::int64_t> shape, std::int64_t data_at = -1);

// Receives the next piece of an array's data, in order.
using NpySink = std::function<void(const void* data, std::size_t bytes)>;

// write_npy for data produced in pieces, so a large array need never be whole in memory: `fill`
// passes the data to the sink in order, exactly the shape's bytes in all (fewer or more is a
// std::logic_error, and nothing is left on disk).
// `data_at` as npy_header's.
std::uint32_t write_npy_streamed(const std::string& path, DType dtype, std::span<const std::int64_t> shape,
                                 const std::function<void(const NpySink&)>& fill, std::int64_t data_at = -1);

template <class T>
std::uint32_t write_npy(const std::string& path, std::span<const T> data, std::vector<std::int64_t> shape = {}) {
  if (shape.empty()) shape = {static_cast<std::int64_t>(data.size())};
  return write_npy(path, dtype_of<T>(), data.data(), shape);
}

}  // namespace shardgnn
