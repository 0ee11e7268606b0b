/* An example W4A8 kernel plugin in plain C11: a straightforward HOST implementation of the
 * asym_w4a8_int8 integer path, written from the spec (docs/gemm.md, docs/cli.md "Kernel plugins"),
 * to show what a module loaded with `w4a8check gemm --kernel PATH.so` implements. It is a second,
 * independent implementation: its results are compared bit for bit with the C++ reference in ctest.
 *
 * Build: cc -std=c11 -O2 -ffp-contract=off -fPIC -shared -fvisibility=hidden -I kernels \
 *           examples/plugins/w4a8_example_plugin.c -o libw4a8_example_plugin.so -lm
 * (-ffp-contract=off: the spec's float32 products and sums must not be fused.)
 *
 * Capabilities: the integer path (no weight_correction), the float32 activation policy, 4-bit codes
 * with FP8 group scales, and the intermediates (x_q, x_scale, acc, w_q). w4a8check refuses any other
 * problem before calling it. */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "w4a8_cuda.h"

static _Thread_local const char* ex_error = "";

static w4a8_status ex_fail(w4a8_status s, const char* why) {
  ex_error = why;
  return s;
}

/* ---- number formats ------------------------------------------------------------------------- */

/* FP8 E4M3FN: 1 sign, 4 exponent bits (bias 7), 3 mantissa bits; exponent 0 is subnormal; only
 * 0x7F/0xFF are NaN. */
static float ex_fp8(uint8_t b) {
  const int e = (b >> 3) & 15, m = b & 7;
  float v;
  if (e == 15 && m == 7) return NAN;
  if (e == 0) v = ldexpf((float)m, -9);
  else v = ldexpf(1.0f + (float)m / 8.0f, e - 7);
  return (b & 0x80) ? -v : v;
}

static float ex_from_bits(uint32_t u) {
  float f;
  memcpy(&f, &u, 4);
  return f;
}

static float ex_bf16_to_f32(uint16_t h) { return ex_from_bits((uint32_t)h << 16); }

static float ex_f16_to_f32(uint16_t h) {
  const int e = (h >> 10) & 31, m = h & 1023;
  float v;
  if (e == 31) v = m ? NAN : INFINITY;
  else if (e == 0) v = ldexpf((float)m, -24);
  else v = ldexpf(1.0f + (float)m / 1024.0f, e - 15);
  return (h & 0x8000) ? -v : v;
}

/* Round x to a binary format with `mant` stored mantissa bits, smallest exponent `emin` and
 * largest finite value `maxv`, ties to even: x / quantum is scaled exactly (a power of two) in
 * double, rounded by nearbyint, and scaled back. */
static double ex_round_format(double x, int mant, int emin, double maxv, double halfway) {
  int e;
  double q;
  if (x != x || x == 0.0 || isinf(x)) return x;
  if (fabs(x) >= halfway) return x < 0 ? -INFINITY : INFINITY;
  frexp(x, &e); /* |x| in [2^(e-1), 2^e) */
  e -= 1;
  if (e < emin) e = emin; /* subnormal range: fixed quantum */
  q = ldexp(1.0, e - mant);
  x = nearbyint(x / q) * q;
  if (fabs(x) > maxv) return x < 0 ? -INFINITY : INFINITY;
  return x;
}

static float ex_round_bf16(float x) {
  /* bf16: 7 mantissa bits, emin -126, max (2 - 2^-7) * 2^127; halfway to the next binade 2^128. */
  return (float)ex_round_format(x, 7, -126, ldexp(2.0 - ldexp(1.0, -7), 127), ldexp(2.0 - ldexp(1.0, -8), 127));
}

static float ex_round_f16(float x) {
  /* f16: 10 mantissa bits, emin -14, max 65504; values from 65520 up round to infinity. */
  return (float)ex_round_format(x, 10, -14, 65504.0, 65520.0);
}

static float ex_round(w4a8_dtype d, float x) {
  return d == W4A8_DTYPE_BF16 ? ex_round_bf16(x) : d == W4A8_DTYPE_F16 ? ex_round_f16(x) : x;
}

static uint16_t ex_bf16_bits(float v) { /* v already a bf16 value: its top 16 bits */
  uint32_t u;
  memcpy(&u, &v, 4);
  if (v != v) return (uint16_t)((u >> 16) | 0x40);
  return (uint16_t)(u >> 16);
}

static uint16_t ex_f16_bits(float v) { /* v already an f16 value */
  const uint16_t sign = signbit(v) ? 0x8000 : 0;
  const double a = fabs((double)v);
  int e;
  if (v != v) return 0x7E00;
  if (isinf(v)) return (uint16_t)(sign | 0x7C00);
  if (a < ldexp(1.0, -14)) return (uint16_t)(sign | (uint16_t)(a / ldexp(1.0, -24)));
  frexp(a, &e);
  e -= 1;
  return (uint16_t)(sign | ((e + 15) << 10) | (uint16_t)((a / ldexp(1.0, e) - 1.0) * 1024.0));
}

