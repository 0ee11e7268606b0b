#include "cli/heap_pages.hpp"

#include <cstdint>
#include <cstdlib>

#if defined(__GLIBC__) && defined(__linux__)
#include <malloc.h>
#include <sys/mman.h>
#include <unistd.h>
#endif

namespace w4a8::cli {

void reserve_heap_in_huge_pages(std::size_t bytes) {
#if defined(__GLIBC__) && defined(__linux__) && defined(MADV_HUGEPAGE) && !defined(__SANITIZE_ADDRESS__)
  constexpr std::size_t kHuge = std::size_t{2} << 20;
  constexpr std::size_t kProbe = std::size_t{256} << 10;  // larger than any free top chunk at start
  // Blocks up to 64 MiB from the heap; the top is not given back below 256 MiB (it would be refaulted).
  if (mallopt(M_MMAP_THRESHOLD, 64 << 20) == 0 || mallopt(M_TRIM_THRESHOLD, 256 << 20) == 0) return;
  if (mallopt(M_TOP_PAD, static_cast<int>(bytes)) == 0) return;
  void* probe = std::malloc(kProbe);  // makes glibc extend the heap by kProbe + bytes now
  if (probe == nullptr) return;
  char* const p = static_cast<char*>(probe);
  char* const top = static_cast<char*>(::sbrk(0));
  char* const start = p + (kHuge - reinterpret_cast<std::uintptr_t>(p) % kHuge) % kHuge;  // next 2 MiB boundary
  // Only when the probe sits in the brk heap just below its top (else it came from elsewhere).
  if (p < top && static_cast<std::size_t>(top - p) <= kProbe + bytes + kHuge && start < top)
    (void)::madvise(start, static_cast<std::size_t>(top - start), MADV_HUGEPAGE);
  std::free(probe);
#else
  (void)bytes;
#endif
}

}  // namespace w4a8::cli
