// Checked arithmetic on sizes read from untrusted input.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace w4a8 {

// post: nullopt iff the exact result does not fit in uint64_t.
constexpr std::optional<std::uint64_t> checked_mul(std::uint64_t a, std::uint64_t b) {
  std::uint64_t r = 0;
  if (__builtin_mul_overflow(a, b, &r)) return std::nullopt;
  return r;
}
constexpr std::optional<std::uint64_t> checked_add(std::uint64_t a, std::uint64_t b) {
  std::uint64_t r = 0;
  if (__builtin_add_overflow(a, b, &r)) return std::nullopt;
  return r;
}

// Decimal text of an unsigned 128-bit value (K = 2 * shape[1] and its products exceed 64 bits).
inline std::string u128_to_string(unsigned __int128 v) {
  char buf[40];
  char* p = buf + sizeof buf;
  do { *--p = static_cast<char>('0' + static_cast<int>(v % 10)); v /= 10; } while (v != 0);
  return std::string(p, buf + sizeof buf);
}

}  // namespace w4a8
