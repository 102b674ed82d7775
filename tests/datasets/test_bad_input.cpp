// Bad input in every format: each case must throw InputError whose message is one line naming
// the file, the position (line/column, byte offset, member/element) and what was expected.
// Also: failed or refused writes leave nothing behind.
#include <zlib.h>

#include <catch2/catch.hpp>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "datasets/dataset.hpp"
#include "datasets/error.hpp"
#include "datasets/npy.hpp"
#include "datasets/npz.hpp"
#include "datasets/readers.hpp"
#include "test_paths.hpp"

namespace fs = std::filesystem;
using namespace shardgnn;
using Catch::Contains;
using shardgnn::test::ScratchDir;

namespace {

// Runs `f`, which must throw InputError, and returns its message.
template <class F>
std::string input_error(F&& f) {
  try {
    f();
  } catch (const InputError& e) {
    return e.what();
  }
  FAIL("expected an InputError, nothing was thrown");
  return {};
}

// (a) one line, (b) names the file, (c) names the position, (d) says what was expected.
void check_message(const std::string& msg, const std::string& file, const std::string& position,
                   const std::vector<std::string>& expected) {
  INFO("message: " << msg);
  CHECK(msg.find('\n') == std::string::npos);
  CHECK(msg.find('\r') == std::string::npos);
  CHECK_THAT(msg, Contains(file));
  CHECK_THAT(msg, Contains(position));
  for (const auto& word : expected) CHECK_THAT(msg, Contains(word));
}

void write_bytes(const std::string& path, std::string_view bytes) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  REQUIRE(f.good());
}

std::string read_bytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  REQUIRE(f.good());
  return std::string(std::istreambuf_iterator<char>(f), {});
}

void write_gz(const std::string& path, std::string_view text) {
  gzFile f = gzopen(path.c_str(), "wb");
  REQUIRE(f != nullptr);
  REQUIRE(gzwrite(f, text.data(), static_cast<unsigned>(text.size())) == static_cast<int>(text.size()));
  REQUIRE(gzclose(f) == Z_OK);
}

void truncate_to(const std::string& path, std::uintmax_t size) {
  REQUIRE(fs::file_size(path) > size);
  fs::resize_file(path, size);
}

// Names of everything in a folder (to prove nothing was left behind).
std::set<std::string> listing(const std::string& dir) {
  std::set<std::string> names;
  for (const auto& e : fs::directory_iterator(dir)) names.insert(e.path().filename().string());
  return names;
}

// --- .npy and .npz bytes built in the test ---------------------------------------------------

// A version-1.0 .npy with a hand-written header dict (padded to 64 bytes as numpy does).
std::string raw_npy(const std::string& dict, std::string_view data) {
  std::string header = dict;
  const std::size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header += '\n';
  std::string out("\x93NUMPY\x01\x00", 8);
  out += static_cast<char>(header.size() & 0xff);
  out += static_cast<char>(header.size() >> 8);
  out += header;
  out += data;
  return out;
}

// A .npy written by the library's own writer.
template <class T>
std::string npy_of(const ScratchDir& tmp, std::vector<T> values, std::vector<std::int64_t> shape = {}) {
  const std::string p = tmp / "member.tmp.npy";
  write_npy<T>(p, std::span<const T>(values), std::move(shape));
  std::string bytes = read_bytes(p);
  fs::remove(p);
  return bytes;
}

void put16(std::string& s, std::uint16_t v) {
  s += static_cast<char>(v & 0xff);
  s += static_cast<char>(v >> 8);
}
void put32(std::string& s, std::uint32_t v) {
  for (int i = 0; i < 4; ++i) s += static_cast<char>((v >> (8 * i)) & 0xff);
}
void put64(std::string& s, std::uint64_t v) {
  for (int i = 0; i < 8; ++i) s += static_cast<char>((v >> (8 * i)) & 0xff);
}

// A minimal zip writer (stored members, as numpy.savez writes them). `zip64_extra` lets a test put
// a zip64 extended-information field with the given sizes into every central directory entry.
struct ZipOptions {
  bool zip64_sizes = false;
  std::uint64_t zip64_size = 0;
};
std::string make_zip(const std::vector<std::pair<std::string, std::string>>& members, const ZipOptions& o = {}) {
  std::string out, central;
  for (const auto& [name, data] : members) {
    const std::string file = name + ".npy";
    const auto crc = static_cast<std::uint32_t>(crc32(0L, reinterpret_cast<const Bytef*>(data.data()), static_cast<uInt>(data.size())));
    const auto offset = static_cast<std::uint32_t>(out.size());
    put32(out, 0x04034b50);
    put16(out, 20);
    put16(out, 0);  // flags
    put16(out, 0);  // stored
    put16(out, 0);
    put16(out, 0);  // time, date
    put32(out, crc);
    put32(out, static_cast<std::uint32_t>(data.size()));
    put32(out, static_cast<std::uint32_t>(data.size()));
    put16(out, static_cast<std::uint16_t>(file.size()));
    put16(out, 0);
    out += file;
    out += data;

    std::string extra;
    if (o.zip64_sizes) {
      put16(extra, 0x0001);
      put16(extra, 16);
      put64(extra, o.zip64_size);
      put64(extra, o.zip64_size);
    }
    put32(central, 0x02014b50);
    put16(central, 20);
    put16(central, 20);
    put16(central, 0);
    put16(central, 0);
    put16(central, 0);
    put16(central, 0);
    put32(central, crc);
    put32(central, o.zip64_sizes ? 0xffffffffu : static_cast<std::uint32_t>(data.size()));
    put32(central, o.zip64_sizes ? 0xffffffffu : static_cast<std::uint32_t>(data.size()));
    put16(central, static_cast<std::uint16_t>(file.size()));
    put16(central, static_cast<std::uint16_t>(extra.size()));
    put16(central, 0);  // comment
    put16(central, 0);  // disk
    put16(central, 0);  // internal attributes
    put32(central, 0);  // external attributes
    put32(central, offset);
    central += file;
    central += extra;
  }
  const auto cd_off = static_cast<std::uint32_t>(out.size());
  out += central;
  put32(out, 0x06054b50);
  put16(out, 0);
  put16(out, 0);
  put16(out, static_cast<std::uint16_t>(members.size()));
  put16(out, static_cast<std::uint16_t>(members.size()));
  put32(out, static_cast<std::uint32_t>(central.size()));
  put32(out, cd_off);
  put16(out, 0);
  return out;
}

