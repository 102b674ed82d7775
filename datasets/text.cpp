#include "datasets/text.hpp"

#include <zlib.h>

#include <charconv>
#include <cstdio>
#include <cstring>
#include <memory>
#include <vector>

#include "datasets/error.hpp"
#include "datasets/fileio.hpp"

namespace shardgnn {

bool is_gzip_file(const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) return false;
  unsigned char magic[2] = {0, 0};
  std::size_t got = std::fread(magic, 1, 2, f);
  std::fclose(f);
  return got == 2 && magic[0] == 0x1f && magic[1] == 0x8b;
}

namespace {

std::uint64_t count_lines(std::string_view s) {
  std::uint64_t n = 0;
  const char* p = s.data();
  const char* e = p + s.size();
  while ((p = static_cast<const char*>(std::memchr(p, '\n', static_cast<std::size_t>(e - p))))) {
    ++n;
    ++p;
  }
  return n;
}

std::uint64_t gzip_chunks(const std::string& path, const std::function<void(std::string_view, std::uint64_t)>& fn) {
  gzFile gz = gzopen(path.c_str(), "rb");
  if (!gz) throw InputError(path, "", "cannot open");
  std::unique_ptr<gzFile_s, int (*)(gzFile)> guard(gz, gzclose);
  gzbuffer(gz, 1 << 20);
  constexpr std::size_t kChunk = 16u << 20;
  std::vector<char> buf(kChunk);
  std::size_t carry = 0;   // bytes of an unfinished line kept at the front of buf
  std::uint64_t line = 1, total = 0;
  while (true) {
    if (carry == buf.size()) buf.resize(buf.size() * 2);  // a line longer than the buffer
    const int got = gzread(gz, buf.data() + carry, static_cast<unsigned>(buf.size() - carry));
    if (got < 0) {
      int err = 0;
      const char* msg = gzerror(gz, &err);
      throw InputError(path, "uncompressed " + at_byte(total), std::string("corrupt gzip data: ") + (msg ? msg : "read error"));
    }
    if (got == 0) {
      // zlib reports a stream cut short only through gzerror after the final read.
      int err = 0;
      const char* msg = gzerror(gz, &err);
      if (err != Z_OK && err != Z_STREAM_END)
        throw InputError(path, "uncompressed " + at_byte(total + carry), std::string("truncated or corrupt gzip data: ") + (msg ? msg : ""));
      if (carry > 0) fn(std::string_view(buf.data(), carry), line);
      total += carry;
      return total;
    }
    const std::size_t have = carry + static_cast<std::size_t>(got);
    std::string_view view(buf.data(), have);
    const std::size_t last_nl = view.rfind('\n');
    if (last_nl == std::string_view::npos) {
      carry = have;
      continue;
    }
    std::string_view whole = view.substr(0, last_nl + 1);
    fn(whole, line);
    line += count_lines(whole);
    total += whole.size();
    carry = have - whole.size();
    std::memmove(buf.data(), buf.data() + whole.size(), carry);
  }
}

}  // namespace

std::uint64_t for_each_text_chunk(const std::string& path, const std::function<void(std::string_view, std::uint64_t)>& fn) {
  MappedFile m = map_file(path);
  if (m.bytes.size() >= 2 && m.bytes[0] == std::byte{0x1f} && m.bytes[1] == std::byte{0x8b}) return gzip_chunks(path, fn);
  fn(std::string_view(reinterpret_cast<const char*>(m.bytes.data()), m.bytes.size()), 1);
  return m.bytes.size();
}

void TextCursor::skip_separator() {
  skip_blanks();
  if (p_ < end_ && *p_ == ',') {
    ++p_;
    skip_blanks();
  }
}

void TextCursor::next_line() {
  const void* nl = std::memchr(p_, '\n', static_cast<std::size_t>(end_ - p_));
  p_ = nl ? static_cast<const char*>(nl) + 1 : end_;
  line_start_ = p_;
  ++line_;
}

std::string_view TextCursor::token() const {
  const char* e = p_;
  while (e < end_ && *e != ' ' && *e != '\t' && *e != ',' && *e != '\n' && *e != '\r') ++e;
  return {p_, static_cast<std::size_t>(e - p_)};
}

void TextCursor::fail(const std::string& what) const {
  const std::uint64_t col = p_ == token_end_ ? static_cast<std::uint64_t>(token_start_ - line_start_) + 1 : column();
  throw InputError(origin_, at_line_col(line_, col), what);
}

std::int64_t TextCursor::read_int(const char* what) {
  token_start_ = token_end_ = nullptr;
  if (at_eol()) fail(std::string("line ends early, expected ") + what);
  std::int64_t v = 0;
  auto [ptr, ec] = std::from_chars(p_, end_, v);
  if (ec == std::errc::result_out_of_range) fail(std::string(what) + " " + quote_token(token()) + " is out of the 64-bit range");
  if (ec != std::errc() || (ptr < end_ && *ptr != ' ' && *ptr != '\t' && *ptr != ',' && *ptr != '\n' && *ptr != '\r'))
    fail(std::string("expected ") + what + ", found " + quote_token(token()));
  token_start_ = p_;
  token_end_ = p_ = ptr;
  return v;
}

double TextCursor::read_double(const char* what) {
  token_start_ = token_end_ = nullptr;
  if (at_eol()) fail(std::string("line ends early, expected ") + what);
  double v = 0;
  const char* s = p_;
  if (*s == '+') ++s;  // from_chars rejects a leading '+', which CSV writers emit
  auto [ptr, ec] = std::from_chars(s, end_, v);
  if (ec == std::errc::result_out_of_range) fail(std::string(what) + " " + quote_token(token()) + " is out of the float range");
  if (ec != std::errc() || (ptr < end_ && *ptr != ' ' && *ptr != '\t' && *ptr != ',' && *ptr != '\n' && *ptr != '\r'))
    fail(std::string("expected ") + what + ", found " + quote_token(token()));
  token_start_ = p_;
  token_end_ = p_ = ptr;
  return v;
}

}  // namespace shardgnn
