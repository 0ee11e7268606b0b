// Input classes for the numerics parity tests (host: numerics_test.cpp; device: numerics_device_test.cu):
// float32 bit patterns naming every class the scalar numerics treat differently (NaN with and
// without payload and sign, +-inf, +-0, subnormals, normals at the edges of each target format,
// exact ties for every rounding the layer does), so that pairs of them cover every pair of classes.
#pragma once

#include <cstdint>

namespace w4a8::kern::test {

inline constexpr std::uint32_t kFloatClasses[] = {
    // zeros, subnormals, smallest normals
    0x00000000u, 0x80000000u, 0x00000001u, 0x80000001u, 0x007FFFFFu, 0x807FFFFFu, 0x00400000u, 0x00800000u,
    0x80800000u,
    // infinities and NaNs (quiet, signaling, with payload, negative)
    0x7F800000u, 0xFF800000u, 0x7FC00000u, 0xFFC00000u, 0x7F800001u, 0x7FFFFFFFu, 0xFFBFFFFFu,
    // small integers and integer ties (rne to int: 0.5 -> 0, 1.5 -> 2, 2.5 -> 2)
    0x3F800000u, 0xBF800000u, 0x3F000000u, 0xBF000000u, 0x3FC00000u, 0xBFC00000u, 0x40200000u, 0xC0200000u,
    0x3EFFFFFFu, 0x3F000001u,
    // the int8 clamp edges: 126.5, 127, 127.5, 128, 128.5, -127.5, -128, -128.5, -129.5
    0x42FD0000u, 0x42FE0000u, 0x42FF0000u, 0x43000000u, 0x43008000u, 0xC2FF0000u, 0xC3000000u, 0xC3008000u,
    0xC3018000u,
    // where float32 stops holding halves and integers: 2^23, 2^23 + 1,
    // 2^24, 2^24 + 2, 2^31, -2^31, 3e9, -3e9
    0x4B000000u, 0x4B000001u, 0x4B800000u, 0x4B800001u, 0x4F000000u, 0xCF000000u, 0x4F32D05Eu, 0xCF32D05Eu,
    // bf16 rounding: exact, tie to even (down), tie to even (up), just above a tie, bf16 max, overflow
    0x3F808000u, 0x3F818000u, 0x3F808001u, 0x7F7F0000u, 0x7F7F8000u, 0x7F7FFFFFu, 0xFF7FFFFFu,
    // f16 rounding: tie (1 + 2^-11), above, max 65504, 65519 (rounds to max), 65520 (rounds to inf),
    // f16 subnormal region: 2^-24, 2^-25 (tie to 0), 3 * 2^-25 (tie up to 2^-23), 2^-14 - 2^-25
    0x3F801000u, 0x3F801001u, 0x477FE000u, 0x477FEF00u, 0x477FF000u, 0x33800000u, 0x33000000u, 0x33C00000u,
    0x387FC000u,
    // FP8 range and the activation scale floor: 448, 464, 1e-30, 1/127, 127
    0x43E00000u, 0x43E80000u, 0x0DA24260u, 0x3C010204u, 0x42FE0000u,
    // arbitrary normals
    0x3DCCCCCDu, 0xC0490FDBu, 0x4479C000u, 0x3A83126Fu, 0xBE99999Au,
};
inline constexpr int kFloatClassCount = int(sizeof kFloatClasses / sizeof kFloatClasses[0]);

// int32 accumulators around the float32 rounding of the epilogue (|acc| > 2^24 rounds).
inline constexpr std::int32_t kAccClasses[] = {0,        1,        -1,       127 * 128, -127 * 128, 16777215, 16777216,
                                               16777217, 16777219, -16777217, 33554435, 2147483647, -2147483647 - 1};
inline constexpr int kAccClassCount = int(sizeof kAccClasses / sizeof kAccClasses[0]);

// Sweep of float32 patterns: every high-20-bit prefix with these low 12 bits (all exponents and
// signs, every rounding position of bf16 / f16 / int at some exponent, exact ties included).
inline constexpr std::uint32_t kSweepLow12[] = {0x000u, 0x001u, 0x7FFu, 0x800u, 0x801u, 0xFFFu};

}  // namespace w4a8::kern::test
