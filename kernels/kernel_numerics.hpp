// Scalar numerics of the W4A8 kernels, one definition for device code and the host emulation so
// both round identically: FP8 E4M3FN decode, round-half-even to a clamped integer, bf16/fp16
// conversions, weight decode to the int8 grid, per-row quantization and the epilogue.
// Every operation is a single IEEE float32 operation in a fixed order (no FMA contraction can
// apply: no multiply feeds an add), so host and device results are bit-identical.
#pragma once

#include <cstdint>
#include <cstring>

#include "kernels/index_math.hpp"

namespace w4a8::kern {

W4A8_HD float bits_to_f32(std::uint32_t b) {
#if defined(__CUDA_ARCH__)
  return __uint_as_float(b);
#else
  float f;
  std::memcpy(&f, &b, sizeof f);
  return f;
#endif
}
W4A8_HD std::uint32_t f32_to_bits(float f) {
#if defined(__CUDA_ARCH__)
  return __float_as_uint(f);
#else
  std::uint32_t b;
  std::memcpy(&b, &f, sizeof b);
  return b;
#endif
}

W4A8_HD float mul_rn(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fmul_rn(a, b);
#else
  return a * b;
#endif
}
W4A8_HD float div_rn(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fdiv_rn(a, b);
#else
  return a / b;
#endif
}
W4A8_HD float add_rn(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fadd_rn(a, b);
#else
  return a + b;
#endif
}
W4A8_HD float i32_to_f32_rn(std::int32_t v) {
#if defined(__CUDA_ARCH__)
  return __int2float_rn(v);
#else
  return static_cast<float>(v);  // x86-64 cvtsi2ss rounds to nearest even
#endif
}

// FP8 E4M3FN: bias 7, subnormal m/8 * 2^-6, only 0x7F / 0xFF are NaN, no infinities.
W4A8_HD bool fp8_is_nan(std::uint8_t b) { return (b & 0x7F) == 0x7F; }
W4A8_HD float fp8_e4m3fn_to_f32(std::uint8_t b) {
  const std::uint32_t sign = static_cast<std::uint32_t>(b >> 7) << 31;
  const std::uint32_t e = (b >> 3) & 15u, m = b & 7u;
  if (fp8_is_nan(b)) return bits_to_f32(sign | 0x7FC00000u);
  if (e == 0) {
    // m * 2^-9 is exact in float32.
    const float mag = static_cast<float>(m) * 0.001953125f;
    return sign ? -mag : mag;
  }
  return bits_to_f32(sign | ((e + 120u) << 23) | (m << 20));
}

// clamp(rne(v), lo, hi) for integer-valued bounds with |lo|, |hi| < 2^22. Clamping first is the
// same as rounding first because the bounds are integers. NaN gives 0 (outside the contract).
W4A8_HD int round_clamp(float v, float lo, float hi) {
  if (!(v == v)) return 0;
  v = v < lo ? lo : v;
  v = v > hi ? hi : v;
  // Adding 1.5 * 2^23 moves v into the binade whose ulp is 1, so the add rounds half-even.
  const float r = add_rn(add_rn(v, 12582912.0f), -12582912.0f);
  return static_cast<int>(r);
}

// ---- bf16 / fp16 <-> f32 (round to nearest even) ----------------------------------------------
W4A8_HD float bf16_to_f32(std::uint16_t h) { return bits_to_f32(static_cast<std::uint32_t>(h) << 16); }
W4A8_HD std::uint16_t f32_to_bf16(float f) {
  const std::uint32_t b = f32_to_bits(f);
  if ((b & 0x7FFFFFFFu) > 0x7F800000u) return static_cast<std::uint16_t>((b >> 16) | 0x40u);  // quiet NaN
  return static_cast<std::uint16_t>((b + 0x7FFFu + ((b >> 16) & 1u)) >> 16);
}

W4A8_HD float f16_to_f32(std::uint16_t h) {
  const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000u) << 16;
  const std::uint32_t e = (h >> 10) & 31u, m = h & 1023u;
  if (e == 31) return bits_to_f32(sign | 0x7F800000u | (m << 13));
  if (e == 0) {
    const float mag = static_cast<float>(m) * 5.9604644775390625e-8f;  // m * 2^-24, exact
    return sign ? -mag : mag;
  }
  return bits_to_f32(sign | ((e + 112u) << 23) | (m << 13));
}
W4A8_HD std::uint16_t f32_to_f16(float f) {
  const std::uint32_t b = f32_to_bits(f);
  const std::uint16_t sign = static_cast<std::uint16_t>((b >> 16) & 0x8000u);
  const std::uint32_t abs = b & 0x7FFFFFFFu;
  if (abs > 0x7F800000u) return static_cast<std::uint16_t>(sign | 0x7E00u | ((abs >> 13) & 0x1FFu));
  if (abs >= 0x477FF000u) return static_cast<std::uint16_t>(sign | 0x7C00u);  // >= 65520: inf
  if (abs < 0x38800000u) {
    // Result is subnormal (or zero): value / 2^-24 rounded half-even, computed on the mantissa.
    const int e = static_cast<int>(abs >> 23);  // biased f32 exponent, < 113
    if (e < 102) return sign;                    // < 2^-25: rounds to zero
    const std::uint32_t mant = (abs & 0x7FFFFFu) | 0x800000u;
    const int shift = 126 - e;  // value = mant * 2^(e-150); units of 2^-24 -> shift by 126-e
    const std::uint32_t q = mant >> shift, rem = mant & ((1u << shift) - 1u), half = 1u << (shift - 1);
    const std::uint32_t r = q + ((rem > half || (rem == half && (q & 1u))) ? 1u : 0u);
    return static_cast<std::uint16_t>(sign | r);
  }
  const std::uint32_t rebased = abs - (112u << 23);  // exponent bias 127 -> 15
  const std::uint32_t r = (rebased + 0xFFFu + ((rebased >> 13) & 1u)) >> 13;
  return static_cast<std::uint16_t>(sign | r);
}

