// The GEMM's prologue kernel (act_quant.cu), as the steps between its barriers; the host emulation
// runs the same steps in loops. One block per activation row: ConvRot + per-row int8 quantization
// (every step element-wise or a max, exact in any order, so the thread split cannot change a
// result). The blocks also build the call's decode table and zero the split-K workspace, so the
// GEMM needs no extra launch for either.
#pragma once

#include <cstdint>

#include "kernels/dtype_io.hpp"
#include "kernels/index_math.hpp"

namespace w4a8::kern {

struct ActArgs {
  long long m = 0, k = 0, r = 0;
  const void* x = nullptr;  // [M, K] in x_dtype, row stride ldx
  w4a8_dtype x_dtype = W4A8_DTYPE_F32;
  long long ldx = 0;
  int policy = kPolicyF32;
  std::int8_t* x_q = nullptr;       // [M, K] natural order, row stride k: written only when requested
  std::int8_t* x_q_frag = nullptr;  // x_q in fragment order for the GEMM (index_math.hpp)
  long long frag_chunks = 0;        // frag_chunks(K)
  float* x_scale = nullptr;         // [M]
  // Side jobs spread over the blocks:
  std::int8_t* table = nullptr;       // the decode table [4096] to build (null: none)
  const float* codebook = nullptr;    // [16] or null
  std::uint32_t* zero = nullptr;      // words to zero (split-K workspace), or null
  long long zero_words = 0;
};

// Side jobs of block `block` of `blocks`, thread t: table entries and zero words t + T * (block +
// blocks * i). post: over all blocks and threads, each entry / word written exactly once.
W4A8_HD void prologue_side_jobs(const ActArgs& a, long long block, long long blocks, int t) {
  const long long stride = blocks * kActThreads;
  if (a.table)
    for (long long i = block * kActThreads + t; i < kDecodeTableBytes; i += stride)
      a.table[i] = gemm::decode_weight(static_cast<std::uint8_t>(i & 15), static_cast<std::uint8_t>(i >> 4), a.codebook);
  for (long long i = block * kActThreads + t; i < a.zero_words; i += stride) a.zero[i] = 0u;
}

// Step 1: element i of row m, as float32 (exact).
W4A8_HD float act_load(const ActArgs& a, long long m, long long i) {
  return load_as_f32(a.x, m * a.ldx + i, a.x_dtype);
}
// Step 2: ConvRot stages of stride 1, 4, ..., R/4, each a set of butterflies (the stride-1 stage
// applies the whole 1/sqrt(R) to its inputs first: numerics.hpp convrot_butterfly).
W4A8_HD void rotate_butterfly(float* row, long long b, long long r, long long s) {
  const long long f = butterfly_first(b, r, s);
  gemm::convrot_butterfly(row[f], row[f + s], row[f + 2 * s], row[f + 3 * s], gemm::convrot_stage_prescale(r, s));
}
// Step 3: the value the quantizer sees (rounded to the activation dtype under Eager).
W4A8_HD float act_rotated_value(const ActArgs& a, float v) {
  return a.policy == kPolicyEager ? round_to_dtype(v, a.x_dtype) : v;
}
// Step 4: the row's scale and divisor (numerics.hpp row_scale, division_scale).
W4A8_HD float act_divisor(const ActArgs& a, float scale) {
  return gemm::division_scale(scale, act_policy(a.policy), float_dtype(a.x_dtype));
}
// Step 5: x_q of one element.
W4A8_HD std::int8_t act_quantize(const ActArgs& a, float v, float divisor) {
  return gemm::quantize_act(v, divisor, act_policy(a.policy), float_dtype(a.x_dtype));
}
// Step 5, four elements k = 4q .. 4q + 3 of row m (row: the rotated values): one 4-byte store in
// fragment order (zeros past K, up to the 128-padded row end), and the natural x_q when requested.
W4A8_HD void act_store_quad(const ActArgs& a, long long m, long long q, const float* row, float divisor) {
  std::uint32_t packed = 0;
  for (int i = 0; i < 4; ++i) {
    const long long k = 4 * q + i;
    if (k >= a.k) break;
    const std::int8_t v = act_quantize(a, row[k], divisor);
    if (a.x_q) a.x_q[m * a.k + k] = v;
    packed |= std::uint32_t(std::uint8_t(v)) << (8 * i);
  }
  *reinterpret_cast<std::uint32_t*>(a.x_q_frag + xq_frag_offset(m, 4 * q, a.frag_chunks)) = packed;
}
// Quads of a row: 128-padded K / 4.
W4A8_HD long long act_quads(const ActArgs& a) { return a.frag_chunks * (kChunkK / 4); }
// The last row's block also zeroes the padding rows M .. frag_rows(M) - 1 (quads t, t + T, ...).
W4A8_HD void act_zero_pad_rows(const ActArgs& a, int t) {
  for (long long m = a.m; m < frag_rows(a.m); ++m)
    for (long long q = t; q < act_quads(a); q += kActThreads)
      *reinterpret_cast<std::uint32_t*>(a.x_q_frag + xq_frag_offset(m, 4 * q, a.frag_chunks)) = 0u;
}

}  // namespace w4a8::kern
