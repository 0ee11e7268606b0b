#include "cli/heap_pages.hpp"

#include <cstdint>
#include <cstdlib>

#if defined(__GLIBC__) && defined(__linux__)
#include <malloc.h>
#include <sys/mman.h>
#include <unistd.h>
#endif

namespace w4a8::cli {
namespace {

// [below, boundary): the heap's stretch in 4 KiB pages that allocate_from_huge_pages() takes.
char* below = nullptr;
char* boundary = nullptr;
void* taken = nullptr;  // that block: kept for the whole process

}  // namespace

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
  // glibc has written the new top chunk's header just past the probe. A 2 MiB range with one page
  // faulted in already gets 4 KiB pages only, so the huge pages start at the boundary after it.
  char* const written = p + kProbe + 64;
  char* const start = written + (kHuge - reinterpret_cast<std::uintptr_t>(written) % kHuge) % kHuge;
  // Only when the probe sits in the brk heap just below its top (else it came from elsewhere).
  const bool ours = p < top && static_cast<std::size_t>(top - p) <= kProbe + bytes + kHuge && start < top;
  if (ours && ::madvise(start, static_cast<std::size_t>(top - start), MADV_HUGEPAGE) == 0) {
    below = p;  // the probe's block goes back to the top chunk, which then starts here
    boundary = start;
  }
  std::free(probe);
#else
  (void)bytes;
#endif
}

void allocate_from_huge_pages() {
  if (below == nullptr || taken != nullptr) return;
  taken = std::malloc(static_cast<std::size_t>(boundary - below));
  // The block is never used: keep the compiler from dropping the call as an unused allocation.
  asm volatile("" : : "r"(taken) : "memory");
}

}  // namespace w4a8::cli
