// The CLI's heap in transparent huge pages. Validating a large header allocates a few MiB that a
// fresh process would fault in 4 KiB at a time (20k tensors: about 1,500 faults, a fifth of the run);
// one 2 MiB page per fault takes that to a handful. A process-level choice, so it lives in the CLI,
// not in the libraries.
#pragma once

#include <cstddef>
#include <cstdint>

namespace w4a8::cli {

// Grows the heap by `bytes` now (address space only) and advises huge pages for it, from the first
// 2 MiB boundary above everything glibc has written. Large blocks are kept on the heap (not separate
// mappings) so they share those pages. Does nothing where it cannot apply: not glibc, no
// MADV_HUGEPAGE, a sanitizer's allocator, a heap that is not brk-based.
void reserve_heap_in_huge_pages(std::size_t bytes);

// Later blocks come from the huge pages: the heap below the boundary (up to 2 MiB of 4 KiB pages,
// where glibc would otherwise place the next blocks) is taken by one block that is never written or
// freed, so it costs address space only. At 4 KiB a fault costs about 2.3 us on the reference host
// and a 2 MiB fault about 0.2 ms, so this pays only for a large input (header_bytes >=
// kHugeHeapFromHeaderBytes); a small one would pay for a huge page it barely uses. Once per process;
// nothing when reserve_heap_in_huge_pages() did not apply.
void allocate_from_huge_pages();

// The declared header bytes from which allocate_from_huge_pages() pays (a header takes about 3.5 times
// its size in heap).
inline constexpr std::uint64_t kHugeHeapFromHeaderBytes = std::uint64_t{128} << 10;

}  // namespace w4a8::cli