// A valid Planetoid-layout npz: the path 0-1-2 (both directions), 2 sparse features, 2 classes.
using Members = std::vector<std::pair<std::string, std::string>>;
Members tiny_npz_members(const ScratchDir& tmp) {
  return {
      {"adj_data", npy_of<float>(tmp, {1, 1, 1, 1})},
      {"adj_indices", npy_of<std::int32_t>(tmp, {1, 0, 2, 1})},
      {"adj_indptr", npy_of<std::int32_t>(tmp, {0, 1, 3, 4})},
      {"adj_shape", npy_of<std::int64_t>(tmp, {3, 3})},
      {"attr_data", npy_of<float>(tmp, {1.0f, 2.0f, 3.0f})},
      {"attr_indices", npy_of<std::int32_t>(tmp, {0, 1, 0})},
      {"attr_indptr", npy_of<std::int32_t>(tmp, {0, 1, 2, 3})},
      {"attr_shape", npy_of<std::int64_t>(tmp, {3, 2})},
      {"labels", npy_of<std::int64_t>(tmp, {0, 1, 0})},
  };
}
void replace_member(Members& m, const std::string& name, std::string bytes) {
  for (auto& [n, b] : m)
    if (n == name) { b = std::move(bytes); return; }
  FAIL("no member " << name);
}
void remove_member(Members& m, const std::string& name) {
  std::erase_if(m, [&](const auto& p) { return p.first == name; });
}

// A copy of the OGB fixture that a test may break.
std::string copy_ogb_fixture(const ScratchDir& dir) {
  const std::string dst = dir / "ogb-tiny";
  fs::copy(test::fixture("ogb-tiny"), dst, fs::copy_options::recursive);
  return dst;
}

Dataset read_ok(const std::string& path, const ReadOptions& o = {}) { return read_dataset(path, o); }

}  // namespace

TEST_CASE("the test's own npz writer makes archives the reader accepts", "[bad-input]") {
  // The bad variants below differ from this one in one member only.
  ScratchDir tmp;
  const std::string path = tmp / "tiny.npz";
  write_bytes(path, make_zip(tiny_npz_members(tmp)));
  const Dataset ds = read_ok(path);
  CHECK(ds.num_nodes() == 3);
  CHECK(ds.graph.num_edges() == 4);
  CHECK(ds.feature_dim == 2);
  CHECK(std::vector<float>(ds.features.begin(), ds.features.end()) == std::vector<float>{1, 0, 0, 2, 3, 0});
  CHECK(ds.num_classes == 2);
  SECTION("labels are optional") {
    Members m = tiny_npz_members(tmp);
    remove_member(m, "labels");
    write_bytes(path, make_zip(m));
    const Dataset d2 = read_ok(path);
    CHECK(d2.num_classes == 0);
    CHECK(d2.labels.empty());
  }
}

// ---------------------------------------------------------------------------------------------

