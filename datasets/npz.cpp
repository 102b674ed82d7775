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

// stream() hands members over in pieces of this size: stored ones as views of the mapping,
// deflated ones through a window of it.
constexpr std::size_t kWindow = std::size_t{4} << 20;

// A deflated member's bytes, inflated in order into whatever windows the caller hands over.
class Inflater {
 public:
  Inflater(std::span<const std::byte> raw, std::uint64_t total, const std::string& path, const std::string& name, std::uint64_t data_off)
      : raw_(raw), total_(total), path_(path), name_(name), data_off_(data_off) {
    if (inflateInit2(&zs_, -MAX_WBITS) != Z_OK) throw std::runtime_error("zlib inflateInit2 failed");
  }
  ~Inflater() { inflateEnd(&zs_); }
  Inflater(const Inflater&) = delete;
  Inflater& operator=(const Inflater&) = delete;

  // Fills `out` with the next bytes, all of it unless the member ends first; returns the count.
  std::size_t read(std::span<std::byte> out) {
    std::size_t filled = 0;
    // Fed in pieces: zlib's counters are 32-bit.
    while (filled < out.size() && rc_ == Z_OK) {
      const uInt in_chunk = static_cast<uInt>(std::min<std::uint64_t>(raw_.size() - in_done_, 1u << 30));
      const uInt out_chunk = static_cast<uInt>(std::min<std::uint64_t>(out.size() - filled, 1u << 30));
      zs_.next_in = reinterpret_cast<Bytef*>(const_cast<std::byte*>(raw_.data() + in_done_));
      zs_.avail_in = in_chunk;
      zs_.next_out = reinterpret_cast<Bytef*>(out.data() + filled);
      zs_.avail_out = out_chunk;
      rc_ = inflate(&zs_, Z_NO_FLUSH);
      in_done_ += in_chunk - zs_.avail_in;
      filled += out_chunk - zs_.avail_out;
      if (rc_ == Z_OK && zs_.avail_in == in_chunk && zs_.avail_out == out_chunk) rc_ = Z_BUF_ERROR;  // no progress
    }
    out_done_ += filled;
    if (out_done_ > total_ || (rc_ != Z_OK && rc_ != Z_STREAM_END) || (filled < out.size() && out_done_ != total_))
      throw InputError(path_, at_byte(data_off_ + in_done_), "corrupt or truncated deflate data in member '" + name_ + "'");
    return filled;
  }
  // Checks that the member ended where its header said.
  void finish() {
    if (rc_ != Z_STREAM_END || out_done_ != total_)
      throw InputError(path_, at_byte(data_off_ + in_done_), "corrupt or truncated deflate data in member '" + name_ + "'");
  }

 private:
  z_stream zs_{};
  int rc_ = Z_OK;
  std::span<const std::byte> raw_;
  std::uint64_t total_, in_done_ = 0, out_done_ = 0;
  const std::string& path_;
  const std::string& name_;
  std::uint64_t data_off_;
};

NpzArchive::Located NpzArchive::locate(const std::string& name) const {
  const std::string& path = file_.path;
  auto it = entries_.find(name);
  if (it == entries_.end()) {
    std::string have;
    for (const auto& m : members()) have += (have.empty() ? "" : ", ") + m;
    throw InputError(path, "member '" + name + ".npy'", "missing from the archive (it has: " + have + ")");
  }
  const Entry& e = it->second;
  Reader r(file_.bytes, path);
  if (r.at<std::uint32_t>(e.local_offset, "local header") != kLocalSig)
    throw InputError(path, at_byte(e.local_offset), "corrupt zip archive: expected the local header of member '" + name + "'");
  if (e.flags & 1) throw InputError(path, at_byte(e.local_offset), "member '" + name + "' is encrypted");
  const std::uint64_t data_off = e.local_offset + 30 + r.at<std::uint16_t>(e.local_offset + 26, "name length") +
                                 r.at<std::uint16_t>(e.local_offset + 28, "extra length");
  if (data_off > file_.bytes.size() || e.compressed > file_.bytes.size() - data_off)
    throw InputError(path, at_byte(file_.bytes.size()), "truncated: member '" + name + "' runs past the end of the file");
  if (e.method == 0) {
    if (e.compressed != e.uncompressed) throw InputError(path, at_byte(e.local_offset), "corrupt zip archive: stored member '" + name + "' has two sizes");
  } else if (e.method == 8) {
    // Deflate expands at most ~1032:1: a header claiming more is corrupt, and must not make us
    // allocate (and zero) whatever it says.
    if (e.uncompressed / 1032 > e.compressed + 64)
      throw InputError(path, at_byte(e.local_offset), "corrupt zip archive: member '" + name + "' claims " + std::to_string(e.uncompressed) +
                                                          " bytes from " + std::to_string(e.compressed) + " compressed");
  } else {
    throw InputError(path, at_byte(e.local_offset), "member '" + name + "' uses zip method " + std::to_string(e.method) + ", expected stored (0) or deflate (8)");
  }
  return {&e, file_.bytes.subspan(data_off, e.compressed), data_off};
}

