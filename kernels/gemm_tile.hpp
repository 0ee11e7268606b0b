// The fused W4A8 GEMM, split into the per-thread steps between its barriers. Each step is a
// function of (thread or lane, tile position) shared by the CUDA kernel (w4a8_gemm.cu runs them per
// thread) and the host emulation (emulate.cpp runs them for every thread of a block, barrier by
// barrier, with emulated cp.async groups and an emulated warp MMA), so both execute the same copies,
// shared loads, decode and accumulation.
//
// Per block: the decode table is copied into shared memory; stages of `bk` real k stream through a
// `stages`-deep cp.async pipeline (x_q, packed codes, the rows' group-scale windows); each warp
// reads its A fragments and its packed code words with 16-byte shared loads (the k permutation of
// index_math.hpp makes both natural-layout runs), decodes 4 codes at a time with byte permutes of
// the table row of their scale byte, and issues int8 MMAs. With split-K, each split adds its int32
// partial sums into an [M, N] workspace (exact in any order) and the last split of a tile runs the
// epilogue.
#pragma once

#include <cstdint>

#include "kernels/decode.hpp"
#include "kernels/dtype_io.hpp"
#include "kernels/tile_config.hpp"

namespace w4a8::kern {

// Operands of the integer-path GEMM as the kernel sees them (device pointers on the GPU) and the
// launch plan (prepare_gemm_plan in problem.cpp).
struct GemmArgs {
  long long m = 0, n = 0, k = 0;
  int group = 0;
  const std::int8_t* x_q = nullptr;      // [M, K], row stride k
  const float* x_scale = nullptr;        // [M]
  const std::uint8_t* weight = nullptr;  // packed [N, K/2]
  const std::uint8_t* s_rel = nullptr;   // [N, K/G], 4-byte aligned
  long long s_rel_bytes = 0;             // N * K/G
  const float* s_channel = nullptr;      // [N]
  const std::int8_t* table = nullptr;    // the decode table [256 * 16] in global memory
  const void* bias = nullptr;            // [N] or null
  w4a8_dtype bias_dtype = W4A8_DTYPE_F32;
  void* out = nullptr;                   // [M, N], row stride ldo
  w4a8_dtype out_dtype = W4A8_DTYPE_F32;
  long long ldo = 0;
  std::int32_t* acc_out = nullptr;       // [M, N] or null
  std::int8_t* w_q_out = nullptr;        // [N, K] decoded grid (decode kernel) or null
  // Plan:
  int splits = 1;                        // split-K factor (grid z)
  std::int32_t* split_acc = nullptr;     // [M, N] zeroed int32 sums (splits > 1)
  std::uint32_t* split_count = nullptr;  // [tiles] zeroed arrival counters (splits > 1)
  int scale_words = 0;                   // scale_words(bk, G)
  bool codes16 = false;                  // codes copied in 16-byte units (K % 32 == 0, 16-aligned)
  bool small_group = false;              // G < 16 (G = 4 or 8)
  int group_shift = 0;                   // log2 G when small_group
  std::uint32_t kg_mod4 = 0;             // (K / G) % 4
  FastDiv group_div;                     // x / G
  FastDiv group16_div;                   // x / (G / 16) when !small_group
  FastDiv words_div;                     // x / scale_words
};

// ---- memory helpers whose device form differs ------------------------------------------------------
W4A8_HD void atomic_add_i32(std::int32_t* p, std::int32_t v) {
#if defined(__CUDA_ARCH__)
  atomicAdd(p, v);
#else
  *p = static_cast<std::int32_t>(static_cast<std::uint32_t>(*p) + static_cast<std::uint32_t>(v));  // wraps
#endif
}
// A value other blocks wrote with atomics (read through L2, not a stale L1 line).
W4A8_HD std::int32_t load_cg(const std::int32_t* p) {
#if defined(__CUDA_ARCH__)
  return __ldcg(p);
#else
  return *p;
#endif
}
W4A8_HD std::uint32_t load_u32(const std::uint8_t* p) {
#if defined(__CUDA_ARCH__)
  return *reinterpret_cast<const std::uint32_t*>(p);
#else
  std::uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
#endif
}
W4A8_HD void store_u64(std::int8_t* p, std::uint32_t lo, std::uint32_t hi) {
#if defined(__CUDA_ARCH__)
  *reinterpret_cast<uint2*>(p) = make_uint2(lo, hi);
#else
  std::memcpy(p, &lo, 4);
  std::memcpy(p + 4, &hi, 4);
#endif
}

// ---- block prologue and stage producer (per thread) -------------------------------------------------
// Thread t's share of copying the call's decode table into shared memory (16-byte units t, t + T..).
template <TileKind Kind, class Copy>
W4A8_HD void issue_table(const GemmArgs& g, std::uint8_t* table, int t, Copy& cp) {
  constexpr TileConfig C = tile_config(Kind);
  const auto* src = reinterpret_cast<const std::uint8_t*>(g.table);
  for (int u = t; u < kDecodeTableBytes / 16; u += C.threads()) cp.copy16(table + 16 * u, src + 16 * u, 16);
}
// Issues thread t's copies of k tile kt into `stage`: x_q units, packed-code units and scale-window
// words, zero-filled outside the matrices (a refused copy reads nothing). Copy: copy16/copy8/copy4.
template <TileKind Kind, class Copy>
W4A8_HD void issue_stage(const GemmArgs& g, std::uint8_t* stage, long long kt, long long m0, long long n0, int t,
                         Copy& cp) {
  constexpr TileConfig C = tile_config(Kind);
  const long long k0 = kt * C.bk;
  std::uint8_t* sa = stage;
  std::uint8_t* sb = stage + C.a_bytes();
  std::uint8_t* ss = sb + C.code_bytes();
W4A8_UNROLL
  for (int it = 0; it < C.a_iters(); ++it) {
    const Unit u = copy_unit(C.bk / 16, C.threads(), t, it);
    const long long row = m0 + u.row, kk = k0 + 16 * u.unit;
    const bool ok = row < g.m && kk < g.k;
    cp.copy16(sa + a_smem_offset(C, u.row, u.unit), ok ? g.x_q + row * g.k + kk : g.x_q, ok ? 16 : 0);
  }
W4A8_UNROLL
  for (int it = 0; it < C.code_iters(); ++it) {
    const Unit u = copy_unit(C.bk / 32, C.threads(), t, it);
    const long long n = n0 + u.row, kk = k0 + 32 * u.unit;  // codes of real k [kk, kk + 32)
    const std::uint8_t* src = g.weight + n * (g.k / 2) + kk / 2;
    std::uint8_t* dst = sb + code_smem_offset(C, u.row, u.unit);
    if (g.codes16) {
      const bool ok = n < g.n && kk < g.k;
      cp.copy16(dst, ok ? src : g.weight, ok ? 16 : 0);
    } else {
      for (int h = 0; h < 2; ++h) {
        const bool ok = n < g.n && kk + 16 * h < g.k;
        cp.copy8(dst + 8 * h, ok ? src + 8 * h : g.weight, ok ? 8 : 0);
      }
    }
  }
  const long long g_lo = fast_div(static_cast<std::uint32_t>(k0), g.group_div);
  const long long kg = g.k / g.group;
  const int words = g.scale_words, total = C.bn * words;
  for (int id = t; id < total; id += C.threads()) {
    const int row = static_cast<int>(fast_div(static_cast<std::uint32_t>(id), g.words_div));
    const int w = id - row * words;
    const long long n = n0 + row;
    const long long byte = ((n * kg + g_lo) & ~3LL) + 4 * w;
    const long long rem = g.s_rel_bytes - byte;
    const int bytes = n >= g.n || rem <= 0 ? 0 : (rem >= 4 ? 4 : static_cast<int>(rem));
    cp.copy4(ss + 4 * id, bytes ? g.s_rel + byte : g.s_rel, bytes);
  }
}

// ---- stage consumer (per lane) ---------------------------------------------------------------------
// Lane `lane` of warp `warp` over the stage of k tile kt: all its MMAs, reported to sink.mma(mi, ni,
// a, b) in k order. SmallG: G = 4 or 8 (each 4 codes of a word may have their own scale); else G is
// a multiple of 16 (the 8 codes of a word share one).
template <TileKind Kind, bool SmallG, class Sink>
W4A8_HD void compute_stage(const GemmArgs& g, const std::uint8_t* stage, const std::uint8_t* table, long long kt,
                           long long n0, int warp, int lane, Sink& sink) {
  constexpr TileConfig C = tile_config(Kind);
  constexpr int FM = C.frags_m(), FN = C.frags_n();
  const std::uint8_t* sa = stage;
  const std::uint8_t* sb = stage + C.a_bytes();
  const std::uint8_t* ss = sb + C.code_bytes();
  const int tig = thread_in_group(lane);
  const std::uint32_t k0 = static_cast<std::uint32_t>(kt * C.bk);
  const std::uint32_t g_lo = fast_div(k0, g.group_div);
  // Byte of the lane's row in the scale tile for group g_lo: window start + (n * K/G + g_lo) % 4.
  int srow[FN];
W4A8_UNROLL
  for (int ni = 0; ni < FN; ++ni) {
    const int row = b_frag_row(C, warp, lane, ni);
    const std::uint32_t n = static_cast<std::uint32_t>(n0 + row);
    srow[ni] = row * 4 * g.scale_words + static_cast<int>((n * g.kg_mod4 + g_lo) & 3u);
  }
  // G >= 16: the group of the lane's 16-k block (chunk c, k-step pair p), relative to g_lo.
  std::uint32_t grp[C.chunks()][2];
  if constexpr (!SmallG) {
W4A8_UNROLL
    for (int c = 0; c < C.chunks(); ++c)
W4A8_UNROLL
      for (int p = 0; p < 2; ++p)
        grp[c][p] = fast_div(k0 / 16 + static_cast<std::uint32_t>(8 * c + 2 * tig + p), g.group16_div) - g_lo;
  }
W4A8_UNROLL
  for (int c = 0; c < C.chunks(); ++c) {
    std::uint32_t codes[FN][4];
W4A8_UNROLL
    for (int ni = 0; ni < FN; ++ni)
      load16(codes[ni], sb + code_smem_offset(C, b_frag_row(C, warp, lane, ni), b_frag_unit(lane, c)));
W4A8_UNROLL
    for (int p = 0; p < 2; ++p) {
      std::uint32_t a[FM][2][4];
W4A8_UNROLL
      for (int mi = 0; mi < FM; ++mi)
W4A8_UNROLL
        for (int h = 0; h < 2; ++h)
          load16(a[mi][h], sa + a_smem_offset(C, a_frag_row(C, warp, lane, mi, h), a_frag_unit(lane, c, p)));
      std::uint32_t row16[FN][4];
      if constexpr (!SmallG) {
W4A8_UNROLL
        for (int ni = 0; ni < FN; ++ni) table_row(table, ss[srow[ni] + grp[c][p]], row16[ni]);
      }
W4A8_UNROLL
      for (int jj = 0; jj < 2; ++jj) {
        const int j = 2 * p + jj;
W4A8_UNROLL
        for (int ni = 0; ni < FN; ++ni) {
          std::uint32_t b[2];
          if constexpr (SmallG) {
W4A8_UNROLL
            for (int r = 0; r < 2; ++r) {
              std::uint32_t row4[4];
              table_row(table, ss[srow[ni] + (kperm_first(c, j, tig, r) >> g.group_shift)], row4);
              b[r] = decode4(codes[ni][j] >> (16 * r), row4);
            }
          } else {
            decode8(codes[ni][j], row16[ni], b);
          }
W4A8_UNROLL
          for (int mi = 0; mi < FM; ++mi) {
            const std::uint32_t af[4] = {a[mi][0][2 * jj], a[mi][1][2 * jj], a[mi][0][2 * jj + 1], a[mi][1][2 * jj + 1]};
            sink.mma(mi, ni, af, b);
          }
        }
      }
    }
  }
}

// ---- epilogue ------------------------------------------------------------------------------------------
// out[m, n] from the int32 sum: upstream's order (numerics.hpp epilogue + finish_output), then the
// optional acc intermediate. One instantiation per output dtype.
template <w4a8_dtype Out>
W4A8_HD void store_result(const GemmArgs& g, long long m, long long n, std::int32_t acc) {
  if (g.acc_out) g.acc_out[m * g.n + n] = acc;
  const float e = gemm::epilogue(acc, g.x_scale[m], g.s_channel[n]);
  float bias = 0.f;
  if (g.bias) bias = load_as_f32(g.bias, n, g.bias_dtype);
  store_as<Out>(g.out, m * g.ldo + n, gemm::finish_output(e, float_dtype(Out), g.bias ? &bias : nullptr));
}

// Split-K, first half: thread's in-bounds partial sums added into g.split_acc.
template <TileKind Kind>
W4A8_HD void add_partial_sums(const GemmArgs& g, const std::int32_t (&acc)[tile_config(Kind).frags_m()]
                                                                          [tile_config(Kind).frags_n()][4],
                              long long m0, long long n0, int warp, int lane) {
  constexpr TileConfig C = tile_config(Kind);
W4A8_UNROLL
  for (int mi = 0; mi < C.frags_m(); ++mi)
W4A8_UNROLL
    for (int ni = 0; ni < C.frags_n(); ++ni)
W4A8_UNROLL
      for (int i = 0; i < 4; ++i) {
        const RowCol e = acc_element(C, warp, lane, mi, ni, i);
        const long long m = m0 + e.row, n = n0 + e.col;
        if (store_in_bounds(m, n, g.m, g.n)) atomic_add_i32(&g.split_acc[m * g.n + n], acc[mi][ni][i]);
      }
}
// The thread's outputs: from its own accumulators (one split), or from the completed split sums.
template <TileKind Kind, w4a8_dtype Out>
W4A8_HD void store_tile(const GemmArgs& g, const std::int32_t (&acc)[tile_config(Kind).frags_m()]
                                                                    [tile_config(Kind).frags_n()][4],
                        long long m0, long long n0, int warp, int lane) {
  constexpr TileConfig C = tile_config(Kind);
W4A8_UNROLL
  for (int mi = 0; mi < C.frags_m(); ++mi)
W4A8_UNROLL
    for (int ni = 0; ni < C.frags_n(); ++ni)
W4A8_UNROLL
      for (int i = 0; i < 4; ++i) {
        const RowCol e = acc_element(C, warp, lane, mi, ni, i);
        const long long m = m0 + e.row, n = n0 + e.col;
        if (!store_in_bounds(m, n, g.m, g.n)) continue;
        store_result<Out>(g, m, n, g.splits > 1 ? load_cg(&g.split_acc[m * g.n + n]) : acc[mi][ni][i]);
      }
}
// The same with the output dtype chosen at run time (one switch per block).
template <TileKind Kind>
W4A8_HD void store_tile_any(const GemmArgs& g, const std::int32_t (&acc)[tile_config(Kind).frags_m()]
                                                                        [tile_config(Kind).frags_n()][4],
                            long long m0, long long n0, int warp, int lane) {
  if (g.out_dtype == W4A8_DTYPE_BF16) store_tile<Kind, W4A8_DTYPE_BF16>(g, acc, m0, n0, warp, lane);
  else if (g.out_dtype == W4A8_DTYPE_F16) store_tile<Kind, W4A8_DTYPE_F16>(g, acc, m0, n0, warp, lane);
  else store_tile<Kind, W4A8_DTYPE_F32>(g, acc, m0, n0, warp, lane);
}

// ---- side kernels' steps -------------------------------------------------------------------------------
// w_q intermediate: the 8 decoded values of packed word `word` (k = 8 word .. 8 word + 7) of row n,
// through the same table rows and decode4 as the GEMM. 8-byte store into g.w_q_out.
W4A8_HD void decode_wq_word(const GemmArgs& g, const std::uint8_t* table, long long n, long long word) {
  const std::uint32_t codes = load_u32(g.weight + n * (g.k / 2) + 4 * word);
  std::uint32_t out[2];
  for (int r = 0; r < 2; ++r) {
    const long long k = 8 * word + 4 * r;
    std::uint32_t row[4];
    table_row(table, g.s_rel[s_rel_index(n, k, g.k, g.group)], row);
    out[r] = decode4(codes >> (16 * r), row);
  }
  store_u64(g.w_q_out + n * g.k + 8 * word, out[0], out[1]);
}

}  // namespace w4a8::kern
