// Handing memory's pages back to the kernel while keeping the memory: madvise(MADV_DONTNEED) on the
// whole pages inside a range. One place for the page arithmetic, used on a file's mapping (whose
// pages fault back in from the file) and on a heap block about to be freed (whose contents no one
// reads again: the CLI's heap keeps freed pages resident, so a large transient block would otherwise
// stay in the process's peak memory).
#pragma once

#include <cstddef>

namespace w4a8 {

// The whole pages inside [p, p + n): after this, they read as zeros (anonymous memory) or as the
// file again (a private file mapping). A no-op where madvise is not available.
void release_pages(void* p, std::size_t n);

// The size from which a transient heap block's pages are handed back when it is freed: a header of
// that size is about 130,000 tensors, where the refaults cost well under a percent of the run.
inline constexpr std::size_t kReleaseFreedFrom = std::size_t{16} << 20;

// release_pages on a heap block just before it is freed, when it is at least `from` bytes long
// (smaller ones are left to the allocator, which reuses them soon). Leaves the block's first and
// last 64 bytes, where an allocator may keep its own fields.
void release_freed_block(void* p, std::size_t n, std::size_t from = kReleaseFreedFrom);

}  // namespace w4a8
