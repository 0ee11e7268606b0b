// The fused W4A8 GEMM, one block tile at a time, split into the steps between its barriers.
// Each step is a function of (thread or lane, tile position) shared by the CUDA kernel
// (w4a8_gemm.cu runs them per thread) and the host emulation (emulate.cpp runs them in loops over
// threads, step by step, with an emulated mma.sync), so both execute the same loads, decode and
// computation order.
#pragma once

#include <cstdint>
#include <cstring>

#include "kernels/kernel_numerics.hpp"
#include "kernels/tile_config.hpp"

namespace w4a8::kern {

// Operands of the integer-path GEMM as the kernel sees them (device pointers on the GPU).
struct GemmArgs {
  long long m = 0, n = 0, k = 0;
  int group = 0;
  const std::int8_t* x_q = nullptr;  // [M, K], row stride k
  const float* x_scale = nullptr;    // [M]
  const std::uint8_t* weight = nullptr;  // packed [N, K/2]
  const std::uint8_t* s_rel = nullptr;   // [N, K/G]
  const float* s_channel = nullptr;      // [N]
  const float* codebook = nullptr;       // [16] or null
  const void* bias = nullptr;            // [N] or null
  int bias_dtype = 0;
  void* out = nullptr;                   // [M, N], row stride ldo
  int out_dtype = 0;
  long long ldo = 0;
  std::int32_t* acc_out = nullptr;       // [M, N] or null
  std::int32_t* nan_flag = nullptr;      // or null
  std::int8_t* w_q_out = nullptr;        // [N, K] decoded grid (decode-only kernel); or null
};

// ---- memory helpers (vector accesses on the device, memcpy on the host) -------------------------
struct U32x4 {
  std::uint32_t v[4];
};
W4A8_HD U32x4 load16(const void* p) {
#if defined(__CUDA_ARCH__)
  const uint4 q = *static_cast<const uint4*>(p);
  return {{q.x, q.y, q.z, q.w}};
#else
  U32x4 r;
  std::memcpy(r.v, p, 16);
  return r;
#endif
}
W4A8_HD void store16(void* p, const U32x4& r) {
#if defined(__CUDA_ARCH__)
  *static_cast<uint4*>(p) = make_uint4(r.v[0], r.v[1], r.v[2], r.v[3]);
#else
  std::memcpy(p, r.v, 16);
#endif
}
W4A8_HD std::uint64_t load8(const void* p) {
#if defined(__CUDA_ARCH__)
  const uint2 q = *static_cast<const uint2*>(p);
  return static_cast<std::uint64_t>(q.x) | (static_cast<std::uint64_t>(q.y) << 32);
#else
  std::uint64_t r;
  std::memcpy(&r, p, 8);
  return r;
#endif
}
W4A8_HD std::uint32_t load4(const std::uint8_t* p) {
#if defined(__CUDA_ARCH__)
  return *reinterpret_cast<const std::uint32_t*>(p);
#else
  std::uint32_t r;
  std::memcpy(&r, p, 4);
  return r;
#endif
}

// ---- step 0: the decode table (per block; entries t, t + threads, ...) -------------------------
// post: table[decode_table_index(s, c)] == decode_weight(c, s, codebook) for all s < 256, c < 16.
W4A8_HD void build_table_part(std::int8_t* table, int t, int threads, const float* codebook) {
  for (int i = t; i < kDecodeTableBytes; i += threads)
    table[i] = decode_weight(i & 15, static_cast<std::uint8_t>(i >> 4), codebook);
}

// ---- step 1: global -> shared loads of one k tile ---------------------------------------------
// Thread t, iteration it: 16 bytes of x_q (zeros outside M x K).
W4A8_HD void load_a_chunk(const TileConfig& c, const GemmArgs& g, std::int8_t* smem_a, int t, int it,
                          long long m0, long long k0) {
  const Chunk ch = tile_chunk(c, t, it);
  U32x4 v{{0u, 0u, 0u, 0u}};
  if (chunk_in_bounds(m0, k0, ch, g.m, g.k)) v = load16(g.x_q + (m0 + ch.row) * g.k + k0 + ch.k);
  store16(smem_a + ch.row * c.smem_stride() + ch.k, v);
}

// Thread t, iteration it: 16 codes (8 packed bytes) of row n, decoded through the table.
// Sets *nan_seen when a NaN scale byte was used (its table entry is defined but meaningless).
// WriteWq (the decode-only kernel, for the differential tests) also stores the chunk to w_q_out.
template <bool WriteWq = false>
W4A8_HD void load_b_chunk(const TileConfig& c, const GemmArgs& g, const std::int8_t* table,
                          std::int8_t* smem_b, int t, int it, long long n0, long long k0, bool* nan_seen) {
  const Chunk ch = tile_chunk(c, t, it);
  U32x4 v{{0u, 0u, 0u, 0u}};
  if (chunk_in_bounds(n0, k0, ch, g.n, g.k)) {
    const long long n = n0 + ch.row, k = k0 + ch.k;
    const std::uint64_t codes = load8(g.weight + n * (g.k / 2) + k / 2);
    // G >= 4 and k % 16 == 0, so the 4 codes of word q share one scale byte: s_rel[n, (k + 4q)/G],
    // which is k/G + q / (G/4) when G divides 16 and k/G otherwise.
    const std::uint8_t* s_row = g.s_rel + s_rel_index(n, k, g.k, g.group);
    const int q_per_scale = g.group >= 16 ? 4 : g.group / 4;
    for (int q = 0; q < 4; ++q) {
      const std::uint8_t s = s_row[q / q_per_scale];
      if (fp8_is_nan(s)) *nan_seen = true;
      const std::int8_t* row = table + decode_table_index(s, 0);
      const std::uint32_t c4 = static_cast<std::uint32_t>(codes >> (16 * q));  // codes 4q..4q+3
      std::uint32_t w = 0;
      for (int j = 0; j < 4; ++j)  // code 4q+j: nibble j of c4 (low nibble first in each byte)
        w |= static_cast<std::uint32_t>(static_cast<std::uint8_t>(row[(c4 >> (4 * j)) & 15u])) << (8 * j);
      v.v[q] = w;
    }
  }
  store16(smem_b + ch.row * c.smem_stride() + ch.k, v);
  if constexpr (WriteWq) {
    if (chunk_in_bounds(n0, k0, ch, g.n, g.k)) store16(g.w_q_out + (n0 + ch.row) * g.k + k0 + ch.k, v);
  }
}

// ---- step 2: fragments (per lane) ---------------------------------------------------------------
W4A8_HD void load_frag_a(const TileConfig& c, const std::int8_t* smem_a, int warp, int lane, int mi, int ks,
                         std::uint32_t (&a)[4]) {
  for (int r = 0; r < 4; ++r)
    a[r] = load4(reinterpret_cast<const std::uint8_t*>(smem_a) + smem_a_offset(c, warp, lane, mi, ks, r));
}
W4A8_HD void load_frag_b(const TileConfig& c, const std::int8_t* smem_b, int warp, int lane, int ni, int ks,
                         std::uint32_t (&b)[2]) {
  for (int r = 0; r < 2; ++r)
    b[r] = load4(reinterpret_cast<const std::uint8_t*>(smem_b) + smem_b_offset(c, warp, lane, ni, ks, r));
}

// ---- step 3: epilogue of one accumulator --------------------------------------------------------
// out = epilogue_f32, rounded to the output dtype, then + bias (converted to the output dtype) with
// the sum rounded to the output dtype again (upstream adds the bias to the cast output).
W4A8_HD float finish_output(float f32_out, const GemmArgs& g, long long n) {
  float o = round_to_dtype(f32_out, g.out_dtype);
  if (g.bias) {
    const float b = round_to_dtype(load_as_f32(g.bias, n, g.bias_dtype), g.out_dtype);
    o = round_to_dtype(add_rn(o, b), g.out_dtype);
  }
  return o;
}
W4A8_HD void store_acc(const GemmArgs& g, long long m, long long n, std::int32_t acc) {
  if (!store_in_bounds(m, n, g.m, g.n)) return;
  if (g.acc_out) g.acc_out[m * g.n + n] = acc;
  const float o = finish_output(epilogue_f32(acc, g.x_scale[m], g.s_channel[n]), g, n);
  store_from_f32(g.out, m * g.ldo + n, g.out_dtype, o);
}

}  // namespace w4a8::kern
