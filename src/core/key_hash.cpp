#include "core/key_hash.hpp"

#include <chrono>

#if defined(__linux__)
#include <sys/random.h>
#endif

namespace w4a8 {

SipKey process_hash_key() {
  SipKey k;
#if defined(__linux__)
  // getrandom blocks only before the kernel's pool is first seeded (early boot); a short read or a
  // failure falls through to the clock below.
  if (::getrandom(&k, sizeof k, 0) == static_cast<ssize_t>(sizeof k)) return k;
#endif
  // No kernel randomness: the clock and where this process's stack and code were placed. Weaker
  // (a local attacker could guess it), still nothing a file's author can know in advance.
  const auto t = static_cast<std::uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
  int on_stack = 0;
  k.k0 = t ^ reinterpret_cast<std::uintptr_t>(&on_stack);
  k.k1 = siphash<2, 4>(std::string_view(reinterpret_cast<const char*>(&k.k0), 8),
                       {reinterpret_cast<std::uintptr_t>(&process_hash_key), t});
  return k;
}

}  // namespace w4a8
