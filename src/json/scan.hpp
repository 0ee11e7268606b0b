// Byte scanning shared by the JSON readers and the UTF-8 check: 16 bytes a step with SSE2 (every
// x86-64 has it, so no dispatch), eight with plain 64-bit words elsewhere. Each function reads only
// [p, end): the vector loop stops 16 bytes before the end and the rest goes byte by byte.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace w4a8::json::scan {

// The first byte of [p, end) that ends a JSON string run: '"', '\\' or a control byte (< 0x20);
// end when there is none.
inline const char* string_stop(const char* p, const char* end) {
#if defined(__SSE2__)
  const __m128i quote = _mm_set1_epi8('"'), backslash = _mm_set1_epi8('\\'), ctl = _mm_set1_epi8(0x1F);
  while (end - p >= 16) {
    const __m128i x = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    // x <= 0x1F unsigned: max(x, 0x1F) == 0x1F.
    const __m128i hit = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(x, quote), _mm_cmpeq_epi8(x, backslash)),
                                     _mm_cmpeq_epi8(_mm_max_epu8(x, ctl), ctl));
    if (const int m = _mm_movemask_epi8(hit)) return p + __builtin_ctz(static_cast<unsigned>(m));
    p += 16;
  }
#else
  constexpr std::uint64_t k01 = 0x0101010101010101ull, k80 = 0x8080808080808080ull;
  while (end - p >= 8) {
    std::uint64_t w;
    std::memcpy(&w, p, 8);
    const std::uint64_t q = w ^ (k01 * '"'), b = w ^ (k01 * '\\');
    // May flag bytes >= 0x80 too: the byte loop below decides.
    if ((((q - k01) & ~q) | ((b - k01) & ~b) | (w - k01 * 0x20)) & ~w & k80) break;
    p += 8;
  }
#endif
  for (; p < end; ++p) {
    const auto c = static_cast<unsigned char>(*p);
    if (c == '"' || c == '\\' || c < 0x20) return p;
  }
  return end;
}

// The first byte of [p, end) outside printable ASCII (< 0x20, 0x7F, >= 0x80), or a '"' or '\\' (or,
// with kSingleQuote, a '\''); end when there is none.
template <bool kSingleQuote>
inline const char* printable_stop(const char* p, const char* end) {
#if defined(__SSE2__)
  const __m128i dbl = _mm_set1_epi8('"'), backslash = _mm_set1_epi8('\\');
  const __m128i below_space = _mm_set1_epi8(0x1F), del = _mm_set1_epi8(0x7F);
  while (end - p >= 16) {
    const __m128i x = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    // Signed: bytes >= 0x80 are negative, so "x > 0x1F" keeps exactly 0x20..0x7F.
    const auto printable = static_cast<unsigned>(_mm_movemask_epi8(_mm_cmpgt_epi8(x, below_space)));
    __m128i bad = _mm_or_si128(_mm_cmpeq_epi8(x, dbl), _mm_or_si128(_mm_cmpeq_epi8(x, backslash), _mm_cmpeq_epi8(x, del)));
    if constexpr (kSingleQuote) bad = _mm_or_si128(bad, _mm_cmpeq_epi8(x, _mm_set1_epi8('\'')));
    if (const unsigned m = (~printable & 0xFFFFu) | static_cast<unsigned>(_mm_movemask_epi8(bad)))
      return p + __builtin_ctz(m);
    p += 16;
  }
#endif
  for (; p < end; ++p) {
    const auto c = static_cast<unsigned char>(*p);
    if (c < 0x20 || c >= 0x7F || c == '"' || c == '\\' || (kSingleQuote && c == '\'')) return p;
  }
  return end;
}

// The first byte of [p, end) that Python's repr() of a str does not copy as it is: outside printable
// ASCII (< 0x20, 0x7F, >= 0x80), a quote of either kind, or '\\'; end when there is none.
inline const char* repr_stop(const char* p, const char* end) { return printable_stop<true>(p, end); }

// The first byte of [p, end) that json.dumps (ensure_ascii) does not copy as it is: outside printable
// ASCII, '"' or '\\'; end when there is none.
inline const char* dump_stop(const char* p, const char* end) { return printable_stop<false>(p, end); }

// The first byte of [p, end) with its high bit set (not ASCII); end when there is none.
inline const unsigned char* non_ascii(const unsigned char* p, const unsigned char* end) {
#if defined(__SSE2__)
  while (end - p >= 64) {
    const auto* v = reinterpret_cast<const __m128i*>(p);
    const __m128i any = _mm_or_si128(_mm_or_si128(_mm_loadu_si128(v), _mm_loadu_si128(v + 1)),
                                     _mm_or_si128(_mm_loadu_si128(v + 2), _mm_loadu_si128(v + 3)));
    if (_mm_movemask_epi8(any) != 0) break;
    p += 64;
  }
  while (end - p >= 16) {
    if (const int m = _mm_movemask_epi8(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))))
      return p + __builtin_ctz(static_cast<unsigned>(m));
    p += 16;
  }
