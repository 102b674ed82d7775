#include "datasets/error.hpp"

#include <cstdio>

namespace shardgnn {

namespace {
std::string compose(const std::string& file, const std::string& position, const std::string& what) {
  std::string msg = file;
  if (!position.empty()) msg += ": " + position;
  msg += ": " + what;
  // One line, always: a stray newline in a token must not split the message.
  for (char& c : msg)
    if (c == '\n' || c == '\r') c = ' ';
  return msg;
}
}  // namespace

InputError::InputError(std::string file, std::string position, const std::string& what)
    : std::runtime_error(compose(file, position, what)), file_(std::move(file)), position_(std::move(position)) {}

InputError::InputError(const std::string& what) : std::runtime_error(what) {}

std::string at_line(std::uint64_t line) { return "line " + std::to_string(line); }
std::string at_line_col(std::uint64_t line, std::uint64_t col) {
  return "line " + std::to_string(line) + ", column " + std::to_string(col);
}
std::string at_byte(std::uint64_t offset) { return "byte offset " + std::to_string(offset); }

std::string quote_token(std::string_view token) {
  constexpr std::size_t kMax = 40;
  std::string out = "'";
  for (std::size_t i = 0; i < token.size() && i < kMax; ++i) {
    unsigned char c = static_cast<unsigned char>(token[i]);
    if (c < 0x20 || c >= 0x7f) {  // control bytes and non-ASCII (binary input must not garble the terminal)
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  if (token.size() > kMax) out += "...";
  out += "'";
  return out;
}

}  // namespace shardgnn
