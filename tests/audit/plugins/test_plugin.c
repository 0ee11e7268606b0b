/* A HOST kernel plugin in plain C (kernels/w4a8_cuda.h ABI) implementing the integer path of the
 * W4A8 layer from the spec, written independently of the C++ reference: ConvRot as a plain dot
 * product with the Hadamard signs (a different summation order than the reference's butterflies,
 * so x_q may legally differ at rounding ties). Built four times:
 *   (no macro)               correct: must pass the audit
 *   BUG_EPILOGUE_OFF_BY_ONE  the epilogue reads the channel scale of column n + 1
 *   BUG_NIBBLE_ORDER         the decode takes element 2i from the HIGH nibble
 *   BUG_DROP_BIAS_M_GT_1     the bias is only added when M == 1
 *   BUG_RACY                 every second call flips the lowest bit of out[0, 0] (as a race would)
 *   BUG_SKIP_LAST_ROW        the last row of out is never stored when M > 1 (a tail-tile bug)
 *   BUG_DENSE_STRIDES        rows of x and out are taken K and N elements apart, not ldx and ldo
 *   BUG_HALF_AWAY            x_q rounds a .5 quotient away from zero (roundf), not to even
 *   BUG_RECIPROCAL           x_q = rot * (1 / scale): a rounded reciprocal for the division
 *   BUG_FLOAT_ACC            acc summed in float32 (rounds past 2^24), built OUTPUTS_ONLY
 *   EAGER_POLICY             correct, and also follows the eager policy (W4A8_CAP_EAGER_POLICY): the
 *                            rotated row, the divisor and the quotient rounded to the activation dtype
 *   BUG_EAGER_AS_F32         declares the eager policy, but rotates and divides in float32 throughout
 *   OUTPUTS_ONLY             fills no intermediates (no W4A8_CAP_INTERMEDIATES)
 *   FUSED_BIAS               correct: the float32 bias added before the one cast to the output dtype
 *                            (a fused epilogue), not the output and the bias each rounded first
 *   FAKE_DEVICE=1 / =0       correct, as a CUDA_DEVICE plugin over host memory (with / without a device)
 *   STORAGE_VARIANTS         correct, and also decodes comfy-kitchen 0.2.40's storage (W4A8_CAP_6BIT,
 *                            W4A8_CAP_F32_SCALES), written from docs/gemm.md's layout description
 * Fills every intermediate (W4A8_CAP_INTERMEDIATES). */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/w4a8_cuda.h"

#ifdef BUG_DENSE_STRIDES
#define LDX K
#define LDO N
#else
#define LDX p->ldx
#define LDO p->ldo
#endif

#ifndef PLUGIN_NAME
#define PLUGIN_NAME "test-plugin-correct"
#endif

static float f32_of_bits(uint32_t u) {
  float f;
  memcpy(&f, &u, 4);
  return f;
}
static uint32_t bits_of_f32(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  return u;
}

