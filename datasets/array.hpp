// Array<T>: a move-only, read-only view of a big array that either owns its storage (built in
// memory) or keeps a memory mapping alive (loaded from disk). Copying is deleted on purpose: these
// hold gigabytes.
#pragma once

#include <cstddef>
#include <memory>
#include <span>
#include <vector>

namespace shardgnn {

void advise_dontneed(const void* data, std::size_t bytes) noexcept;  // fileio.cpp
void advise_random(const void* data, std::size_t bytes) noexcept;    // fileio.cpp
// Maps every page of [data, data + bytes) of a mapping into the process now (reading the file
// where the page cache lacks it), so later random reads take no page faults. A hint: false when
// the kernel refused (EINVAL before Linux 5.14, where nothing is done), errno left as it was.
// fileio.cpp
bool advise_populate(const void* data, std::size_t bytes) noexcept;

template <class T>
class Array {
 public:
  Array() = default;
  explicit Array(std::vector<T> owned) : owned_(std::move(owned)), data_(owned_.data()), size_(owned_.size()) {}
  // A view of `size` elements at `data`, kept valid by `keeper` (e.g. a memory mapping).
  Array(std::shared_ptr<const void> keeper, const T* data, std::size_t size)
      : keeper_(std::move(keeper)), data_(data), size_(size) {}

  Array(Array&& other) noexcept { *this = std::move(other); }
  Array& operator=(Array&& other) noexcept {
    if (this != &other) {
      // std::vector's move keeps its buffer, so data_ stays valid for owned arrays.
      owned_ = std::move(other.owned_);
      keeper_ = std::move(other.keeper_);
      data_ = other.data_;
      size_ = other.size_;
      other.data_ = nullptr;
      other.size_ = 0;
    }
    return *this;
  }
  Array(const Array&) = delete;
  Array& operator=(const Array&) = delete;

  const T* data() const noexcept { return data_; }
  std::size_t size() const noexcept { return size_; }
  bool empty() const noexcept { return size_ == 0; }
  const T& operator[](std::size_t i) const noexcept { return data_[i]; }
  const T* begin() const noexcept { return data_; }
  const T* end() const noexcept { return data_ + size_; }
  std::span<const T> span() const noexcept { return {data_, size_}; }
  std::span<const T> subspan(std::size_t off, std::size_t n) const noexcept { return {data_ + off, n}; }
  // True when the elements live in a file mapping rather than in memory this object owns.
  bool is_mapped() const noexcept { return keeper_ != nullptr; }
  // For a mapped array: tells the kernel its pages may be dropped from memory now (they are read
  // back from the file if touched again). Lets a phase that copied the data out (e.g. into METIS's
  // 32-bit arrays) stop paying for both copies. No effect on owned arrays.
  void release_pages() const noexcept {
    if (is_mapped() && size_ > 0) advise_dontneed(data_, size_ * sizeof(T));
  }
  // For a mapped array read at random (a sampler's rows, a gather's feature rows): a page the
  // page cache lacks is read alone, not with the read-around the kernel gives a mapping otherwise
  // (the device's readahead, up to megabytes per fault), which evicts pages still needed when
  // the file is larger than the page cache. No effect on owned arrays, nor on mappings that
  // asked for 2 MiB pages (those are read a 2 MiB folio at a time).
  void advise_random() const noexcept {
    if (is_mapped() && size_ > 0) shardgnn::advise_random(data_, size_ * sizeof(T));
  }
  // For an array that is not in owned_ (a file mapping, or a buffer kept alive elsewhere): maps
  // all its pages into the process now (see advise_populate), so that random reads later take no
  // page faults. No effect on owned arrays.
  void populate_pages() const noexcept {
    if (is_mapped() && size_ > 0) advise_populate(data_, size_ * sizeof(T));
  }

 private:
  std::vector<T> owned_;
  std::shared_ptr<const void> keeper_;
  const T* data_ = nullptr;
  std::size_t size_ = 0;
};

}  // namespace shardgnn
