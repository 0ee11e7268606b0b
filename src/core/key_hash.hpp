// The hash of every table keyed by text from an untrusted file (JSON member names, layer prefixes).
// libstdc++'s std::hash of a string is MurmurHash with a fixed seed: keys that all hash alike are
// easy to compute (any first 8-byte block; the second block solves for the state), and a header of
// 40,000 such layer keys made each insert probe past every earlier key: 3.5 s, quadratic in the
// count. SipHash-1-3 under a key drawn once per process, as Python's and Rust's dicts use, leaves
// nothing to aim keys at. Results never depend on the key: tables map keys to positions, and
// nothing iterates a table in hash order.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>

namespace w4a8 {

struct SipKey {
  std::uint64_t k0 = 0, k1 = 0;
};

namespace detail {

inline std::uint64_t load_le64(const char* p) {
  std::uint64_t v = 0;
  std::memcpy(&v, p, 8);
  return std::endian::native == std::endian::little ? v : __builtin_bswap64(v);
}

inline std::uint64_t load_le32(const char* p) {
  std::uint32_t v = 0;
  std::memcpy(&v, p, 4);
  return std::endian::native == std::endian::little ? v : __builtin_bswap32(v);
}

// The r < 8 bytes at p as a little-endian word, in a few loads instead of a loop: the 8 bytes
// ending at p + r when there are 8 before (`behind`: p - 8 + r is in the key), else two
// overlapping 4-byte loads, else the first, middle and last byte (overlaps read equal bytes).
inline std::uint64_t load_tail(const char* p, std::size_t r, bool behind) {
  if (r == 0) return 0;
  if (behind) return load_le64(p + r - 8) >> (64 - 8 * r);
  if (r >= 4) return load_le32(p) | (load_le32(p + r - 4) << (8 * (r - 4)));
  auto byte = [p](std::size_t i) { return std::uint64_t{static_cast<unsigned char>(p[i])} << (8 * i); };
  return byte(0) | byte(r / 2) | byte(r - 1);
}

struct SipState {
  std::uint64_t v0, v1, v2, v3;
  void round() {
    v0 += v1; v1 = std::rotl(v1, 13); v1 ^= v0; v0 = std::rotl(v0, 32);
    v2 += v3; v3 = std::rotl(v3, 16); v3 ^= v2;
    v0 += v3; v3 = std::rotl(v3, 21); v3 ^= v0;
    v2 += v1; v1 = std::rotl(v1, 17); v1 ^= v2; v2 = std::rotl(v2, 32);
  }
};

}  // namespace detail

// SipHash-c-d (Aumasson and Bernstein, 2012) of `bytes` under `key`: c rounds a word, d at the end.
template <int C, int D>
std::uint64_t siphash(std::string_view bytes, SipKey key) {
  detail::SipState s{key.k0 ^ 0x736f6d6570736575ULL, key.k1 ^ 0x646f72616e646f6dULL,
                     key.k0 ^ 0x6c7967656e657261ULL, key.k1 ^ 0x7465646279746573ULL};
  auto absorb = [&s](std::uint64_t m) {
    s.v3 ^= m;
    for (int i = 0; i < C; ++i) s.round();
    s.v0 ^= m;
  };
  const char* p = bytes.data();
  const std::size_t n = bytes.size();
  const char* const end = p + (n & ~std::size_t{7});
  for (; p != end; p += 8) absorb(detail::load_le64(p));
  absorb((std::uint64_t{n & 0xff} << 56) | detail::load_tail(p, n & 7, n >= 8));  // the length's low byte, the tail
  s.v2 ^= 0xff;
  for (int i = 0; i < D; ++i) s.round();
  return s.v0 ^ s.v1 ^ s.v2 ^ s.v3;
}

// This process's hash key: random (the kernel's getrandom), drawn on first use.
SipKey process_hash_key();

// For tables of untrusted string keys (std::unordered_map<std::string_view, T, KeyHash>, KeySlots).
struct KeyHash {
  std::size_t operator()(std::string_view s) const noexcept {
    static const SipKey key = process_hash_key();
    return static_cast<std::size_t>(siphash<1, 3>(s, key));
  }
};

}  // namespace w4a8
