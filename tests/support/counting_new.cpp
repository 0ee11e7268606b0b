#include "support/counting_new.hpp"

#include <atomic>
#include <cstdlib>
#include <new>

namespace {

constexpr std::size_t kPrefix = 16;  // keeps the block 16-byte aligned, as malloc's are
std::atomic<bool> g_counting{false};
std::atomic<long long> g_live{0}, g_peak{0}, g_total{0};
std::atomic<long> g_count{0};

// Blocks allocated while not counting are marked so their free is not subtracted either.
constexpr std::size_t kUncounted = ~std::size_t{0};

void* counted_alloc(std::size_t n) {
  auto* p = static_cast<unsigned char*>(std::malloc(n + kPrefix));
  if (p == nullptr) throw std::bad_alloc();
  const bool counting = g_counting.load(std::memory_order_relaxed);
  *reinterpret_cast<std::size_t*>(p) = counting ? n : kUncounted;
  if (counting) {
    g_count.fetch_add(1, std::memory_order_relaxed);
    g_total += static_cast<long long>(n);
    const long long live = g_live += static_cast<long long>(n);
    long long peak = g_peak.load();
    while (live > peak && !g_peak.compare_exchange_weak(peak, live)) {}
  }
  return p + kPrefix;
}

void counted_free(void* q) noexcept {
  if (q == nullptr) return;
  auto* p = static_cast<unsigned char*>(q) - kPrefix;
  const std::size_t n = *reinterpret_cast<std::size_t*>(p);
  if (n != kUncounted && g_counting.load(std::memory_order_relaxed)) g_live -= static_cast<long long>(n);
  std::free(p);
}

}  // namespace

namespace w4a8::testing::heap {

void start() {
  g_live = 0, g_peak = 0, g_total = 0, g_count = 0;
  g_counting = true;
}

Usage stop() {
  g_counting = false;
  return {static_cast<std::size_t>(g_peak.load()), static_cast<std::size_t>(g_total.load()), g_count.load()};
}

}  // namespace w4a8::testing::heap

// GCC pairs the inlined malloc/free across the replaced operators and warns; the pairing is right.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
#endif

void* operator new(std::size_t n) { return counted_alloc(n); }
void* operator new[](std::size_t n) { return counted_alloc(n); }
void operator delete(void* p) noexcept { counted_free(p); }
void operator delete[](void* p) noexcept { counted_free(p); }
void operator delete(void* p, std::size_t) noexcept { counted_free(p); }
void operator delete[](void* p, std::size_t) noexcept { counted_free(p); }
// The nothrow forms too (std::inplace_merge's buffer): ASan supplies its own otherwise, whose blocks
// lack the prefix.
void* operator new(std::size_t n, const std::nothrow_t&) noexcept {
  try {
    return counted_alloc(n);
  } catch (...) {
    return nullptr;
  }
}
void* operator new[](std::size_t n, const std::nothrow_t& t) noexcept { return operator new(n, t); }
void operator delete(void* p, const std::nothrow_t&) noexcept { counted_free(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { counted_free(p); }