static float fp8_e4m3fn(uint8_t b) {
  const uint32_t sign = (uint32_t)(b >> 7) << 31, e = (b >> 3) & 0xF, m = b & 7;
  if (e == 0) {
    float v = (float)m / 512.0f;
    return sign ? -v : v;
  }
  return f32_of_bits(sign | ((e + 120u) << 23) | (m << 20));
}
static uint16_t to_bf16(float f) {
  uint32_t u = bits_of_f32(f);
  if ((u & 0x7FFFFFFFu) > 0x7F800000u) return (uint16_t)((u >> 16) | 0x40);
  return (uint16_t)((u + 0x7FFFu + ((u >> 16) & 1u)) >> 16);
}
static float from_bf16(uint16_t h) { return f32_of_bits((uint32_t)h << 16); }
static float from_f16(uint16_t h) {
  const uint32_t s = (uint32_t)(h >> 15) << 31, e = (h >> 10) & 0x1F, m = h & 0x3FF;
  if (e == 0x1F) return f32_of_bits(s | 0x7F800000u | (m << 13));
  if (e == 0) {
    float v = (float)m * 5.9604644775390625e-08f;
    return s ? -v : v;
  }
  return f32_of_bits(s | ((e + 112u) << 23) | (m << 13));
}
static uint16_t to_f16(float f) {
  /* Round to nearest even through the exact grid: scale into the integer range of the mantissa. */
  const uint32_t u = bits_of_f32(f);
  const uint16_t sign = (uint16_t)((u >> 16) & 0x8000u);
  const float a = fabsf(f);
  if (a != a) return (uint16_t)(sign | 0x7E00u);
  if (a >= 65520.0f) return (uint16_t)(sign | 0x7C00u);
  int e;
  frexpf(a, &e);  /* a = frac * 2^e, frac in [0.5, 1) */
  int ex = e - 1; /* a in [2^ex, 2^(ex+1)) */
  if (ex < -14) ex = -14;
  const float q = nearbyintf(ldexpf(a, 10 - ex)); /* units of 2^(ex-10) */
  double v = ldexp((double)q, ex - 10);
  /* Re-encode v (exactly representable now). */
  if (v == 0) return sign;
  int e2;
  frexp(v, &e2);
  int ex2 = e2 - 1;
  if (ex2 < -14) return (uint16_t)(sign | (uint16_t)ldexp(v, 24)); /* subnormal */
  const uint32_t mant = (uint32_t)(ldexp(v, 10 - ex2)) - 1024u;
  return (uint16_t)(sign | ((uint32_t)(ex2 + 15) << 10) | mant);
}
static float load(const void* p, int64_t i, w4a8_dtype d) {
  if (d == W4A8_DTYPE_BF16) return from_bf16(((const uint16_t*)p)[i]);
  if (d == W4A8_DTYPE_F16) return from_f16(((const uint16_t*)p)[i]);
  return ((const float*)p)[i];
}
static float round_dtype(float v, w4a8_dtype d) {
  if (d == W4A8_DTYPE_BF16) return from_bf16(to_bf16(v));
  if (d == W4A8_DTYPE_F16) return from_f16(to_f16(v));
  return v;
}
static void store(void* p, int64_t i, w4a8_dtype d, float v) {
  if (d == W4A8_DTYPE_BF16)
    ((uint16_t*)p)[i] = to_bf16(v);
  else if (d == W4A8_DTYPE_F16)
    ((uint16_t*)p)[i] = to_f16(v);
  else
    ((float*)p)[i] = v;
}
static int clampi(float v, int lo, int hi) {
  const float r = nearbyintf(v);
  if (r != r) return 0; /* NaN (a buggy variant reading padding): no int, and no UB converting it */
  return r <= (float)lo ? lo : r >= (float)hi ? hi : (int)r;
}
/* Sign of H_R[i][j]: product over base-4 digits of the seed (-1 where the digits sum to 3). */
static int hsign(int64_t r, int64_t i, int64_t j) {
  int s = 1;
  for (; r > 1; r >>= 2, i >>= 2, j >>= 2)
    if (((i & 3) + (j & 3)) == 3) s = -s;
  return s;
}
static int is_pow4(int64_t r) { return r >= 4 && (r & (r - 1)) == 0 && (r & 0x5555555555555555LL); }

static w4a8_status check(const w4a8_problem* p) {
  if (!p || p->m < 0 || p->n < 0 || p->k <= 0 || !p->x || !p->weight || !p->s_rel || !p->s_channel || !p->out)
    return W4A8_ERR_ARGUMENT;
  const int64_t g = p->group_size, r = p->convrot_groupsize;
  if (p->k % 16 || g < 4 || (16 % g && g % 16) || p->k % g || !is_pow4(r) || p->k % r) return W4A8_ERR_CONTRACT;
#if defined(EAGER_POLICY) || defined(BUG_EAGER_AS_F32)
#define POLICY_OK(p) ((p)->act_policy == 0 || (p)->act_policy == 1)
#define EAGER_CAPS W4A8_CAP_EAGER_POLICY
#else
#define POLICY_OK(p) ((p)->act_policy == 0)
#define EAGER_CAPS 0
#endif
#ifdef STORAGE_VARIANTS
  if (p->bits == 6 && (p->k % 32 || g % 16 || p->codebook)) return W4A8_ERR_CONTRACT;
  if (p->correction || !POLICY_OK(p) || (p->bits != 0 && p->bits != 4 && p->bits != 6) ||
      (p->s_rel_dtype != W4A8_SCALE_FP8_E4M3 && p->s_rel_dtype != W4A8_SCALE_F32))
    return W4A8_ERR_UNSUPPORTED;
#else
  if (p->correction || !POLICY_OK(p) || (p->bits != 0 && p->bits != 4) || p->s_rel_dtype != W4A8_SCALE_FP8_E4M3)
    return W4A8_ERR_UNSUPPORTED;
#endif
  return W4A8_OK;
}

/* Code of element k of row n and its group scale, in the problem's storage. 6 bits: a row is K/2
 * bytes of low nibbles, then K/4 bytes of 2-bit high parts (element k: byte K/2 + k/4, bits
 * 2*(k%4)); value c - 32. F32 scales: 4 little-endian bytes each. */
