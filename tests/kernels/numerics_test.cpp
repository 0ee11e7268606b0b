// Parity of the kernels' own formulations with the shared scalar numerics (src/gemm/numerics.hpp):
// where the device computes a definition differently (rne_clamp through one saturating conversion;
// the weight decode as a table row and three byte permutes; a division by a runtime constant as a
// multiply-high), both forms are checked against each other over every input class and pair of
// classes (numerics_cases.hpp), exhaustively where the inputs are 8 or 16 bits. The prmt model is
// checked against the PTX ISA's documented semantics first (hand-derived cases), independently of
// decode.hpp. tests/kernels/numerics_device_test.cu repeats the comparisons on a GPU.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

#include "gemm/numerics.hpp"
#include "kernels/act_row.hpp"
#include "kernels/decode.hpp"
#include "kernels/index_math.hpp"
#include "numerics_cases.hpp"

namespace w4a8::kern::test {
namespace {

float from_bits(std::uint32_t u) { return gemm::f32_from_bits(u); }

// A 16-entry row of arbitrary bytes as 4 words.
void row_words(const std::int8_t* row, std::uint32_t (&t)[4]) { std::memcpy(t, row, 16); }

// ---- prmt.b32 (generic mode) against the ISA's text --------------------------------------------------
TEST(Prmt, MatchesIsaExamples) {
  // Bytes of {b, a} numbered 0..7 from a's least significant byte; selectors read nibble by nibble.
  EXPECT_EQ(prmt(0x03020100u, 0x07060504u, 0x7531u), 0x07050301u);
  EXPECT_EQ(prmt(0x03020100u, 0x07060504u, 0x3210u), 0x03020100u);
  EXPECT_EQ(prmt(0x03020100u, 0x07060504u, 0x4567u), 0x04050607u);
  EXPECT_EQ(prmt(0x11223344u, 0x55667788u, 0x0000u), 0x44444444u);
  // Only c[15:0] is read.
  EXPECT_EQ(prmt(0x03020100u, 0x07060504u, 0xABCD7531u), 0x07050301u);
  // Bit 3 of a selector replicates the msb of the chosen byte: 0x80 -> 0xFF, 0x7F -> 0x00.
  EXPECT_EQ(prmt(0x0000807Fu, 0u, 0x0098u), 0x7F7FFF00u);
  EXPECT_EQ(prmt(0x0000807Fu, 0u, 0x8989u), 0x00FF00FFu);
  EXPECT_EQ(prmt(0u, 0x80000000u, 0xF000u), 0xFF000000u);
}

// ---- decode4 / decode8 against a plain table lookup ---------------------------------------------------
std::uint32_t lookup4(std::uint32_t codes, const std::int8_t* row) {
  std::uint32_t out = 0;
  for (int i = 0; i < 4; ++i) out |= std::uint32_t(std::uint8_t(row[(codes >> (4 * i)) & 15u])) << (8 * i);
  return out;
}

// All 2^16 code patterns through rows of arbitrary bytes (the decode does not depend on the values).
TEST(Decode, Decode4EqualsLookupForEveryCodePattern) {
  std::mt19937 rng(17);
  std::uniform_int_distribution<int> byte(-128, 127);
  std::vector<std::vector<std::int8_t>> rows = {std::vector<std::int8_t>(16, 0), std::vector<std::int8_t>(16, -1)};
  for (int r = 0; r < 6; ++r) {
    rows.emplace_back(16);
    for (auto& v : rows.back()) v = std::int8_t(byte(rng));
  }
  rows.push_back({-128, 127, -1, 0, 1, -127, 126, -2, 2, 64, -64, 63, -65, 100, -100, 5});
  for (const auto& row : rows) {
    std::uint32_t t[4];
    row_words(row.data(), t);
    for (std::uint32_t c = 0; c < 65536; ++c) ASSERT_EQ(decode4(c, t), lookup4(c, row.data())) << std::hex << c;
  }
}

const float kCodebook[16] = {-1.0f, -0.6962f, -0.5251f, -0.3949f, -0.2844f, -0.1848f, -0.0911f, 0.0f,
                             0.0796f, 0.1609f, 0.2461f, 0.3379f, 0.4407f, 0.5626f, 0.7230f, 1.0f};

// A codebook holding every float class the decode product can meet (NaN, +-inf, +-0, subnormal,
// huge, ties of v * s) - the table build and the lookup must not care.
std::vector<float> hostile_codebook() {
  const std::uint32_t bits[16] = {0x7FC00000u, 0xFF800000u, 0x7F800000u, 0x80000000u, 0x00000000u, 0x00000001u,
                                  0x807FFFFFu, 0x7F7FFFFFu, 0x3F000000u, 0xBFC00000u, 0x40200000u, 0x42FF0000u,
                                  0xC3008000u, 0x3DCCCCCDu, 0x4B800001u, 0xC2FD0000u};
  std::vector<float> v(16);
  for (int i = 0; i < 16; ++i) v[i] = from_bits(bits[i]);
  return v;
}

// Exhaustive over (scale byte, code) x {uniform, codebook, hostile codebook}: the table the prologue
// builds (prologue_side_jobs over all blocks and threads), read with decode8 from natural packed
// words, gives decode_weight of every element; for 3 scale bytes and the hostile codebook every one
// of the 2^16 patterns of a half-word.
TEST(Decode, TablePathEqualsDecodeWeightForEveryScaleAndCode) {
  const std::vector<float> hostile = hostile_codebook();
  for (const float* cb : {static_cast<const float*>(nullptr), kCodebook, hostile.data()}) {
    std::vector<std::int8_t> table(kDecodeTableBytes, 0x55);
    ActArgs a;
    a.table = table.data(), a.codebook = cb;
    for (long long block = 0; block < 3; ++block)
      for (int t = 0; t < kActThreads; ++t) prologue_side_jobs(a, block, 3, t);
    for (int s = 0; s < 256; ++s) {
      std::uint32_t row[4];
      table_row(reinterpret_cast<const std::uint8_t*>(table.data()), std::uint32_t(s), row);
      const bool all = s == 0x38 || s == 0x7F || s == 0x01;
      for (std::uint32_t word = 0; word < (all ? 65536u : 16u); ++word) {
        // 8 codes: all-equal words for the sparse case (0x00000000, 0x11111111, ...), else the
        // half-word pattern in both halves.
        const std::uint32_t w = all ? (word | (word << 16)) : word * 0x11111111u;
        std::uint32_t b[2];
        decode8(w, row, b);
        for (int q = 0; q < 8; ++q) {
          const auto code = std::uint8_t((w >> (4 * q)) & 15u);
          const std::int8_t got = std::int8_t((b[q / 4] >> (8 * (q % 4))) & 0xFFu);
          ASSERT_EQ(got, gemm::decode_weight(code, std::uint8_t(s), cb)) << "s=" << s << " w=" << std::hex << w;
        }
      }
    }
  }
}

// ---- rne_clamp: the device form (one saturating conversion) against the definition --------------------
void expect_rne_parity(float v) {
  for (auto [lo, hi] : {std::pair{-128, 127}, std::pair{-127, 127}, std::pair{-8, 7}}) {
    ASSERT_EQ(gemm::rne_clamp_cvt(v, lo, hi), gemm::rne_clamp_ref(v, lo, hi))
        << std::hex << gemm::f32_bits(v) << " [" << std::dec << lo << ", " << hi << "]";
  }
}

TEST(RneClamp, DeviceFormMatchesDefinitionOnEveryClass) {
  for (std::uint32_t u : kFloatClasses) expect_rne_parity(from_bits(u));
  // Hand-derived values, independent of both forms.
  EXPECT_EQ(gemm::rne_clamp_cvt(from_bits(0x3F000000u), -128, 127), 0);    // 0.5 -> 0
  EXPECT_EQ(gemm::rne_clamp_cvt(from_bits(0x3FC00000u), -128, 127), 2);    // 1.5 -> 2
  EXPECT_EQ(gemm::rne_clamp_cvt(from_bits(0x40200000u), -128, 127), 2);    // 2.5 -> 2
  EXPECT_EQ(gemm::rne_clamp_cvt(from_bits(0x42FD0000u), -128, 127), 126);  // 126.5 -> 126
  EXPECT_EQ(gemm::rne_clamp_cvt(from_bits(0x42FF0000u), -128, 127), 127);  // 127.5 -> 128 -> 127
  EXPECT_EQ(gemm::rne_clamp_cvt(from_bits(0xC3008000u), -128, 127), -128); // -128.5 -> -128
  EXPECT_EQ(gemm::rne_clamp_cvt(from_bits(0xFF800000u), -127, 127), -127); // -inf
  EXPECT_EQ(gemm::rne_clamp_cvt(from_bits(0x7FC00000u), -127, 127), 0);    // NaN
  EXPECT_EQ(gemm::rne_clamp_cvt(from_bits(0x80000000u), -127, 127), 0);    // -0
  // The conversion model saturates, as PTX's float-to-integer cvt does.
  EXPECT_EQ(gemm::cvt_rni_sat_s32(from_bits(0x4F32D05Eu)), INT32_MAX);
  EXPECT_EQ(gemm::cvt_rni_sat_s32(from_bits(0xCF32D05Eu)), INT32_MIN);
  EXPECT_EQ(gemm::cvt_rni_sat_s32(from_bits(0xCF000000u)), INT32_MIN);
}

// Every float32 whose low 12 bits are one of kSweepLow12 (6 x 2^20 values: all exponents, both signs,
// NaN payloads, ties at every scale). W4A8_EXHAUSTIVE=1 checks all 2^32 patterns instead.
TEST(RneClamp, DeviceFormMatchesDefinitionOnSweep) {
  const bool all = std::getenv("W4A8_EXHAUSTIVE") != nullptr;
  if (all) {
    for (std::uint64_t u = 0; u < (std::uint64_t(1) << 32); ++u) expect_rne_parity(from_bits(std::uint32_t(u)));
    return;
  }
  for (std::uint32_t hi = 0; hi < (1u << 20); ++hi)
    for (std::uint32_t lo : kSweepLow12) expect_rne_parity(from_bits((hi << 12) | lo));
}

// ---- the absmax reduction: any order, same result ------------------------------------------------------
TEST(Absmax, OrderIndependentOnClassPairs) {
  for (std::uint32_t ua : kFloatClasses)
    for (std::uint32_t ub : kFloatClasses) {
      const float a = from_bits(ua), b = from_bits(ub);
      const float ab = gemm::absmax_step(gemm::absmax_step(0.f, a), b);
      const float ba = gemm::absmax_step(gemm::absmax_step(0.f, b), a);
      if (ab != ab || ba != ba) {
        ASSERT_TRUE(ab != ab && ba != ba) << std::hex << ua << " " << ub;
        ASSERT_TRUE(a != a || b != b);  // NaN only from a NaN input, and it sticks
      } else {
        ASSERT_EQ(gemm::f32_bits(ab), gemm::f32_bits(ba)) << std::hex << ua << " " << ub;
        ASSERT_EQ(ab, std::fmax(std::fabs(a), std::fabs(b)));
      }
    }
}

// ---- division by a runtime constant --------------------------------------------------------------------
TEST(FastDiv, EqualsDivisionForEveryDivisorUpTo4096) {
  std::mt19937 rng(5);
  std::uniform_int_distribution<std::uint32_t> any(0, 0x7FFFFFFFu);
  for (std::uint32_t d = 1; d <= 4096; ++d) {
    const FastDiv f = make_fast_div(d);
    for (std::uint32_t x = 0; x < 4096; ++x) ASSERT_EQ(fast_div(x, f), x / d) << x << " / " << d;
    for (std::uint32_t x : {0x7FFFFFFFu, 0x7FFFFFFEu, 0x40000000u, 0x3FFFFFFFu})
      ASSERT_EQ(fast_div(x, f), x / d) << x << " / " << d;
    for (int i = 0; i < 64; ++i) {
      const std::uint32_t x = any(rng);
      ASSERT_EQ(fast_div(x, f), x / d) << x << " / " << d;
      ASSERT_EQ(fast_div(x - x % d, f), x / d);      // exact multiples
      if (x % d) {
        ASSERT_EQ(fast_div(x - x % d - 1, f), x / d - 1);  // just below
      }
    }
  }
  // Large divisors (group sizes up to K, scale-window word counts).
  for (std::uint32_t d : {65536u, 65537u, 1000003u, 0x40000000u, 0x7FFFFFFFu}) {
    const FastDiv f = make_fast_div(d);
    for (int i = 0; i < 100000; ++i) {
      const std::uint32_t x = any(rng);
      ASSERT_EQ(fast_div(x, f), x / d) << x << " / " << d;
    }
  }
}

}  // namespace
}  // namespace w4a8::kern::test
