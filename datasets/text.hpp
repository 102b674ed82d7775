// Text input for the line-based readers: a plain file is memory-mapped and handed over whole; a
// gzip file (detected by its magic bytes, not its name) is inflated in chunks that always end at
// a line boundary, so parsers never see half a line. Plus the token scanners they share.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

namespace shardgnn {

// Calls `fn(text, first_line)` with consecutive pieces of the file; every piece but the last ends
// with '\n'. `first_line` is the 1-based line number of the piece's first line. Returns the total
// number of (uncompressed) bytes. A corrupt or truncated gzip stream is an InputError.
std::uint64_t for_each_text_chunk(const std::string& path, const std::function<void(std::string_view, std::uint64_t)>& fn);

bool is_gzip_file(const std::string& path);

// A cursor over one chunk of text that knows its line number, for parsers and their errors.
class TextCursor {
 public:
  TextCursor(std::string_view text, std::uint64_t first_line, const std::string& origin)
      : p_(text.data()), end_(text.data() + text.size()), line_start_(p_), line_(first_line), origin_(origin) {}

  bool at_end() const { return p_ >= end_; }
  char peek() const { return p_ < end_ ? *p_ : '\n'; }
  std::uint64_t line() const { return line_; }
  std::uint64_t column() const { return static_cast<std::uint64_t>(p_ - line_start_) + 1; }
  // Skips spaces, tabs and '\r' (not newlines).
  void skip_blanks() { while (p_ < end_ && (*p_ == ' ' || *p_ == '\t' || *p_ == '\r')) ++p_; }
  // Skips blanks and at most one comma: the separators of CSV and whitespace formats alike.
  void skip_separator();
  bool at_eol() const { return p_ >= end_ || *p_ == '\n'; }
  // Moves past the end of the current line.
  void next_line();
  // Parses a signed 64-bit integer token; errors name the line/column and the token found.
  std::int64_t read_int(const char* what);
  // Parses a float token (decimal or scientific; "nan"/"inf" are parsed and left to the caller).
  double read_double(const char* what);
  // Moves past the current token.
  void skip_token() { p_ += token().size(); }
  // The current token (up to a separator or line end), for messages.
  std::string_view token() const;
  // Throws InputError at the current line/column; right after a read_int/read_double (nothing
  // moved since), the column is that of the token just read, which the error is about.
  [[noreturn]] void fail(const std::string& what) const;

 private:
  const char* p_;
  const char* end_;
  const char* line_start_;
  std::uint64_t line_;
  const std::string& origin_;
  const char* token_start_ = nullptr;  // start and end of the last token read_int/read_double parsed
  const char* token_end_ = nullptr;
};

}  // namespace shardgnn