static float ex_load(const void* base, int64_t i, w4a8_dtype d) {
  if (d == W4A8_DTYPE_F32) {
    float f;
    memcpy(&f, (const char*)base + 4 * i, 4);
    return f;
  } else {
    uint16_t h;
    memcpy(&h, (const char*)base + 2 * i, 2);
    return d == W4A8_DTYPE_BF16 ? ex_bf16_to_f32(h) : ex_f16_to_f32(h);
  }
}

static void ex_store(void* base, int64_t i, w4a8_dtype d, float v) {
  if (d == W4A8_DTYPE_F32) {
    memcpy((char*)base + 4 * i, &v, 4);
  } else {
    const uint16_t h = d == W4A8_DTYPE_BF16 ? ex_bf16_bits(v) : ex_f16_bits(v);
    memcpy((char*)base + 2 * i, &h, 2);
  }
}

/* Round half to even, clamped to [lo, hi]; NaN gives 0. */
static int32_t ex_rne(float v, int32_t lo, int32_t hi) {
  float r;
  if (v != v) return 0;
  r = nearbyintf(v);
  if (r <= (float)lo) return lo;
  if (r >= (float)hi) return hi;
  return (int32_t)r;
}

/* ---- the problem ------------------------------------------------------------------------------ */

static int ex_power_of_4(int64_t r) {
  if (r < 4) return 0;
  while (r % 4 == 0) r /= 4;
  return r == 1;
}

static int ex_dtype_ok(int d) { return d == W4A8_DTYPE_F32 || d == W4A8_DTYPE_BF16 || d == W4A8_DTYPE_F16; }

static w4a8_status ex_check(const w4a8_problem* p) {
  int64_t g;
  if (!p) return ex_fail(W4A8_ERR_ARGUMENT, "null problem");
  g = p->group_size;
  if (p->m < 0 || p->n < 0 || p->k < 0) return ex_fail(W4A8_ERR_ARGUMENT, "negative size");
  if (p->k % 16 != 0 || g < 4 || (16 % g != 0 && g % 16 != 0) || p->k % g != 0 || !ex_power_of_4(p->convrot_groupsize) ||
      p->k % p->convrot_groupsize != 0)
    return ex_fail(W4A8_ERR_CONTRACT, "K, group_size or convrot_groupsize break the kernel contract");
  if (p->correction) return ex_fail(W4A8_ERR_UNSUPPORTED, "the correction path is not implemented");
  if (p->act_policy != 0) return ex_fail(W4A8_ERR_UNSUPPORTED, "only the float32 activation policy is implemented");
  if ((p->bits != 0 && p->bits != 4) || p->s_rel_dtype != W4A8_SCALE_FP8_E4M3)
    return ex_fail(W4A8_ERR_UNSUPPORTED, "only 4-bit codes with FP8 group scales are implemented");
  if (!ex_dtype_ok(p->x_dtype) || !ex_dtype_ok(p->out_dtype) || (p->bias && !ex_dtype_ok(p->bias_dtype)))
    return ex_fail(W4A8_ERR_ARGUMENT, "bad dtype");
  if (p->ldx < p->k || p->ldo < p->n) return ex_fail(W4A8_ERR_ARGUMENT, "row stride smaller than the row");
  if (p->m > 0 && (!p->x || !p->out)) return ex_fail(W4A8_ERR_ARGUMENT, "null activation or output");
  if (p->n > 0 && p->k > 0 && (!p->weight || !p->s_rel || !p->s_channel)) return ex_fail(W4A8_ERR_ARGUMENT, "null weight tensor");
  return W4A8_OK;
}

/* One scratch row of K floats for the rotation. */
static size_t ex_workspace(const w4a8_problem* p) { return ex_check(p) == W4A8_OK ? (size_t)p->k * sizeof(float) : 0; }

/* x := x @ H_R for each block of R: log4(R) stages of stride 1, 4, 16, ...; each maps (a, b, c, d)
 * to (((a'+b')+c')-d', ((a'+b')-c')+d', ((a'-b')+c')+d', ((b'-a')+c')+d') in float32, in that order,
 * where a' = pre * a and pre is 1/sqrt(R) in the first stage, 1 in the others. */
