// Content checks of mapped arrays, for code that is about to walk them: what a corrupted file
// could hold that would send a reader out of bounds (offsets that decrease or pass the end, ids out
// of range). Each throws an InputError naming the file, the element and what was expected; each is
// one pass over the array, at memory speed.
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "datasets/graph.hpp"
#include "datasets/int_array.hpp"

namespace shardgnn {

// indptr starts at 0, never decreases and ends at the number of entries; every index lies in
// [0, targets).
void check_csr(const CsrGraph& g, std::int64_t targets, const std::string& indptr_file, const std::string& indices_file);

// Every value lies in [lo, hi); `what` names one ("node id", "label").
void check_range(std::span<const std::int64_t> values, std::int64_t lo, std::int64_t hi, const std::string& file, const char* what);
// The same for an array held at any width.
void check_range(const IntArray& values, std::int64_t lo, std::int64_t hi, const std::string& file, const char* what);

// Rows of label_row_bytes(classes) bytes (a multi-label dataset's label_bits) set no bit past the
// last label.
void check_label_bits(std::span<const std::uint8_t> bits, std::int64_t classes, const std::string& file);

}  // namespace shardgnn
