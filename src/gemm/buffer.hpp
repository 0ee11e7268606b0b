// Large uninitialized buffers for decoded weights and packed panels: no zero fill, and transparent
// huge pages requested for big ones (madvise), so preparing hundreds of layers is not dominated by
// page faults and zeroing (measured: 5 of 16 CPU-seconds of an audit were page faults).
#pragma once

#include <sys/mman.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <new>
#include <span>

namespace w4a8::gemm {

template <class T>
class Buffer {
 public:
  Buffer() = default;
  // @throws std::bad_alloc when the memory is not there (callers bound sizes by kMaxElements).
  explicit Buffer(std::size_t n) : n_(n) {
    if (n == 0) return;
    constexpr std::size_t kHuge = std::size_t(2) << 20;
    const std::size_t bytes = n * sizeof(T);
    const std::size_t align = bytes >= kHuge ? kHuge : 64;
    void* p = std::aligned_alloc(align, (bytes + align - 1) / align * align);
    if (!p) throw std::bad_alloc();
    if (align == kHuge) (void)madvise(p, bytes, MADV_HUGEPAGE);  // a hint: failure only costs speed
    p_.reset(static_cast<T*>(p));
  }
  T* data() { return p_.get(); }
  const T* data() const { return p_.get(); }
  std::size_t size() const { return n_; }
  std::span<const T> span() const { return {p_.get(), n_}; }

 private:
  struct Free {
    void operator()(T* p) const { std::free(p); }
  };
  std::unique_ptr<T, Free> p_;
  std::size_t n_ = 0;
};

}  // namespace w4a8::gemm
