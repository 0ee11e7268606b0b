// Keys that all have one libstdc++ std::hash<std::string_view> value: the hash-flooding input that
// core/key_hash.hpp exists for. libstdc++ hashes a string with MurmurHash (64-bit, seed 0xc70f6907):
// per 8-byte block b, state = (state ^ F(b)) * M with F(b) = mix(b * M) * M, where M is odd and
// mix(v) = v ^ (v >> 47); every step is invertible. So for any first block, the second block that
// brings the state to a fixed target can be solved for; a key is kept when that block is
// printable ASCII without '"' or '\\' (about 1 in 3,300), so it is a plain JSON key.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace w4a8::testing {

inline std::vector<std::string> stdhash_colliding_keys(std::size_t count) {
  using u64 = std::uint64_t;
  const u64 m = (u64{0xc6a4a793} << 32) + 0x5bd1e995;
  u64 m_inv = m;  // Newton's iteration for the inverse of an odd number mod 2^64
  for (int i = 0; i < 6; ++i) m_inv *= 2 - m * m_inv;
  auto mix = [](u64 v) { return v ^ (v >> 47); };  // its own inverse (47 * 2 >= 64)
  const u64 start = u64{0xc70f6907} ^ (16 * m);   // the state before the first block of a 16-byte key
  const u64 target = 0x5851f42d4c957f2dULL;        // the state after the second block
  // Whether all 8 bytes of v are plain (0x20-0x7e, not '"' or '\\'), a word at a time: hasless and
  // haszero of the bit-twiddling folklore, exact for bytes below 0x80.
  auto plain = [](u64 v) {
    constexpr u64 ones = 0x0101010101010101ULL, high = 0x8080808080808080ULL;
    auto has_zero = [&](u64 w) { return ((w - ones) & ~w & high) != 0; };
    return (v & high) == 0 && ((v - ones * 0x20) & ~v & high) == 0 && !has_zero(v ^ (ones * 0x7f)) &&
           !has_zero(v ^ (ones * 0x22)) && !has_zero(v ^ (ones * 0x5c));
  };
  std::vector<std::string> keys;
  u64 x = 0x9e3779b97f4a7c15ULL;  // a xorshift stream for the first blocks
  while (keys.size() < count) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    const u64 b1 = (x & 0x3f3f3f3f3f3f3f3fULL) + 0x3030303030303030ULL;  // bytes '0' to 'o'
    const u64 after1 = (start ^ (mix(b1 * m) * m)) * m;
    const u64 b2 = mix(((after1 ^ (target * m_inv)) * m_inv)) * m_inv;  // F(b2) = after1 ^ target / m
    if (!plain(b1) || !plain(b2)) continue;
    char key[16];  // the hash reads each block as a little-endian word (x86-64 and other such hosts)
    for (int i = 0; i < 8; ++i) {
      key[i] = static_cast<char>(b1 >> (8 * i));
      key[8 + i] = static_cast<char>(b2 >> (8 * i));
    }
    keys.emplace_back(key, 16);
  }
  return keys;
}

}  // namespace w4a8::testing