static float code_value(const w4a8_problem* p, int64_t n, int64_t k) {
  const int64_t K = p->k, bits = p->bits == 6 ? 6 : 4, row = bits == 6 ? K / 2 + K / 4 : K / 2;
  const uint8_t* r = (const uint8_t*)p->weight + n * row;
  const uint8_t b = r[k / 2];
#ifdef BUG_NIBBLE_ORDER
  int code = (k & 1) ? (b & 0xF) : (b >> 4);
#else
  int code = (k & 1) ? (b >> 4) : (b & 0xF);
#endif
  if (bits == 6) return (float)((code | (((r[K / 2 + k / 4] >> (2 * (k % 4))) & 3) << 4)) - 32);
  return p->codebook ? p->codebook[code] : (float)(code - 8);
}
static float group_scale(const w4a8_problem* p, int64_t n, int64_t k) {
  const int64_t i = n * (p->k / p->group_size) + k / p->group_size;
  if (p->s_rel_dtype == W4A8_SCALE_F32) {
    float f;
    memcpy(&f, p->s_rel + 4 * i, 4);
    return f;
  }
  return fp8_e4m3fn(p->s_rel[i]);
}
static size_t workspace(const w4a8_problem* p) {
  /* w_q [N, K], x_q [M, K], x_scale [M], a rotated row [K] */
  return check(p) != W4A8_OK ? 0 : (size_t)(p->n * p->k + p->m * p->k + 4 * p->m + 4 * p->k + 64);
}

static w4a8_status run(const w4a8_problem* p, void* ws, size_t ws_bytes, void* stream) {
  (void)stream;
  w4a8_status st = check(p);
  if (st != W4A8_OK) return st;
  if (ws_bytes < workspace(p) || !ws) return W4A8_ERR_ARGUMENT;
  const int64_t M = p->m, N = p->n, K = p->k, R = p->convrot_groupsize;
  int8_t* wq = p->w_q ? p->w_q : (int8_t*)ws;
  int8_t* xq = p->x_q ? p->x_q : (int8_t*)ws + N * K;
  float* xs = p->x_scale ? p->x_scale : (float*)((char*)ws + N * K + M * K + (4 - (N * K + M * K) % 4) % 4);
  float* rot = (float*)((char*)ws + ((N * K + M * K + 4 * M + 32) & ~(int64_t)15));
  /* 1. decode */
  for (int64_t n = 0; n < N; ++n)
    for (int64_t k = 0; k < K; ++k) wq[n * K + k] = (int8_t)clampi(code_value(p, n, k) * group_scale(p, n, k), -127, 127);
  /* 2-3. rotate each row (dot products with the Hadamard signs) and quantize */
  float inv = 1.0f;
  for (int64_t t = R; t > 1; t >>= 2) inv *= 0.5f; /* 1/sqrt(R), exact */
  /* The eager policy (comfy-kitchen's eager code with bf16/f16 activations): the rotated values,
   * the divisor (0 becoming the dtype's smallest normal) and each quotient rounded to that dtype. */
#ifdef EAGER_POLICY
  const int eager = p->act_policy == 1 && p->x_dtype != W4A8_DTYPE_F32;
#else
  const int eager = 0;
#endif
  for (int64_t m = 0; m < M; ++m) {
    float amax = 0;
    for (int64_t b0 = 0; b0 < K; b0 += R)
      for (int64_t j = 0; j < R; ++j) {
        float s = 0;
        for (int64_t i = 0; i < R; ++i) s += (float)hsign(R, i, j) * load(p->x, m * LDX + b0 + i, p->x_dtype);
        rot[b0 + j] = s * inv;
        if (eager) rot[b0 + j] = round_dtype(rot[b0 + j], p->x_dtype);
        if (fabsf(rot[b0 + j]) > amax) amax = fabsf(rot[b0 + j]);
      }
    float sc = amax / 127.0f;
    if (!(sc > 1e-30f)) sc = 1e-30f;
    xs[m] = sc;
    float div = sc;
    if (eager) {
      div = round_dtype(sc, p->x_dtype);
      if (div == 0) div = p->x_dtype == W4A8_DTYPE_F16 ? 6.103515625e-05f : 1.17549435e-38f;
    }
    for (int64_t k = 0; k < K; ++k) {
#ifdef BUG_RECIPROCAL
      float q = rot[k] * (1.0f / div);
#else
      float q = rot[k] / div;
#endif
      if (eager) q = round_dtype(q, p->x_dtype);
#ifdef BUG_HALF_AWAY
      q = roundf(q);
#endif
      xq[m * K + k] = (int8_t)clampi(q, -128, 127);
    }
  }
  /* 4-5. accumulate and epilogue */
  for (int64_t m = 0; m < M; ++m)
    for (int64_t n = 0; n < N; ++n) {
#ifdef BUG_FLOAT_ACC
      float fa = 0;
      for (int64_t k = 0; k < K; ++k) fa += (float)((int32_t)xq[m * K + k] * wq[n * K + k]);
      const int32_t acc = (int32_t)fa;
#else
      int64_t a = 0;
      for (int64_t k = 0; k < K; ++k) a += (int64_t)xq[m * K + k] * wq[n * K + k];
      const int32_t acc = (int32_t)(uint32_t)(uint64_t)a;
#endif
      if (p->acc) p->acc[m * N + n] = acc;
#ifdef BUG_EPILOGUE_OFF_BY_ONE
      const float ch = p->s_channel[n + 1 < N ? n + 1 : n];
#else
      const float ch = p->s_channel[n];
#endif
      const float scale = xs[m] * ch;
#ifdef FUSED_BIAS
      store(p->out, m * LDO + n, p->out_dtype,
            round_dtype((float)acc * scale + (p->bias ? load(p->bias, n, p->bias_dtype) : 0.0f), p->out_dtype));
      continue;
#endif
      float o = round_dtype((float)acc * scale, p->out_dtype);
#ifdef BUG_DROP_BIAS_M_GT_1
      const int add_bias = p->bias != NULL && M == 1;
#else
      const int add_bias = p->bias != NULL;
#endif
      if (add_bias) o = round_dtype(o + round_dtype(load(p->bias, n, p->bias_dtype), p->out_dtype), p->out_dtype);
#ifdef BUG_SKIP_LAST_ROW
      if (M > 1 && m == M - 1) continue;
#endif
      store(p->out, m * LDO + n, p->out_dtype, o);
    }
#ifdef BUG_RACY
  {
    static unsigned calls = 0;
    if (++calls % 2 == 0 && M > 0 && N > 0) ((unsigned char*)p->out)[0] ^= 1; /* little-endian: the lowest bit */
  }
#endif
  return W4A8_OK;
}

