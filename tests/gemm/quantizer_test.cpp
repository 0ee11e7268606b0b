// Quantizer: legal layers out, upstream's shape errors, FP8 encoding, and the weight error on
// Gaussian weights (printed; bounded well above upstream's reported ~0.07 for the codebook).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <random>

#include "gemm/operands.hpp"
#include "gemm/quantizer.hpp"
#include "gemm/reference.hpp"

namespace w4a8::gemm {
namespace {

std::vector<float> gaussian(std::uint64_t count, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::vector<float> w(count);
  for (auto& v : w) v = nd(rng);
  return w;
}

TEST(Quantizer, Fp8EncoderRoundTripsEveryFiniteByte) {
  for (int b = 0; b < 256; ++b) {
    if ((b & 0x7F) == 0x7F || b == 0x80) continue;
    EXPECT_EQ(f32_to_fp8_e4m3fn_rne(fp8_e4m3fn_to_f32(std::uint8_t(b))), b) << b;
  }
  // Midpoints: between 1.0 (0x38) and 1.125 (0x39) ties to the even mantissa 0x38; 1.1875 -> 0x3A.
  EXPECT_EQ(f32_to_fp8_e4m3fn_rne(1.0625f), 0x38);
  EXPECT_EQ(f32_to_fp8_e4m3fn_rne(1.1875f), 0x3A);
  EXPECT_EQ(f32_to_fp8_e4m3fn_rne(460.0f), 0x7E);
  EXPECT_EQ(f32_to_fp8_e4m3fn_rne(464.0f), 0x7F);
  EXPECT_EQ(f32_to_fp8_e4m3fn_rne(-1e-9f), 0x80);
}

TEST(Quantizer, RejectsIllegalShapesNamingTheRule) {
  auto msg = [](std::uint64_t n, std::uint64_t k, const QuantizeOptions& o) {
    auto r = quantize_weights(std::vector<float>(n * k, 0.5f), n, k, o);
    return r.ok() ? std::string("ok") : r.error().message;
  };
  const QuantizeOptions d;
  EXPECT_EQ(msg(4, 40, d), "cannot quantize a weight of shape (4, 40): K=40 is not divisible by 16");
  EXPECT_EQ(msg(0, 256, d), "cannot quantize a weight of shape (0, 256): N is 0 (no output rows)");
  EXPECT_EQ(msg(4, 0, d), "cannot quantize a weight of shape (4, 0): K is 0 (no input columns)");
  QuantizeOptions o = d;
  o.group_size = 48;
  EXPECT_EQ(msg(2, 256, o), "cannot quantize a weight of shape (2, 256): K=256 is not divisible by group_size=48");
  o.group_size = 12;
  EXPECT_EQ(msg(2, 256, o),
            "cannot quantize a weight of shape (2, 256): group_size=12 must be >=4 and divide 16 or be a multiple of 16");
  o = d;
  o.convrot_groupsize = 8;
  EXPECT_EQ(msg(2, 32, o), "cannot quantize a weight of shape (2, 32): convrot_groupsize=8 is not a power of 4 >= 4");
  o.convrot_groupsize = 64;
  EXPECT_EQ(msg(2, 32, o), "cannot quantize a weight of shape (2, 32): K=32 is not divisible by convrot_groupsize=64");
  o = d;
  o.bits = 5;
  EXPECT_EQ(msg(2, 32, o), "bits must be 4 or 6, got 5");
  o.bits = 6;
  o.convrot_groupsize = 16;
  EXPECT_EQ(msg(2, 48, o), "6-bit storage needs K divisible by 32 and group_size a multiple of 16, got K=48, group_size=16");
  o.group_size = 8;
  EXPECT_EQ(msg(2, 64, o), "6-bit storage needs K divisible by 32 and group_size a multiple of 16, got K=64, group_size=8");
}

// The eight storage variants: 4 or 6 bits, FP8 or F32 group scales, codebook or uniform.
std::vector<QuantizeOptions> storage_variants() {
  std::vector<QuantizeOptions> out;
  for (int bits : {4, 6})
    for (ScaleDtype sd : {ScaleDtype::Fp8E4M3, ScaleDtype::F32})
      for (bool cb : {true, false}) {
        QuantizeOptions o;
        o.bits = bits;
        o.scale_dtype = sd;
        o.codebook = cb;
        out.push_back(o);
      }
  return out;
}

// The layer passes the operand rules with a zero [1, K] input.
bool operands_accepted(const Layer& l, std::uint64_t k) {
  Activations x;
  x.shape = {1, k};
  x.values.assign(k, 0.0f);
  return validate_call(l, x).ok();
}

// Every storage variant the quantizer writes is accepted by the 0.2.40 operand rules, has the bit
// width and scale dtype asked for, and round-trips through layer_tensors-free decode.
TEST(Quantizer, StorageVariants) {
  const std::uint64_t n = 9, k = 256;
  std::mt19937 rng(3);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::vector<float> w(n * k);
  for (auto& v : w) v = nd(rng);
  for (QuantizeOptions o : storage_variants()) {
    const int bits = o.bits;
    const ScaleDtype sd = o.scale_dtype;
    const bool cb = o.codebook;
    o.convrot_groupsize = 64;
    auto l = quantize_weights(w, n, k, o);
    ASSERT_TRUE(l.ok()) << l.error().message;
    EXPECT_EQ(l->bits(), bits);
    EXPECT_EQ(l->scale_dtype(), sd);
    EXPECT_EQ(l->has_codebook(), bits == 4 && cb);
    EXPECT_EQ(l->row_bytes(), k * std::uint64_t(bits) / 8);
    EXPECT_TRUE(operands_accepted(*l, k));
    if (bits == 6) {  // codes 1..63 only (level index + 1), never 0
      for (std::uint64_t i = 0; i < n; ++i)
        for (std::uint64_t j = 0; j < k; ++j) EXPECT_NE(unpack_code_bits(&l->weight[i * l->row_bytes()], k, j, 6), 0);
    }
    const double err = relative_l2(dequantize_weights(*l), w);
    std::printf("[quantizer] bits %d %s %s: relative L2 = %.4f\n", bits, sd == ScaleDtype::F32 ? "f32" : "fp8",
                bits == 6 ? "uniform" : (cb ? "codebook" : "uniform"), err);
    EXPECT_LT(err, bits == 6 ? 0.03 : 0.12);
  }
}

// Finite weights whose rotation leaves float32 are refused in every storage variant
// (gemm.quantize.non_finite, naming the row; upstream stores inf/NaN scales): row 0 follows column 0
// of H_256, so its rotated weight 0 is sqrt(256) * 3.4e38. Large weights whose rotation stays finite
// still quantize.
TEST(Quantizer, WeightsWhoseRotationOverflowsAreRefused) {
  const std::uint64_t n = 16, k = 256;
  std::vector<float> w(n * k);
  for (std::size_t i = 0; i < w.size(); ++i) w[i] = float(int(i * 37 % 29) - 14);
  std::vector<float> huge = w;
  for (std::uint64_t j = 0; j < k; ++j) huge[j] = 3.4e38f * float(hadamard_sign(256, std::int64_t(j), 0));
  std::vector<float> big = w;
  for (float& v : big) v *= 1e30f;
  for (const QuantizeOptions& o : storage_variants()) {
    auto l = quantize_weights(huge, n, k, o);
    ASSERT_FALSE(l.ok()) << o.bits << " " << o.codebook;
    EXPECT_EQ(l.error().kind, ErrorKind::QuantNonFinite);
    EXPECT_EQ(l.error().message,
              "cannot quantize the weights: row 0 (max |w| = 3.4e+38) overflows F32 in the rotation "
              "(convrot_groupsize=256; comfy-kitchen would store inf/NaN scales)");
    auto ok = quantize_weights(big, n, k, o);
    ASSERT_TRUE(ok.ok()) << ok.error().message;
    EXPECT_TRUE(operands_accepted(*ok, k));
  }
  // BF16/F16 weights overflow their own dtype: F16 at sqrt(16) * 20000 = 80000 > 65504.
  std::vector<float> h16(4 * 64, 0.5f);
  for (std::uint64_t j = 0; j < 16; ++j) h16[64 + j] = 20000.0f * float(hadamard_sign(16, std::int64_t(j), 5));
  QuantizeOptions o;
  o.convrot_groupsize = 16;
  o.source_dtype = FloatDtype::F16;
  auto l = quantize_weights(h16, 4, 64, o);
  ASSERT_FALSE(l.ok());
  EXPECT_EQ(l.error().message,
            "cannot quantize the weights: row 1 (max |w| = 20000) overflows F16 in the rotation (convrot_groupsize=16; "
            "comfy-kitchen rotates F16 weights in F16 and would store inf/NaN scales)");
  o.source_dtype = FloatDtype::F32;  // the same values as F32 weights: 80000 is finite
  EXPECT_TRUE(quantize_weights(h16, 4, 64, o).ok());
}

// A weight that is NaN or inf: refused (exit 1 in the CLI), naming it.
TEST(Quantizer, NonFiniteWeightsAreRefused) {
  std::vector<float> w(4 * 64, 0.25f);
  w[2 * 64 + 9] = -INFINITY;
  auto l = quantize_weights(w, 4, 64, {.convrot_groupsize = 64});
  ASSERT_FALSE(l.ok());
  EXPECT_EQ(l.error().kind, ErrorKind::QuantNonFinite);
  EXPECT_EQ(l.error().message, "cannot quantize the weights: weight [2, 9] is -inf (weights must be finite to quantize)");
}

// Repro 4's constant row of 2^127 (upstream quantizes it): a constant row rotates to itself (every
// column of H_R sums to sqrt(R)), so each group is constant c = 2^127: 4-bit uniform scale
// s = f32(c / 7), every code 7 + 8 = 15, s_channel = f32(f32(7 s) / 127), s_rel = fp8(f32(s / s_channel)).
TEST(Quantizer, ConstantRowOfTwoToThe127Quantizes) {
  const float c = 0x1p127f;
  const volatile float s = c / 7.0f;  // (volatile: each step rounded to float32, as the quantizer's)
  const volatile float shifted = 7.0f * s;
  const volatile float s_channel = shifted / 127.0f;
  const std::uint8_t s_rel = f32_to_fp8_e4m3fn_rne(s / s_channel);
  EXPECT_EQ(s_rel, 0x59);  // 18 = 1.125 * 2^4 (127/7 = 18.14)
  for (std::int64_t r : {4, 16, 64}) {
    QuantizeOptions o;
    o.convrot_groupsize = r;
    o.codebook = false;
    auto l = quantize_weights(std::vector<float>(6 * 64, c), 6, 64, o);
    ASSERT_TRUE(l.ok()) << r << ": " << l.error().message;
    EXPECT_EQ(l->weight, std::vector<std::uint8_t>(6 * 32, 0xFF)) << r;
    EXPECT_EQ(l->s_rel, std::vector<std::uint8_t>(6 * 4, s_rel)) << r;
    EXPECT_EQ(l->s_channel, std::vector<float>(6, float(s_channel))) << r;
  }
}

// BF16/F16 weights are rotated in their own dtype (upstream builds H and multiplies in it): R = 4,
// G = 4, a group [1, e, 0, 0] with e = 2^-8 (BF16) or 2^-11 (F16) rotates to [(1+e)/2, (1+e)/2,
// (1-e)/2, -(1-e)/2]; (1+e)/2 = 0.5 + e/2 is a tie in the dtype and rounds to even, 0.5, (1-e)/2 is
// exact. So absmax = 0.5 and s_channel = f32(f32(7 f32(0.5 / 7)) / 127); in float32 the absmax
// would be 0.5 + e/2. Codes 7, 7, 7, -7 (+8) either way.
TEST(Quantizer, Bf16AndF16WeightsAreRotatedInTheirDtype) {
  auto channel_scale = [](float amax) {
    const volatile float s = amax / 7.0f;
    const volatile float shifted = 7.0f * s;
    return shifted / 127.0f;
  };
  for (const auto& [dt, e] : {std::pair{FloatDtype::BF16, 0x1p-8f}, std::pair{FloatDtype::F16, 0x1p-11f}}) {
    std::vector<float> w(16, 0.0f);
    w[0] = 1.0f;
    w[1] = e;
    QuantizeOptions o;
    o.group_size = 4;
    o.convrot_groupsize = 4;
    o.codebook = false;
    o.source_dtype = dt;
    auto l = quantize_weights(w, 1, 16, o);
    ASSERT_TRUE(l.ok());
    EXPECT_EQ(l->s_channel[0], channel_scale(0.5f)) << int(dt);
    EXPECT_EQ(unpack_code_bits(l->weight.data(), 16, 0, 4), 15);
    EXPECT_EQ(unpack_code_bits(l->weight.data(), 16, 3, 4), 1);
    o.source_dtype = FloatDtype::F32;
    auto l32 = quantize_weights(w, 1, 16, o);
    ASSERT_TRUE(l32.ok());
    EXPECT_EQ(l32->s_channel[0], channel_scale(0.5f + e / 2)) << int(dt);
    EXPECT_NE(channel_scale(0.5f), channel_scale(0.5f + e / 2));
  }
}

void check_gaussian(bool codebook, double limit) {
  const std::uint64_t n = 96, k = 1024;
  const auto w = gaussian(n * k, 7);
  QuantizeOptions o;
  o.codebook = codebook;
  auto l = quantize_weights(w, n, k, o);
  ASSERT_TRUE(l.ok()) << l.error().message;
  Activations x;
  x.shape = {1, k};
  x.values.assign(k, 0.0f);
  ASSERT_TRUE(validate_call(*l, x).ok());
  const auto deq = dequantize_weights(*l);
  const double err = relative_l2(deq, w);
  std::printf("[quantizer] %s G=16 R=256 on N(0,1) %llux%llu: relative L2 = %.4f\n",
              codebook ? "codebook" : "uniform", (unsigned long long)n, (unsigned long long)k, err);
  EXPECT_LT(err, limit);
  EXPECT_GT(err, 0.01);  // 4-bit weights cannot be near-lossless on Gaussian data
}

TEST(Quantizer, GaussianWeightErrorCodebook) { check_gaussian(true, 0.09); }
TEST(Quantizer, GaussianWeightErrorUniform) { check_gaussian(false, 0.12); }

// The quantized layer computes a GEMM close to the float one (integer path end to end).
TEST(Quantizer, GemmOfQuantizedLayerTracksFloatGemm) {
  const std::uint64_t n = 40, k = 256, m = 5;
  const auto w = gaussian(n * k, 11);
  const auto xs = gaussian(m * k, 12);
  auto l = quantize_weights(w, n, k, {});
  ASSERT_TRUE(l.ok());
  Activations x;
  x.shape = {m, k};
  x.values = xs;
  auto r = gemm_fast(*l, x);
  ASSERT_TRUE(r.ok());
  std::vector<double> exact(m * n);
  std::vector<float> got(m * n);
  for (std::uint64_t a = 0; a < m; ++a)
    for (std::uint64_t i = 0; i < n; ++i) {
      double s = 0;
      for (std::uint64_t j = 0; j < k; ++j) s += double(xs[a * k + j]) * w[i * k + j];
      exact[a * n + i] = s;
      got[a * n + i] = r->out[a * n + i];
    }
  EXPECT_LT(relative_l2(exact, got), 0.15);
}

}  // namespace
}  // namespace w4a8::gemm
