// Scalar numerics against an independent Python oracle (tests/gemm/oracles/numerics_oracle.py) and
// the algebraic laws of the regular Hadamard.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <cmath>
#include <cstring>
#include <sstream>

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

}  // namespace
}  // namespace w4a8::gemm
