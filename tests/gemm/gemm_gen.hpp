// RapidCheck generators of valid W4A8 layers and activations for the gemm tests.
#pragma once

#include <rapidcheck.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "gemm/layer.hpp"
#include "gemm/numerics.hpp"

namespace w4a8::gemm::testing {

struct Case {
  Layer layer;
  Activations x;
};

// The legal (G, R) pairs and a K they all divide for moderate sizes.
inline const std::vector<std::int64_t> kGroupSizes = {4, 8, 16, 32, 48, 64};
inline const std::vector<std::int64_t> kConvrotSizes = {4, 16, 64, 256};

inline std::int64_t lcm3(std::int64_t a, std::int64_t b, std::int64_t c) {
  auto gcd = [](std::int64_t x, std::int64_t y) { while (y) { auto t = x % y; x = y; y = t; } return x; };
  const std::int64_t ab = a / gcd(a, b) * b;
  return ab / gcd(ab, c) * c;
}

// Float that is exactly representable in dtype: a random value of moderate range, then rounded.
inline float draw_value(FloatDtype d, bool integer_valued) {
  if (integer_valued) return float(*rc::gen::inRange(-40, 41));
  const int mant = *rc::gen::inRange(-100000, 100001);
  const int e = *rc::gen::inRange(-12, 4);
  return round_to(d, std::ldexp(float(mant) / 100000.0f, e));
}

struct CaseParams {
  std::uint64_t m = 0, n = 0, k = 0;
  std::int64_t g = 16, r = 16;
  bool codebook = false, correction = false, bias = false, integer_acts = false;
  FloatDtype act = FloatDtype::F32, bias_dtype = FloatDtype::F32;
  int bits = 4;                                  // 6: uniform, no correction, G % 16 == 0, K % 32 == 0
  ScaleDtype scales = ScaleDtype::Fp8E4M3;
};

inline Case make_case(const CaseParams& p) {
  Case c;
  c.layer = make_zero_layer(p.n, p.k, p.g, p.r, p.bits, p.scales);
  Layer& l = c.layer;
  for (auto& b : l.weight) b = std::uint8_t(*rc::gen::inRange(0, 256));
  if (p.scales == ScaleDtype::F32) {
    // F32 scales: moderate magnitudes of either sign, sometimes zero or large enough to clamp.
    for (std::size_t i = 0; i < l.s_rel.size(); i += 4) {
      const float v = *rc::gen::weightedOneOf<float>(
          {{8, rc::gen::map(rc::gen::inRange(-4000, 4001), [](int x) { return float(x) / 512.0f; })},
           {1, rc::gen::element(0.0f, 300.0f, -1e-3f, 1e-30f)}});
      std::memcpy(&l.s_rel[i], &v, 4);
    }
  } else {
    // FP8 scale bytes: mostly moderate positive scales, sometimes any non-NaN byte.
    for (auto& s : l.s_rel) {
      int b = *rc::gen::weightedOneOf<int>({{6, rc::gen::inRange(0x28, 0x60)}, {1, rc::gen::inRange(0, 256)}});
      if ((b & 0x7F) == 0x7F) b = 0x38;
      s = std::uint8_t(b);
    }
  }
  for (auto& s : l.s_channel) s = std::ldexp(float(*rc::gen::inRange(1, 1000)) / 1000.0f, *rc::gen::inRange(-12, 2));
  if (p.codebook) {
    l.codebook_shape = Shape{16};
    l.codebook.resize(16);
    for (auto& v : l.codebook) v = float(*rc::gen::inRange(-1000000, 1000001)) / 1000000.0f;
  }
  if (p.correction) {
    l.correction_shape = Shape{p.k / std::uint64_t(p.g), p.n};
    l.correction.resize(p.k / std::uint64_t(p.g) * p.n);
    for (auto& v : l.correction) v = float(*rc::gen::inRange(-1000, 1001)) / 4096.0f;
  }
  if (p.bias) {
    l.bias_shape = Shape{p.n};
    l.bias_dtype = p.bias_dtype;
    l.bias.resize(p.n);
    for (auto& v : l.bias) v = draw_value(p.bias_dtype, false);
  }
  c.x.dtype = p.act;
  c.x.shape = {p.m, p.k};
  c.x.values.resize(p.m * p.k);
  for (auto& v : c.x.values) v = draw_value(p.act, p.integer_acts);
  return c;
}

// Random parameters: shapes incl. the brief's M values, N and K not powers of two, every G and R.
inline CaseParams draw_params(std::uint64_t max_m = 300, std::uint64_t max_n = 48, std::int64_t max_k = 384) {
  CaseParams p;
  p.g = *rc::gen::elementOf(kGroupSizes);
  p.r = *rc::gen::elementOf(kConvrotSizes);
  p.bits = (p.g % 16 == 0 && *rc::gen::inRange(0, 3) == 0) ? 6 : 4;
  p.scales = *rc::gen::element(ScaleDtype::Fp8E4M3, ScaleDtype::F32);
  const std::int64_t unit = lcm3(p.bits == 6 ? 32 : 16, p.g, p.r);
  const std::int64_t max_mult = std::max<std::int64_t>(1, max_k / unit);
  p.k = std::uint64_t(unit * *rc::gen::inRange<std::int64_t>(1, max_mult + 1));
  p.n = *rc::gen::inRange<std::uint64_t>(1, max_n + 1);
  p.m = *rc::gen::weightedOneOf<std::uint64_t>(
      {{3, rc::gen::elementOf(std::vector<std::uint64_t>{1, 7, 8, 13, 257})},
       {2, rc::gen::inRange<std::uint64_t>(1, max_m + 1)}});
  p.codebook = p.bits == 4 && *rc::gen::arbitrary<bool>();
  p.correction = p.bits == 4 && *rc::gen::weightedOneOf<bool>({{4, rc::gen::just(false)}, {1, rc::gen::just(true)}});
  p.bias = *rc::gen::arbitrary<bool>();
  p.integer_acts = *rc::gen::weightedOneOf<bool>({{4, rc::gen::just(false)}, {1, rc::gen::just(true)}});
  p.act = *rc::gen::elementOf(std::vector<FloatDtype>{FloatDtype::F32, FloatDtype::BF16, FloatDtype::F16});
  p.bias_dtype = *rc::gen::elementOf(std::vector<FloatDtype>{FloatDtype::F32, FloatDtype::BF16, FloatDtype::F16});
  return p;
}

}  // namespace w4a8::gemm::testing