TEST_CASE("truncated files", "[bad-input]") {
  ScratchDir tmp;
  SECTION("npy cut short in its data") {
    const std::string p = tmp / "a.npy";
    std::vector<std::int64_t> v(100, 7);
    write_npy<std::int64_t>(p, v);
    const auto size = fs::file_size(p);
    truncate_to(p, size - 8);
    check_message(input_error([&] { map_npy(p); }), p, "byte offset " + std::to_string(size - 8),
                  {"truncated", "shape needs 800 data bytes"});
  }
  SECTION("npy cut short in its header") {
    const std::string p = tmp / "a.npy";
    write_npy<float>(tmp / "a.npy", std::vector<float>{1, 2});
    truncate_to(p, 30);
    check_message(input_error([&] { map_npy(p); }), p, "byte offset 30", {"truncated", "header"});
  }
  SECTION("npy cut inside the preamble") {
    const std::string p = tmp / "a.npy";
    write_bytes(p, std::string("\x93NUMPY\x01", 7));
    check_message(input_error([&] { map_npy(p); }), p, "byte offset 7", {"truncated", "preamble"});
  }
  SECTION("npz cut short (our archive)") {
    const std::string p = tmp / "tiny.npz";
    const std::string zip = make_zip(tiny_npz_members(tmp));
    write_bytes(p, zip.substr(0, zip.size() * 2 / 3));
    check_message(input_error([&] { read_dataset(p, {}); }), p, "byte offset", {"truncated", "zip", "end-of-central-directory"});
  }
  SECTION("npz cut short (cora.npz)") {
    const std::string p = tmp / "cora.npz";
    const std::string bytes = read_bytes(test::sample("cora.npz"));
    write_bytes(p, bytes.substr(0, bytes.size() / 2));
    check_message(input_error([&] { read_dataset(p, {}); }), p, "byte offset " + std::to_string(bytes.size() / 2),
                  {"truncated", "end-of-central-directory"});
  }
  SECTION("npz with a byte missing from its last member") {
    // Keep the central directory, lose the last byte of the last member's data.
    const std::string p = tmp / "tiny.npz";
    std::string zip = make_zip(tiny_npz_members(tmp));
    const std::size_t cd = zip.find("PK\x01\x02");
    REQUIRE(cd != std::string::npos);
    // Shift the central directory offset in the EOCD down so the file stays self-consistent.
    zip.erase(cd - 1, 1);
    std::uint32_t cd_off;
    std::memcpy(&cd_off, zip.data() + zip.size() - 6, 4);
    cd_off -= 1;
    std::memcpy(zip.data() + zip.size() - 6, &cd_off, 4);
    write_bytes(p, zip);
    // The last member loses its last byte: CRC mismatch or truncation, never a quiet success.
    const std::string msg = input_error([&] { read_dataset(p, {}); });
    check_message(msg, p, "byte offset", {});
    CHECK_THAT(msg, Contains("CRC mismatch") || Contains("truncated"));
  }
  SECTION("METIS with fewer vertex lines than its header announces") {
    const std::string p = tmp / "t.graph";
    write_bytes(p, "4 3\n2 3\n1 3\n");
    check_message(input_error([&] { read_dataset(p, {}); }), p, "end of file",
                  {"found 2 vertex lines", "announced 4", "truncated"});
  }
  SECTION("METIS with fewer adjacency entries than 2m") {
    const std::string p = tmp / "t.graph";
    write_bytes(p, "4 4\n2 3\n1 3\n1 2\n\n");
    check_message(input_error([&] { read_dataset(p, {}); }), p, "end of file", {"found 6 adjacency entries", "2m = 8"});
  }
  SECTION("gzip edge list cut short") {
    const std::string p = tmp / "edges.txt.gz";
    std::string text;
    for (int i = 0; i < 5000; ++i) text += std::to_string(i * 7919 % 10007) + "\t" + std::to_string(i * 104729 % 10007) + "\n";
    write_gz(p, text);
    const auto size = fs::file_size(p);
    truncate_to(p, size / 2);
    check_message(input_error([&] { read_dataset(p, {}); }), p, "uncompressed byte offset", {"gzip", "truncated or corrupt"});
  }
  SECTION("gzip edge list missing only its trailer") {
    const std::string p = tmp / "edges.txt.gz";
    write_gz(p, "0 1\n1 2\n");
    truncate_to(p, fs::file_size(p) - 4);
    check_message(input_error([&] { read_dataset(p, {}); }), p, "uncompressed byte offset", {"gzip"});
  }
  SECTION("OGB edge.csv.gz cut short") {
    const std::string dir = copy_ogb_fixture(tmp);
    const std::string p = dir + "/raw/edge.csv.gz";
    truncate_to(p, fs::file_size(p) - 12);
    check_message(input_error([&] { read_dataset(dir, {}); }), p, "uncompressed byte offset", {"gzip"});
  }
}

TEST_CASE("wrong magic", "[bad-input]") {
  ScratchDir tmp;
  SECTION("npy") {
    const std::string p = tmp / "a.npy";
    write_bytes(p, "NUMPY is not enough, the magic starts with \\x93\n");
    check_message(input_error([&] { map_npy(p); }), p, "byte offset 0", {"wrong magic", "\\x93NUMPY"});
  }
  SECTION("npz that is a text file") {
    const std::string p = tmp / "a.npz";
    write_bytes(p, "adj_indptr,adj_indices\n0,1\n");
    check_message(input_error([&] { read_dataset(p, {}); }), p, "byte offset 0", {"wrong magic", "zip archive"});
  }
  SECTION("npz that is a single .npy") {
    const std::string p = tmp / "a.npz";
    write_npy<float>(p, std::vector<float>{1, 2, 3});
    check_message(input_error([&] { read_dataset(p, {}); }), p, "byte offset 0", {"single .npy", "expected an .npz"});
  }
}

