// One name table per enum (the names the command line and the files use), read both ways by
// the same two functions, so every option's error lists exactly what it accepts.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <utility>

#include "datasets/error.hpp"

namespace shardgnn {

// A table lists every value once under its own name; a value listed again under another name
// takes that alias too (parsed, never printed).
template <class E>
using EnumName = std::pair<E, std::string_view>;

template <class E, std::size_t N>
std::string enum_name(const EnumName<E> (&table)[N], E value) {
  for (const auto& [v, name] : table)
    if (v == value) return std::string(name);
  return "?";
}

// The value called `text`, else an InputError "unknown <what> '<text>', expected one of: <names>".
template <class E, std::size_t N>
E parse_enum(const EnumName<E> (&table)[N], std::string_view text, std::string_view what) {
  for (const auto& [v, name] : table)
    if (name == text) return v;
  std::string names;
  for (std::size_t i = 0; i < N; ++i) {
    if (enum_name(table, table[i].first) != table[i].second) continue;  // an alias
    names += (names.empty() ? "" : ", ") + std::string(table[i].second);
  }
  throw InputError("unknown " + std::string(what) + " " + quote_token(text) + ", expected one of: " + names);
}

}  // namespace shardgnn
