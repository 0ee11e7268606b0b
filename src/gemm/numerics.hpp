// Scalar numerics of the asym_w4a8_int8 layer (docs/gemm.md): FP8 E4M3FN decode, bf16/fp16 <-> f32
// with round-to-nearest-even, rne-to-int, 4-bit codes, the int8-grid weight decode, the
// regular-Hadamard ConvRot in its canonical float32 order, per-row activation quantization and the
// epilogue. Header-only and C++17-clean: the CPU reference and the CUDA kernels (kernels/) compile
// these same definitions. Every float operation goes through the f32_* wrappers below, one IEEE
// operation each, so nvcc cannot contract a multiply and an add into an FMA (which rounds once
// instead of twice) and the device rounds exactly as the host.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "core/hd.hpp"


namespace w4a8::gemm {

// Floating dtypes of activations, outputs and biases.
enum class FloatDtype : std::uint8_t { F32, BF16, F16 };
// How the activation is rotated/quantized: all in float32, or as upstream's eager torch code does
// (rotated row and the division's scale rounded to the activation dtype for bf16/fp16).
enum class ActPolicy : std::uint8_t { F32, Eager };
// The policy a computation actually follows: for F32 activations every rounding to the activation
// dtype is the identity, so Eager is the F32 computation (a kernel without the eager capability runs
// it; the audit's bounds add no activation-dtype roundings).
constexpr ActPolicy effective_policy(ActPolicy p, FloatDtype act) {
  return act == FloatDtype::F32 ? ActPolicy::F32 : p;
}

// ---- single IEEE float32 operations (round to nearest even), host and device --------------------
// Under __CUDA_ARCH__ the _rn intrinsics: never fused, never flushed, whatever nvcc's --fmad says.
W4A8_HD std::uint32_t f32_bits(float f) {
#if defined(__CUDA_ARCH__)
  return __float_as_uint(f);
#else
  std::uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
#endif
}
W4A8_HD float f32_from_bits(std::uint32_t u) {
#if defined(__CUDA_ARCH__)
  return __uint_as_float(u);
#else
  float f;
  std::memcpy(&f, &u, 4);
  return f;
#endif
}
W4A8_HD float f32_mul(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fmul_rn(a, b);
#else
  return a * b;
#endif
}
W4A8_HD float f32_add(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fadd_rn(a, b);
#else
  return a + b;
#endif
}
W4A8_HD float f32_sub(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fsub_rn(a, b);
#else
  return a - b;
#endif
}
W4A8_HD float f32_div(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fdiv_rn(a, b);
#else
  return a / b;
#endif
}
// int32 -> float32, round to nearest even (inexact once |v| > 2^24).
W4A8_HD float i32_to_f32(std::int32_t v) {
#if defined(__CUDA_ARCH__)
  return __int2float_rn(v);
#else
  return static_cast<float>(v);  // the default rounding mode: to nearest, ties to even
#endif
}
// Nearest integer value, ties to even; NaN and +-inf pass through.
W4A8_HD float f32_rint(float v) {
#if defined(__CUDA_ARCH__)
  return rintf(v);
#else
  return std::nearbyint(v);  // the default rounding mode: to nearest, ties to even
#endif
}

// ---- FP8 E4M3FN -------------------------------------------------------------------------------
// post: exact for all 256 bytes; NaN only for 0x7F and 0xFF (sign kept); no infinities.
W4A8_HD bool fp8_e4m3fn_is_nan(std::uint8_t b) { return (b & 0x7F) == 0x7F; }
W4A8_HD float fp8_e4m3fn_to_f32(std::uint8_t b) {
  const std::uint32_t sign = std::uint32_t(b >> 7) << 31;
  const std::uint32_t e = (b >> 3) & 0xF, m = b & 0x7;
  if (e == 0xF && m == 0x7) return f32_from_bits(sign | 0x7FC00000u);
  if (e == 0) {
    // Subnormal m/8 * 2^-6 = m * 2^-9: exact in float32.
    const float v = f32_mul(float(m), 0.001953125f);
    return sign ? -v : v;
  }
  return f32_from_bits(sign | ((e - 7 + 127) << 23) | (m << 20));
}

// Nearest FP8 E4M3FN byte to f (ties to an even mantissa), as torch's .to(float8_e4m3fn): NaN and
// |f| >= 464 (halfway past 448) give NaN (0x7F, signed 0xFF). Used by the quantizer only.
inline std::uint8_t f32_to_fp8_e4m3fn_rne(float f) {
  if (f != f) return 0x7F;
  const std::uint8_t sign = f < 0 ? 0x80 : 0x00;
  const double a = std::fabs(double(f));
  if (a >= 464.0) return std::uint8_t(sign | 0x7F);
  std::uint8_t best = 0;
  double best_d = a;
  for (int b = 1; b < 0x7F; ++b) {  // values increase with the byte: stop once past f
    const double v = double(fp8_e4m3fn_to_f32(std::uint8_t(b)));
    const double d = std::fabs(v - a);
    if (d < best_d || (d == best_d && (b & 1) == 0)) { best = std::uint8_t(b); best_d = d; }
    if (v > a) break;
  }
  return std::uint8_t(sign | best);
}

// ---- bf16 / fp16 --------------------------------------------------------------------------------
W4A8_HD float bf16_to_f32(std::uint16_t h) { return f32_from_bits(std::uint32_t(h) << 16); }
// Round to nearest even; NaN stays a (quiet) NaN with its sign; overflow rounds to +-inf.
W4A8_HD std::uint16_t f32_to_bf16_rne(float f) {
  const std::uint32_t u = f32_bits(f);
  if ((u & 0x7FFFFFFFu) > 0x7F800000u) return std::uint16_t((u >> 16) | 0x0040u);
  const std::uint32_t lsb = (u >> 16) & 1u;
  return std::uint16_t((u + 0x7FFFu + lsb) >> 16);
}
W4A8_HD float f16_to_f32(std::uint16_t h) {
  const std::uint32_t sign = std::uint32_t(h >> 15) << 31;
  const std::uint32_t e = (h >> 10) & 0x1F, m = h & 0x3FF;
  if (e == 0x1F) return f32_from_bits(sign | 0x7F800000u | (m << 13));
  if (e == 0) {
    const float v = f32_mul(float(m), 5.9604644775390625e-08f);  // m * 2^-24, exact
    return sign ? -v : v;
  }
  return f32_from_bits(sign | ((e - 15 + 127) << 23) | (m << 13));
}
// Round to nearest even (subnormals included); overflow to +-inf; NaN stays NaN.
W4A8_HD std::uint16_t f32_to_f16_rne(float f) {
  const std::uint32_t u = f32_bits(f);
  const std::uint16_t sign = std::uint16_t((u >> 16) & 0x8000u);
  const std::uint32_t a = u & 0x7FFFFFFFu;
  if (a > 0x7F800000u) return std::uint16_t(sign | 0x7E00u | ((a >> 13) & 0x3FFu));
  if (a >= 0x477FF000u) return std::uint16_t(sign | 0x7C00u);  // >= 65520 rounds to inf
  if (a < 0x38800000u) {
    // Result is subnormal or zero: round a * 2^24 to an integer count of 2^-24 units.
    const float scaled = f32_mul(f32_from_bits(a), 16777216.0f);  // exact (power of two, no overflow)
    return std::uint16_t(sign | std::uint16_t(f32_rint(scaled)));
  }
  const std::uint32_t lsb = (a >> 13) & 1u;
  const std::uint32_t r = a + 0xFFFu + lsb;  // round mantissa to 10 bits
  return std::uint16_t(sign | (((r >> 23) - 127 + 15) << 10) | ((r >> 13) & 0x3FFu));
}
// Value of f rounded to dtype (identity for F32).
W4A8_HD float round_to(FloatDtype d, float f) {
  switch (d) {
    case FloatDtype::BF16: return bf16_to_f32(f32_to_bf16_rne(f));
    case FloatDtype::F16: return f16_to_f32(f32_to_f16_rne(f));
    default: return f;
  }
}
// torch.finfo(dtype).tiny: the smallest positive normal.
W4A8_HD float dtype_tiny(FloatDtype d) {
  switch (d) {
    case FloatDtype::F16: return 6.103515625e-05f;  // 2^-14
    default: return 1.17549435e-38f;                // 2^-126 (f32 and bf16)
  }
}

// ---- rounding to integers -----------------------------------------------------------------------
// rne(v) clamped to [lo, hi] (|lo|, |hi| < 2^24); NaN (outside the contract: NaN/inf activations)
// maps to 0. This is the definition; on the device rne_clamp_cvt computes it (see below).
W4A8_HD std::int32_t rne_clamp_ref(float v, std::int32_t lo, std::int32_t hi) {
  if (v != v) return 0;
  const float r = f32_rint(v);
  if (r <= float(lo)) return lo;
  if (r >= float(hi)) return hi;
  return std::int32_t(r);
}
// cvt.rni.s32.f32: nearest integer, ties to even, saturated to [INT32_MIN, INT32_MAX] (PTX: float to
// integer conversions clamp to the destination range). NaN is handled by the caller. On the host, a
// model of that instruction from its documented semantics.
W4A8_HD std::int32_t cvt_rni_sat_s32(float v) {
#if defined(__CUDA_ARCH__)
  return __float2int_rn(v);
#else
  const float r = std::nearbyint(v);
  if (r >= 2147483648.0f) return INT32_MAX;
  if (r <= -2147483648.0f) return INT32_MIN;
  return std::int32_t(r);
#endif
}
// The device's formulation of rne_clamp_ref: one conversion, then an integer clamp (tests check the
// two agree on every input class, and the GPU check compares the device conversion with the model).
W4A8_HD std::int32_t rne_clamp_cvt(float v, std::int32_t lo, std::int32_t hi) {
  if (v != v) return 0;
  const std::int32_t r = cvt_rni_sat_s32(v);
  return r < lo ? lo : (r > hi ? hi : r);
}
W4A8_HD std::int32_t rne_clamp(float v, std::int32_t lo, std::int32_t hi) {
#if defined(__CUDA_ARCH__)
  return rne_clamp_cvt(v, lo, hi);
#else
  return rne_clamp_ref(v, lo, hi);
#endif
}

// ---- 4-bit codes and the int8-grid weight decode -------------------------------------------------
// Code of element k of a packed row: element 2i in the low nibble of byte i, 2i+1 in the high one.
W4A8_HD std::uint8_t unpack_code(const std::uint8_t* packed_row, std::size_t k) {
  const std::uint8_t b = packed_row[k >> 1];
  return (k & 1) ? std::uint8_t(b >> 4) : std::uint8_t(b & 0xF);
}
// Value a code stands for: codebook[c] when a codebook is given, else c - 8.
W4A8_HD float code_value(std::uint8_t code, const float* codebook) {
  return codebook ? codebook[code & 0xF] : float(int(code & 0xF) - 8);
}
// w_q = clamp(rne(f32(v * fp8(s_rel))), -127, 127); the channel scale is not applied here.
// pre: !fp8_e4m3fn_is_nan(s_rel_byte) and the code value is not NaN (callers report those).
W4A8_HD std::int8_t decode_weight(std::uint8_t code, std::uint8_t s_rel_byte, const float* codebook) {
  const float prod = f32_mul(code_value(code, codebook), fp8_e4m3fn_to_f32(s_rel_byte));
  return std::int8_t(rne_clamp(prod, -127, 127));
}
// True when decode_weight's product is NaN (a NaN scale byte or a NaN codebook entry).
W4A8_HD bool decode_is_nan(std::uint8_t code, std::uint8_t s_rel_byte, const float* codebook) {
  const float prod = f32_mul(code_value(code, codebook), fp8_e4m3fn_to_f32(s_rel_byte));
  return prod != prod;
}

// ---- ConvRot: the normalized regular Hadamard -----------------------------------------------------
// True for 4, 16, 64, ... (R = 4^p, p >= 1).
W4A8_HD bool is_power_of_4(std::int64_t r) {
  return r >= 4 && (r & (r - 1)) == 0 && ((r & 0x5555555555555555LL) != 0);
}
W4A8_HD int log4(std::int64_t r) { int p = 0; while (r > 1) { r >>= 2; ++p; } return p; }
// Entry H_R[i][j] in {+1, -1} before normalization: product over base-4 digits of the seed
// [[1,1,1,-1],[1,1,-1,1],[1,-1,1,1],[-1,1,1,1]] (seed[a][b] = -1 iff a + b == 3).
W4A8_HD int hadamard_sign(std::int64_t r, std::int64_t i, std::int64_t j) {
  int s = 1;
  for (; r > 1; r >>= 2, i >>= 2, j >>= 2)
    if (((i & 3) + (j & 3)) == 3) s = -s;
  return s;
}

// 2^-log4(R) = 1/sqrt(R) as a float32 (exact: R = 4^p, p <= 31): the magnitude of every entry of
// upstream's normalized Hadamard H_R / sqrt(R).
W4A8_HD float convrot_prescale(std::int64_t r) {
  float s = 1.0f;
  for (; r > 1; r >>= 2) s = f32_mul(s, 0.5f);
  return s;
}
// One 4-point stage on (a, b, c, d) = x[base + q*stride], q = 0..3: y = (pre * x) @ seed, each
// product and sum in float32, the sums left to right as written. The stride-1 stage (the first)
// passes pre = convrot_prescale(R), every later stage pre = 1 (an exact identity): the whole
// normalization 1/sqrt(R) is applied to each input element first, as upstream's dense product
// multiplies every x_j by its entry +-1/sqrt(R) before summing. This order IS the definition every
// implementation must follow to be bit-exact (any two orders agree when the sums are exact, e.g. small
// integers). In the normal range it gives the same bits as the former stage-wise 0.5 * (sum) (scaling
// by a power of two commutes with rounding there); only subnormal products differ. Every value of
// stage s (intermediate or output) is bounded by 4^s / sqrt(R) * max|x| <= sqrt(R) * max|x|, the bound
// of the exact rotation itself, so a row with max|x| <= FLT_MAX / sqrt(R) never overflows; the
// stage-wise form's first stage reached 3 * max|x| and overflowed from about FLT_MAX / 3.
// Without pre: the R = 4 rotation x @ H_4 / 2 (its only stage).
W4A8_HD void convrot_butterfly(float& a, float& b, float& c, float& d, float pre = 0.5f) {
  const float pa = f32_mul(a, pre), pb = f32_mul(b, pre), pc = f32_mul(c, pre), pd = f32_mul(d, pre);
  const float y0 = f32_sub(f32_add(f32_add(pa, pb), pc), pd);
  const float y1 = f32_add(f32_sub(f32_add(pa, pb), pc), pd);
  const float y2 = f32_add(f32_add(f32_sub(pa, pb), pc), pd);
  const float y3 = f32_add(f32_add(f32_sub(pb, pa), pc), pd);
  a = y0; b = y1; c = y2; d = y3;
}
// The prescale of the stage of stride s in a block of R (convrot_prescale(R) at s == 1, else 1).
W4A8_HD float convrot_stage_prescale(std::int64_t r, std::int64_t s) { return s == 1 ? convrot_prescale(r) : 1.0f; }
// Rotates one block of R floats in place: x := x @ H_R, as stages of stride 1, 4, 16, ... R/4.
// post: convrot_block applied twice returns x exactly whenever no stage rounds (H_R is its own
// inverse); the block's 2-norm is preserved up to rounding.
W4A8_HD void convrot_block(float* x, std::int64_t r) {
  for (std::int64_t s = 1; s < r; s *= 4) {
    const float pre = convrot_stage_prescale(r, s);
    for (std::int64_t base = 0; base < r; base += 4 * s)
      for (std::int64_t o = 0; o < s; ++o)
        convrot_butterfly(x[base + o], x[base + o + s], x[base + o + 2 * s], x[base + o + 3 * s], pre);
  }
}
// Rotates each length-R block of a row of K floats (K % R == 0, R a power of 4).
W4A8_HD void convrot_row(float* x, std::int64_t k, std::int64_t r) {
  for (std::int64_t b = 0; b < k; b += r) convrot_block(x + b, r);
}

// ---- per-row activation quantization ----------------------------------------------------------------
// A row scale's floor: max(s, 1e-30f), NaN kept (torch's clamp(min=...)).
W4A8_HD float row_scale_floor(float s) { return (s > 1e-30f || s != s) ? s : 1e-30f; }
// Float32 scale of a rotated row: max(f32(absmax / 127), 1e-30f); NaN (non-finite activations, outside
// the contract) propagates so the row's outputs are NaN, as upstream's.
W4A8_HD float row_scale(float absmax) { return row_scale_floor(f32_div(absmax, 127.0f)); }
// The divisor actually used: the f32 scale, or under Eager for bf16/fp16 the scale rounded to that
// dtype (0 replaced by the dtype's tiny, as upstream's _int8_scale_for_math).
W4A8_HD float division_scale(float scale, ActPolicy p, FloatDtype act) {
  if (p == ActPolicy::F32 || act == FloatDtype::F32) return scale;
  const float s = round_to(act, scale);
  return s == 0.0f ? dtype_tiny(act) : s;
}
// x_q of one rotated element: clamp(rne(q), -128, 127) where q = f32(x / div), rounded to the
// activation dtype under Eager (torch's bf16/fp16 division rounds its result).
W4A8_HD std::int8_t quantize_act(float x_rot, float div, ActPolicy p, FloatDtype act) {
  float q = f32_div(x_rot, div);
  if (p == ActPolicy::Eager) q = round_to(act, q);
  return std::int8_t(rne_clamp(q, -128, 127));
}

// ---- epilogue ---------------------------------------------------------------------------------------
// out before the output cast: f32(f32(acc) * f32(scale_m * s_channel_n)).
W4A8_HD float epilogue(std::int32_t acc, float scale_m, float s_channel_n) {
  const float sc = f32_mul(scale_m, s_channel_n);
  return f32_mul(i32_to_f32(acc), sc);
}
// Output cast then bias in the output dtype: round(round(v) + round(bias)) when has_bias.
W4A8_HD float finish_output_value(float v, FloatDtype out, bool has_bias, float bias) {
  float o = round_to(out, v);
  if (has_bias) o = round_to(out, f32_add(o, round_to(out, bias)));
  return o;
}
// The same with the bias by pointer (absent: null).
W4A8_HD float finish_output(float v, FloatDtype out, const float* bias_n) {
  return finish_output_value(v, out, bias_n != nullptr, bias_n ? *bias_n : 0.0f);
}

// ---- activation absmax -------------------------------------------------------------------------------
// One step of the row's absmax: NaN sticks (like torch's amax), so any reduction order gives the same
// result (max of non-NaN values is exact).
W4A8_HD float absmax_step(float acc, float v) {
  const float a = v < 0.0f ? -v : v;
  return (a > acc || a != a) ? a : acc;
}

// ---- correction path --------------------------------------------------------------------------------
// W_rot element before un-rotation: round(f32(f32(w_q * s_channel) + correction)) in the GEMM dtype
// (the activation dtype under Eager, else f32).
W4A8_HD float corrected_weight(std::int8_t w_q, float s_channel, float correction, FloatDtype gemm) {
  return round_to(gemm, f32_add(f32_mul(float(w_q), s_channel), correction));
}
// Output of the float GEMM from its float32 sum over k: torch's F.linear(x, W, bias) in the GEMM dtype
// (CPU addmm: float32 accumulation, the bias added to the float32 sum, ONE rounding to the GEMM
// dtype), then .to(out_dtype). The bias is taken in the GEMM dtype (upstream's F.linear refuses a bias
// of another dtype; ours rounds it). Unlike the integer path's finish_output_value, the sum is not
// rounded before the bias is added.
W4A8_HD float corrected_output(float sum, bool has_bias, float bias, FloatDtype gemm, FloatDtype out) {
  const float v = has_bias ? f32_add(sum, round_to(gemm, bias)) : sum;
  return round_to(out, round_to(gemm, v));
}


// ---- comfy-kitchen >= 0.2.36 storage: 6-bit codes and F32 group scales ----------------------------
// A packed row of K codes is K*bits/8 bytes. 4 bits: the nibble plane only (unpack_code). 6 bits:
// the same K/2-byte plane of each code's low 4 bits, then a K/4-byte plane of the top 2 bits
// (column j: byte K/2 + j/4, bits 2*(j%4)). 6-bit codes are uniform only: v = c - 32.

// Storage dtype of weight_s_rel: FP8 E4M3FN bytes, or little-endian float32.
enum class ScaleDtype : std::uint8_t { Fp8E4M3, F32 };

W4A8_HD constexpr std::uint64_t packed_row_bytes(std::uint64_t k, int bits) {
  return bits == 6 ? k / 2 + k / 4 : k / 2;
}
W4A8_HD constexpr std::uint64_t scale_bytes(ScaleDtype d) { return d == ScaleDtype::F32 ? 4 : 1; }

// Code of element j of a packed row of k codes. pre: bits is 4 or 6; j < k; k % 4 == 0 at 6 bits.
W4A8_HD std::uint8_t unpack_code_bits(const std::uint8_t* row, std::uint64_t k, std::uint64_t j, int bits) {
  std::uint8_t c = unpack_code(row, j);
  if (bits == 6) c = std::uint8_t(c | (((row[k / 2 + j / 4] >> (2 * (j % 4))) & 3u) << 4));
  return c;
}
// Stores code (< 2^bits) at element j; the inverse of unpack_code_bits on that element.
W4A8_HD void pack_code_bits(std::uint8_t* row, std::uint64_t k, std::uint64_t j, int bits, std::uint8_t code) {
  std::uint8_t& lo = row[j / 2];
  lo = (j & 1) ? std::uint8_t((lo & 0x0F) | ((code & 0xF) << 4)) : std::uint8_t((lo & 0xF0) | (code & 0xF));
  if (bits == 6) {
    std::uint8_t& hi = row[k / 2 + j / 4];
    const unsigned sh = unsigned(2 * (j % 4));
    hi = std::uint8_t((hi & ~(3u << sh)) | (((code >> 4) & 3u) << sh));
  }
}
// Value of a code: codebook[c] (4 bits only), else the uniform c - 2^(bits-1).
W4A8_HD float code_value_bits(std::uint8_t code, const float* codebook, int bits) {
  if (bits == 6) return float(int(code & 0x3F) - 32);
  return code_value(code, codebook);
}
// Group scale q of a row of scales, as float32 (FP8 decoded exactly, F32 read as stored).
W4A8_HD float scale_value(const std::uint8_t* s_rel_row, std::uint64_t q, ScaleDtype d) {
  if (d == ScaleDtype::F32) {
    float f;
    std::memcpy(&f, s_rel_row + 4 * q, 4);
    return f;
  }
  return fp8_e4m3fn_to_f32(s_rel_row[q]);
}
// w_q = clamp(rne(f32(v * s)), -127, 127): the decode of every width and scale dtype (upstream
// multiplies the float32 code value by s_rel.float()). Same bits as decode_weight for FP8 scales.
// pre: v * s is not NaN (decode_value_is_nan; callers report those).
W4A8_HD std::int8_t decode_weight_value(float v, float s) { return std::int8_t(rne_clamp(v * s, -127, 127)); }
W4A8_HD bool decode_value_is_nan(float v, float s) {
  const float p = v * s;
  return p != p;
}

}  // namespace w4a8::gemm
