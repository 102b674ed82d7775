#include <catch2/catch.hpp>
#include <algorithm>
#include <bit>
#include <numeric>
#include <cmath>
#include <limits>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "datasets/error.hpp"
#include "datasets/feature_dtype.hpp"
#include "datasets/fileio.hpp"
#include "datasets/npy.hpp"
#include "test_paths.hpp"

using namespace shardgnn;
using Catch::Matchers::Contains;

namespace {

// Builds .npy bytes by hand so headers numpy itself would write (v2, big-endian, Fortran) are covered.
std::vector<std::byte> npy_bytes(int major, const std::string& dict, const std::string& data) {
  std::string s = "\x93NUMPY";
  s += static_cast<char>(major);
  s += '\0';
  std::string d = dict + "\n";
  if (major == 1) {
    s += static_cast<char>(d.size() & 0xff);
    s += static_cast<char>(d.size() >> 8);
  } else {
    std::uint32_t n = static_cast<std::uint32_t>(d.size());
    s.append(reinterpret_cast<const char*>(&n), 4);
  }
  s += d + data;
  std::vector<std::byte> out(s.size());
  std::memcpy(out.data(), s.data(), s.size());
  return out;
}

NpyBuffer buffer(std::vector<std::byte>& b) {
  NpyBuffer buf;
  buf.origin = "mem.npy";
  buf.bytes = b;
  buf.header = parse_npy_header(b, buf.origin);
  return buf;
}

}  // namespace

TEST_CASE("npy round trip keeps dtype, shape and values, and loads zero-copy", "[npy]") {
  test::ScratchDir dir;
  const std::vector<float> values = {1.5f, -2.0f, 3.25f, 0.0f, 1e-7f, 42.0f};
  write_npy<float>(dir / "f.npy", values, {2, 3});
  NpyBuffer buf = map_npy(dir / "f.npy");
  CHECK(buf.header.descr == "<f4");
  CHECK(buf.header.shape == std::vector<std::int64_t>{2, 3});
  CHECK_FALSE(buf.header.fortran_order);
  CHECK(buf.header.data_offset % 64 == 0);
  Array<float> view = npy_view<float>(buf, 2);
  REQUIRE(view.size() == values.size());
  CHECK(view.is_mapped());
  CHECK(std::equal(view.begin(), view.end(), values.begin()));
  // Wrong ndim and wrong dtype are errors naming the file.
  CHECK_THROWS_WITH(npy_view<float>(buf, 1), Contains("f.npy") && Contains("expected a 1-d array"));
  CHECK_THROWS_WITH(npy_view<std::int64_t>(buf, 2), Contains("'<f4'") && Contains("expected '<i8'"));
}

TEST_CASE("npy of zero elements and of 64-bit ids round-trip", "[npy]") {
  test::ScratchDir dir;
  write_npy<std::int64_t>(dir / "empty.npy", std::span<const std::int64_t>{});
  NpyBuffer e = map_npy(dir / "empty.npy");
  CHECK(e.header.shape == std::vector<std::int64_t>{0});
  CHECK(npy_view<std::int64_t>(e, 1).size() == 0);
  const std::vector<std::int64_t> big = {0, (std::int64_t{1} << 40) + 7, -1};
  write_npy<std::int64_t>(dir / "big.npy", big);
  CHECK(npy_to_vector<std::int64_t>(map_npy(dir / "big.npy"), 1) == big);
}

