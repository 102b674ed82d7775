#include "datasets/npy.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <fstream>
#include <functional>
#include <limits>
#include <stdexcept>
#include <type_traits>
#include <utility>

#include "datasets/error.hpp"
#include "datasets/feature_dtype.hpp"
#include "datasets/fileio.hpp"

namespace shardgnn {

std::size_t dtype_size(DType t) {
  switch (t) {
    case DType::kBool: case DType::kInt8: case DType::kUInt8: return 1;
    case DType::kInt16: case DType::kUInt16: case DType::kFloat16: return 2;
    case DType::kInt32: case DType::kUInt32: case DType::kFloat32: return 4;
    case DType::kInt64: case DType::kUInt64: case DType::kFloat64: return 8;
    case DType::kOther: return 0;
  }
  return 0;
}

std::string dtype_descr(DType t) {
  switch (t) {
    case DType::kBool: return "|b1";
    case DType::kInt8: return "|i1";
    case DType::kUInt8: return "|u1";
    case DType::kInt16: return "<i2";
    case DType::kUInt16: return "<u2";
    case DType::kInt32: return "<i4";
    case DType::kUInt32: return "<u4";
    case DType::kInt64: return "<i8";
    case DType::kUInt64: return "<u8";
    case DType::kFloat16: return "<f2";
    case DType::kFloat32: return "<f4";
    case DType::kFloat64: return "<f8";
    case DType::kOther: return "?";
  }
  return "?";
}

std::int64_t NpyHeader::count() const {
  std::int64_t n = 1;
  for (auto d : shape) n *= d;
  return n;
}

namespace {

constexpr char kMagic[] = "\x93NUMPY";

// A tiny parser for the Python dict literal of an .npy header, e.g.
// {'descr': '<f4', 'fortran_order': False, 'shape': (2708, 1433), }
class HeaderParser {
 public:
  HeaderParser(std::string_view text, const std::string& origin, std::uint64_t base)
      : s_(text), origin_(origin), base_(base) {}

  NpyHeader parse() {
    NpyHeader h;
    bool have_descr = false, have_order = false, have_shape = false;
    expect('{');
    while (true) {
      skip_ws();
      if (peek() == '}') { ++i_; break; }
      std::string key = string_literal();
      expect(':');
      skip_ws();
      if (key == "descr") {
        if (peek() == '[') fail("structured dtype (a list of fields) is not supported; expected a plain numeric dtype");
        h.descr = string_literal();
        have_descr = true;
      } else if (key == "fortran_order") {
        h.fortran_order = boolean();
        have_order = true;
      } else if (key == "shape") {
        h.shape = tuple();
        have_shape = true;
      } else {
        fail("unexpected key '" + key + "' in the header");
      }
      skip_ws();
      if (peek() == ',') { ++i_; continue; }
      expect('}');
      break;
    }
    if (!have_descr || !have_order || !have_shape) fail("header lacks one of 'descr', 'fortran_order', 'shape'");
    return h;
  }