static const char* last_error(void) { return ""; }

#ifdef FAKE_DEVICE
/* A "device" plugin whose device memory is host memory: exercises the loader's CUDA_DEVICE path
 * (allocation, copies in and out, synchronize) without a GPU. FAKE_DEVICE=0: no device present. */
static int device_count(int* err) {
  *err = FAKE_DEVICE ? 0 : 100;
  return FAKE_DEVICE;
}
static w4a8_status dev_alloc(void** p, size_t n) {
  *p = calloc(1, n);
  return *p ? W4A8_OK : W4A8_ERR_CUDA;
}
static void dev_free(void* p) { free(p); }
static w4a8_status dev_copy(void* dst, const void* src, size_t n) {
  memcpy(dst, src, n);
  return W4A8_OK;
}
static w4a8_status dev_sync(void* stream) {
  (void)stream;
  return W4A8_OK;
}
static const w4a8_kernel_plugin kTable = {W4A8_KERNEL_ABI_VERSION,
                                          sizeof(w4a8_kernel_plugin),
                                          PLUGIN_NAME,
                                          "1.0",
                                          W4A8_MEMORY_CUDA_DEVICE,
                                          W4A8_CAP_INTEGER_PATH | W4A8_CAP_INTERMEDIATES,
                                          check,
                                          workspace,
                                          run,
                                          last_error,
                                          device_count,
                                          dev_alloc,
                                          dev_free,
                                          dev_copy,
                                          dev_copy,
                                          dev_sync};
#else
#ifdef OUTPUTS_ONLY
#define INTERMEDIATE_CAPS 0
#else
#define INTERMEDIATE_CAPS W4A8_CAP_INTERMEDIATES
#endif
#ifdef STORAGE_VARIANTS
#define STORAGE_CAPS (W4A8_CAP_6BIT | W4A8_CAP_F32_SCALES)
#else
#define STORAGE_CAPS 0
#endif
static const w4a8_kernel_plugin kTable = {W4A8_KERNEL_ABI_VERSION,
                                          sizeof(w4a8_kernel_plugin),
                                          PLUGIN_NAME,
                                          "1.0",
                                          W4A8_MEMORY_HOST,
                                          W4A8_CAP_INTEGER_PATH | INTERMEDIATE_CAPS | STORAGE_CAPS | EAGER_CAPS,
                                          check,
                                          workspace,
                                          run,
                                          last_error,
                                          NULL,
                                          NULL,
                                          NULL,
                                          NULL,
                                          NULL,
                                          NULL};
#endif

__attribute__((visibility("default"))) const w4a8_kernel_plugin* w4a8_kernel_plugin_v1(void) { return &kTable; }