TEST_CASE("npy written in pieces equals one write, CRC included, a wrong byte count leaves no file", "[npy]") {
  test::ScratchDir dir;
  std::vector<std::int64_t> values(1000);
  for (std::size_t i = 0; i < values.size(); ++i) values[i] = static_cast<std::int64_t>(i * i) - 7;
  const std::vector<std::int64_t> shape = {250, 4};
  const std::uint32_t whole = write_npy(dir / "whole.npy", DType::kInt64, values.data(), shape);
  const std::uint32_t pieces = write_npy_streamed(dir / "pieces.npy", DType::kInt64, shape, [&](const NpySink& sink) {
    for (std::size_t at = 0; at < values.size(); at += 333) sink(values.data() + at, std::min<std::size_t>(333, values.size() - at) * sizeof(std::int64_t));
  });
  CHECK(pieces == whole);
  CHECK(crc32_of_file(dir / "pieces.npy") == pieces);
  CHECK(npy_to_vector<std::int64_t>(map_npy(dir / "pieces.npy"), 2) == values);
  auto pieces_of = [&](std::size_t bytes) {
    return [&values, bytes](const NpySink& sink) { sink(values.data(), bytes); };
  };
  CHECK_THROWS_WITH(write_npy_streamed(dir / "short.npy", DType::kInt64, shape, pieces_of(999 * sizeof(std::int64_t))), Contains("short.npy") && Contains("8000"));
  std::vector<std::int64_t> more(values);
  more.push_back(1);
  CHECK_THROWS_WITH(write_npy_streamed(dir / "long.npy", DType::kInt64, shape, [&](const NpySink& sink) { sink(more.data(), more.size() * sizeof(std::int64_t)); }),
                    Contains("long.npy") && Contains("more data"));
  // Nothing is left behind, not even the temporary files.
  std::vector<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(dir.str())) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  CHECK(names == std::vector<std::string>{"pieces.npy", "whole.npy"});
}

TEST_CASE("npy typed reads convert between numeric types with range checks", "[npy]") {
  std::int32_t i32[3] = {1, -5, 70000};
  auto b = npy_bytes(1, "{'descr': '<i4', 'fortran_order': False, 'shape': (3,), }", std::string(reinterpret_cast<char*>(i32), 12));
  auto buf = buffer(b);
  CHECK(npy_to_vector<std::int64_t>(buf, 1) == std::vector<std::int64_t>{1, -5, 70000});
  CHECK(npy_to_vector<double>(buf, 1) == std::vector<double>{1, -5, 70000});

  std::int64_t i64[2] = {3, std::int64_t{1} << 33};
  auto b2 = npy_bytes(1, "{'descr': '<i8', 'fortran_order': False, 'shape': (2,), }", std::string(reinterpret_cast<char*>(i64), 16));
  CHECK_THROWS_WITH(npy_to_vector<std::int32_t>(buffer(b2), 1), Contains("element 1") && Contains("does not fit"));

  double f64[2] = {0.5, 2.0};
  auto b3 = npy_bytes(1, "{'descr': '<f8', 'fortran_order': False, 'shape': (2,), }", std::string(reinterpret_cast<char*>(f64), 16));
  CHECK(npy_to_vector<float>(buffer(b3), 1) == std::vector<float>{0.5f, 2.0f});
  CHECK_THROWS_WITH(npy_to_vector<std::int64_t>(buffer(b3), 1), Contains("expected an integer array"));
}

TEST_CASE("npy version 2 headers and big-endian data are read", "[npy]") {
  const char be[8] = {0, 0, 1, 0, 0, 0, 0, 2};  // >i4: 256, 2
  auto b = npy_bytes(2, "{'descr': '>i4', 'fortran_order': False, 'shape': (2,), }", std::string(be, 8));
  auto buf = buffer(b);
  CHECK(buf.header.big_endian);
  CHECK(npy_to_vector<std::int64_t>(buf, 1) == std::vector<std::int64_t>{256, 2});
  // Zero-copy views need the native layout.
  CHECK_THROWS_WITH(npy_view<std::int32_t>(buf, 1), Contains("'>i4'"));
}

TEST_CASE("npy headers that are not plain C-ordered numbers are refused", "[npy]") {
  auto fortran = npy_bytes(1, "{'descr': '<f4', 'fortran_order': True, 'shape': (2, 2), }", std::string(16, '\0'));
  CHECK_THROWS_WITH(npy_to_vector<float>(buffer(fortran), 2), Contains("Fortran"));
  auto unicode = npy_bytes(1, "{'descr': '<U3', 'fortran_order': False, 'shape': (2,), }", std::string(24, '\0'));
  auto ubuf = buffer(unicode);  // parses (size checked as 2 x 12 bytes) ...
  CHECK_THROWS_WITH(npy_to_vector<float>(ubuf, 1), Contains("unsupported dtype '<U3'"));  // ... but is not numbers
  auto object = npy_bytes(1, "{'descr': '|O', 'fortran_order': False, 'shape': (1,), }", "\x80\x04pickle");
  CHECK_THROWS_WITH(npy_to_vector<float>(buffer(object), 1), Contains("unpickling"));
  auto structured = npy_bytes(1, "{'descr': [('a', '<i4')], 'fortran_order': False, 'shape': (1,), }", std::string(4, '\0'));
  CHECK_THROWS_WITH(buffer(structured), Contains("structured dtype"));
  auto extra = npy_bytes(1, "{'descr': '<i4', 'fortran_order': False, 'shape': (1,), }", std::string(8, '\0'));
  CHECK_THROWS_WITH(buffer(extra), Contains("unexpected bytes after the array data"));
  auto version = npy_bytes(9, "{}", "");
  CHECK_THROWS_WITH(buffer(version), Contains("unsupported .npy version 9"));
}