// A value of dtype d (0 f32, 1 bf16, 2 f16; see w4a8_dtype) read from p[i] as float32 (exact).
W4A8_HD float load_as_f32(const void* p, long long i, int d) {
  if (d == 1) return bf16_to_f32(static_cast<const std::uint16_t*>(p)[i]);
  if (d == 2) return f16_to_f32(static_cast<const std::uint16_t*>(p)[i]);
  return static_cast<const float*>(p)[i];
}
// v rounded to dtype d and back (the value a tensor of that dtype holds).
W4A8_HD float round_to_dtype(float v, int d) {
  if (d == 1) return bf16_to_f32(f32_to_bf16(v));
  if (d == 2) return f16_to_f32(f32_to_f16(v));
  return v;
}
W4A8_HD void store_from_f32(void* p, long long i, int d, float v) {
  if (d == 1) static_cast<std::uint16_t*>(p)[i] = f32_to_bf16(v);
  else if (d == 2) static_cast<std::uint16_t*>(p)[i] = f32_to_f16(v);
  else static_cast<float*>(p)[i] = v;
}

// ---- the layer's arithmetic ---------------------------------------------------------------------
// w_q = clamp(rne(f32(v * s)), -127, 127), v = codebook[c] or c - 8, s = fp8(s_rel byte).
W4A8_HD std::int8_t decode_weight(int code, std::uint8_t scale_byte, const float* codebook) {
  const float v = codebook ? codebook[code] : static_cast<float>(code - 8);
  return static_cast<std::int8_t>(round_clamp(mul_rn(v, fp8_e4m3fn_to_f32(scale_byte)), -127.f, 127.f));
}

// scale = max(f32(absmax / 127), 1e-30f).
W4A8_HD float row_scale(float absmax) {
  const float s = div_rn(absmax, 127.0f);
  return s > 1e-30f ? s : 1e-30f;
}
// Correction path, before un-rotation: f32(f32(w_q * s_channel) + correction), rounded to the GEMM
// dtype (the activation dtype under Eager, else f32: dtype code 0).
W4A8_HD float corrected_weight(std::int8_t w_q, float s_channel, float correction, int gemm_dtype) {
  return round_to_dtype(add_rn(mul_rn(static_cast<float>(w_q), s_channel), correction), gemm_dtype);
}
// Correction path output from the float GEMM's f32 sum: rounded to the GEMM dtype, bias added in
// that dtype, then cast to the output dtype (torch's F.linear then .to(out_dtype)).
W4A8_HD float corrected_output(float sum, bool has_bias, float bias_n, int gemm_dtype, int out_dtype) {
  float o = round_to_dtype(sum, gemm_dtype);
  if (has_bias) o = round_to_dtype(add_rn(o, round_to_dtype(bias_n, gemm_dtype)), gemm_dtype);
  return round_to_dtype(o, out_dtype);
}

// ---- ConvRot -----------------------------------------------------------------------------------
// One 4-point stage on (x0, x1, x2, x3): y = 0.5 * (x @ seed), seed = [[1,1,1,-1],[1,1,-1,1],
// [1,-1,1,1],[-1,1,1,1]], every sum taken left to right in float32: the canonical order of the
// reference (src/gemm/numerics.hpp), which bit-exactness requires.
W4A8_HD void butterfly4(float& x0, float& x1, float& x2, float& x3) {
  const float y0 = mul_rn(add_rn(add_rn(add_rn(x0, x1), x2), -x3), 0.5f);
  const float y1 = mul_rn(add_rn(add_rn(add_rn(x0, x1), -x2), x3), 0.5f);
  const float y2 = mul_rn(add_rn(add_rn(add_rn(x0, -x1), x2), x3), 0.5f);
  const float y3 = mul_rn(add_rn(add_rn(add_rn(x1, -x0), x2), x3), 0.5f);
  x0 = y0;
  x1 = y1;
  x2 = y2;
  x3 = y3;
}
// Butterfly b of the stage of stride s on a row (see butterfly_first).
W4A8_HD void rotate_butterfly(float* row, long long b, long long r, long long s) {
  const long long f = butterfly_first(b, r, s);
  butterfly4(row[f], row[f + s], row[f + 2 * s], row[f + 3 * s]);
}

// out = f32(f32(float(acc)) * f32(scale[m] * s_channel[n])), before the output cast.
W4A8_HD float epilogue_f32(std::int32_t acc, float x_scale, float s_channel) {
  return mul_rn(i32_to_f32_rn(acc), mul_rn(x_scale, s_channel));
}

}  // namespace w4a8::kern
