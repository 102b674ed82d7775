#include "sampler/huge_pages.hpp"

#include <sys/mman.h>

#include <algorithm>
#include <cassert>
#include <cerrno>
#include <cstdint>
#include <mutex>
#include <new>
#include <unordered_map>
#include <vector>

namespace shardgnn {

namespace {

constexpr std::size_t kHuge = std::size_t{2} << 20;

struct Pool {
  std::mutex mutex;
  // Idle buffers (buffer, mapped bytes), oldest release first. Capacity is kept above `keep`, so
  // a release never allocates.
  std::vector<std::pair<void*, std::size_t>> idle;
  std::size_t keep = 4;  // the prefetch queue's batches, the one in use and one being produced
  std::unordered_map<void*, std::size_t> live;  // handed out: mapped bytes
  std::size_t mappings = 0;
  Pool() { idle.reserve(keep + 1); }
};
Pool& pool() {
  static Pool* p = new Pool;  // never destroyed: buffers may be freed by static destructors
  return *p;
}

// A fresh 2 MiB-aligned anonymous mapping of `bytes` (a multiple of kHuge), asked for huge pages
// and faulted in.
void* map_huge(std::size_t bytes) {
  const int saved = errno;
  void* raw = ::mmap(nullptr, bytes + kHuge, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (raw == MAP_FAILED) throw std::bad_alloc();
  const auto begin = reinterpret_cast<std::uintptr_t>(raw);
  const auto aligned = (begin + kHuge - 1) & ~(kHuge - 1);
  if (aligned > begin) ::munmap(raw, aligned - begin);
  if (const std::size_t tail = begin + bytes + kHuge - (aligned + bytes); tail > 0) ::munmap(reinterpret_cast<void*>(aligned + bytes), tail);
#if defined(__linux__)
  ::madvise(reinterpret_cast<void*>(aligned), bytes, MADV_HUGEPAGE);  // a hint: 4 KiB pages where refused
  // Fault it in now, at allocation, not inside the first gather that writes it: a fresh buffer's
  // first writes cost many times a gather into a reused one, once per buffer. A hint too (Linux
  // 5.14; else the first writes fault).
#ifndef MADV_POPULATE_WRITE
  constexpr int MADV_POPULATE_WRITE = 23;
#endif
  ::madvise(reinterpret_cast<void*>(aligned), bytes, MADV_POPULATE_WRITE);
#endif
  errno = saved;
  return reinterpret_cast<void*>(aligned);
}

}  // namespace

void* huge_buffer_allocate(std::size_t bytes) {
  if (bytes < kHuge) return ::operator new(bytes);
  if (bytes > SIZE_MAX - 2 * kHuge) throw std::bad_alloc();
  const std::size_t want = (bytes + kHuge - 1) / kHuge * kHuge;
  Pool& p = pool();
  {
    std::lock_guard lock(p.mutex);
    // The smallest idle buffer that fits, unless it is more than twice the size asked for.
    auto best = p.idle.end();
    for (auto it = p.idle.begin(); it != p.idle.end(); ++it)
      if (it->second >= want && it->second <= 2 * want && (best == p.idle.end() || it->second < best->second)) best = it;
    if (best != p.idle.end()) {
      const auto [buffer, size] = *best;
      p.live.emplace(buffer, size);  // first: if it throws, the buffer is still idle
      p.idle.erase(best);
      return buffer;
    }
  }
  void* buffer = map_huge(want);
  try {
    std::lock_guard lock(p.mutex);
    p.live.emplace(buffer, want);
    ++p.mappings;
  } catch (...) {
    ::munmap(buffer, want);
    throw;
  }
  return buffer;
}

void huge_buffer_release(void* buffer, std::size_t bytes) noexcept {
  if (buffer == nullptr) return;
  if (bytes < kHuge) {
    ::operator delete(buffer);
    return;
  }
  Pool& p = pool();
  std::pair<void*, std::size_t> unmap{nullptr, 0};
  {
    std::lock_guard lock(p.mutex);
    const auto it = p.live.find(buffer);
    assert(it != p.live.end() && "huge_buffer_release: a buffer this pool did not hand out");
    if (it == p.live.end()) return;
    const std::size_t size = it->second;
    p.live.erase(it);
    p.idle.emplace_back(buffer, size);  // within the reserved capacity: no allocation
    if (p.idle.size() > p.keep) {
      // Give back the buffer idle longest: batches whose size changed for good (a rebalanced
      // rank's smaller batches, say) then replace the old sizes instead of mapping afresh each
      // time beside buffers that no longer fit.
      unmap = p.idle.front();
      p.idle.erase(p.idle.begin());
    }
  }
  if (unmap.first != nullptr) ::munmap(unmap.first, unmap.second);
}

void huge_buffer_pool_keep_at_least(std::size_t idle) {
  Pool& p = pool();
  std::lock_guard lock(p.mutex);
  if (idle <= p.keep) return;
  p.idle.reserve(idle + 1);  // may throw: the limit is raised only once it holds
  p.keep = idle;
}

void huge_buffer_pool_trim() noexcept {
  Pool& p = pool();
  std::lock_guard lock(p.mutex);
  for (const auto& [buffer, size] : p.idle) ::munmap(buffer, size);
  p.idle.clear();  // keeps its capacity
}

HugeBufferPoolStats huge_buffer_pool_stats() {
  Pool& p = pool();
  std::lock_guard lock(p.mutex);
  HugeBufferPoolStats s;
  s.idle = p.idle.size();
  for (const auto& [buffer, size] : p.idle) s.idle_bytes += size;
  s.live = p.live.size();
  s.mappings = p.mappings;
  s.keep = p.keep;
  return s;
}

}  // namespace shardgnn