 private:
  [[noreturn]] void fail(const std::string& what) const { throw InputError(origin_, at_byte(base_ + 10 + i_), what); }
  char peek() const { return i_ < s_.size() ? s_[i_] : '\0'; }
  void skip_ws() { while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\n' || s_[i_] == '\t')) ++i_; }
  void expect(char c) {
    skip_ws();
    if (peek() != c) fail(std::string("malformed header: expected '") + c + "'");
    ++i_;
  }
  std::string string_literal() {
    skip_ws();
    char q = peek();
    if (q != '\'' && q != '"') fail("malformed header: expected a quoted string");
    std::size_t start = ++i_;
    while (i_ < s_.size() && s_[i_] != q) ++i_;
    if (i_ >= s_.size()) fail("malformed header: unterminated string");
    return std::string(s_.substr(start, i_++ - start));
  }
  bool boolean() {
    if (s_.substr(i_, 4) == "True") { i_ += 4; return true; }
    if (s_.substr(i_, 5) == "False") { i_ += 5; return false; }
    fail("malformed header: expected True or False for 'fortran_order'");
  }
  std::vector<std::int64_t> tuple() {
    std::vector<std::int64_t> out;
    expect('(');
    while (true) {
      skip_ws();
      if (peek() == ')') { ++i_; break; }
      if (peek() == '-') fail("negative dimension in 'shape'");
      if (peek() < '0' || peek() > '9') fail("malformed header: expected a non-negative integer in 'shape'");
      std::int64_t v = 0;
      while (peek() >= '0' && peek() <= '9') {
        if (v > (std::numeric_limits<std::int64_t>::max() - 9) / 10) fail("dimension in 'shape' too large");
        v = v * 10 + (s_[i_++] - '0');
      }
      if (peek() == 'L') ++i_;  // Python 2 longs
      out.push_back(v);
      skip_ws();
      if (peek() == ',') ++i_;
    }
    return out;
  }

  std::string_view s_;
  const std::string& origin_;
  std::uint64_t base_;
  std::size_t i_ = 0;
};

void classify_descr(NpyHeader& h) {
  const std::string& d = h.descr;
  h.dtype = DType::kOther;
  if (d.size() < 2) return;
  char order = d[0];
  std::string kind = d.substr(1);
  if (order != '<' && order != '>' && order != '|' && order != '=') {
    order = '|';
    kind = d;
  }
  h.big_endian = (order == '>');
  if (kind == "b1") h.dtype = DType::kBool;
  else if (kind == "i1") h.dtype = DType::kInt8;
  else if (kind == "u1") h.dtype = DType::kUInt8;
  else if (kind == "i2") h.dtype = DType::kInt16;
  else if (kind == "u2") h.dtype = DType::kUInt16;
  else if (kind == "i4") h.dtype = DType::kInt32;
  else if (kind == "u4") h.dtype = DType::kUInt32;
  else if (kind == "i8") h.dtype = DType::kInt64;
  else if (kind == "u8") h.dtype = DType::kUInt64;
  else if (kind == "f2") h.dtype = DType::kFloat16;
  else if (kind == "f4") h.dtype = DType::kFloat32;
  else if (kind == "f8") h.dtype = DType::kFloat64;
  if (dtype_size(h.dtype) == 1) h.big_endian = false;
}

bool is_object_descr(const std::string& d) { return d == "|O" || d == "O" || d == "<O" || d == ">O" || d == "|O8"; }

// A float16 element as read: its bits, widened by convert.
struct Half {
  std::uint16_t bits;
};

template <class S>
S load_elem(const std::byte* p, bool swap) {
  S v;
  std::memcpy(&v, p, sizeof(S));
  if (swap && sizeof(S) > 1) {
    // Big-endian input: reverse the bytes (std::byteswap is C++23).
    std::byte tmp[sizeof(S)];
    std::memcpy(tmp, &v, sizeof(S));
    std::reverse(tmp, tmp + sizeof(S));
    std::memcpy(&v, tmp, sizeof(S));
  }
  return v;
}

// Converts `n` elements of source type S at `data` (element `first` of the array) into `out`.
template <class T, class S>
void convert(const std::byte* data, std::size_t n, const NpyHeader& h, const std::string& origin, std::uint64_t data_base, std::uint64_t first, T* out) {
  const bool swap = h.big_endian;
  for (std::size_t i = 0; i < n; ++i) {
    S v = load_elem<S>(data + i * sizeof(S), swap);
    if constexpr (std::is_same_v<S, Half>) {
      if constexpr (!std::is_floating_point_v<T>) throw InputError(origin, at_byte(data_base), "expected an integer array, found floating-point dtype '" + h.descr + "'");
      else out[i] = static_cast<T>(from_float16(v.bits));
    } else if constexpr (std::is_same_v<S, T>) {
      out[i] = v;
    } else if constexpr (std::is_floating_point_v<T>) {
      out[i] = static_cast<T>(v);
    } else if constexpr (std::is_floating_point_v<S>) {
      throw InputError(origin, at_byte(data_base), "expected an integer array, found floating-point dtype '" + h.descr + "'");
    } else {
      if (!std::in_range<T>(v))
        throw InputError(origin, at_byte(data_base + (first + i) * sizeof(S)),
                         "element " + std::to_string(first + i) + " = " + std::to_string(v) + " does not fit the expected integer type");
      out[i] = static_cast<T>(v);
    }
  }
}

// What every numeric read requires of a header.
void check_numeric(const NpyHeader& h, const std::string& origin, std::uint64_t base, int expected_ndim) {
  if (is_object_descr(h.descr))
    throw InputError(origin, at_byte(base), "object array (dtype 'O'): reading it would need unpickling, which shardgnn never does");
  if (h.dtype == DType::kOther)
    throw InputError(origin, at_byte(base), "unsupported dtype '" + h.descr + "', expected a numeric array");
  if (expected_ndim >= 0 && static_cast<int>(h.shape.size()) != expected_ndim)
    throw InputError(origin, at_byte(base), "expected a " + std::to_string(expected_ndim) + "-d array, found " + std::to_string(h.shape.size()) + "-d");
  if (h.fortran_order && h.shape.size() > 1)
    throw InputError(origin, at_byte(base), "Fortran-ordered array, expected C order (numpy.ascontiguousarray)");
}

// Calls f.template operator()<S>() with S the C++ type of a numeric dtype.
template <class F>
void with_source_type(DType t, F&& f) {
  switch (t) {
    case DType::kBool: case DType::kUInt8: f.template operator()<std::uint8_t>(); break;
    case DType::kInt8: f.template operator()<std::int8_t>(); break;
    case DType::kInt16: f.template operator()<std::int16_t>(); break;
    case DType::kUInt16: f.template operator()<std::uint16_t>(); break;
    case DType::kInt32: f.template operator()<std::int32_t>(); break;
    case DType::kUInt32: f.template operator()<std::uint32_t>(); break;
    case DType::kInt64: f.template operator()<std::int64_t>(); break;
    case DType::kUInt64: f.template operator()<std::uint64_t>(); break;
    case DType::kFloat16: f.template operator()<Half>(); break;
    case DType::kFloat32: f.template operator()<float>(); break;
    case DType::kFloat64: f.template operator()<double>(); break;
    case DType::kOther: break;
  }
}

}  // namespace

NpyHeader parse_npy_header(std::span<const std::byte> bytes, const std::string& origin, std::uint64_t base) {
  return parse_npy_header(bytes, origin, base, bytes.size());
}

NpyHeader parse_npy_header(std::span<const std::byte> bytes, const std::string& origin, std::uint64_t base, std::uint64_t total) {
  if (total == 0) throw InputError(origin, at_byte(base), "empty file, expected a .npy array");
  if (bytes.size() < 10) throw InputError(origin, at_byte(base + bytes.size()), "truncated: file ends inside the .npy preamble");
  if (bytes.size() > total) bytes = bytes.first(total);
  if (std::memcmp(bytes.data(), kMagic, 6) != 0) throw InputError(origin, at_byte(base), "wrong magic, expected a .npy file starting with \\x93NUMPY");
  const auto major = static_cast<unsigned>(bytes[6]);
  std::size_t header_len = 0, prefix = 0;
  if (major == 1) {
    header_len = static_cast<std::size_t>(bytes[8]) | (static_cast<std::size_t>(bytes[9]) << 8);
    prefix = 10;
  } else if (major == 2 || major == 3) {
    if (bytes.size() < 12) throw InputError(origin, at_byte(base + bytes.size()), "truncated: file ends inside the .npy preamble");
    std::uint32_t len;
    std::memcpy(&len, bytes.data() + 8, 4);
    header_len = std::bit_cast<std::uint32_t>(len);
    prefix = 12;
  } else {
    throw InputError(origin, at_byte(base + 6), "unsupported .npy version " + std::to_string(major) + ", expected 1, 2 or 3");
  }
  if (prefix + header_len > bytes.size())
    throw InputError(origin, at_byte(base + bytes.size()), "truncated: header of " + std::to_string(header_len) + " bytes runs past the end of the " +
                                                             (bytes.size() < total ? "first piece read" : "file"));
  std::string_view text(reinterpret_cast<const char*>(bytes.data() + prefix), header_len);
  NpyHeader h = HeaderParser(text, origin, base + prefix - 10).parse();
  h.data_offset = prefix + header_len;
  // The element count must fit in 63 bits (count() multiplies in int64): a shape like
  // (2^32, 2^32) would otherwise wrap to 0 and match an empty data block.
  {
    std::int64_t elems = 1;
    for (auto d : h.shape) {
      if (d != 0 && elems > (std::int64_t{1} << 62) / d)
        throw InputError(origin, at_byte(base + prefix), "shape has too many elements (more than 2^62), expected a real array size");
      elems *= d;
    }
  }
  classify_descr(h);
  if (is_object_descr(h.descr)) return h;  // pickled payload: refused when (and only when) read
  std::size_t item = dtype_size(h.dtype);
  if (h.dtype == DType::kOther) {
    // Fixed-size non-numeric dtypes (strings, unicode): check the size so truncation is still caught.
    std::size_t digits = 0;
    auto pos = h.descr.find_first_of("0123456789");
    if (pos != std::string::npos) digits = std::stoul(h.descr.substr(pos));
    char kind = h.descr.size() >= 2 ? h.descr[1] : '?';
    item = kind == 'U' ? 4 * digits : digits;
  }
  std::uint64_t need = 0;
  if (__builtin_mul_overflow(static_cast<std::uint64_t>(h.count()), static_cast<std::uint64_t>(item), &need))
    throw InputError(origin, at_byte(base), "shape needs more than 2^64 data bytes");
  const std::uint64_t have = total - h.data_offset;
  if (item > 0 && need > have)
    throw InputError(origin, at_byte(base + total),
                     "truncated: shape needs " + std::to_string(need) + " data bytes, file has " + std::to_string(have));
  if (item > 0 && need < have)
    throw InputError(origin, at_byte(base + h.data_offset + need), std::to_string(have - need) + " unexpected bytes after the array data");
  return h;
}

NpyBuffer map_npy(const std::string& path) {
  MappedFile m = map_file(path);
  NpyBuffer buf;
  buf.origin = path;
  buf.header = parse_npy_header(m.bytes, path, 0);
  buf.keeper = std::move(m.keeper);
  buf.bytes = m.bytes;
  return buf;
}

NpyHeader read_npy_header(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(path, "", "cannot open file");
  in.seekg(0, std::ios::end);
  const auto size = static_cast<std::uint64_t>(in.tellg());
  // A version 1.0 header is at most 10 + 65535 bytes; longer ones (2.0, 3.0) are not ours.
  std::vector<std::byte> prefix(static_cast<std::size_t>(std::min<std::uint64_t>(size, 10 + 65535)));
  in.seekg(0);
  in.read(reinterpret_cast<char*>(prefix.data()), static_cast<std::streamsize>(prefix.size()));
  if (!in) throw InputError(path, "", "cannot read its header");
  return parse_npy_header(prefix, path, 0, size);
}

template <class T>
std::vector<T> npy_to_vector(const NpyBuffer& buf, int expected_ndim) {
  const NpyHeader& h = buf.header;
  check_numeric(h, buf.origin, buf.base_offset, expected_ndim);
  std::vector<T> out(static_cast<std::size_t>(h.count()));
  with_source_type(h.dtype, [&]<class S>() { convert<T, S>(buf.data().data(), out.size(), h, buf.origin, buf.base_offset + h.data_offset, 0, out.data()); });
  return out;
}

NpyStream npy_stream(const NpyBuffer& buf) {
  NpyStream s;
  s.origin = buf.origin;
  s.header = buf.header;
  s.data_base = buf.base_offset + buf.header.data_offset;
  // Pieces of 64 MiB: the consumer's page faults, not one giant span, set the pace.
  s.data = [data = buf.data(), keeper = buf.keeper](const ByteSink& sink) {
    for (std::size_t off = 0; off < data.size(); off += std::size_t{64} << 20) sink(data.subspan(off, std::min<std::size_t>(data.size() - off, std::size_t{64} << 20)));
  };
  return s;
}

template <class T>
void npy_for_each(const NpyStream& s, int expected_ndim, std::size_t piece, const std::function<void(std::span<const T>, std::uint64_t)>& fn) {
  const NpyHeader& h = s.header;
  check_numeric(h, s.origin, s.data_base, expected_ndim);
  piece = std::max<std::size_t>(piece, 1);
  with_source_type(h.dtype, [&]<class S>() {
    std::vector<T> out(std::min<std::size_t>(piece, static_cast<std::size_t>(h.count())));
    std::byte carry[sizeof(S)];  // an element split between two pieces of bytes
    std::size_t carried = 0;
    std::uint64_t next = 0;
    auto emit = [&](const std::byte* p, std::size_t count) {
      for (std::size_t done = 0; done < count;) {
        const std::size_t k = std::min(piece, count - done);
        convert<T, S>(p + done * sizeof(S), k, h, s.origin, s.data_base, next, out.data());
        fn(std::span<const T>(out.data(), k), next);
        next += k;
        done += k;
      }
    };
    s.data([&](std::span<const std::byte> b) {
      if (carried > 0) {
        const std::size_t take = std::min(sizeof(S) - carried, b.size());
        std::memcpy(carry + carried, b.data(), take);
        carried += take;
        b = b.subspan(take);
        if (carried < sizeof(S)) return;
        emit(carry, 1);
        carried = 0;
      }
      const std::size_t whole = b.size() / sizeof(S);
      emit(b.data(), whole);
      carried = b.size() - whole * sizeof(S);
      std::memcpy(carry, b.data() + whole * sizeof(S), carried);
    });
    if (carried != 0 || next != static_cast<std::uint64_t>(h.count()))
      throw InputError(s.origin, at_byte(s.data_base + next * sizeof(S)), "truncated: the data end after " + std::to_string(next) + " of " + std::to_string(h.count()) + " elements");
  });
}

template <class T>
Array<T> npy_view(const NpyBuffer& buf, int expected_ndim) {
  return npy_view<T>(buf, expected_ndim, dtype_of<T>());
}

template <class T>
Array<T> npy_view(const NpyBuffer& buf, int expected_ndim, DType stored) {
  if (dtype_size(stored) != sizeof(T)) throw std::logic_error("npy_view: a " + dtype_descr(stored) + " file seen through a type of another size");
  const NpyHeader& h = buf.header;
  if (h.dtype != stored || h.big_endian)
    throw InputError(buf.origin, at_byte(buf.base_offset), "dtype '" + h.descr + "', expected '" + dtype_descr(stored) + "'");
  if (static_cast<int>(h.shape.size()) != expected_ndim)
    throw InputError(buf.origin, at_byte(buf.base_offset), "expected a " + std::to_string(expected_ndim) + "-d array, found " + std::to_string(h.shape.size()) + "-d");
  if (h.fortran_order && h.shape.size() > 1)
    throw InputError(buf.origin, at_byte(buf.base_offset), "Fortran-ordered array, expected C order");
  const auto data = buf.data();
  if (reinterpret_cast<std::uintptr_t>(data.data()) % alignof(T) != 0)
    throw InputError(buf.origin, at_byte(buf.base_offset + h.data_offset), "array data is not aligned for its dtype");
  return Array<T>(buf.keeper, reinterpret_cast<const T*>(data.data()), static_cast<std::size_t>(h.count()));
}

std::string npy_header(DType dtype, std::span<const std::int64_t> shape, std::int64_t data_at) {
  std::string dict = "{'descr': '" + dtype_descr(dtype) + "', 'fortran_order': False, 'shape': (";
  for (std::size_t i = 0; i < shape.size(); ++i) {
    dict += std::to_string(shape[i]);
    if (shape.size() == 1 || i + 1 < shape.size()) dict += ",";
    if (i + 1 < shape.size()) dict += " ";
  }
  dict += "), }";
  // Pad with spaces and a newline so the data starts on a 64-byte boundary (numpy does the same).
  const bool v2 = dict.size() + 11 + static_cast<std::size_t>(data_at >= 0 ? kNpyPage : 0) > 65535;
  const std::size_t prefix = v2 ? 12 : 10;
  std::size_t total = prefix + dict.size() + 1;
  const auto align = static_cast<std::size_t>(data_at >= 0 ? kNpyPage : 64);
  const auto want = static_cast<std::size_t>(data_at >= 0 ? data_at % kNpyPage : 0);
  std::size_t pad = (want + align - total % align) % align;
  dict.append(pad, ' ');
  dict += '\n';
  std::string pre(kMagic, 6);
  pre += static_cast<char>(v2 ? 2 : 1);
  pre += '\0';
  std::uint32_t len = static_cast<std::uint32_t>(dict.size());
  pre += static_cast<char>(len & 0xff);
  pre += static_cast<char>((len >> 8) & 0xff);
  if (v2) {
    pre += static_cast<char>((len >> 16) & 0xff);
    pre += static_cast<char>((len >> 24) & 0xff);
  }
  pre += dict;
  return pre;
}

std::uint32_t write_npy_streamed(const std::string& path, DType dtype, std::span<const std::int64_t> shape,
                                 const std::function<void(const NpySink&)>& fill, std::int64_t data_at) {
  const std::string pre = npy_header(dtype, shape, data_at);
  std::int64_t count = 1;
  for (const std::int64_t d : shape) count *= d;
  const std::size_t nbytes = static_cast<std::size_t>(count) * dtype_size(dtype);
  // The CRC is taken piece by piece as the data go out, while each piece is still in cache.
  std::uint32_t crc = crc32_of({reinterpret_cast<const std::byte*>(pre.data()), pre.size()});
  write_file_atomic(path, [&](std::FILE* f) {
    if (std::fwrite(pre.data(), 1, pre.size(), f) != pre.size()) throw InputError(path, "", "write failed (disk full?)");
    std::size_t written = 0;
    fill([&](const void* data, std::size_t bytes) {
      if (bytes == 0) return;
      if (written + bytes > nbytes)
        throw std::logic_error(path + ": more data than the shape's " + std::to_string(nbytes) + " bytes");
      if (std::fwrite(data, 1, bytes, f) != bytes) throw InputError(path, "", "write failed (disk full?)");
      crc = crc32_of({static_cast<const std::byte*>(data), bytes}, crc);
      written += bytes;
    });
    if (written != nbytes)
      throw std::logic_error(path + ": " + std::to_string(written) + " bytes of data written, the shape holds " + std::to_string(nbytes));
  });
  return crc;
}

std::uint32_t write_npy(const std::string& path, DType dtype, const void* data, std::span<const std::int64_t> shape, std::int64_t data_at) {
  return write_npy_streamed(path, dtype, shape, [&](const NpySink& sink) {
    std::int64_t count = 1;
    for (auto d : shape) count *= d;
    sink(data, static_cast<std::size_t>(count) * dtype_size(dtype));
  }, data_at);
}

#define SHARDGNN_INSTANTIATE(T)                                              \
  template std::vector<T> npy_to_vector<T>(const NpyBuffer&, int);           \
  template Array<T> npy_view<T>(const NpyBuffer&, int);                      \
  template Array<T> npy_view<T>(const NpyBuffer&, int, DType);               \
  template void npy_for_each<T>(const NpyStream&, int, std::size_t, const std::function<void(std::span<const T>, std::uint64_t)>&);
SHARDGNN_INSTANTIATE(std::int8_t)
SHARDGNN_INSTANTIATE(std::int16_t)
SHARDGNN_INSTANTIATE(std::int32_t)
SHARDGNN_INSTANTIATE(std::int64_t)
SHARDGNN_INSTANTIATE(std::uint8_t)
SHARDGNN_INSTANTIATE(std::uint16_t)
SHARDGNN_INSTANTIATE(float)
SHARDGNN_INSTANTIATE(double)
#undef SHARDGNN_INSTANTIATE

}  // namespace shardgnn