TEST_CASE("npy streamed in pieces converts as a whole read does, elements split between pieces included", "[npy]") {
  std::vector<std::int64_t> v(1000);
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<std::int64_t>(i * i) - 300;
  std::string data(reinterpret_cast<const char*>(v.data()), v.size() * 8);
  auto b = npy_bytes(1, "{'descr': '<i8', 'fortran_order': False, 'shape': (1000,), }", data);
  const NpyBuffer buf = buffer(b);
  NpyStream s = npy_stream(buf);
  // Pieces of 3 bytes: every element but a few straddles two of them.
  s.data = [&](const ByteSink& sink) {
    const auto d = buf.data();
    for (std::size_t off = 0; off < d.size(); off += 3) sink(d.subspan(off, std::min<std::size_t>(3, d.size() - off)));
  };
  std::vector<std::int64_t> got;
  std::uint64_t pieces = 0;
  npy_for_each<std::int64_t>(s, 1, 64, [&](std::span<const std::int64_t> x, std::uint64_t first) {
    CHECK(first == got.size());
    CHECK(x.size() <= 64);
    got.insert(got.end(), x.begin(), x.end());
    ++pieces;
  });
  CHECK(got == v);
  CHECK(pieces >= 1000 / 64);
  // A range error names the element's byte in its file, as npy_to_vector does.
  CHECK_THROWS_WITH(npy_for_each<std::uint8_t>(npy_stream(buf), 1, 64, [](std::span<const std::uint8_t>, std::uint64_t) {}),
                    Contains("element 0 = -300") && Contains("does not fit"));
  // Data that end early are an error, not a short array.
  s.data = [&](const ByteSink& sink) { sink(buf.data().first(8 * 999 + 5)); };
  CHECK_THROWS_WITH(npy_for_each<std::int64_t>(s, 1, 64, [](std::span<const std::int64_t>, std::uint64_t) {}), Contains("truncated") && Contains("999 of 1000"));
}

