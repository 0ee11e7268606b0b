// Scalar numerics against an independent Python oracle (tests/gemm/oracles/numerics_oracle.py) and
// the algebraic laws of the regular Hadamard.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <cmath>
#include <cstring>
#include <sstream>
#include <vector>

#include "gemm/numerics.hpp"
#include "support/python.hpp"

namespace w4a8::gemm {
namespace {

const float kLut[16] = {-0.980602f, -0.794529f, -0.638165f, -0.500986f, -0.377321f, -0.263187f,
                        -0.155210f, -0.050720f, 0.052541f,  0.156985f,  0.265284f,  0.379533f,
                        0.502636f,  0.638953f,  0.794876f,  0.980671f};

struct OracleTables {
  std::vector<std::string> lines = w4a8::testing::python_lines("tests/gemm/oracles/numerics_oracle.py");
};
const OracleTables& oracle() { static OracleTables t; return t; }

// Law: all 256 FP8 patterns decode exactly; NaN only for 0x7F/0xFF; max finite 448.
TEST(Numerics, Fp8AllPatterns) {
  int seen = 0;
  for (const auto& line : oracle().lines) {
    std::istringstream in(line);
    std::string tag;
    unsigned b = 0, bits = 0;
    in >> tag;
    if (tag != "fp8") continue;
    in >> b >> std::hex >> bits;
    const float got = fp8_e4m3fn_to_f32(std::uint8_t(b));
    if (b == 0x7F || b == 0xFF) {
      EXPECT_TRUE(std::isnan(got)) << b;
      EXPECT_TRUE(fp8_e4m3fn_is_nan(std::uint8_t(b)));
    } else {
      EXPECT_EQ(f32_bits(got), bits) << "byte " << b;
      EXPECT_FALSE(fp8_e4m3fn_is_nan(std::uint8_t(b)));
      EXPECT_LE(std::abs(got), 448.0f);
    }
    ++seen;
  }
  EXPECT_EQ(seen, 256);
  EXPECT_EQ(fp8_e4m3fn_to_f32(0x7E), 448.0f);
}

// Exhaustive decode table: 16 codes x 256 scale bytes x {uniform, codebook}.
TEST(Numerics, DecodeTableExhaustive) {
  int seen = 0;
  for (const auto& line : oracle().lines) {
    std::istringstream in(line);
    std::string tag, book, want;
    int c = 0, b = 0;
    in >> tag;
    if (tag != "dec") continue;
    in >> book >> c >> b >> want;
    const float* cb = book == "lut" ? kLut : nullptr;
    const bool nan = decode_is_nan(std::uint8_t(c), std::uint8_t(b), cb);
    if (want == "nan") {
      EXPECT_TRUE(nan) << book << " " << c << " " << b;
    } else {
      ASSERT_FALSE(nan) << book << " " << c << " " << b;
      EXPECT_EQ(int(decode_weight(std::uint8_t(c), std::uint8_t(b), cb)), std::stoi(want))
          << book << " code " << c << " byte " << b;
    }
    ++seen;
  }
  EXPECT_EQ(seen, 2 * 16 * 256);
}

TEST(Numerics, HalfConversionsRoundToNearestEven) {
  int f16 = 0, bf16 = 0;
  for (const auto& line : oracle().lines) {
    std::istringstream in(line);
    std::string tag;
    unsigned u = 0, h = 0;
    in >> tag >> std::hex >> u >> h;
    const float x = f32_from_bits(u);
    if (tag == "f16") {
      EXPECT_EQ(f32_to_f16_rne(x), h) << std::hex << u;
      if (!std::isnan(x)) {
        EXPECT_EQ(f32_bits(f16_to_f32(std::uint16_t(h))), f32_bits(round_to(FloatDtype::F16, x)));
      }
      ++f16;
    } else if (tag == "bf16") {
      EXPECT_EQ(f32_to_bf16_rne(x), h) << std::hex << u;
      ++bf16;
    }
  }
  EXPECT_GT(f16, 19000);
  EXPECT_GT(bf16, 19000);
  // Decoding: every f16 and bf16 pattern round-trips through f32 (NaNs stay NaN).
  for (unsigned h = 0; h < 65536; ++h) {
    const float f = f16_to_f32(std::uint16_t(h));
    if (std::isnan(f)) continue;
    EXPECT_EQ(f32_to_f16_rne(f), h);
  }
  for (unsigned h = 0; h < 65536; ++h) {
    const float f = bf16_to_f32(std::uint16_t(h));
    if (!std::isnan(f)) {
      EXPECT_EQ(f32_to_bf16_rne(f), h);
    }
  }
  EXPECT_TRUE(std::isnan(round_to(FloatDtype::BF16, std::nanf(""))));
  EXPECT_TRUE(std::isnan(round_to(FloatDtype::F16, std::nanf(""))));
}

TEST(Numerics, RneClamp) {
  EXPECT_EQ(rne_clamp(2.5f, -128, 127), 2);
  EXPECT_EQ(rne_clamp(3.5f, -128, 127), 4);
  EXPECT_EQ(rne_clamp(-2.5f, -128, 127), -2);
  EXPECT_EQ(rne_clamp(-0.5f, -128, 127), 0);
  EXPECT_EQ(rne_clamp(127.5f, -128, 127), 127);
  EXPECT_EQ(rne_clamp(-1e30f, -128, 127), -128);
  EXPECT_EQ(rne_clamp(INFINITY, -127, 127), 127);
  EXPECT_EQ(rne_clamp(std::nanf(""), -127, 127), 0);
}

TEST(Numerics, UnpackLowNibbleFirst) {
  const std::uint8_t row[2] = {0x21, 0xF3};
  EXPECT_EQ(unpack_code(row, 0), 1);
  EXPECT_EQ(unpack_code(row, 1), 2);
  EXPECT_EQ(unpack_code(row, 2), 3);
  EXPECT_EQ(unpack_code(row, 3), 15);
}

TEST(Numerics, PowerOf4) {
  for (std::int64_t r : {4, 16, 64, 256, 1024, 4096}) EXPECT_TRUE(is_power_of_4(r)) << r;
  for (std::int64_t r : {-4, 0, 1, 2, 8, 32, 128, 12, 48}) EXPECT_FALSE(is_power_of_4(r)) << r;
}

// Hadamard laws on the dense sign matrix: symmetric, H H^T = R I, and the seed is as specified.
TEST(Numerics, HadamardMatrixLaws) {
  const int seed[4][4] = {{1, 1, 1, -1}, {1, 1, -1, 1}, {1, -1, 1, 1}, {-1, 1, 1, 1}};
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 4; ++j) EXPECT_EQ(hadamard_sign(4, i, j), seed[i][j]);
  for (std::int64_t r : {4, 16, 64}) {
    for (std::int64_t i = 0; i < r; ++i)
      for (std::int64_t j = 0; j < r; ++j) {
        EXPECT_EQ(hadamard_sign(r, i, j), hadamard_sign(r, j, i));
        std::int64_t dot = 0;
        for (std::int64_t t = 0; t < r; ++t) dot += hadamard_sign(r, i, t) * hadamard_sign(r, j, t);
        EXPECT_EQ(dot, i == j ? r : 0);
      }
  }
}

// Law: on integer inputs every stage is exact, so the butterfly equals the dense product x @ H_R
// computed in float64, and rotating twice returns x bit for bit.
RC_GTEST_PROP(Numerics, ConvRotMatchesDenseAndIsItsOwnInverse, ()) {
  const std::int64_t r = *rc::gen::element<std::int64_t>(4, 16, 64, 256);
  const std::int64_t blocks = *rc::gen::inRange<std::int64_t>(1, 4);
  std::vector<float> x(std::size_t(r * blocks));
  for (auto& v : x) v = float(*rc::gen::inRange(-1000, 1001)) * 16.0f;
  std::vector<float> y = x;
  convrot_row(y.data(), r * blocks, r);
  const double inv = 1.0 / std::sqrt(double(r));
  for (std::int64_t b = 0; b < blocks; ++b)
    for (std::int64_t j = 0; j < r; ++j) {
      double s = 0;
      for (std::int64_t i = 0; i < r; ++i) s += double(x[std::size_t(b * r + i)]) * hadamard_sign(r, i, j);
      RC_ASSERT(double(y[std::size_t(b * r + j)]) == s * inv);
    }
  convrot_row(y.data(), r * blocks, r);
  RC_ASSERT(std::memcmp(x.data(), y.data(), x.size() * 4) == 0);
}

// Law: on arbitrary floats the round trip is the identity up to rounding (relative 2^-20 of the
// block norm).
RC_GTEST_PROP(Numerics, ConvRotRoundTripIsNearIdentity, ()) {
  const std::int64_t r = *rc::gen::element<std::int64_t>(4, 16, 64, 256);
  std::vector<float> x(static_cast<std::size_t>(r));
  double norm = 0;
  for (auto& v : x) {
    v = std::ldexp(float(*rc::gen::inRange(-1000000, 1000001)) / 1e6f, *rc::gen::inRange(-20, 20));
    norm += double(v) * v;
  }
  std::vector<float> y = x;
  convrot_block(y.data(), r);
  double norm2 = 0;
  for (float v : y) norm2 += double(v) * v;
  RC_ASSERT(std::abs(norm2 - norm) <= norm * 1e-5 + 1e-300);
  convrot_block(y.data(), r);
  for (std::size_t i = 0; i < x.size(); ++i) RC_ASSERT(std::abs(double(y[i]) - x[i]) <= std::sqrt(norm) * 1e-6);
}

// The rotation scales every input by 1/sqrt(R) before summing (as upstream's dense product with
// entries +-1/sqrt(R) does), so rows far above FLT_MAX / 3 rotate to finite values. Hand derivation,
// M = 3e38 (> FLT_MAX / 2): x = [M, M, 0, ..., 0] in a block of R = 4^p. Exactly, y_j = M * (h_0j +
// h_1j) / 2^p with h = +-1: 0 or +-M / 2^(p-1), every value a power-of-two multiple of M, so float32
// holds it exactly. The first stage computes M/2^p + M/2^p = M/2^(p-1) (finite); the former stage-wise
// form computed M + M = 6e38 = inf first and returned inf/NaN for the whole block.
TEST(Numerics, ConvRotOfNearFltMaxRowsIsFiniteAndExact) {
  const float m = 3e38f;
  for (std::int64_t r : {4, 16, 64, 256}) {
    std::vector<float> x(std::size_t(r), 0.0f);
    x[0] = x[1] = m;
    std::vector<float> y = x;
    convrot_block(y.data(), r);
    const double inv = 1.0 / std::sqrt(double(r));
    for (std::int64_t j = 0; j < r; ++j) {
      const double want = (double(m) * hadamard_sign(r, 0, j) + double(m) * hadamard_sign(r, 1, j)) * inv;
      ASSERT_EQ(double(y[std::size_t(j)]), want) << "R " << r << " j " << j;
    }
  }
  // R = 4 by hand: y = 0.5 * (x @ seed) = [M, M, 0, 0].
  float a = m, b = m, c = 0.0f, d = 0.0f;
  convrot_butterfly(a, b, c, d, convrot_prescale(4));
  EXPECT_EQ(a, m);
  EXPECT_EQ(b, m);
  EXPECT_EQ(c, 0.0f);
  EXPECT_EQ(d, 0.0f);
  // The prescale is 1/sqrt(R) exactly.
  EXPECT_EQ(convrot_prescale(4), 0.5f);
  EXPECT_EQ(convrot_prescale(256), 0.0625f);
  EXPECT_EQ(convrot_prescale(std::int64_t(1) << 62), std::ldexp(1.0f, -31));
}

// Subnormal inputs: each element is multiplied by 1/sqrt(R) first and rounded on float32's subnormal
// grid (unit u = 2^-149), as upstream's products x_j * (+-1/sqrt(R)). By hand, R = 4: x = [u, u, u, u]
// -> every product 0.5u rounds to 0 (tie, even) -> y = [0, 0, 0, 0]; x = [3u, u, u, u] -> products
// [2u, 0, 0, 0] (1.5u rounds to 2u) -> y = [2u, 2u, 2u, -2u]. R = 16, x = 16 x u: every product 0.25u
// rounds to 0 -> y = 0. comfy-kitchen 0.2.40 (_rotate_activation, torch 2.15 on the CPU) returns
// exactly these; the former stage-wise 0.5 * (sum) gave [u, u, u, u], [2u, 2u, 2u, 0] and 16 x u.
TEST(Numerics, ConvRotOfSubnormalsRoundsEachProductFirst) {
  const float u = std::ldexp(1.0f, -149);
  auto rot = [](std::vector<float> x, std::int64_t r) {
    convrot_row(x.data(), std::int64_t(x.size()), r);
    return x;
  };
  EXPECT_EQ(rot({u, u, u, u}, 4), (std::vector<float>{0.0f, 0.0f, 0.0f, 0.0f}));
  EXPECT_EQ(rot({3 * u, u, u, u}, 4), (std::vector<float>{2 * u, 2 * u, 2 * u, -2 * u}));
  EXPECT_EQ(rot(std::vector<float>(16, u), 16), std::vector<float>(16, 0.0f));
}

TEST(Numerics, ActivationQuantizationSteps) {
  EXPECT_EQ(row_scale(0.0f), 1e-30f);
  EXPECT_EQ(row_scale(127.0f), 1.0f);
  EXPECT_TRUE(std::isnan(row_scale(std::nanf(""))));
  EXPECT_EQ(row_scale(INFINITY), INFINITY);
  // Eager fp16: a scale below fp16's smallest subnormal becomes 0 and is replaced by tiny (2^-14).
  EXPECT_EQ(division_scale(1e-30f, ActPolicy::Eager, FloatDtype::F16), 6.103515625e-05f);
  EXPECT_EQ(division_scale(1e-30f, ActPolicy::F32, FloatDtype::F16), 1e-30f);
  // Eager bf16: 1/3 rounded to bf16 is 0.333984375.
  EXPECT_EQ(division_scale(1.0f / 3.0f, ActPolicy::Eager, FloatDtype::BF16), 0.333984375f);
  EXPECT_EQ(quantize_act(254.0f, 2.0f, ActPolicy::F32, FloatDtype::F32), 127);
  EXPECT_EQ(quantize_act(-300.0f, 2.0f, ActPolicy::F32, FloatDtype::F32), -128);
  EXPECT_EQ(quantize_act(5.0f, 2.0f, ActPolicy::F32, FloatDtype::F32), 2);  // 2.5 -> 2 (even)
  // Eager bf16 rounds the quotient first: 128.9/1 -> bf16 129 -> 127 after clamp; 100.6 -> 100.5 -> 100.
  EXPECT_EQ(quantize_act(100.6f, 1.0f, ActPolicy::Eager, FloatDtype::BF16), 100);
  EXPECT_EQ(quantize_act(100.6f, 1.0f, ActPolicy::F32, FloatDtype::BF16), 101);
}

TEST(Numerics, EpilogueOrder) {
  // 2^24 + 1 is not a float: the int32 -> float conversion rounds first (to 2^24).
  EXPECT_EQ(epilogue((1 << 24) + 1, 1.0f, 1.0f), 16777216.0f);
  // Bias is added in the output dtype: bf16(1) + bf16(2^-9) rounds back to 1.
  const float b = 0.001953125f;
  EXPECT_EQ(finish_output(1.0f, FloatDtype::BF16, &b), 1.0f);
  EXPECT_EQ(finish_output(1.0f, FloatDtype::F32, &b), 1.001953125f);
}

// Correction path: torch's F.linear(x, W, bias) in bf16/fp16 on the CPU adds the bias to the float32
// sum and rounds ONCE (measured on torch 2.15: x = [1, 2^-8, 2^-8], w = x, bias 256 gives bf16 258,
// i.e. 257 + 2^-15 rounded once; rounding 1 + 2^-15 to bf16 first would give 256). By hand:
//   bf16, sum = 1 + 2^-8 + 2^-10 (f32-exact), bias = -1: once: 2^-8 + 2^-10 = 1.25 * 2^-8 = 0.0048828125
//     (bf16-exact); twice: bf16(sum) = 1 + 2^-7 (0.625 ulp rounds up), minus 1 = 2^-7 = 0.0078125.
//   fp16, sum = 1 + 2^-11 + 2^-13, bias = -1: once: 1.25 * 2^-11 = 0.0006103515625 (a normal fp16);
//     twice: fp16(sum) = 1 + 2^-10, minus 1 = 2^-10 = 0.0009765625.
//   No bias: the sum is rounded once either way (bf16(1 + 2^-8 + 2^-10) = 1.0078125).
TEST(Numerics, CorrectedOutputRoundsSumPlusBiasOnce) {
  const float sb = 1.0f + std::ldexp(1.0f, -8) + std::ldexp(1.0f, -10);
  const float sh = 1.0f + std::ldexp(1.0f, -11) + std::ldexp(1.0f, -13);
  EXPECT_EQ(corrected_output(sb, true, -1.0f, FloatDtype::BF16, FloatDtype::BF16), 0.0048828125f);
  EXPECT_EQ(corrected_output(sb, true, -1.0f, FloatDtype::BF16, FloatDtype::F32), 0.0048828125f);
  EXPECT_EQ(corrected_output(sh, true, -1.0f, FloatDtype::F16, FloatDtype::F16), 0.0006103515625f);
  EXPECT_EQ(corrected_output(sh, true, -1.0f, FloatDtype::F16, FloatDtype::F32), 0.0006103515625f);
  // The output cast comes last: the fp16 result 0.0006103515625 = 1.25 * 2^-11 is bf16-exact too.
  EXPECT_EQ(corrected_output(sh, true, -1.0f, FloatDtype::F16, FloatDtype::BF16), 0.0006103515625f);
  EXPECT_EQ(corrected_output(sb, false, 0.0f, FloatDtype::BF16, FloatDtype::BF16), 1.0078125f);
  // The bias is taken in the GEMM dtype: an f32 bias 2^-8 + 2^-16 is a bf16 tie and becomes 2^-8; on
  // sum 1, 1 + 2^-8 is a bf16 tie again and rounds to even, 1 (the unrounded bias would give 1 + 2^-7).
  EXPECT_EQ(corrected_output(1.0f, true, std::ldexp(1.0f, -8) + std::ldexp(1.0f, -16), FloatDtype::BF16,
                             FloatDtype::F32),
            1.0f);
  // A float32 GEMM (F32 policy or activations): one f32 addition, then the output cast.
  EXPECT_EQ(corrected_output(sb, true, -1.0f, FloatDtype::F32, FloatDtype::F32), sb - 1.0f);
  EXPECT_EQ(corrected_output(sb, true, -1.0f, FloatDtype::F32, FloatDtype::BF16), 0.0048828125f);
}

}  // namespace
}  // namespace w4a8::gemm
