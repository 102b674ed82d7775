// IntArray: an array of integers held at the width it was stored with (int8 to int64), for
// arrays whose values are small where the format lets them be stored narrow: labels in the
// smallest type that holds the classes.
#pragma once

#include <compare>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <span>
#include <utility>
#include <variant>
#include <vector>

#include "datasets/array.hpp"

namespace shardgnn {

class IntArray {
 public:
  IntArray() = default;
  template <class T>
  IntArray(Array<T> a) : v_(std::move(a)) {}  // NOLINT: an Array of any held width is one

  std::size_t size() const noexcept {
    return std::visit([](const auto& a) { return a.size(); }, v_);
  }
  bool empty() const noexcept { return size() == 0; }
  // Element i widened. Reads are scattered (a batch's seeds, a node's label); the switch is the
  // same every call of a run, so the branch predictor takes it.
  std::int64_t operator[](std::size_t i) const noexcept {
    switch (v_.index()) {
      case 0: return std::get_if<0>(&v_)->data()[i];
      case 1: return std::get_if<1>(&v_)->data()[i];
      case 2: return std::get_if<2>(&v_)->data()[i];
      default: return std::get_if<3>(&v_)->data()[i];
    }
  }
  // Calls f(std::span<const T>) with the elements at their stored width: walks over the whole
  // array compile once per width.
  template <class F>
  decltype(auto) visit(F&& f) const {
    return std::visit([&](const auto& a) -> decltype(auto) { return std::forward<F>(f)(a.span()); }, v_);
  }
  // Reads element after element, widened (range-for, std::equal, std::lower_bound, building a
  // vector); random access so that binary searches over ids stay logarithmic.
  class Iterator {
   public:
    using iterator_category = std::random_access_iterator_tag;
    using value_type = std::int64_t;
    using difference_type = std::ptrdiff_t;
    using pointer = void;
    using reference = std::int64_t;
    Iterator() = default;
    Iterator(const IntArray* a, std::size_t i) : a_(a), i_(i) {}
    std::int64_t operator*() const noexcept { return (*a_)[i_]; }
    std::int64_t operator[](difference_type d) const noexcept { return (*a_)[static_cast<std::size_t>(static_cast<difference_type>(i_) + d)]; }
    Iterator& operator++() noexcept { ++i_; return *this; }
    Iterator operator++(int) noexcept { return {a_, i_++}; }
    Iterator& operator--() noexcept { --i_; return *this; }
    Iterator operator--(int) noexcept { return {a_, i_--}; }
    Iterator& operator+=(difference_type d) noexcept { i_ = static_cast<std::size_t>(static_cast<difference_type>(i_) + d); return *this; }
    Iterator& operator-=(difference_type d) noexcept { return *this += -d; }
    friend Iterator operator+(Iterator it, difference_type d) noexcept { return it += d; }
    friend Iterator operator+(difference_type d, Iterator it) noexcept { return it += d; }
    friend Iterator operator-(Iterator it, difference_type d) noexcept { return it -= d; }
    friend difference_type operator-(const Iterator& a, const Iterator& b) noexcept {
      return static_cast<difference_type>(a.i_) - static_cast<difference_type>(b.i_);
    }
    bool operator==(const Iterator& o) const noexcept { return i_ == o.i_; }
    auto operator<=>(const Iterator& o) const noexcept { return i_ <=> o.i_; }

   private:
    const IntArray* a_ = nullptr;
    std::size_t i_ = 0;
  };
  Iterator begin() const noexcept { return {this, 0}; }
  Iterator end() const noexcept { return {this, size()}; }
  // Every element widened, in a vector (a copy: for small arrays and tests).
  std::vector<std::int64_t> widened() const {
    return visit([](auto s) { return std::vector<std::int64_t>(s.begin(), s.end()); });
  }
  // The bytes of one element as held.
  std::size_t element_bytes() const noexcept {
    return std::visit([](const auto& a) { return sizeof(*a.data()); }, v_);
  }
  // The held Array when it is of width T, else null.
  template <class T>
  const Array<T>* get_if() const noexcept {
    return std::get_if<Array<T>>(&v_);
  }
  bool is_mapped() const noexcept {
    return std::visit([](const auto& a) { return a.is_mapped(); }, v_);
  }
  void release_pages() const noexcept {
    std::visit([](const auto& a) { a.release_pages(); }, v_);
  }

 private:
  std::variant<Array<std::int64_t>, Array<std::int32_t>, Array<std::int16_t>, Array<std::int8_t>> v_;
};

// A view of `a`'s elements (no copy): the caller keeps `a` alive.
inline IntArray view_of(const IntArray& a) {
  return a.visit([](auto s) { return IntArray(Array<typename decltype(s)::value_type>(nullptr, s.data(), s.size())); });
}

}  // namespace shardgnn
