#include "datasets/npz.hpp"

#include <zlib.h>

#include <algorithm>
#include <cstring>
#include <limits>

#include "datasets/error.hpp"

namespace shardgnn {

namespace {

constexpr std::uint32_t kEocdSig = 0x06054b50, kZip64EocdSig = 0x06064b50, kZip64LocatorSig = 0x07064b50;
constexpr std::uint32_t kCentralSig = 0x02014b50, kLocalSig = 0x04034b50;

// Little-endian field reads with bounds checks; all zip numbers are little-endian.
class Reader {
 public:
  Reader(std::span<const std::byte> bytes, const std::string& path) : b_(bytes), path_(path) {}
  template <class T>
  T at(std::uint64_t off, const char* what) const {
    // Written so that offsets near 2^64 (from corrupt zip64 records) cannot wrap around.
    if (off > b_.size() || b_.size() - off < sizeof(T))
      throw InputError(path_, at_byte(off), std::string("truncated zip archive: ") + what + " runs past the end of the file");
    T v;
    std::memcpy(&v, b_.data() + off, sizeof(T));
    return v;
  }
  std::size_t size() const { return b_.size(); }

 private:
  std::span<const std::byte> b_;
  const std::string& path_;
};

}  // namespace

NpzArchive::NpzArchive(const std::string& path) : file_(map_file(path)) {
  const auto& b = file_.bytes;
  Reader r(b, path);
  if (b.empty()) throw InputError(path, at_byte(0), "empty file, expected an .npz (zip) archive");
  if (b.size() < 4 || r.at<std::uint32_t>(0, "signature") != kLocalSig) {
    if (b.size() >= 6 && std::memcmp(b.data(), "\x93NUMPY", 6) == 0)
      throw InputError(path, at_byte(0), "this is a single .npy array, expected an .npz archive");
    throw InputError(path, at_byte(0), "wrong magic, expected a zip archive (PK\\x03\\x04) as numpy.savez writes");
  }
  // The end-of-central-directory record sits in the last 22 + 65535 bytes (a trailing comment).
  if (b.size() < 22) throw InputError(path, at_byte(b.size()), "truncated zip archive: no end-of-central-directory record");
  std::uint64_t eocd = std::numeric_limits<std::uint64_t>::max();
  const std::uint64_t lowest = b.size() > 22 + 65535 ? b.size() - 22 - 65535 : 0;
  for (std::uint64_t off = b.size() - 22 + 1; off-- > lowest;) {
    if (r.at<std::uint32_t>(off, "signature") == kEocdSig) { eocd = off; break; }
  }
  if (eocd == std::numeric_limits<std::uint64_t>::max())
    throw InputError(path, at_byte(b.size()), "truncated or corrupt zip archive: no end-of-central-directory record");
  std::uint64_t count = r.at<std::uint16_t>(eocd + 10, "entry count");
  std::uint64_t cd_size = r.at<std::uint32_t>(eocd + 12, "central directory size");
  std::uint64_t cd_off = r.at<std::uint32_t>(eocd + 16, "central directory offset");
  if ((count == 0xffff || cd_size == 0xffffffff || cd_off == 0xffffffff) && eocd >= 20 &&
      r.at<std::uint32_t>(eocd - 20, "zip64 locator") == kZip64LocatorSig) {
    std::uint64_t z64 = r.at<std::uint64_t>(eocd - 20 + 8, "zip64 record offset");
    if (r.at<std::uint32_t>(z64, "zip64 record") != kZip64EocdSig) throw InputError(path, at_byte(z64), "corrupt zip64 end-of-central-directory record");
    count = r.at<std::uint64_t>(z64 + 32, "zip64 entry count");
    cd_size = r.at<std::uint64_t>(z64 + 40, "zip64 central directory size");
    cd_off = r.at<std::uint64_t>(z64 + 48, "zip64 central directory offset");
  }
  if (cd_off > b.size() || cd_size > b.size() - cd_off) throw InputError(path, at_byte(cd_off), "truncated zip archive: central directory runs past the end of the file");

  std::uint64_t off = cd_off;
  for (std::uint64_t i = 0; i < count; ++i) {
    if (r.at<std::uint32_t>(off, "central directory entry") != kCentralSig)
      throw InputError(path, at_byte(off), "corrupt zip archive: expected a central directory entry");
    Entry e;
    e.flags = r.at<std::uint16_t>(off + 8, "flags");
    e.method = r.at<std::uint16_t>(off + 10, "method");
    e.crc = r.at<std::uint32_t>(off + 16, "crc");
    e.compressed = r.at<std::uint32_t>(off + 20, "compressed size");
    e.uncompressed = r.at<std::uint32_t>(off + 24, "size");
    const std::uint16_t name_len = r.at<std::uint16_t>(off + 28, "name length");
    const std::uint16_t extra_len = r.at<std::uint16_t>(off + 30, "extra length");
    const std::uint16_t comment_len = r.at<std::uint16_t>(off + 32, "comment length");
    e.local_offset = r.at<std::uint32_t>(off + 42, "local header offset");
    if (off + 46 + name_len > b.size()) throw InputError(path, at_byte(off), "truncated zip archive: member name runs past the end");
    std::string name(reinterpret_cast<const char*>(b.data() + off + 46), name_len);
    // zip64 extended information: the 64-bit values of whichever 32-bit fields are saturated, in order.
    std::uint64_t x = off + 46 + name_len, xend = x + extra_len;
    while (x + 4 <= xend) {
      const std::uint16_t id = r.at<std::uint16_t>(x, "extra field"), len = r.at<std::uint16_t>(x + 2, "extra field");
      if (id == 0x0001) {
        std::uint64_t p = x + 4;
        if (e.uncompressed == 0xffffffff) { e.uncompressed = r.at<std::uint64_t>(p, "zip64 size"); p += 8; }
        if (e.compressed == 0xffffffff) { e.compressed = r.at<std::uint64_t>(p, "zip64 size"); p += 8; }
        if (e.local_offset == 0xffffffff) { e.local_offset = r.at<std::uint64_t>(p, "zip64 offset"); }
      }
      x += 4 + len;
    }
    if (name.size() > 4 && name.compare(name.size() - 4, 4, ".npy") == 0) name.resize(name.size() - 4);
    e.order = i;
    entries_[name] = e;
    off += 46 + name_len + extra_len + comment_len;
  }
}

std::vector<std::string> NpzArchive::members() const {
  std::vector<std::pair<std::size_t, std::string>> v;
  for (const auto& [name, e] : entries_) v.emplace_back(e.order, name);
  std::sort(v.begin(), v.end());
  std::vector<std::string> out;
  for (auto& p : v) out.push_back(std::move(p.second));
  return out;
}

NpyBuffer NpzArchive::read(const std::string& name) const {
  const std::string& path = file_.path;
  auto it = entries_.find(name);
  if (it == entries_.end()) {
    std::string have;
    for (const auto& m : members()) have += (have.empty() ? "" : ", ") + m;
    throw InputError(path, "member '" + name + ".npy'", "missing from the archive (it has: " + have + ")");
  }
  const Entry& e = it->second;
  const std::string origin = path + ":" + name + ".npy";
  Reader r(file_.bytes, path);
  if (r.at<std::uint32_t>(e.local_offset, "local header") != kLocalSig)
    throw InputError(path, at_byte(e.local_offset), "corrupt zip archive: expected the local header of member '" + name + "'");
  if (e.flags & 1) throw InputError(path, at_byte(e.local_offset), "member '" + name + "' is encrypted");
  const std::uint64_t data_off = e.local_offset + 30 + r.at<std::uint16_t>(e.local_offset + 26, "name length") +
                                 r.at<std::uint16_t>(e.local_offset + 28, "extra length");
  if (data_off > file_.bytes.size() || e.compressed > file_.bytes.size() - data_off)
    throw InputError(path, at_byte(file_.bytes.size()), "truncated: member '" + name + "' runs past the end of the file");
  auto raw = file_.bytes.subspan(data_off, e.compressed);

  NpyBuffer buf;
  buf.origin = origin;
  if (e.method == 0) {
    if (e.compressed != e.uncompressed) throw InputError(path, at_byte(e.local_offset), "corrupt zip archive: stored member '" + name + "' has two sizes");
    buf.keeper = file_.keeper;
    buf.bytes = raw;
    buf.base_offset = data_off;
  } else if (e.method == 8) {
    // Deflate expands at most ~1032:1: a header claiming more is corrupt, and must not make us
    // allocate (and zero) whatever it says.
    if (e.uncompressed / 1032 > e.compressed + 64)
      throw InputError(path, at_byte(e.local_offset), "corrupt zip archive: member '" + name + "' claims " + std::to_string(e.uncompressed) +
                                                          " bytes from " + std::to_string(e.compressed) + " compressed");
    auto out = std::make_shared<std::vector<std::byte>>(e.uncompressed);
    z_stream zs{};
    if (inflateInit2(&zs, -MAX_WBITS) != Z_OK) throw std::runtime_error("zlib inflateInit2 failed");
    // Feed in pieces: zlib's counters are 32-bit.
    std::uint64_t in_done = 0, out_done = 0;
    int rc = Z_OK;
    while (rc == Z_OK) {
      const uInt in_chunk = static_cast<uInt>(std::min<std::uint64_t>(raw.size() - in_done, 1u << 30));
      const uInt out_chunk = static_cast<uInt>(std::min<std::uint64_t>(out->size() - out_done, 1u << 30));
      zs.next_in = reinterpret_cast<Bytef*>(const_cast<std::byte*>(raw.data() + in_done));
      zs.avail_in = in_chunk;
      zs.next_out = reinterpret_cast<Bytef*>(out->data() + out_done);
      zs.avail_out = out_chunk;
      rc = inflate(&zs, Z_NO_FLUSH);
      in_done += in_chunk - zs.avail_in;
      out_done += out_chunk - zs.avail_out;
      if (rc == Z_OK && zs.avail_in == in_chunk && zs.avail_out == out_chunk) rc = Z_BUF_ERROR;  // no progress
    }
    inflateEnd(&zs);
    if (rc != Z_STREAM_END || out_done != out->size())
      throw InputError(path, at_byte(data_off + in_done), "corrupt or truncated deflate data in member '" + name + "'");
    buf.bytes = {out->data(), out->size()};
    buf.keeper = std::move(out);
    buf.base_offset = 0;
  } else {
    throw InputError(path, at_byte(e.local_offset), "member '" + name + "' uses zip method " + std::to_string(e.method) + ", expected stored (0) or deflate (8)");
  }
  if (crc32_of(buf.bytes) != e.crc) throw InputError(path, at_byte(data_off), "CRC mismatch in member '" + name + "': the archive is corrupt");
  buf.header = parse_npy_header(buf.bytes, origin, buf.base_offset);
  return buf;
}

}  // namespace shardgnn
