// A minimal parallel-for over [0, count): `threads` workers pull chunk indices from a shared
// counter, so uneven chunks balance; threads <= 1 runs inline. Thread creation may fail (resource
// limits, a sandbox): the calling thread then does the remaining work with the workers it got.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <new>
#include <system_error>
#include <thread>
#include <vector>

namespace w4a8::gemm {

inline unsigned resolve_threads(unsigned requested) {
  if (requested != 0) return requested;
  const unsigned hw = std::thread::hardware_concurrency();
  return hw ? hw : 1;
}

// Hook for tests: when non-null, called before creating worker i (1-based); returning false makes
// that creation fail as std::thread would with std::system_error.
using ThreadSpawnHook = bool (*)(unsigned i);
inline std::atomic<ThreadSpawnHook>& thread_spawn_hook() {
  static std::atomic<ThreadSpawnHook> hook{nullptr};
  return hook;
}

// Calls fn(i) for every i in [0, count), each exactly once, from up to `threads` threads.
// post: never throws for thread creation failures (fewer workers run instead); fn must not throw.
template <class Fn>
void parallel_for(std::uint64_t count, unsigned threads, Fn&& fn) {
  const unsigned t = unsigned(std::min<std::uint64_t>(threads, count));
  if (t <= 1) {
    for (std::uint64_t i = 0; i < count; ++i) fn(i);
    return;
  }
  std::atomic<std::uint64_t> next{0};
  auto worker = [&] {
    for (std::uint64_t i; (i = next.fetch_add(1, std::memory_order_relaxed)) < count;) fn(i);
  };
  std::vector<std::thread> pool;
  try {
    pool.reserve(t - 1);
    for (unsigned i = 1; i < t; ++i) {
      const ThreadSpawnHook hook = thread_spawn_hook().load(std::memory_order_relaxed);
      if (hook && !hook(i)) throw std::system_error(std::make_error_code(std::errc::resource_unavailable_try_again));
      pool.emplace_back(worker);
    }
  } catch (const std::system_error&) {
    // Keep the workers that started; this thread's worker() below takes whatever they leave.
  } catch (const std::bad_alloc&) {
  }
  worker();
  for (auto& th : pool) th.join();
}

}  // namespace w4a8::gemm
