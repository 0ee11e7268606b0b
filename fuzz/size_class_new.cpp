// Global operator new/delete for the structure-aware target's libFuzzer binary WITHOUT sanitizers
// (never linked into a sanitized build: ASan's own new/delete find the memory errors there).
// Each execution builds and frees thousands of small blocks (scenario descriptions, JSON values,
// markers nested to the recursion limit a thousand levels deep), and glibc keeps only 7 freed
// blocks a size in its thread cache: the rest go to its bins and are merged again by the next large
// request. Here freed blocks of up to 1 KiB stay on a per-thread list of their size (16-byte
// classes, never returned to malloc: the next execution needs about as many again), so the next
// execution takes them back without a search. Larger blocks go to malloc and free.
// The header word tags a block live or freed, so a double or invalid delete still aborts (as glibc's
// own checks made it: a crash libFuzzer reports) instead of silently corrupting a list.
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <new>

namespace {

constexpr std::size_t kHeader = 16;  // keeps the block 16-byte aligned, like malloc's
constexpr std::size_t kClasses = 64;  // class c holds blocks of 16 * c bytes (1 <= c < kClasses)

constexpr std::size_t kLive = 0x11fe'0000'0000'0000, kFreed = 0xdead'0000'0000'0000, kTag = 0xffff'0000'0000'0000;

struct FreeBlock {
  FreeBlock* next;
};
thread_local FreeBlock* t_free[kClasses] = {};

std::size_t& header(void* block) { return *reinterpret_cast<std::size_t*>(static_cast<unsigned char*>(block) - kHeader); }

void* allocate(std::size_t n) {
  const std::size_t c = n == 0 ? 1 : (n + 15) / 16;
  if (c < kClasses) {
    if (FreeBlock* b = t_free[c]) {
      t_free[c] = b->next;
      header(b) = kLive | c;
      return b;
    }
  }
  auto* h = static_cast<unsigned char*>(std::malloc(kHeader + (c < kClasses ? 16 * c : n)));
  if (h == nullptr) return nullptr;
  *reinterpret_cast<std::size_t*>(h) = kLive | (c < kClasses ? c : 0);  // class 0: malloc's, back to free
  return h + kHeader;
}

void release(void* p) noexcept {
  if (p == nullptr) return;
  std::size_t& h = header(p);
  const std::size_t c = h & ~kTag;
  if ((h & kTag) != kLive || c >= kClasses) {
    std::fprintf(stderr, "operator delete: %s %p\n", (h & kTag) == kFreed ? "double free of" : "invalid pointer", p);
    std::abort();
  }
  if (c == 0) {
    h = kFreed;
    std::free(&h);
    return;
  }
  h = kFreed | c;
  auto* b = static_cast<FreeBlock*>(p);
  b->next = t_free[c];
  t_free[c] = b;
}

void* allocate_or_throw(std::size_t n) {
  void* p = allocate(n);
  if (p == nullptr) throw std::bad_alloc();
  return p;
}

}  // namespace

void* operator new(std::size_t n) { return allocate_or_throw(n); }
void* operator new[](std::size_t n) { return allocate_or_throw(n); }
void* operator new(std::size_t n, const std::nothrow_t&) noexcept { return allocate(n); }
void* operator new[](std::size_t n, const std::nothrow_t&) noexcept { return allocate(n); }
void operator delete(void* p) noexcept { release(p); }
void operator delete[](void* p) noexcept { release(p); }
void operator delete(void* p, std::size_t) noexcept { release(p); }
void operator delete[](void* p, std::size_t) noexcept { release(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { release(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { release(p); }
