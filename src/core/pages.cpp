#include "core/pages.hpp"

#include <cstdint>

#ifdef __linux__
#include <sys/mman.h>
#include <unistd.h>
#endif

namespace w4a8 {

void release_pages(void* p, std::size_t n) {
#ifdef __linux__
  const long page = ::sysconf(_SC_PAGESIZE);
  if (page <= 0 || n == 0) return;
  const auto size = static_cast<std::uintptr_t>(page);
  const auto at = reinterpret_cast<std::uintptr_t>(p);
  const std::uintptr_t lo = (at + size - 1) / size * size - at;  // offsets of the first whole page
  const std::uintptr_t hi = (at + n) / size * size - at;         // and past the last
  if (hi > lo) (void)::madvise(static_cast<char*>(p) + lo, hi - lo, MADV_DONTNEED);
#else
  (void)p;
  (void)n;
#endif
}

void release_freed_block(void* p, std::size_t n, std::size_t from) {
  constexpr std::size_t kMargin = 64;
  if (n < from || n <= 2 * kMargin) return;
  release_pages(static_cast<char*>(p) + kMargin, n - 2 * kMargin);
}

}  // namespace w4a8
