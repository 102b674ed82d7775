#include "datasets/checks.hpp"

#include <algorithm>

#include "datasets/dataset.hpp"
#include "datasets/error.hpp"

namespace shardgnn {

namespace {

// The minimum and maximum first (a loop the compiler vectorises), the position only on failure.
template <class T>
void check_range_of(std::span<const T> values, std::int64_t lo, std::int64_t hi, const std::string& file, const char* what) {
  if (values.empty()) return;
  T mn = values[0], mx = values[0];
  for (const T v : values) {
    mn = std::min(mn, v);
    mx = std::max(mx, v);
  }
  if (mn >= lo && mx < hi) return;
  const auto bad = std::find_if(values.begin(), values.end(), [&](T v) { return v < lo || v >= hi; });
  throw InputError(file, "element " + std::to_string(bad - values.begin()),
                   std::string(what) + " " + std::to_string(*bad) + " out of range [" + std::to_string(lo) + ", " + std::to_string(hi) + ")");
}

}  // namespace

void check_range(std::span<const std::int64_t> values, std::int64_t lo, std::int64_t hi, const std::string& file, const char* what) {
  check_range_of(values, lo, hi, file, what);
}

void check_range(const IntArray& values, std::int64_t lo, std::int64_t hi, const std::string& file, const char* what) {
  values.visit([&](auto s) { check_range_of(s, lo, hi, file, what); });
}

void check_csr(const CsrGraph& g, std::int64_t targets, const std::string& indptr_file, const std::string& indices_file) {
  const auto& indptr = g.indptr();
  const auto m = g.num_edges();
  if (indptr.empty()) throw InputError(indptr_file, "", "empty, expected num_nodes + 1 offsets");
  if (indptr[0] != 0 || indptr[indptr.size() - 1] != m)
    throw InputError(indptr_file, "", "offsets must start at 0 and end at the " + std::to_string(m) + " entries of " + indices_file);
  // Non-decreasing from 0 to m means every offset is within [0, m].
  bool decreases = false;
  for (std::size_t i = 1; i < indptr.size(); ++i) decreases |= indptr[i] < indptr[i - 1];
  if (decreases) {
    std::size_t i = 1;
    while (indptr[i] >= indptr[i - 1]) ++i;
    throw InputError(indptr_file, "element " + std::to_string(i),
                     "offset " + std::to_string(indptr[i]) + " is below the one before it (" + std::to_string(indptr[i - 1]) + ")");
  }
  g.visit([&](const auto& v) { check_range_of(v.indices(), 0, targets, indices_file, "node id"); });
}

void check_label_bits(std::span<const std::uint8_t> bits, std::int64_t classes, const std::string& file) {
  const std::int64_t row = label_row_bytes(classes);
  if (classes % 8 == 0 || row == 0) return;
  const auto pad = static_cast<std::uint8_t>(0xff << (classes % 8));
  for (std::size_t at = static_cast<std::size_t>(row - 1); at < bits.size(); at += static_cast<std::size_t>(row))
    if (bits[at] & pad)
      throw InputError(file, "element " + std::to_string(at), "node " + std::to_string(static_cast<std::int64_t>(at) / row) + " has a label bit past its " +
                                                               std::to_string(classes) + " labels set");
}

}  // namespace shardgnn
