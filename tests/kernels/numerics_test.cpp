// The kernels' scalar numerics (kernels/kernel_numerics.hpp, written separately) against the CPU
// reference's (src/gemm/numerics.hpp): exhaustive where the domain is small, swept elsewhere.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "gemm/numerics.hpp"
#include "kernels/act_row.hpp"
#include "kernels/gemm_tile.hpp"
#include "kernels/kernel_numerics.hpp"

namespace w4a8::kern {
namespace {

std::uint32_t bits(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
bool same(float a, float b) { return bits(a) == bits(b) || (a != a && b != b); }

TEST(KernelNumerics, Fp8AllPatterns) {
  for (int b = 0; b < 256; ++b) {
    const auto byte = static_cast<std::uint8_t>(b);
    EXPECT_TRUE(same(fp8_e4m3fn_to_f32(byte), gemm::fp8_e4m3fn_to_f32(byte))) << b;
    EXPECT_EQ(fp8_is_nan(byte), b == 0x7F || b == 0xFF);
  }
  EXPECT_EQ(fp8_e4m3fn_to_f32(0x7E), 448.0f);     // largest finite
  EXPECT_EQ(fp8_e4m3fn_to_f32(0x01), 0.001953125f);  // smallest subnormal 2^-9
  EXPECT_EQ(fp8_e4m3fn_to_f32(0x38), 1.0f);
}

// Every float32 with a fixed low-bit pattern walk: 2^22 values covering all exponents, both signs,
// every rounding case (ties included through the low bits chosen).
TEST(KernelNumerics, HalfConversionsSweep) {
  const std::uint32_t lows[] = {0x0000u, 0x0FFFu, 0x1000u, 0x1001u, 0x7FFFu, 0x8000u, 0x8001u, 0xFFFFu};
  for (std::uint32_t hi = 0; hi < (1u << 16); ++hi)
    for (std::uint32_t lo : lows) {
      const std::uint32_t u = (hi << 16) | lo;
      float f;
      std::memcpy(&f, &u, 4);
      ASSERT_EQ(f32_to_bf16(f), gemm::f32_to_bf16_rne(f)) << std::hex << u;
      ASSERT_EQ(f32_to_f16(f), gemm::f32_to_f16_rne(f)) << std::hex << u;
    }
  for (std::uint32_t h = 0; h < 65536; ++h) {
    ASSERT_TRUE(same(f16_to_f32(std::uint16_t(h)), gemm::f16_to_f32(std::uint16_t(h)))) << h;
    ASSERT_TRUE(same(bf16_to_f32(std::uint16_t(h)), gemm::bf16_to_f32(std::uint16_t(h)))) << h;
  }
}

TEST(KernelNumerics, RoundClampMatchesNearbyint) {
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> d(-300.f, 300.f);
  for (int i = 0; i < 200000; ++i) {
    const float v = i < 2048 ? (i - 1024) * 0.25f : d(rng);  // all quarter-steps: every tie
    EXPECT_EQ(round_clamp(v, -128.f, 127.f), gemm::rne_clamp(v, -128, 127)) << v;
    EXPECT_EQ(round_clamp(v, -127.f, 127.f), gemm::rne_clamp(v, -127, 127)) << v;
  }
  EXPECT_EQ(round_clamp(INFINITY, -127.f, 127.f), 127);
  EXPECT_EQ(round_clamp(-INFINITY, -127.f, 127.f), -127);
  EXPECT_EQ(round_clamp(NAN, -127.f, 127.f), 0);
}

// Exhaustive decode table: 16 codes x 256 scale bytes x {uniform, codebook}, built as the kernel
// builds it (build_table_part over all threads), against the reference decode.
TEST(KernelNumerics, DecodeTableExhaustive) {
  const float codebook[16] = {-1.0f, -0.6962f, -0.5251f, -0.3949f, -0.2844f, -0.1848f, -0.0911f, 0.0f,
                              0.0796f, 0.1609f, 0.2461f, 0.3379f, 0.4407f, 0.5626f, 0.7230f, 1.0f};
  for (const float* cb : {static_cast<const float*>(nullptr), codebook}) {
    std::vector<std::int8_t> table(kDecodeTableBytes);
    for (int t = 0; t < 128; ++t) build_table_part(table.data(), t, 128, cb);
    for (int s = 0; s < 256; ++s) {
      if (gemm::fp8_e4m3fn_is_nan(std::uint8_t(s))) continue;  // outside the contract, flagged instead
      for (int c = 0; c < 16; ++c)
        ASSERT_EQ(table[decode_table_index(s, c)], gemm::decode_weight(std::uint8_t(c), std::uint8_t(s), cb))
            << s << " " << c;
    }
  }
}

TEST(KernelNumerics, RotationMatchesReferenceOrder) {
  std::mt19937 rng(11);
  std::normal_distribution<float> d(0.f, 3.f);
  for (long long r = 4; r <= 1024; r *= 4) {
    const long long k = 2 * r;
    std::vector<float> x(k);
    for (float& v : x) v = d(rng);
    std::vector<float> ref = x, mine = x;
    gemm::convrot_row(ref.data(), k, r);
    for (long long s = 1; s < r; s *= 4)
      for (long long b = 0; b < k / 4; ++b) rotate_butterfly(mine.data(), b, r, s);
    for (long long i = 0; i < k; ++i) ASSERT_TRUE(same(mine[i], ref[i])) << r << " " << i;
  }
}

TEST(KernelNumerics, EpilogueAndFinishMatchReference) {
  std::mt19937 rng(5);
  std::uniform_int_distribution<std::int32_t> acc(-2000000000, 2000000000);
  std::uniform_real_distribution<float> sc(1e-6f, 1e-1f), bias(-5.f, 5.f);
  for (int i = 0; i < 100000; ++i) {
    const std::int32_t a = i < 100 ? (1 << 24) + i : acc(rng);  // around 2^24 the int->float rounds
    const float xs = sc(rng), ch = sc(rng), b = bias(rng);
    const float e = epilogue_f32(a, xs, ch);
    ASSERT_TRUE(same(e, gemm::epilogue(a, xs, ch)));
    for (int d = 0; d < 3; ++d) {
      GemmArgs g;
      g.out_dtype = d;
      g.bias = &b;
      g.bias_dtype = 0;
      const auto fd = static_cast<gemm::FloatDtype>(d);
      ASSERT_TRUE(same(finish_output(e, g, 0), gemm::finish_output(e, fd, &b)));
      g.bias = nullptr;
      ASSERT_TRUE(same(finish_output(e, g, 0), gemm::finish_output(e, fd, nullptr)));
    }
  }
}

}  // namespace
}  // namespace w4a8::kern
