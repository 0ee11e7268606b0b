// A tensor's shape in a parsed Header: up to kInline dims held in place (every real tensor), more on
// the heap, so parsing a header allocates nothing per tensor. It reads like a
// std::vector<std::uint64_t> (and converts to one), compares with any range of integers, and
// views as a std::span.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <memory>
#include <new>
#include <span>
#include <type_traits>
#include <vector>

namespace w4a8::st {

class Shape {
 public:
  using value_type = std::uint64_t;
  using size_type = std::size_t;
  using const_iterator = const std::uint64_t*;
  using iterator = const std::uint64_t*;
  static constexpr std::size_t kInline = 4;

  Shape() = default;
  Shape(std::initializer_list<std::uint64_t> dims) { assign(dims.begin(), dims.size()); }
  Shape(const std::vector<std::uint64_t>& dims) { assign(dims.data(), dims.size()); }  // NOLINT: implicit, like the vector it replaced
  Shape(std::span<const std::uint64_t> dims) { assign(dims.data(), dims.size()); }
  Shape(const Shape& o) { assign(o.data(), o.size()); }
  Shape(Shape&& o) noexcept { take(o); }
  Shape& operator=(const Shape& o) {
    if (this != &o) assign(o.data(), o.size());
    return *this;
  }
  Shape& operator=(Shape&& o) noexcept {
    if (this != &o) {
      release();
      take(o);
    }
    return *this;
  }
  ~Shape() { release(); }

  operator std::span<const std::uint64_t>() const noexcept { return {data(), size_}; }
  operator std::vector<std::uint64_t>() const { return {begin(), end()}; }  // (implicit: code written for the vector)
  std::vector<std::uint64_t> vec() const { return {begin(), end()}; }

  const std::uint64_t* data() const noexcept { return on_heap() ? heap_ : inline_; }
  std::size_t size() const noexcept { return size_; }
  bool empty() const noexcept { return size_ == 0; }
  const std::uint64_t* begin() const noexcept { return data(); }
  const std::uint64_t* end() const noexcept { return data() + size_; }
  std::uint64_t operator[](std::size_t i) const { return data()[i]; }
  std::uint64_t front() const { return data()[0]; }
  std::uint64_t back() const { return data()[size_ - 1]; }

  void clear() noexcept { size_ = 0; }
  void push_back(std::uint64_t d) {
    if (size_ == capacity_) grow(size_ * 2);
    (on_heap() ? heap_ : inline_)[size_++] = d;
  }
  void reserve(std::size_t n) {
    if (n > capacity_) grow(n);
  }

  friend bool operator==(const Shape& a, const Shape& b) noexcept { return equal(a, b.data(), b.size()); }
  template <class R>
    requires(!std::is_same_v<R, Shape> && requires(const R& r) { std::span<const std::uint64_t>(r); })
  friend bool operator==(const Shape& a, const R& b) noexcept {
    const std::span<const std::uint64_t> s(b);
    return equal(a, s.data(), s.size());
  }

 private:
  static bool equal(const Shape& a, const std::uint64_t* b, std::size_t n) noexcept {
    return a.size_ == n && std::equal(a.begin(), a.end(), b);
  }
  void assign(const std::uint64_t* p, std::size_t n) {
    size_ = 0;
    reserve(n);
    if (n) std::memcpy(on_heap() ? heap_ : inline_, p, n * sizeof(std::uint64_t));
    size_ = static_cast<std::uint32_t>(n);
  }
  void grow(std::size_t n) {
    const std::size_t cap = std::max<std::size_t>(n, kInline * 2);
    auto* fresh = new std::uint64_t[cap];
    if (size_) std::memcpy(fresh, data(), size_ * sizeof(std::uint64_t));
    release();
    heap_ = fresh;  // (release() left capacity_ at kInline: set below)
    capacity_ = static_cast<std::uint32_t>(cap);
  }
  bool on_heap() const noexcept { return capacity_ > kInline; }
  void release() noexcept {
    if (on_heap()) delete[] heap_;
    capacity_ = kInline;
  }
  void take(Shape& o) noexcept {
    size_ = o.size_;
    capacity_ = o.capacity_;
    if (o.on_heap()) heap_ = o.heap_;
    else std::memcpy(inline_, o.inline_, sizeof inline_);
    o.size_ = 0;
    o.capacity_ = kInline;
  }

  union {
    std::uint64_t inline_[kInline];  // capacity_ == kInline
    std::uint64_t* heap_;            // capacity_ > kInline (more dims were ever held)
  };
  std::uint32_t size_ = 0, capacity_ = kInline;
};
static_assert(sizeof(Shape) == 40);

}  // namespace w4a8::st
