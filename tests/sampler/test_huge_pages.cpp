// The pool of big per-batch buffers in 2 MiB pages (sampler/huge_pages.hpp).
#include <catch2/catch.hpp>
#include <cstdint>
#include <vector>

#include "sampler/minibatch.hpp"

using namespace shardgnn;

namespace {
constexpr std::size_t kMiB = std::size_t{1} << 20;
bool aligned_2mib(const void* p) { return reinterpret_cast<std::uintptr_t>(p) % (2 * kMiB) == 0; }
}  // namespace

TEST_CASE("big buffers are 2 MiB-aligned, writable, and reused instead of mapped again", "[huge-pages]") {
  huge_buffer_pool_trim();  // earlier tests' idle buffers would be reused here
  CHECK(huge_buffer_pool_stats().idle == 0);
  const HugeBufferPoolStats before = huge_buffer_pool_stats();
  void* a = huge_buffer_allocate(5 * kMiB);
  CHECK(aligned_2mib(a));
  std::vector<char> pattern(5 * kMiB, 7);
  std::copy(pattern.begin(), pattern.end(), static_cast<char*>(a));  // every byte writable
  CHECK(static_cast<char*>(a)[5 * kMiB - 1] == 7);
  CHECK(huge_buffer_pool_stats().live == before.live + 1);
  huge_buffer_release(a, 5 * kMiB);
  CHECK(huge_buffer_pool_stats().live == before.live);
  const std::size_t mappings = huge_buffer_pool_stats().mappings;
  // A request the idle 6 MiB mapping fits (5.5 MiB rounds to 6) gets it back: no new mapping.
  void* b = huge_buffer_allocate(5 * kMiB + kMiB / 2);
  CHECK(b == a);
  CHECK(huge_buffer_pool_stats().mappings == mappings);
  // One more than twice as small does not take it (it would waste the rest): a fresh mapping.
  huge_buffer_release(b, 5 * kMiB + kMiB / 2);
  void* c = huge_buffer_allocate(2 * kMiB);
  CHECK(c != a);
  CHECK(huge_buffer_pool_stats().mappings == mappings + 1);
  huge_buffer_release(c, 2 * kMiB);
}

TEST_CASE("the pool keeps its limit of idle buffers, giving back the one idle longest", "[huge-pages]") {
  huge_buffer_pool_trim();
  const std::size_t keep = huge_buffer_pool_stats().keep;
  CHECK(keep >= 4);
  std::vector<void*> held;
  std::vector<std::size_t> sizes;
  for (std::size_t i = 0; i < keep + 2; ++i) sizes.push_back((i + 1) * 2 * kMiB);  // 2, 4, 6, ... MiB: all fresh, none idle
  for (std::size_t s : sizes) held.push_back(huge_buffer_allocate(s));
  for (std::size_t i = 0; i < held.size(); ++i) huge_buffer_release(held[i], sizes[i]);
  const HugeBufferPoolStats s = huge_buffer_pool_stats();
  CHECK(s.idle == keep);
  std::size_t newest = 0;  // the last `keep` released
  for (std::size_t i = 2; i < sizes.size(); ++i) newest += sizes[i];
  CHECK(s.idle_bytes == newest);
  // A deeper prefetch queue raises the limit (never lowers it).
  huge_buffer_pool_keep_at_least(keep + 3);
  CHECK(huge_buffer_pool_stats().keep == keep + 3);
  huge_buffer_pool_keep_at_least(1);
  CHECK(huge_buffer_pool_stats().keep == keep + 3);
  huge_buffer_pool_trim();
  CHECK(huge_buffer_pool_stats().idle == 0);
}

TEST_CASE("small buffers bypass the pool, FeatureRows grows, keeps its contents and frees through it", "[huge-pages]") {
  const HugeBufferPoolStats before = huge_buffer_pool_stats();
  void* small = huge_buffer_allocate(1000);
  static_cast<char*>(small)[999] = 1;
  huge_buffer_release(small, 1000);
  CHECK(huge_buffer_pool_stats().live == before.live);
  {
    FeatureRows rows(100, 1.5f);  // under 2 MiB: operator new
    rows.resize(3 * kMiB / sizeof(float), 2.5f);  // over: a pooled buffer
    CHECK(aligned_2mib(rows.data()));
    CHECK(rows[99] == 1.5f);
    CHECK(rows[100] == 2.5f);
    CHECK(rows.back() == 2.5f);
    CHECK(huge_buffer_pool_stats().live == before.live + 1);
  }
  CHECK(huge_buffer_pool_stats().live == before.live);
}