// The reference: the nearest value of the 2-byte type found by search over its finite values
// (ties to the even bit pattern), compared with the bit-twiddled conversion for every float16 and
// bfloat16 value, the midpoints between neighbours and points just either side of them.
TEST_CASE("float16 and bfloat16 conversions round to nearest even, every value and every midpoint", "[npy][feature-dtype]") {
  for (const FeatureDtype t : {FeatureDtype::kFloat16, FeatureDtype::kBFloat16}) {
    INFO(feature_dtype_name(t));
    const auto widen = [t](std::uint16_t h) { return t == FeatureDtype::kFloat16 ? from_float16(h) : from_bfloat16(h); };
    const auto narrow = [t](float x) { return t == FeatureDtype::kFloat16 ? to_float16(x) : to_bfloat16(x); };
    const std::uint16_t inf = t == FeatureDtype::kFloat16 ? 0x7c00 : 0x7f80;
    std::int64_t checked = 0;
    for (std::uint32_t h = 0; h < inf; ++h) {
      const auto bits = static_cast<std::uint16_t>(h);
      const float x = widen(bits);
      REQUIRE(narrow(x) == bits);    // exact values come back as they were
      REQUIRE(narrow(-x) == (bits | 0x8000));
      // Halfway to the next value up (for the largest finite value, the overflow threshold).
      const double next = h + 1 < inf ? widen(static_cast<std::uint16_t>(h + 1)) : 2.0 * x - widen(static_cast<std::uint16_t>(h - 1));
      const auto mid = static_cast<float>((static_cast<double>(x) + next) / 2);
      REQUIRE(static_cast<double>(mid) == (static_cast<double>(x) + next) / 2);  // representable in float32
      const std::uint16_t even = (h & 1U) == 0 ? bits : static_cast<std::uint16_t>(h + 1);
      REQUIRE(narrow(mid) == even);
      REQUIRE(narrow(std::nextafter(mid, 0.0f)) == bits);
      REQUIRE(narrow(std::nextafter(mid, std::numeric_limits<float>::infinity())) == static_cast<std::uint16_t>(h + 1));
      ++checked;
    }
    CHECK(checked == inf);
    CHECK(narrow(std::numeric_limits<float>::infinity()) == inf);
    CHECK(std::isinf(widen(inf)));
    CHECK(std::isnan(widen(narrow(std::numeric_limits<float>::quiet_NaN()))));
    CHECK(narrow(std::numeric_limits<float>::max()) == inf);
    CHECK(narrow(0.0f) == 0);
  }
  // float16's subnormals: 2^-24 is the smallest, and half of it rounds to zero (the even side).
  CHECK(to_float16(std::ldexp(1.0f, -24)) == 1);
  CHECK(to_float16(std::ldexp(1.0f, -25)) == 0);
  CHECK(to_float16(std::ldexp(1.5f, -25)) == 1);
  CHECK(to_float16(65504.0f) == 0x7bff);
  CHECK(to_float16(65519.99f) == 0x7bff);
  CHECK(to_float16(65520.0f) == 0x7c00);
  // narrow_values names the first finite value that overflowed; infinities given stay infinities.
  const float row[] = {1.0f, std::numeric_limits<float>::infinity(), 65504.0f, -7e4f, 1e9f};
  std::uint16_t out[5];
  CHECK(narrow_values(FeatureDtype::kFloat16, row, 5, out) == 3);
  CHECK(narrow_values(FeatureDtype::kFloat16, row, 3, out) == 3);
  CHECK(narrow_values(FeatureDtype::kBFloat16, row, 5, out) == 5);
  const float huge[] = {std::numeric_limits<float>::max()};
  CHECK(narrow_values(FeatureDtype::kBFloat16, huge, 1, out) == 0);
}

// Widening against IEEE 754's definition of a float16, (-1)^s 2^(e-15) (1 + m/1024) or, with e = 0,
// 2^-14 (m/1024), for all 65,536 patterns, through the array path that the fetch uses.
TEST_CASE("every float16 widens to its exact value, infinities and NaNs kept", "[npy][feature-dtype]") {
  std::vector<std::uint16_t> all(65536);
  std::iota(all.begin(), all.end(), std::uint16_t{0});
  std::vector<float> wide(all.size());
  widen_values(FeatureDtype::kFloat16, all.data(), all.size(), wide.data());
  for (std::uint32_t h = 0; h < all.size(); ++h) {
    const std::uint32_t e = (h >> 10) & 0x1fU, m = h & 0x3ffU;
    const double sign = (h & 0x8000U) != 0 ? -1.0 : 1.0;
    if (e == 0x1f) {
      REQUIRE((m == 0 ? std::isinf(wide[h]) : std::isnan(wide[h])));
      REQUIRE(std::signbit(wide[h]) == (sign < 0));
      if (m != 0) REQUIRE((std::bit_cast<std::uint32_t>(wide[h]) & 0x7fffffU) == m << 13);  // the payload kept
      continue;
    }
    const double expected = e == 0 ? sign * std::ldexp(m / 1024.0, -14) : sign * std::ldexp(1.0 + m / 1024.0, static_cast<int>(e) - 15);
    REQUIRE(static_cast<double>(wide[h]) == expected);
    REQUIRE(std::signbit(wide[h]) == (sign < 0));  // -0 stays -0
    REQUIRE(from_float16(static_cast<std::uint16_t>(h)) == wide[h]);
  }
}

