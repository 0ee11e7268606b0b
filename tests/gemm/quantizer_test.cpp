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

TEST(Quantizer, RejectsIllegalShapesWithUpstreamMessage) {
  std::vector<float> w(4 * 40, 0.5f);
  auto r = quantize_weights(w, 4, 40, {});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message,
            "K=40 must be divisible by 16, group_size=16, and convrot_groupsize=256; group_size must be >=4 and "
            "divide 16 or be a multiple of 16");
  QuantizeOptions o;
  o.convrot_groupsize = 8;
  auto r2 = quantize_weights(std::vector<float>(2 * 32, 1.0f), 2, 32, o);
  ASSERT_FALSE(r2.ok());
  EXPECT_EQ(r2.error().message, "Regular Hadamard size must be a power of 4, got 8");
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