NpyBuffer NpzArchive::read(const std::string& name) const {
  const std::string& path = file_.path;
  const Located m = locate(name);
  NpyBuffer buf;
  buf.origin = path + ":" + name + ".npy";
  if (m.entry->method == 0) {
    buf.keeper = file_.keeper;
    buf.bytes = m.raw;
    buf.base_offset = m.data_off;
  } else {
    auto out = std::make_shared<std::vector<std::byte>>(m.entry->uncompressed);
    Inflater inf(m.raw, out->size(), path, name, m.data_off);
    inf.read(*out);
    inf.finish();
    buf.bytes = {out->data(), out->size()};
    buf.keeper = std::move(out);
    buf.base_offset = 0;
  }
  if (crc32_of(buf.bytes) != m.entry->crc) throw InputError(path, at_byte(m.data_off), "CRC mismatch in member '" + name + "': the archive is corrupt");
  buf.header = parse_npy_header(buf.bytes, buf.origin, buf.base_offset);
  return buf;
}

NpyStream NpzArchive::stream(const std::string& name) const {
  const Located m = locate(name);
  const Entry e = *m.entry;
  NpyStream s;
  s.origin = file_.path + ":" + name + ".npy";
  const std::uint64_t base = e.method == 0 ? m.data_off : 0;  // errors in an inflated member name its own bytes
  if (e.method == 0) {
    s.header = parse_npy_header(m.raw, s.origin, base);
  } else {
    // The header lies in the first bytes (numpy's are at most a few KiB; a 1 MiB window is ample).
    std::vector<std::byte> first(std::min<std::uint64_t>(e.uncompressed, std::size_t{1} << 20));
    Inflater inf(m.raw, e.uncompressed, file_.path, name, m.data_off);
    first.resize(inf.read(first));
    s.header = parse_npy_header(first, s.origin, base, e.uncompressed);
  }
  s.data_base = base + s.header.data_offset;
  s.data = [raw = m.raw, e, data_off = m.data_off, header_bytes = s.header.data_offset, path = file_.path, name, keeper = file_.keeper](const ByteSink& sink) {
    std::uint32_t crc = 0;
    if (e.method == 0) {
      crc = crc32_of(raw.first(header_bytes));
      for (std::size_t off = header_bytes; off < raw.size(); off += kWindow) {
        const auto piece = raw.subspan(off, std::min<std::size_t>(raw.size() - off, kWindow));
        crc = crc32_of(piece, crc);
        sink(piece);
      }
    } else {
      std::vector<std::byte> window(std::min<std::uint64_t>(std::max<std::uint64_t>(e.uncompressed, 1), kWindow));
      Inflater inf(raw, e.uncompressed, path, name, data_off);
      std::uint64_t at = 0;  // bytes of the member inflated so far
      for (std::size_t got; (got = inf.read(window)) > 0;) {
        const std::span<const std::byte> piece(window.data(), got);
        crc = crc32_of(piece, crc);
        // The header's bytes are counted in the CRC but not handed over.
        const std::size_t skip = at < header_bytes ? static_cast<std::size_t>(std::min<std::uint64_t>(header_bytes - at, got)) : 0;
        at += got;
        if (got > skip) sink(piece.subspan(skip));
        if (got < window.size()) break;
      }
      inf.finish();
    }
    if (crc != e.crc) throw InputError(path, at_byte(data_off), "CRC mismatch in member '" + name + "': the archive is corrupt");
  };
  return s;
}

}  // namespace shardgnn