TEST_CASE("ids out of range", "[bad-input]") {
  ScratchDir tmp;
  SECTION("METIS neighbour above n") {
    const std::string p = tmp / "t.graph";
    write_bytes(p, "4 3\n2 3\n1 9\n1 2\n\n");
    check_message(input_error([&] { read_dataset(p, {}); }), p, "line 3, column 3", {"neighbour id 9", "out of range [1, 4]"});
  }
  SECTION("METIS neighbour 0 (ids are 1-based)") {
    const std::string p = tmp / "t.graph";
    write_bytes(p, "% comment\n3 1\n0\n\n\n");
    check_message(input_error([&] { read_dataset(p, {}); }), p, "line 3", {"neighbour id 0", "[1, 3]"});
  }
  SECTION("edge list with --num-nodes") {
    const std::string p = tmp / "e.txt";
    write_bytes(p, "# header\n0 1\n1 4\n4 5\n");
    ReadOptions o;
    o.num_nodes = 5;
    check_message(input_error([&] { read_dataset(p, o); }), p, "line 4, column 3", {"node id 5", "out of range [0, 5)"});
  }
  SECTION("edge list id beyond 64 bits") {
    const std::string p = tmp / "e.txt";
    write_bytes(p, "1 2\n3 99999999999999999999\n");
    check_message(input_error([&] { read_dataset(p, {}); }), p, "line 2", {"'99999999999999999999'", "64-bit range"});
  }
  SECTION("OGB split id >= n") {
    const std::string dir = copy_ogb_fixture(tmp);
    const std::string p = dir + "/split/time/test.csv.gz";
    write_gz(p, "7\n10\n");
    check_message(input_error([&] { read_dataset(dir, {}); }), p, "value 2", {"node id 10", "out of range [0, 10)"});
  }
  SECTION("OGB edge id >= n") {
    const std::string dir = copy_ogb_fixture(tmp);
    const std::string p = dir + "/raw/edge.csv.gz";
    write_gz(p, "0,1\n1,0\n2,12\n");
    check_message(input_error([&] { read_dataset(dir, {}); }), p, "line 3, column 3", {"node id 12", "out of range [0, 10)"});
  }
  SECTION("npz adj_indices") {
    const std::string p = tmp / "t.npz";
    Members m = tiny_npz_members(tmp);
    replace_member(m, "adj_indices", npy_of<std::int32_t>(tmp, {1, 0, 7, 1}));
    write_bytes(p, make_zip(m));
    check_message(input_error([&] { read_dataset(p, {}); }), p, "member 'adj_indices.npy', element 2",
                  {"column 7", "out of range [0, 3)"});
  }
  SECTION("npz idx_train") {
    const std::string p = tmp / "t.npz";
    Members m = tiny_npz_members(tmp);
    m.emplace_back("idx_train", npy_of<std::int64_t>(tmp, {0, 3}));
    write_bytes(p, make_zip(m));
    check_message(input_error([&] { read_dataset(p, {}); }), p, "member 'idx_train.npy', element 1", {"node id 3", "out of range [0, 3)"});
  }
  SECTION("npz attr_indices beyond the feature columns") {
    const std::string p = tmp / "t.npz";
    Members m = tiny_npz_members(tmp);
    replace_member(m, "attr_indices", npy_of<std::int32_t>(tmp, {0, 2, 0}));
    write_bytes(p, make_zip(m));
    check_message(input_error([&] { read_dataset(p, {}); }), p, "member 'attr_indices.npy', element 1", {"column 2", "out of range [0, 2)"});
  }
}

TEST_CASE("negative counts", "[bad-input]") {
  ScratchDir tmp;
  SECTION("METIS vertex count") {
    const std::string p = tmp / "t.graph";
    write_bytes(p, "-3 2\n2\n1\n\n");
    check_message(input_error([&] { read_dataset(p, {}); }), p, "line 1, column 1", {"negative vertex count -3"});
  }
  SECTION("METIS edge count") {
    const std::string p = tmp / "t.graph";
    write_bytes(p, "%\n3 -2\n2\n1\n\n");
    check_message(input_error([&] { read_dataset(p, {}); }), p, "line 2, column 3", {"negative edge count -2"});
  }
  SECTION("npy shape (hand-written header)") {
    const std::string p = tmp / "a.npy";
    write_bytes(p, raw_npy("{'descr': '<i8', 'fortran_order': False, 'shape': (-3,), }", ""));
    check_message(input_error([&] { map_npy(p); }), p, "byte offset", {"negative dimension", "'shape'"});
  }
  SECTION("npz adj_shape") {
    const std::string p = tmp / "t.npz";
    Members m = tiny_npz_members(tmp);
    replace_member(m, "adj_shape", npy_of<std::int64_t>(tmp, {-3, 3}));
    write_bytes(p, make_zip(m));
    check_message(input_error([&] { read_dataset(p, {}); }), p, "member 'adj_shape.npy'", {"negative count"});
  }
  SECTION("OGB num-node-list") {
    const std::string dir = copy_ogb_fixture(tmp);
    const std::string p = dir + "/raw/num-node-list.csv.gz";
    write_gz(p, "-10\n");
    check_message(input_error([&] { read_dataset(dir, {}); }), p, "line 1", {"negative node count -10"});
  }
}