static void ex_rotate(float* x, int64_t k, int64_t r) {
  int64_t blk, s, base, o;
  /* The whole normalization 1/sqrt(R) = 2^-log4(R) multiplies each element in the first stage,
   * before any sum (docs/gemm.md, "ConvRot order"); halving each stage's sums instead overflows
   * rows whose result is finite. */
  float first = 1.0f;
  for (s = 1; s < r; s *= 4) first *= 0.5f;
  for (blk = 0; blk < k; blk += r)
    for (s = 1; s < r; s *= 4) {
      const float pre = s == 1 ? first : 1.0f;
      for (base = blk; base < blk + r; base += 4 * s)
        for (o = 0; o < s; ++o) {
          float* a = x + base + o;
          const float va = pre * a[0], vb = pre * a[s], vc = pre * a[2 * s], vd = pre * a[3 * s];
          a[0] = ((va + vb) + vc) - vd;
          a[s] = ((va + vb) - vc) + vd;
          a[2 * s] = ((va - vb) + vc) + vd;
          a[3 * s] = ((vb - va) + vc) + vd;
        }
    }
}

/* w_q[n, k] = clamp(rne(f32(value(code) * fp8(s_rel[n, k / G]))), -127, 127). */
static int8_t ex_weight(const w4a8_problem* p, int64_t n, int64_t k, int* nan_seen) {
  const uint8_t byte = (uint8_t)p->weight[n * (p->k / 2) + k / 2];
  const int code = (k % 2) ? (byte >> 4) : (byte & 15);
  const float v = p->codebook ? p->codebook[code] : (float)(code - 8);
  const float prod = v * ex_fp8(p->s_rel[n * (p->k / p->group_size) + k / p->group_size]);
  if (prod != prod) *nan_seen = 1;
  return (int8_t)ex_rne(prod, -127, 127);
}

static w4a8_status ex_run(const w4a8_problem* p, void* workspace, size_t workspace_bytes, void* stream) {
  const w4a8_status s = ex_check(p);
  int64_t m, n, k;
  int nan_seen = 0;
  float* row = (float*)workspace;
  (void)stream;
  if (s != W4A8_OK) return s;
  if (workspace_bytes < ex_workspace(p) || (p->k > 0 && !workspace)) return ex_fail(W4A8_ERR_ARGUMENT, "workspace too small");
  if (p->w_q)
    for (n = 0; n < p->n; ++n)
      for (k = 0; k < p->k; ++k) p->w_q[n * p->k + k] = ex_weight(p, n, k, &nan_seen);
  for (m = 0; m < p->m; ++m) {
    float absmax = 0.0f, scale;
    for (k = 0; k < p->k; ++k) row[k] = ex_load(p->x, m * p->ldx + k, p->x_dtype);
    ex_rotate(row, p->k, p->convrot_groupsize);
    for (k = 0; k < p->k; ++k) {
      const float a = fabsf(row[k]);
      if (a > absmax || a != a) absmax = a;
    }
    scale = absmax / 127.0f;
    if (scale == scale && !(scale > 1e-30f)) scale = 1e-30f;
    /* x_q overwrites the scratch row in place as int8 values kept in floats. */
    for (k = 0; k < p->k; ++k) row[k] = (float)ex_rne(row[k] / scale, -128, 127);
    if (p->x_q)
      for (k = 0; k < p->k; ++k) p->x_q[m * p->k + k] = (int8_t)row[k];
    if (p->x_scale) p->x_scale[m] = scale;
    for (n = 0; n < p->n; ++n) {
      int64_t sum = 0;
      int32_t acc;
      float v, o;
      for (k = 0; k < p->k; ++k) sum += (int64_t)row[k] * ex_weight(p, n, k, &nan_seen);
      acc = (int32_t)(uint32_t)(uint64_t)sum; /* int32 modulo 2^32 */
      if (p->acc) p->acc[m * p->n + n] = acc;
      {
        const float sc = scale * p->s_channel[n];
        v = (float)acc * sc;
      }
      o = ex_round(p->out_dtype, v);
      if (p->bias) o = ex_round(p->out_dtype, o + ex_round(p->out_dtype, ex_load(p->bias, n, p->bias_dtype)));
      ex_store(p->out, m * p->ldo + n, p->out_dtype, o);
    }
  }
  if (nan_seen && p->nan_scale_flag) *p->nan_scale_flag = 1;
  ex_error = "";
  return W4A8_OK;
}

static const char* ex_last_error(void) { return ex_error; }

#ifndef W4A8_EXAMPLE_NO_ENTRY /* tests reuse the computation behind another table */
static const w4a8_kernel_plugin ex_table = {
    W4A8_KERNEL_ABI_VERSION,
    (uint32_t)sizeof(w4a8_kernel_plugin),
    "w4a8-example-c",
    "1.0.0",
    W4A8_MEMORY_HOST,
    W4A8_CAP_INTEGER_PATH | W4A8_CAP_INTERMEDIATES,
    ex_check,
    ex_workspace,
    ex_run,
    ex_last_error,
    NULL, NULL, NULL, NULL, NULL, NULL};

__attribute__((visibility("default"))) const w4a8_kernel_plugin* w4a8_kernel_plugin_v1(void) { return &ex_table; }
#endif