TEST_CASE("npy reads float16 files: into float32 widened, as a view of their bits", "[npy][feature-dtype]") {
  test::ScratchDir dir;
  const std::vector<float> values = {1.5f, -2.0f, 0.1f, 65504.0f, 1e-7f, 3.0e-5f};
  std::vector<std::uint16_t> half(values.size());
  narrow_values(FeatureDtype::kFloat16, values.data(), values.size(), half.data());
  const std::vector<std::int64_t> shape = {2, 3};
  write_npy(dir / "h.npy", DType::kFloat16, half.data(), shape);
  NpyBuffer buf = map_npy(dir / "h.npy");
  CHECK(buf.header.descr == "<f2");
  const Array<std::uint16_t> view = npy_view<std::uint16_t>(buf, 2, DType::kFloat16);
  CHECK(std::equal(view.begin(), view.end(), half.begin()));
  CHECK_THROWS_WITH(npy_view<std::uint16_t>(buf, 2), Contains("'<f2'") && Contains("expected '<u2'"));
  const std::vector<float> widened = npy_to_vector<float>(buf, 2);
  REQUIRE(widened.size() == values.size());
  for (std::size_t i = 0; i < values.size(); ++i) CHECK(widened[i] == from_float16(half[i]));
  CHECK(widened[0] == 1.5f);
  CHECK(std::abs(widened[2] - 0.1f) < 1e-4f);
  CHECK_THROWS_WITH(npy_to_vector<std::int64_t>(buf, 2), Contains("expected an integer array"));
}

TEST_CASE("arrays written to follow one another map end to end without a copy, and files not laid out so are left to the caller", "[npy][merge]") {
  test::ScratchDir dir;
  // A piece under a page (two of its neighbours' ends share a page with it), an empty one, one
  // over a page, and three elements: every way pieces meet.
  const std::vector<std::vector<std::int32_t>> parts = {std::vector<std::int32_t>(1000, 1), {}, std::vector<std::int32_t>(5000, 2), {7, 8, 9}};
  std::vector<std::int32_t> whole;
  std::vector<FilePiece> pieces;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    std::vector<std::int32_t> v = parts[i];
    for (std::size_t j = 0; j < v.size(); ++j) v[j] += static_cast<std::int32_t>(j);  // no two pages alike
    const std::string path = dir / ("p" + std::to_string(i) + ".npy");
    const auto before = static_cast<std::int64_t>(whole.size() * sizeof(std::int32_t));
    write_npy(path, DType::kInt32, v.data(), std::vector<std::int64_t>{static_cast<std::int64_t>(v.size())}, before);
    const NpyHeader h = read_npy_header(path);
    CHECK(h.data_offset == map_npy(path).header.data_offset);
    CHECK(static_cast<std::int64_t>(h.data_offset) % kNpyPage == before % kNpyPage);
    CHECK(h.data_offset - 10 <= 10000);  // numpy's default max_header_size
    CHECK(npy_to_vector<std::int32_t>(map_npy(path)) == v);
    pieces.push_back({path, h.data_offset, v.size() * sizeof(std::int32_t)});
    whole.insert(whole.end(), v.begin(), v.end());
  }
  const std::optional<MappedFile> m = map_end_to_end(pieces);
  REQUIRE(m.has_value());
  REQUIRE(m->bytes.size() == whole.size() * sizeof(std::int32_t));
  CHECK(std::memcmp(m->bytes.data(), whole.data(), m->bytes.size()) == 0);
  // The pages inside a piece are its file's, not a copy.
  CHECK(test::mapped_file_at(m->bytes.data() + 1000 * 4 + 3 * 4096) == std::filesystem::canonical(pieces[2].path).string());
  // The first piece's 4,000 bytes share their page with the third's start: that page is a copy,
  // in a memory file, so that pages dropped (Array::release_pages) read back the same bytes.
  CHECK_THAT(test::mapped_file_at(m->bytes.data()), Contains("shardgnn-seams"));
  advise_dontneed(m->bytes.data(), m->bytes.size());
  CHECK(std::memcmp(m->bytes.data(), whole.data(), m->bytes.size()) == 0);

  // A file written without the placement (numpy's 64-byte header) after a 4,000-byte piece.
  const std::string plain = dir / "plain.npy";
  write_npy(plain, DType::kInt32, parts[2].data(), std::vector<std::int64_t>{5000});
  CHECK_FALSE(map_end_to_end(std::vector<FilePiece>{pieces[0], {plain, read_npy_header(plain).data_offset, 20000}}).has_value());
  // A file shorter than its piece.
  CHECK_THROWS_WITH(map_end_to_end(std::vector<FilePiece>{pieces[0], {pieces[2].path, pieces[2].offset, pieces[2].bytes + 4096}}),
                    Contains("p2.npy") && Contains("shorter than"));
}
