// Seeded randomness that yields the same numbers on every platform. Boost.Random's engines and
// distributions are specified exactly; std::shuffle and the std:: distributions are not (libstdc++,
// libc++ and MSVC draw differently), so generated datasets and splits use only what is here.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <utility>

#include <boost/random/mersenne_twister.hpp>
#include <boost/random/uniform_int_distribution.hpp>

namespace shardgnn {

using Rng = boost::random::mt19937_64;

// An independent seed for one stream of a generator (SplitMix64's finaliser over seed and stream),
// so that changing how many numbers one stream draws leaves every other stream unchanged.
inline std::uint64_t derive_seed(std::uint64_t seed, std::uint64_t stream) {
  std::uint64_t z = seed + 0x9e3779b97f4a7c15ULL * (stream + 1);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

// The seed of one stream of one epoch of a run: derive_seed(derive_seed(seed, epoch), stream).
// Each user names its stream by a constant plus the rank (shuffles, class draws, dropout).
inline std::uint64_t epoch_stream_seed(std::uint64_t seed, std::int64_t epoch, std::uint64_t stream) {
  return derive_seed(derive_seed(seed, static_cast<std::uint64_t>(epoch)), stream);
}

// Fisher-Yates, drawing each index with Boost's (portable) uniform_int_distribution.
template <class T>
void seeded_shuffle(std::span<T> items, Rng& rng) {
  // 64-bit draws on every platform, whatever the width of size_t.
  for (std::uint64_t i = items.size(); i > 1; --i) {
    boost::random::uniform_int_distribution<std::uint64_t> pick(0, i - 1);
    std::swap(items[i - 1], items[static_cast<std::size_t>(pick(rng))]);
  }
}

// Shuffles `ids` by the stream keyed by (seed, epoch, stream); the order depends only on the
// key and the length, not on what the items are.
template <class T>
void keyed_shuffle(std::span<T> ids, std::uint64_t seed, std::int64_t epoch, std::uint64_t stream) {
  Rng rng(epoch_stream_seed(seed, epoch, stream));
  seeded_shuffle(ids, rng);
}

// A seeded bijection of [0, 2^scale), computed on the fly. Graph500's reference generator does the
// same (`scramble` in generator/graph_generator.c) rather than store a random permutation, which
// costs 8 * 2^scale bytes and a cache miss per endpoint, a slowdown at large scales.
// Adding a constant and multiplying by an odd one are bijections modulo 2^scale, and reversing the
// low `scale` bits between the two rounds lets the high bits of the id influence the low ones.
class Relabel {
 public:
  Relabel(int scale, std::uint64_t seed) : shift_(64 - scale) {
    Rng rng(seed);
    add_ = rng();
    mul1_ = rng() | 1;
    mul2_ = rng() | 1;
  }
  std::uint64_t operator()(std::uint64_t v) const {
    v = reverse_bits((v + add_) * mul1_) >> shift_;
    return reverse_bits(v * mul2_) >> shift_;
  }

 private:
  static std::uint64_t reverse_bits(std::uint64_t x) {
    x = __builtin_bswap64(x);
    x = ((x >> 4) & 0x0f0f0f0f0f0f0f0fULL) | ((x & 0x0f0f0f0f0f0f0f0fULL) << 4);
    x = ((x >> 2) & 0x3333333333333333ULL) | ((x & 0x3333333333333333ULL) << 2);
    return ((x >> 1) & 0x5555555555555555ULL) | ((x & 0x5555555555555555ULL) << 1);
  }
  int shift_;
  std::uint64_t add_, mul1_, mul2_;
};

}  // namespace shardgnn