TEST_CASE("non-numeric tokens", "[bad-input]") {
  ScratchDir tmp;
  SECTION("edge list") {
    const std::string p = tmp / "e.txt";
    write_bytes(p, "0 1\n1 two\n");
    check_message(input_error([&] { read_dataset(p, {}); }), p, "line 2, column 3", {"expected a non-negative integer node id", "'two'"});
  }
  SECTION("edge list with a fractional id") {
    const std::string p = tmp / "e.txt";
    write_bytes(p, "0 1\n\n1.5 2\n");
    check_message(input_error([&] { read_dataset(p, {}); }), p, "line 3, column 1", {"integer node id", "'1.5'"});
  }
  SECTION("edge list with a negative id") {
    const std::string p = tmp / "e.txt";
    write_bytes(p, "0 -1\n");
    check_message(input_error([&] { read_dataset(p, {}); }), p, "line 1", {"negative node id -1"});
  }
  SECTION("edge list with one id on a line") {
    const std::string p = tmp / "e.txt";
    write_bytes(p, "0 1\r\n7\r\n");
    check_message(input_error([&] { read_dataset(p, {}); }), p, "line 2", {"one node id", "expected two"});
  }
  SECTION("METIS neighbour") {
    const std::string p = tmp / "t.graph";
    write_bytes(p, "3 2\n2\n1 x3\n2\n");
    check_message(input_error([&] { read_dataset(p, {}); }), p, "line 3, column 3", {"expected a neighbour id", "'x3'"});
  }
  SECTION("METIS header") {
    const std::string p = tmp / "t.graph";
    write_bytes(p, "four 3\n");
    check_message(input_error([&] { read_dataset(p, {}); }), p, "line 1, column 1", {"expected the number of vertices", "'four'"});
  }
  SECTION("METIS format field") {
    const std::string p = tmp / "t.graph";
    write_bytes(p, "3 2 012\n2\n1 3\n2\n");
    check_message(input_error([&] { read_dataset(p, {}); }), p, "line 1", {"format field '012'", "0/1 digits"});
  }
  SECTION("METIS edge weight missing") {
    const std::string p = tmp / "t.graph";
    write_bytes(p, "3 2 1\n2 4\n1 4 3\n2 1\n");
    check_message(input_error([&] { read_dataset(p, {}); }), p, "line 3", {"expected an edge weight"});
  }
  SECTION("OGB features") {
    const std::string dir = copy_ogb_fixture(tmp);
    const std::string p = dir + "/raw/node-feat.csv.gz";
    std::string text;
    for (int i = 0; i < 10; ++i) text += i == 6 ? "1.0,abc,3\n" : "1.0,2.0,3.0\n";
    write_gz(p, text);
    check_message(input_error([&] { read_dataset(dir, {}); }), p, "line 7, column 5", {"expected a feature value", "'abc'"});
  }
  SECTION("OGB features with a short row") {
    const std::string dir = copy_ogb_fixture(tmp);
    const std::string p = dir + "/raw/node-feat.csv.gz";
    std::string text;
    for (int i = 0; i < 10; ++i) text += i == 4 ? "1.0,2.0\n" : "1.0,2.0,3.0\n";
    write_gz(p, text);
    check_message(input_error([&] { read_dataset(dir, {}); }), p, "line 5", {"2 features", "expected 3"});
  }
  SECTION("OGB label") {
    const std::string dir = copy_ogb_fixture(tmp);
    const std::string p = dir + "/raw/node-label.csv.gz";
    write_gz(p, "0\n1\ncat\n2\n1\n2\n0\n1\n2\nnan\n");
    check_message(input_error([&] { read_dataset(dir, {}); }), p, "line 3, column 1", {"expected an integer class label", "'cat'"});
  }
  SECTION("OGB label below -1 names its line") {
    const std::string dir = copy_ogb_fixture(tmp);
    const std::string p = dir + "/raw/node-label.csv.gz";
    write_gz(p, "0\n1\n-3\n2\n1\n2\n0\n1\n2\nnan\n");
    const std::string msg = input_error([&] { read_dataset(dir, {}); });
    check_message(msg, p, "line 3", {"label -3", "expected >= 0 or -1"});
  }
  SECTION("OGB split") {
    const std::string dir = copy_ogb_fixture(tmp);
    const std::string p = dir + "/split/time/valid.csv.gz";
    write_gz(p, "5\n6;\n");
    check_message(input_error([&] { read_dataset(dir, {}); }), p, "line 2, column 1", {"expected a node id", "'6;'"});
  }
}

TEST_CASE("NaN and infinite features", "[bad-input]") {
  ScratchDir tmp;
  SECTION("OGB node-feat 'nan'") {
    const std::string dir = copy_ogb_fixture(tmp);
    const std::string p = dir + "/raw/node-feat.csv.gz";
    std::string text;
    for (int i = 0; i < 10; ++i) text += i == 2 ? "1.0,2.0,nan\n" : "1.0,2.0,3.0\n";
    write_gz(p, text);
    check_message(input_error([&] { read_dataset(dir, {}); }), p, "line 3, column 9", {"NaN feature value", "expected a finite number"});
  }
  SECTION("OGB node-feat 'inf'") {
    const std::string dir = copy_ogb_fixture(tmp);
    const std::string p = dir + "/raw/node-feat.csv.gz";
    std::string text;
    for (int i = 0; i < 10; ++i) text += i == 9 ? "-inf,2.0,3\n" : "1.0,2.0,3.0\n";
    write_gz(p, text);
    check_message(input_error([&] { read_dataset(dir, {}); }), p, "line 10, column 1", {"infinite feature value", "expected a finite number"});
  }
  SECTION("npz attr_data") {
    const std::string p = tmp / "t.npz";
    Members m = tiny_npz_members(tmp);
    replace_member(m, "attr_data", npy_of<float>(tmp, {1.0f, std::numeric_limits<float>::quiet_NaN(), 3.0f}));
    write_bytes(p, make_zip(m));
    check_message(input_error([&] { read_dataset(p, {}); }), p, "member 'attr_data.npy', element 1",
                  {"NaN feature value", "expected a finite number"});
  }
  SECTION("npz dense attr_matrix") {
    const std::string p = tmp / "t.npz";
    Members m = tiny_npz_members(tmp);
    for (const char* name : {"attr_data", "attr_indices", "attr_indptr", "attr_shape"}) remove_member(m, name);
    m.emplace_back("attr_matrix", npy_of<double>(tmp, {0, 1, 2, 3, std::numeric_limits<double>::infinity(), 5}, {3, 2}));
    write_bytes(p, make_zip(m));
    check_message(input_error([&] { read_dataset(p, {}); }), p, "member 'attr_matrix.npy', element 4", {"non-finite", "expected a finite number"});
  }
}

