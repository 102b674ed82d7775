// Neighbour choice for one node, shared by the distributed sampler and the serial reference.
// The random stream is keyed by (seed, epoch, step, hop, the node's id in the source dataset):
// whichever rank owns the node draws the same neighbours, so results do not depend on the
// partitioning, and a one-rank run reproduces the serial reference exactly.
#pragma once

#include <algorithm>
#include <cstdint>
#include <span>
#include <vector>

namespace shardgnn {

inline std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

inline std::uint64_t sample_key(std::uint64_t seed, std::int64_t epoch, std::int64_t step, int hop, std::int64_t node) {
  std::uint64_t k = splitmix64(seed ^ 0x5ad1e5a3c0ffee11ULL);
  k = splitmix64(k ^ static_cast<std::uint64_t>(epoch));
  k = splitmix64(k ^ static_cast<std::uint64_t>(step));
  k = splitmix64(k ^ static_cast<std::uint64_t>(hop));
  return splitmix64(k ^ static_cast<std::uint64_t>(node));
}

// A tiny counter-based stream: fast, and fully determined by the key.
class KeyedStream {
 public:
  explicit KeyedStream(std::uint64_t key) : state_(key) {}
  std::uint64_t next() { return splitmix64(state_ += 0x9e3779b97f4a7c15ULL); }
  // Uniform in [0, n) (Lemire's multiply-shift; the bias is below 2^-32 for n < 2^32).
  std::uint64_t below(std::uint64_t n) {
    __extension__ using u128 = unsigned __int128;
    return static_cast<std::uint64_t>((static_cast<u128>(next()) * n) >> 64);
  }

 private:
  std::uint64_t state_;
};

// Appends the chosen neighbours of one node to `out`. fanout -1 (or >= degree without
// replacement) takes every neighbour; without replacement the choice is Floyd's algorithm and the
// chosen neighbours keep their CSR order; with replacement `fanout` independent uniform draws.
template <class NodeT>
void sample_row(std::span<const NodeT> neighbors, int fanout, bool replace, std::uint64_t key, std::vector<NodeT>& out,
                std::vector<std::int64_t>& scratch) {
  const auto d = static_cast<std::int64_t>(neighbors.size());
  if (d == 0) return;
  if (fanout < 0 || (!replace && fanout >= d)) {
    out.insert(out.end(), neighbors.begin(), neighbors.end());
    return;
  }
  KeyedStream rng(key);
  if (replace) {
    for (int i = 0; i < fanout; ++i) out.push_back(neighbors[static_cast<std::size_t>(rng.below(static_cast<std::uint64_t>(d)))]);
    return;
  }
  // Floyd: for j in d-k .. d-1, pick t in [0, j]; take t unless taken, else take j.
  scratch.clear();
  for (std::int64_t j = d - fanout; j < d; ++j) {
    const auto t = static_cast<std::int64_t>(rng.below(static_cast<std::uint64_t>(j + 1)));
    scratch.push_back(std::find(scratch.begin(), scratch.end(), t) == scratch.end() ? t : j);
  }
  std::sort(scratch.begin(), scratch.end());
  for (std::int64_t i : scratch) out.push_back(neighbors[static_cast<std::size_t>(i)]);
}

}  // namespace shardgnn
