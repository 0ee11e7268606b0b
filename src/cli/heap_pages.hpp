// The CLI's heap in transparent huge pages. Validating a large header allocates a few MiB that a
// fresh process would fault in 4 KiB at a time (20k tensors: about 1,500 faults, a fifth of the run);
// one 2 MiB page per fault takes that to a handful. A process-level choice, so it lives in the CLI,
// not in the libraries.
#pragma once

#include <cstddef>

namespace w4a8::cli {

// Grows the heap by `bytes` now (address space only) and advises huge pages for it. Large blocks are
// kept on the heap (not separate mappings) so they share those pages. Does nothing where it cannot
// apply: not glibc, no MADV_HUGEPAGE, a sanitizer's allocator, a heap that is not brk-based.
void reserve_heap_in_huge_pages(std::size_t bytes);

}  // namespace w4a8::cli