TEST_CASE("empty files", "[bad-input]") {
  ScratchDir tmp;
  SECTION("npy") {
    const std::string p = tmp / "a.npy";
    write_bytes(p, "");
    check_message(input_error([&] { map_npy(p); }), p, "byte offset 0", {"empty file", "expected a .npy"});
  }
  SECTION("npz") {
    const std::string p = tmp / "a.npz";
    write_bytes(p, "");
    check_message(input_error([&] { read_dataset(p, {}); }), p, "byte offset 0", {"empty file", "expected an .npz"});
  }
  SECTION("METIS") {
    const std::string p = tmp / "a.graph";
    write_bytes(p, "");
    check_message(input_error([&] { read_dataset(p, {}); }), p, "line 1", {"empty file", "expected a METIS header"});
  }
  SECTION("METIS gzip of nothing") {
    const std::string p = tmp / "a.graph.gz";
    write_gz(p, "");
    check_message(input_error([&] { read_dataset(p, {}); }), p, "line 1", {"empty file", "expected a METIS header"});
  }
  SECTION("edge list") {
    const std::string p = tmp / "a.txt";
    write_bytes(p, "");
    check_message(input_error([&] { read_dataset(p, {}); }), p, "line 1", {"empty file", "expected lines 'source target'"});
  }
  SECTION("edge list of comments only") {
    const std::string p = tmp / "a.txt.gz";
    write_gz(p, "# Nodes: 0 Edges: 0\n");
    check_message(input_error([&] { read_dataset(p, {}); }), p, "line 1", {"no edges found", "expected lines 'source target'"});
  }
  SECTION("OGB edge.csv.gz") {
    const std::string dir = copy_ogb_fixture(tmp);
    const std::string p = dir + "/raw/edge.csv.gz";
    write_bytes(p, "");
    check_message(input_error([&] { read_dataset(dir, {}); }), p, "line 1", {"empty file", "expected lines"});
  }
  SECTION("OGB num-node-list.csv.gz") {
    const std::string dir = copy_ogb_fixture(tmp);
    const std::string p = dir + "/raw/num-node-list.csv.gz";
    write_bytes(p, "");
    check_message(input_error([&] { read_dataset(dir, {}); }), p, "line 1", {"expected exactly one node count", "found 0"});
  }
  SECTION("OGB node-feat.csv.gz") {
    const std::string dir = copy_ogb_fixture(tmp);
    const std::string p = dir + "/raw/node-feat.csv.gz";
    write_gz(p, "");
    check_message(input_error([&] { read_dataset(dir, {}); }), p, "end of file", {"0 feature rows", "expected one per node (10)"});
  }
  SECTION("OGB node-label.csv.gz") {
    const std::string dir = copy_ogb_fixture(tmp);
    const std::string p = dir + "/raw/node-label.csv.gz";
    write_bytes(p, "");
    check_message(input_error([&] { read_dataset(dir, {}); }), p, "end of file", {"0 labels", "expected one per node (10)"});
  }
  SECTION("dataset meta.json") {
    const std::string ds = tmp / "ds";
    save_dataset(read_ok(test::fixture("ogb-tiny")), ds);
    write_bytes(ds + "/meta.json", "");
    check_message(input_error([&] { load_dataset(ds); }), ds + "/meta.json", "byte offset 0", {"empty file", "expected a JSON object"});
  }
}

TEST_CASE("npz members: missing and object arrays", "[bad-input]") {
  ScratchDir tmp;
  const std::string p = tmp / "t.npz";
  SECTION("no adj_indptr") {
    Members m = tiny_npz_members(tmp);
    remove_member(m, "adj_indptr");
    write_bytes(p, make_zip(m));
    check_message(input_error([&] { read_dataset(p, {}); }), p, "member 'adj_indptr.npy'", {"missing from the archive", "adj_indices"});
  }
  SECTION("attr_data without attr_shape") {
    Members m = tiny_npz_members(tmp);
    remove_member(m, "attr_shape");
    write_bytes(p, make_zip(m));
    check_message(input_error([&] { read_dataset(p, {}); }), p, "member 'attr_shape.npy'", {"missing from the archive"});
  }
  SECTION("labels stored as an object array (dtype '|O')") {
    Members m = tiny_npz_members(tmp);
    // A pickle would follow; it must never be looked at.
    replace_member(m, "labels", raw_npy("{'descr': '|O', 'fortran_order': False, 'shape': (3,), }", "\x80\x02]q\x00(K\x00K\x01K\x00e."));
    write_bytes(p, make_zip(m));
    check_message(input_error([&] { read_dataset(p, {}); }), p + ":labels.npy", "byte offset", {"object array", "unpickling"});
  }
  SECTION("an object .npy read directly") {
    const std::string np = tmp / "o.npy";
    write_bytes(np, raw_npy("{'descr': '|O', 'fortran_order': False, 'shape': (2,), }", "\x80\x02."));
    const NpyBuffer buf = map_npy(np);  // the header alone is fine
    check_message(input_error([&] { npy_to_vector<std::int64_t>(buf, 1); }), np, "byte offset 0", {"object array", "unpickling"});
  }
  SECTION("a string member where numbers are expected") {
    Members m = tiny_npz_members(tmp);
    replace_member(m, "labels", raw_npy("{'descr': '<U1', 'fortran_order': False, 'shape': (3,), }", std::string(12, 'a')));
    write_bytes(p, make_zip(m));
    check_message(input_error([&] { read_dataset(p, {}); }), p + ":labels.npy", "byte offset", {"unsupported dtype '<U1'", "numeric"});
  }
  SECTION("float labels") {
    Members m = tiny_npz_members(tmp);
    replace_member(m, "labels", npy_of<float>(tmp, {0, 1, 0}));
    write_bytes(p, make_zip(m));
    check_message(input_error([&] { read_dataset(p, {}); }), p + ":labels.npy", "byte offset", {"expected an integer array", "'<f4'"});
  }
}

