// SlimVector<T>: the part of std::vector that json::Value uses, in one pointer instead of three.
// A Value holds both an array and an object vector, only one of them ever used, and a parsed marker
// is a handful of members: on a 500,000-tensor checkpoint the validator keeps 125,000 markers, and
// the two empty vectors of every member were a fifth of its heap. An empty SlimVector allocates
// nothing; a non-empty one is one block, its size and capacity in front of the elements.
// T may be incomplete where a SlimVector<T> member is declared (Value holds SlimVector<Value>).
#pragma once

#include <algorithm>
#include <cstddef>
#include <initializer_list>
#include <iterator>
#include <memory>
#include <new>
#include <type_traits>
#include <utility>

namespace w4a8::json {

template <class T>
class SlimVector {
 public:
  using value_type = T;
  using size_type = std::size_t;
  using difference_type = std::ptrdiff_t;
  using reference = T&;
  using const_reference = const T&;
  using pointer = T*;
  using const_pointer = const T*;
  using iterator = T*;
  using const_iterator = const T*;

  SlimVector() noexcept = default;
  SlimVector(std::initializer_list<T> init) { append_copies(init.begin(), init.end()); }
  SlimVector(const SlimVector& o) {
    if (o.p_ != nullptr) append_copies(o.begin(), o.end());  // most copied Values have no items or members
  }
  SlimVector(SlimVector&& o) noexcept : p_(std::exchange(o.p_, nullptr)) {}
  SlimVector& operator=(const SlimVector& o) {
    if (this != &o) SlimVector(o).swap(*this);  // the old elements go only once the copy succeeded
    return *this;
  }
  SlimVector& operator=(SlimVector&& o) noexcept {
    if (this != &o) {
      release();
      p_ = std::exchange(o.p_, nullptr);
    }
    return *this;
  }
  ~SlimVector() { release(); }
  void swap(SlimVector& o) noexcept { std::swap(p_, o.p_); }

  size_type size() const noexcept { return p_ ? head()->size : 0; }
  size_type capacity() const noexcept { return p_ ? head()->capacity : 0; }
  bool empty() const noexcept { return size() == 0; }
  T* data() noexcept { return p_; }
  const T* data() const noexcept { return p_; }
  T* begin() noexcept { return p_; }
  T* end() noexcept { return p_ + size(); }
  const T* begin() const noexcept { return p_; }
  const T* end() const noexcept { return p_ + size(); }
  std::reverse_iterator<const T*> rbegin() const noexcept { return std::reverse_iterator<const T*>(end()); }
  std::reverse_iterator<const T*> rend() const noexcept { return std::reverse_iterator<const T*>(begin()); }
  T& operator[](size_type i) noexcept { return p_[i]; }
  const T& operator[](size_type i) const noexcept { return p_[i]; }
  T& front() noexcept { return p_[0]; }
  const T& front() const noexcept { return p_[0]; }
  T& back() noexcept { return p_[size() - 1]; }
  const T& back() const noexcept { return p_[size() - 1]; }

  void reserve(size_type n) {
    if (n > capacity()) regrow(n, nullptr);
  }
  void push_back(const T& v) { emplace_back(v); }
  void push_back(T&& v) { emplace_back(std::move(v)); }
  // The new element is built before any old one moves: args may refer to an element of this vector.
  template <class... Args>
  T& emplace_back(Args&&... args) {
    const size_type n = size();
    if (n == capacity()) {
      regrow(n ? 2 * n : 1, [&](T* slot) { ::new (static_cast<void*>(slot)) T(std::forward<Args>(args)...); });
    } else {
      ::new (static_cast<void*>(p_ + n)) T(std::forward<Args>(args)...);
    }
    ++head()->size;
    return p_[n];
  }
  void pop_back() noexcept {
    std::destroy_at(p_ + size() - 1);
    --head()->size;
  }
  void clear() noexcept {
    if (!p_) return;
    std::destroy(begin(), end());
    head()->size = 0;
  }
  // Inserts before pos (appended, then rotated into place). @return the inserted element.
  T* insert(const T* pos, T v) {
    const difference_type at = pos - p_;
    emplace_back(std::move(v));
    std::rotate(p_ + at, end() - 1, end());
    return p_ + at;
  }

 private:
  struct alignas(std::max_align_t) Head {
    size_type size, capacity;
  };
  Head* head() const noexcept { return reinterpret_cast<Head*>(reinterpret_cast<char*>(p_) - sizeof(Head)); }

  // A block for cap elements holding the current ones (moved: T's move must not throw), plus the
  // one `make` builds at index size() when given.
  template <class Make>
  void regrow(size_type cap, Make make) {
    static_assert(alignof(T) <= alignof(Head), "SlimVector: over-aligned element type");
    static_assert(std::is_nothrow_move_constructible_v<T>, "SlimVector: elements move without throwing");
    const size_type n = size();
    if (cap > (static_cast<size_type>(-1) - sizeof(Head)) / sizeof(T)) throw std::bad_alloc();
    char* raw = static_cast<char*>(::operator new(sizeof(Head) + cap * sizeof(T)));
    T* fresh = reinterpret_cast<T*>(raw + sizeof(Head));
    if constexpr (!std::is_same_v<Make, std::nullptr_t>) {
      try {
        make(fresh + n);
      } catch (...) {
        ::operator delete(raw);
        throw;
      }
    }
    if (p_) {
      std::uninitialized_move(begin(), end(), fresh);
      std::destroy(begin(), end());
      ::operator delete(reinterpret_cast<char*>(p_) - sizeof(Head));
    }
    ::new (static_cast<void*>(raw)) Head{n, cap};
    p_ = fresh;
  }
  // For the constructors: on a throw, what was built is freed here (no destructor runs for them).
  template <class It>
  void append_copies(It first, It last) {
    try {
      reserve(size() + static_cast<size_type>(last - first));
      // Room is reserved: construct in place (size counts each element once it exists, for release()).
      for (; first != last; ++first) {
        ::new (static_cast<void*>(p_ + size())) T(*first);
        ++head()->size;
      }
    } catch (...) {
      release();
      throw;
    }
  }
  void release() noexcept {
    if (!p_) return;
    std::destroy(begin(), end());
    ::operator delete(reinterpret_cast<char*>(p_) - sizeof(Head));
    p_ = nullptr;
  }

  T* p_ = nullptr;  // the first element; the Head sits right before it
};

}  // namespace w4a8::json
