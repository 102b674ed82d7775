// Big per-batch buffers (a batch's input features, tens of MB) in 2 MiB pages, recycled between
// batches. The gather writes a batch's rows at scattered places of its buffer: in 4 KiB pages
// (what the heap gives under transparent huge pages' "madvise" mode) most rows missed the TLB,
// and a fresh buffer took a page fault per 4 KiB inside the gather. Buffers of 2 MiB or more come
// from a small process-wide pool of 2 MiB-aligned anonymous mappings asked for huge pages
// (MADV_HUGEPAGE; 4 KiB pages where transparent huge pages are off) and faulted in when mapped
// (MADV_POPULATE_WRITE, Linux 5.14), then reused for requests of up to twice their size; smaller
// buffers come from operator new.
#pragma once

#include <cstddef>

namespace shardgnn {

// Thread-safe (the prefetch thread allocates, the trainer frees). allocate throws std::bad_alloc
// when no mapping can be made.
void* huge_buffer_allocate(std::size_t bytes);
void huge_buffer_release(void* p, std::size_t bytes) noexcept;
// The pool's idle buffers and their bytes (for tests).
struct HugeBufferPoolStats {
  std::size_t idle = 0, idle_bytes = 0, live = 0;
  std::size_t mappings = 0;  // fresh mappings made so far (the others were reused)
  std::size_t keep = 0;      // idle buffers kept at most (the one idle longest goes first)
};
// Keeps at least `idle` idle buffers (default 4): a prefetch queue of depth d has d + 2 batches
// in flight, all released when its epoch ends.
void huge_buffer_pool_keep_at_least(std::size_t idle);
HugeBufferPoolStats huge_buffer_pool_stats();
// Gives every idle buffer back to the system: before a phase that needs the memory otherwise
// (full-neighbourhood inference), and a known start for tests.
void huge_buffer_pool_trim() noexcept;

template <class T>
struct HugePageAllocator {
  static_assert(alignof(T) <= __STDCPP_DEFAULT_NEW_ALIGNMENT__, "small buffers come from operator new");
  using value_type = T;
  HugePageAllocator() noexcept = default;
  template <class U>
  HugePageAllocator(const HugePageAllocator<U>&) noexcept {}
  T* allocate(std::size_t n) { return static_cast<T*>(huge_buffer_allocate(n * sizeof(T))); }
  void deallocate(T* p, std::size_t n) noexcept { huge_buffer_release(p, n * sizeof(T)); }
  template <class U>
  bool operator==(const HugePageAllocator<U>&) const noexcept { return true; }
};

}  // namespace shardgnn
