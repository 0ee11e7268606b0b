// A minimal parallel-for over [0, count): `threads` workers pull chunk indices from a shared
// counter, so uneven chunks balance; threads <= 1 runs inline.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <system_error>
#include <thread>
#include <vector>

namespace w4a8::gemm {

inline unsigned resolve_threads(unsigned requested) {
  if (requested != 0) return requested;
  const unsigned hw = std::thread::hardware_concurrency();
  return hw ? hw : 1;
}

// Calls fn(i) for every i in [0, count), each exactly once, from up to `threads` threads.
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
  pool.reserve(t - 1);
  try {
    for (unsigned i = 1; i < t; ++i) pool.emplace_back(worker);
  } catch (const std::system_error&) {
    // The system refused a thread: the ones started (and this one) share the remaining work.
  }
  worker();
  for (auto& th : pool) th.join();
}

}  // namespace w4a8::gemm
