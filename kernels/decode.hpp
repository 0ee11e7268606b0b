// The weight decode as a register table lookup. For one scale byte s, the 16 decoded int8 values
// (codes 0..15) form a 16-byte row of the decode table, held in 4 registers; 4 codes become 4
// decoded bytes with three byte permutes (PTX prmt.b32, "generic" mode): entries 0..7 and 8..15 of
// the row picked by the low 3 bits of each code, then per byte the half chosen by bit 3. The host
// emulation runs the same functions with prmt modelled from its documented semantics.
#pragma once

#include <cstdint>
#include <cstring>

#include "core/hd.hpp"

namespace w4a8::kern {

// prmt.b32 d, a, b, c (generic mode): the 8 source bytes are {b, a} = b7..b4 b3..b0; result byte i
// takes source byte (c >> 4i) & 7, or, when bit 3 of that nibble is set, that byte's msb replicated
// over 8 bits. Only c[15:0] is read.
W4A8_HD std::uint32_t prmt(std::uint32_t a, std::uint32_t b, std::uint32_t c) {
#if defined(__CUDA_ARCH__)
  std::uint32_t d;
  asm("prmt.b32 %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(b), "r"(c));
  return d;
#else
  const std::uint64_t src = (std::uint64_t(b) << 32) | a;
  std::uint32_t d = 0;
  for (int i = 0; i < 4; ++i) {
    const std::uint32_t ctl = (c >> (4 * i)) & 0xFu;
    std::uint32_t byte = std::uint32_t(src >> (8 * (ctl & 7u))) & 0xFFu;
    if (ctl & 8u) byte = (byte & 0x80u) ? 0xFFu : 0x00u;
    d |= byte << (8 * i);
  }
  return d;
#endif
}

// 16-byte and 1-byte shared-memory loads (one LDS.128 / LDS.U8 on the device). p is 16-byte aligned
// for load16.
W4A8_HD void load16(std::uint32_t (&w)[4], const std::uint8_t* p) {
#if defined(__CUDA_ARCH__)
  const uint4 q = *reinterpret_cast<const uint4*>(p);
  w[0] = q.x, w[1] = q.y, w[2] = q.z, w[3] = q.w;
#else
  std::memcpy(w, p, 16);
#endif
}

// Row s of a decode table (table + 16 s) as 4 little-endian words: entry c is byte c % 4 of word c / 4.
W4A8_HD void table_row(const std::uint8_t* table, std::uint32_t s, std::uint32_t (&t)[4]) { load16(t, table + 16 * s); }

// Decoded bytes of the 4 codes in nibbles 0..3 of `codes` (higher bits ignored): byte i of the
// result is row entry (codes >> 4i) & 15.
// post: equals the byte-wise table lookup for all 2^16 code patterns and any row (tested).
W4A8_HD std::uint32_t decode4(std::uint32_t codes, const std::uint32_t (&t)[4]) {
  const std::uint32_t idx = codes & 0x7777u;  // entry within each half
  const std::uint32_t lo = prmt(t[0], t[1], idx), hi = prmt(t[2], t[3], idx);
  // Byte i of lo, or of hi when bit 3 of code i is set: ((codes >> 1) & 0x4444) | 0x3210.
#if defined(__CUDA_ARCH__)
  std::uint32_t pick;  // one LOP3 (a & b) | c, which the compiler does not form from two immediates
  asm("lop3.b32 %0, %1, %2, %3, 0xEA;" : "=r"(pick) : "r"(codes >> 1), "r"(0x4444u), "r"(0x3210u));
#else
  const std::uint32_t pick = ((codes >> 1) & 0x4444u) | 0x3210u;
#endif
  return prmt(lo, hi, pick);
}

// The 8 codes of one packed word (k .. k+7, nibble q = code of k + q) through one row: the two
// B-fragment registers of one mma k-step when the 8 codes share a scale.
W4A8_HD void decode8(std::uint32_t word, const std::uint32_t (&t)[4], std::uint32_t (&b)[2]) {
  b[0] = decode4(word, t);
  b[1] = decode4(word >> 16, t);
}

}  // namespace w4a8::kern