TEST_CASE("npy headers that would overflow or mislead", "[bad-input]") {
  ScratchDir tmp;
  const std::string p = tmp / "a.npy";
  SECTION("a shape whose element count overflows 64 bits") {
    // 2^32 x 2^32 elements wrap to 0 in 64-bit arithmetic, which would match an empty data block.
    write_bytes(p, raw_npy("{'descr': '<i8', 'fortran_order': False, 'shape': (4294967296, 4294967296), }", ""));
    check_message(input_error([&] { map_npy(p); }), p, "byte offset", {"shape"});
  }
  SECTION("unexpected bytes after the data") {
    write_bytes(p, raw_npy("{'descr': '<i4', 'fortran_order': False, 'shape': (2,), }", std::string(12, '\0')));
    check_message(input_error([&] { map_npy(p); }), p, "byte offset 136", {"4 unexpected bytes after the array data"});
  }
  SECTION("a header key numpy does not write") {
    write_bytes(p, raw_npy("{'descr': '<i4', 'fortran_order': False, 'shape': (2,), 'extra': 1}", std::string(8, '\0')));
    check_message(input_error([&] { map_npy(p); }), p, "byte offset", {"unexpected key 'extra'"});
  }
}

TEST_CASE("zip records pointing outside the file", "[bad-input]") {
  ScratchDir tmp;
  const std::string p = tmp / "t.npz";
  SECTION("zip64 locator with an offset near 2^64") {
    std::string zip = make_zip(tiny_npz_members(tmp));
    // Turn the EOCD's entry count into the zip64 marker and put a locator in front of it.
    std::string eocd = zip.substr(zip.size() - 22);
    zip.resize(zip.size() - 22);
    eocd[10] = eocd[11] = '\xff';
    std::string locator;
    put32(locator, 0x07064b50);
    put32(locator, 0);
    put64(locator, 0xfffffffffffffff0ull);
    put32(locator, 1);
    write_bytes(p, zip + locator + eocd);
    check_message(input_error([&] { read_dataset(p, {}); }), p, "byte offset", {"zip"});
  }
  SECTION("zip64 member sizes near 2^64") {
    ZipOptions o;
    o.zip64_sizes = true;
    o.zip64_size = 0xffffffffffffff00ull;
    write_bytes(p, make_zip(tiny_npz_members(tmp), o));
    check_message(input_error([&] { read_dataset(p, {}); }), p, "byte offset", {"adj_shape"});
  }
}

TEST_CASE("METIS header counts too large for the file", "[bad-input]") {
  ScratchDir tmp;
  const std::string p = tmp / "t.graph";
  SECTION("an edge count no memory could hold") {
    write_bytes(p, "3 1000000000000000000\n2\n1\n\n");
    check_message(input_error([&] { read_dataset(p, {}); }), p, "end of file", {"found 2 adjacency entries", "2m = 2000000000000000000"});
  }
  SECTION("an edge count whose 2m overflows") {
    write_bytes(p, "3 5000000000000000000\n2\n1\n\n");
    check_message(input_error([&] { read_dataset(p, {}); }), p, "line 1", {"edge count"});
  }
}

TEST_CASE("binary input read as text gives a printable one-line message", "[bad-input]") {
  // cora.npz (a zip) read as METIS: the bad token is quoted with its bytes escaped.
  const std::string p = test::sample("cora.npz");
  ReadOptions o;
  o.format = InputFormat::kMetis;
  const std::string msg = input_error([&] { read_dataset(p, o); });
  check_message(msg, p, "line 1, column 1", {"expected the number of vertices", "'PK\\x03\\x04"});
  for (unsigned char ch : msg) {
    INFO("message: " << msg);
    REQUIRE((ch >= 0x20 && ch < 0x7f));
  }
}

TEST_CASE("line numbers stay right across gzip chunks", "[bad-input]") {
  // The gzip reader hands over ~16 MiB pieces cut at line ends; a bad line after the first piece
  // must still be reported on its own line number.
  ScratchDir tmp;
  const std::string p = tmp / "long.txt.gz";
  const std::string line = "1 2 " + std::string(1000, 'x') + "\n";  // extra columns are ignored
  constexpr int kLines = 17 * 1024;                                   // ~17 MiB uncompressed
  std::string text;
  text.reserve(line.size() * kLines + 16);
  for (int i = 0; i < kLines; ++i) text += line;
  text += "3 oops\n";
  write_gz(p, text);
  check_message(input_error([&] { read_dataset(p, {}); }), p, "line " + std::to_string(kLines + 1) + ", column 3",
                {"expected a non-negative integer node id", "'oops'"});
}

// ---------------------------------------------------------------------------------------------
// Dataset folders

