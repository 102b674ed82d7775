// Errors for bad input: one line naming the file, the position and what was expected.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>

namespace shardgnn {

// Thrown for anything wrong with user-supplied input (files, options). The message is a single
// line of the form "<file>: <position>: <what was wrong / expected>", ready to print as is.
class InputError : public std::runtime_error {
 public:
  InputError(std::string file, std::string position, const std::string& what);
  // For errors that are not tied to a file (command-line options).
  explicit InputError(const std::string& what);

  const std::string& file() const noexcept { return file_; }
  const std::string& position() const noexcept { return position_; }

 private:
  std::string file_;
  std::string position_;
};

// Position helpers so messages read the same everywhere.
std::string at_line(std::uint64_t line);                       // "line 12"
std::string at_line_col(std::uint64_t line, std::uint64_t col);  // "line 12, column 4"
std::string at_byte(std::uint64_t offset);                      // "byte offset 1234"

// Quotes a token for an error message, truncating long ones and escaping control characters.
std::string quote_token(std::string_view token);

}  // namespace shardgnn