#else
  while (end - p >= 8) {
    std::uint64_t w;
    std::memcpy(&w, p, 8);
    if (w & 0x8080808080808080ull) break;
    p += 8;
  }
#endif
  for (; p < end; ++p)
    if (*p >= 0x80) return p;
  return end;
}

// The first i in [from, m) with a[i] != b[i]; m when there is none, 8 bytes a step (the portable
// path of mismatch(), tested on its own). pre: from <= m, and a and b agree on [0, from). Both are
// read on [0, m) only: the tail is the last 8 bytes before m, overlapping bytes known equal,
// instead of a byte loop.
inline std::size_t mismatch_words(const char* a, const char* b, std::size_t from, std::size_t m) {
  const auto differ8 = [&](std::size_t at) {  // the xor of the 8 bytes at `at`, first byte lowest
    std::uint64_t x, y;
    std::memcpy(&x, a + at, 8);
    std::memcpy(&y, b + at, 8);
    if constexpr (std::endian::native != std::endian::little) x = __builtin_bswap64(x), y = __builtin_bswap64(y);
    return x ^ y;
  };
  std::size_t k = from;
  for (; k + 8 <= m; k += 8)
    if (const std::uint64_t d = differ8(k)) return k + static_cast<std::size_t>(__builtin_ctzll(d) / 8);
  if (k >= m) return k;
  if (m >= 8) {
    const std::uint64_t d = differ8(m - 8);
    return d ? m - 8 + static_cast<std::size_t>(__builtin_ctzll(d) / 8) : m;
  }
  while (k < m && a[k] == b[k]) ++k;
  return k;
}

// mismatch_words, 16 bytes a step with SSE2 (names share prefixes of 20 to 40 bytes).
inline std::size_t mismatch(const char* a, const char* b, std::size_t from, std::size_t m) {
#if defined(__SSE2__)
  const auto differ16 = [&](std::size_t at) {  // a bit per differing byte of the 16 at `at`
    const __m128i x = _mm_loadu_si128(reinterpret_cast<const __m128i*>(a + at));
    const __m128i y = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b + at));
    return ~static_cast<unsigned>(_mm_movemask_epi8(_mm_cmpeq_epi8(x, y))) & 0xFFFFu;
  };
  std::size_t k = from;
  for (; k + 16 <= m; k += 16)
    if (const unsigned d = differ16(k)) return k + static_cast<std::size_t>(__builtin_ctz(d));
  if (k >= m) return k;
  if (m >= 16) {
    const unsigned d = differ16(m - 16);
    return d ? m - 16 + static_cast<std::size_t>(__builtin_ctz(d)) : m;
  }
  return mismatch_words(a, b, k, m);
#else
  return mismatch_words(a, b, from, m);
#endif
}

// The number of ASCII digits at the start of p[0, 16) (16: all of them). pre: 16 bytes readable.
inline std::size_t digit_run16(const char* p) {
#if defined(__SSE2__)
  const __m128i x = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
  // Signed compares: bytes >= 0x80 are negative, so below '0'.
  const __m128i bad = _mm_or_si128(_mm_cmplt_epi8(x, _mm_set1_epi8('0')), _mm_cmpgt_epi8(x, _mm_set1_epi8('9')));
  return static_cast<std::size_t>(__builtin_ctz(static_cast<unsigned>(_mm_movemask_epi8(bad)) | 0x10000u));
#else
  std::size_t n = 0;
  while (n < 16 && static_cast<unsigned char>(p[n] - '0') < 10) ++n;
  return n;
#endif
}

// The value of the n ASCII digits at p (1 <= n <= 16), in 8-digit words. pre: p[0, 8) readable,
// and p[8, 16) too when n > 8.
inline std::uint64_t digits_value(const char* p, std::size_t n) {
  // Eight digits, the first in the lowest byte, to their value (the multiply-shift reduction of
  // fast_float's parse_eight_digits_unrolled, in our own words: pairs, then fours, then eight).
  auto eight = [](std::uint64_t w) {
    w = (w * 10) + (w >> 8);  // each even byte now holds a two-digit value
    w = (((w & 0x000000FF000000FFull) * 0x000F424000000064ull) +
         (((w >> 16) & 0x000000FF000000FFull) * 0x0000271000000001ull)) >> 32;
    return w;
  };
  // The first k (<= 8) digits at q, minus '0' each; the bytes after them are shifted out, and the
  // zero bytes shifted in read as leading zeros. Subtracting before shifting only lets a borrow
  // run from the bytes after the digits into higher bytes, which are shifted out.
  auto load = [](const char* q, std::size_t k) {
    std::uint64_t w;
    std::memcpy(&w, q, 8);
    if constexpr (std::endian::native != std::endian::little) w = __builtin_bswap64(w);
    w -= 0x3030303030303030ull;
    return k == 0 ? 0 : w << (8 * (8 - k));
  };
  if (n <= 8) return eight(load(p, n));
  static constexpr std::uint64_t kPow10[9] = {1, 10, 100, 1000, 10000, 100000, 1000000, 10000000, 100000000};
  return eight(load(p, 8)) * kPow10[n - 8] + eight(load(p + 8, n - 8));
}

}  // namespace w4a8::json::scan