TEST_CASE("dataset folders: corrupt meta.json, missing or wrong arrays", "[bad-input]") {
  ScratchDir tmp;
  const std::string dir = tmp / "ds";
  save_dataset(read_ok(test::fixture("ogb-tiny")), dir);
  REQUIRE(load_dataset(dir).num_nodes() == 10);
  const std::string meta = dir + "/meta.json";

  SECTION("meta.json cut in half") {
    const std::string text = read_bytes(meta);
    write_bytes(meta, text.substr(0, text.size() / 2));
    check_message(input_error([&] { load_dataset(dir); }), meta, "byte offset", {"invalid JSON"});
  }
  SECTION("meta.json with a syntax error") {
    std::string text = read_bytes(meta);
    const auto at = text.find("\"num_nodes\": 10,");
    REQUIRE(at != std::string::npos);
    text.replace(at, 16, "\"num_nodes\": 10;");
    write_bytes(meta, text);
    check_message(input_error([&] { load_dataset(dir); }), meta, "byte offset " + std::to_string(at + 15), {"invalid JSON"});
  }
  SECTION("meta.json with a count of the wrong type") {
    std::string text = read_bytes(meta);
    const auto at = text.find("\"num_nodes\": 10");
    REQUIRE(at != std::string::npos);
    text.replace(at, 15, "\"num_nodes\": \"ten\"");
    write_bytes(meta, text);
    check_message(input_error([&] { load_dataset(dir); }), meta, "key 'num_nodes'", {"expected an integer", "\"ten\""});
  }
  SECTION("meta.json with a negative count") {
    std::string text = read_bytes(meta);
    const auto at = text.find("\"feature_dim\": 3");
    REQUIRE(at != std::string::npos);
    text.replace(at, 16, "\"feature_dim\": -3");
    write_bytes(meta, text);
    check_message(input_error([&] { load_dataset(dir); }), meta, "key 'feature_dim'", {"negative count -3"});
  }
  SECTION("a missing .npy") {
    fs::remove(dir + "/labels.npy");
    check_message(input_error([&] { load_dataset(dir); }), dir + "/labels.npy", "labels", {"missing", "meta.json"});
  }
  SECTION("a .npy of the wrong shape") {
    write_npy<std::int8_t>(dir + "/labels.npy", std::vector<std::int8_t>{0, 1, 2, 0, 1});
    check_message(input_error([&] { load_dataset(dir); }), dir + "/labels.npy", "byte offset 0", {"shape (5)", "expected (10)"});
  }
  SECTION("a .npy of the wrong dtype") {
    write_npy<double>(dir + "/features.npy", std::vector<double>(30, 0.5), {10, 3});
    check_message(input_error([&] { load_dataset(dir); }), dir + "/features.npy", "byte offset 0", {"dtype '<f8'", "expected '<f4'"});
  }
  SECTION("a truncated .npy") {
    truncate_to(dir + "/indices.npy", fs::file_size(dir + "/indices.npy") - 1);
    check_message(input_error([&] { load_dataset(dir); }), dir + "/indices.npy", "byte offset", {"truncated"});
  }
  SECTION("not a dataset folder") {
    fs::remove(meta);
    check_message(input_error([&] { load_dataset(dir); }), meta, "", {"missing", "data convert"});
  }
}

TEST_CASE("save_dataset leaves nothing behind when it fails or refuses", "[bad-input]") {
  ScratchDir tmp;
  const Dataset ds = read_ok(test::fixture("ogb-tiny"));

  SECTION("output parent is a file") {
    write_bytes(tmp / "file", "precious");
    const std::string out = tmp / "file/ds";
    const std::string msg = input_error([&] { save_dataset(ds, out); });
    check_message(msg, out, "", {});
    CHECK(listing(tmp.str()) == std::set<std::string>{"file"});
    CHECK(read_bytes(tmp / "file") == "precious");
  }
  SECTION("output is an existing file") {
    write_bytes(tmp / "ds", "precious");
    check_message(input_error([&] { save_dataset(ds, tmp / "ds", true); }), tmp / "ds", "", {"not a folder"});
    CHECK(listing(tmp.str()) == std::set<std::string>{"ds"});
    CHECK(read_bytes(tmp / "ds") == "precious");
  }
  SECTION("an existing non-empty folder is refused without overwrite") {
    fs::create_directory(tmp / "ds");
    write_bytes(tmp / "ds/keep.txt", "keep");
    check_message(input_error([&] { save_dataset(ds, tmp / "ds"); }), tmp / "ds", "", {"not empty", "--force"});
    CHECK(listing(tmp.str()) == std::set<std::string>{"ds"});
    CHECK(listing(tmp / "ds") == std::set<std::string>{"keep.txt"});
    SECTION("and with it too, holding no dataset; a dataset is replaced, leaving no temporary sibling") {
      check_message(input_error([&] { save_dataset(ds, tmp / "ds", true); }), tmp / "ds", "", {"holds no shardgnn dataset", "--force replaces only those"});
      CHECK(listing(tmp / "ds") == std::set<std::string>{"keep.txt"});
      fs::remove(tmp / "ds/keep.txt");
      save_dataset(ds, tmp / "ds");
      write_bytes(tmp / "ds/keep.txt", "keep");
      save_dataset(ds, tmp / "ds", true);
      CHECK(listing(tmp.str()) == std::set<std::string>{"ds"});
      CHECK(listing(tmp / "ds").count("meta.json") == 1);
      CHECK(listing(tmp / "ds").count("keep.txt") == 0);
      CHECK(load_dataset(tmp / "ds").num_nodes() == 10);
    }
  }
  SECTION("an existing empty folder is filled") {
    fs::create_directory(tmp / "ds");
    save_dataset(ds, tmp / "ds");
    CHECK(listing(tmp.str()) == std::set<std::string>{"ds"});
    CHECK(load_dataset(tmp / "ds").num_nodes() == 10);
  }
}
