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
  const std::int8_t* x_q = nullptr;      // x_q in fragment order (index_math.hpp), frag_chunks chunks
  long long frag_chunks = 0;             // frag_chunks(K)
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
  bool codes16 = false;                  // codes copied in 16-byte units (K % 32 == 0, 16-aligned, G >= 16)
  bool small_group = false;              // G < 16 (G = 4 or 8)
  long long kg = 0;                      // K / G
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

// Thread t's copies of every k tile: fragment-order x_q runs, packed-code units (16 bytes, or two
// 8-byte halves when rows are not 16-byte aligned: Codes16 false) and scale-window words, zero-filled
// outside the matrices (a refused copy reads nothing). Which bytes a thread copies repeats from tile
// to tile: its source pointers are set up once (rows past M or N point at a valid row and copy 0
// bytes) and step back one tile per issue, for the tiles go in DESCENDING k order (an integer sum
// does not care): the only tile that can end past K, the last one, is then a block's first, issued
// by the pipeline prologue with Full = false, and the main loop only ever issues full tiles.
// G >= 16 (SmallG false): the scale windows need at most kScaleSlots words a thread; G < 16: more,
// computed per tile.
template <TileKind Kind, bool SmallG, bool Codes16>
struct StageProducer {
  static constexpr int kAIters = tile_config(Kind).a_iters();
  static constexpr int kBIters = tile_config(Kind).code_iters();
  static constexpr int kCodeUnits = tile_config(Kind).bk / 32;                    // 16-byte units a row
  static constexpr int kRowsPerIter = tile_config(Kind).threads() / kCodeUnits;  // code rows per iteration
  static_assert(tile_config(Kind).threads() % kCodeUnits == 0 && kRowsPerIter % 2 == 0,
                "a thread keeps its unit and row parity (the code swizzle) in every iteration");
  static constexpr int kScaleSlots = scale_slots(tile_config(Kind));

  long long kt = 0;                    // the tile the next issue copies
  // Pointers are kept one tile ahead (at tile kt + 1): issue steps them back first.
  const std::int8_t* a_ptr[kAIters];   // x_q run of iteration it
  int a_bytes[kAIters];                // 16, or 0 for a row block past M
  int a_chunk[kAIters];                // chunk of the run within a tile
  const std::uint8_t* b_ptr[kBIters];  // code unit of iteration it
  int b_bytes[kBIters];                // 16, or 0 for a row past N
  int b_kk = 0;                        // k of the thread's unit within a tile
  int b_dst = 0;                       // its shared offset in iteration 0 (iteration it: + it * kRowsPerIter rows)
  // Scale slot s (word id = t + s T of the tile's windows), for the word of the window at group
  // g_lo: src = s_src + ((s_mis + g_lo) & ~3), with s_src = row start - s_mis + 4 (id % words)
  // (s_mis = row start % 4), and s_room - ((s_mis + g_lo) & ~3) bytes left before the end of s_rel
  // (capped; very negative when the row is past N or the word past the windows: copies nothing).
  const std::uint8_t* s_src[kScaleSlots];
  int s_mis[kScaleSlots];
  int s_room[kScaleSlots];

  W4A8_HD StageProducer(const GemmArgs& g, long long m0, long long n0, int t, long long kt_first) : kt(kt_first) {
    constexpr TileConfig C = tile_config(Kind);
    W4A8_UNROLL
    for (int it = 0; it < kAIters; ++it) {
      const int id = it * C.threads() + t, run = id / 128, u = id % 128;
      long long mb = m0 / kFragRows + run / C.chunks();
      a_bytes[it] = mb * kFragRows < g.m ? 16 : 0;
      if (!a_bytes[it]) mb = 0;  // a valid address; nothing is read
      a_chunk[it] = run % C.chunks();
      a_ptr[it] = g.x_q + (mb * g.frag_chunks + (kt + 1) * C.chunks() + a_chunk[it]) * kFragChunkBytes + 16 * u;
    }
    const Unit u0 = copy_unit(kCodeUnits, C.threads(), t, 0);
    b_kk = 32 * u0.unit;
    b_dst = code_smem_offset(C, u0.row, u0.unit);
    W4A8_UNROLL
    for (int it = 0; it < kBIters; ++it) {
      long long n = n0 + u0.row + it * kRowsPerIter;
      b_bytes[it] = n < g.n ? 16 : 0;
      if (!b_bytes[it]) n = g.n - 1;
      b_ptr[it] = g.weight + n * (g.k / 2) + (kt + 1) * (C.bk / 2) + 16 * u0.unit;
    }
    W4A8_UNROLL
    for (int s = 0; s < kScaleSlots; ++s) scale_slot(g, n0, t + s * C.threads(), s_src[s], s_mis[s], s_room[s]);
  }

  // Slot of word `id` (see above).
  W4A8_HD static void scale_slot(const GemmArgs& g, long long n0, int id, const std::uint8_t*& src, int& mis, int& room) {
    const int r = static_cast<int>(fast_div(static_cast<std::uint32_t>(id), g.words_div));
    const long long n = n0 + r, base = n * g.kg;
    const int w4 = 4 * (id - r * g.scale_words);
    const bool ok = n < g.n && id < tile_config(Kind).bn * g.scale_words;
    mis = static_cast<int>(base & 3);
    const long long left = g.s_rel_bytes - base + mis - w4;
    src = ok ? g.s_rel + base - mis + w4 : g.s_rel;
    room = ok ? static_cast<int>(left < (1 << 30) ? left : (1 << 30)) : -(1 << 30);
  }
  // One scale word of the tile whose first group is g_lo, trimmed at the end of s_rel.
  template <class Copy>
  W4A8_HD static void issue_scale_word(const GemmArgs& g, std::uint8_t* dst, const std::uint8_t* src, int mis, int room,
                                       int g_lo, Copy& cp) {
    const int off = (mis + g_lo) & ~3;
    const int left = room - off;
    const int bytes = left < 0 ? 0 : (left > 4 ? 4 : left);
    cp.copy4(dst, bytes ? src + off : g.s_rel, bytes);
  }

  // The copies of tile kt into `stage`, then kt - 1. Full: the tile ends at or before K.
  template <bool Full, class Copy>
  W4A8_HD void issue(const GemmArgs& g, std::uint8_t* stage, long long n0, int t, Copy& cp) {
    constexpr TileConfig C = tile_config(Kind);
    const long long k0 = kt * C.bk;
    W4A8_UNROLL
    for (int it = 0; it < kAIters; ++it) a_ptr[it] -= C.chunks() * kFragChunkBytes;
    W4A8_UNROLL
    for (int it = 0; it < kBIters; ++it) b_ptr[it] -= C.bk / 2;
    std::uint8_t* sa = stage;
    std::uint8_t* sb = stage + C.a_bytes() + b_dst;
    std::uint8_t* ss = stage + C.a_bytes() + C.code_bytes();
    W4A8_UNROLL
    for (int it = 0; it < kAIters; ++it) {
      const int id = it * C.threads() + t;
      std::uint8_t* dst = sa + (id / 128) * kFragChunkBytes + 16 * (id % 128);
      if constexpr (Full) {
        cp.copy16(dst, a_ptr[it], a_bytes[it]);
      } else {
        const bool ok = a_bytes[it] && kt * C.chunks() + a_chunk[it] < g.frag_chunks;
        cp.copy16(dst, ok ? a_ptr[it] : g.x_q, ok ? 16 : 0);
      }
    }
    W4A8_UNROLL
    for (int it = 0; it < kBIters; ++it) {
      std::uint8_t* dst = sb + it * kRowsPerIter * (C.bk / 2);
      if constexpr (Full && Codes16) {
        cp.copy16(dst, b_ptr[it], b_bytes[it]);
      } else {
        W4A8_UNROLL
        for (int h = 0; h < 2; ++h) {
          const bool ok = b_bytes[it] && (Full || k0 + b_kk + 16 * h < g.k);
          cp.copy8(dst + 8 * h, ok ? b_ptr[it] + 8 * h : g.weight, ok ? 8 : 0);
        }
      }
    }
    // Scale words: the window of each row starts at its group g_lo = k0 / G.
    const int g_lo = static_cast<int>(fast_div(static_cast<std::uint32_t>(k0), g.group_div));
    W4A8_UNROLL
    for (int s = 0; s < kScaleSlots; ++s)
      issue_scale_word(g, ss + 4 * (t + s * C.threads()), s_src[s], s_mis[s], s_room[s], g_lo, cp);
    if constexpr (SmallG) {
      for (int id = t + kScaleSlots * C.threads(); id < C.bn * g.scale_words; id += C.threads()) {
        const std::uint8_t* row;
        int mis, room;
        scale_slot(g, n0, id, row, mis, room);
        issue_scale_word(g, ss + 4 * id, row, mis, room, g_lo, cp);
      }
    }
    --kt;
  }
};

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
      std::uint32_t row16[FN][4];
      if constexpr (!SmallG) {
        W4A8_UNROLL
        for (int ni = 0; ni < FN; ++ni) table_row(table, ss[srow[ni] + grp[c][p]], row16[ni]);
      }
      W4A8_UNROLL
      for (int jj = 0; jj < 2; ++jj) {
        const int j = 2 * p + jj;
        // A operands of this k-step: one 16-byte load per 16-row block, already in register order.
        std::uint32_t a[FM][4];
        W4A8_UNROLL
        for (int mi = 0; mi < FM; ++mi) load16(a[mi], sa + a_frag_offset(C, warp_origin(C, warp).row / 16 + mi, c, j, lane));
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
          for (int mi = 0; mi < FM; ++mi) sink.mma(mi, ni, a[mi], b);
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
  const float bias = g.bias ? load_as_f32(g.bias, n, g.bias_dtype) : 0.f;
  store_as<Out>(g.out, m * g.ldo + n, gemm::finish_output_value(e, float_dtype(Out), g.bias != nullptr, bias));
}

// Calls f(m, n, acc) for each of the thread's accumulators whose output exists.
template <TileKind Kind, class F>
W4A8_HD void for_each_output(const GemmArgs& g, const std::int32_t (&acc)[tile_config(Kind).frags_m()]
                                                                        [tile_config(Kind).frags_n()][4],
                             long long m0, long long n0, int warp, int lane, F&& f) {
  constexpr TileConfig C = tile_config(Kind);
  W4A8_UNROLL
  for (int mi = 0; mi < C.frags_m(); ++mi)
    W4A8_UNROLL
    for (int ni = 0; ni < C.frags_n(); ++ni)
      W4A8_UNROLL
      for (int i = 0; i < 4; ++i) {
        const RowCol e = acc_element(C, warp, lane, mi, ni, i);
        const long long m = m0 + e.row, n = n0 + e.col;
        if (store_in_bounds(m, n, g.m, g.n)) f(m, n, acc[mi][ni][i]);
      }
}
// Split-K, first half: the thread's partial sums added into g.split_acc.
template <TileKind Kind>
W4A8_HD void add_partial_sums(const GemmArgs& g, const std::int32_t (&acc)[tile_config(Kind).frags_m()]
                                                                          [tile_config(Kind).frags_n()][4],
                              long long m0, long long n0, int warp, int lane) {
  for_each_output<Kind>(g, acc, m0, n0, warp, lane,
                        [&](long long m, long long n, std::int32_t v) { atomic_add_i32(&g.split_acc[m * g.n + n], v); });
}
// The thread's outputs: from its own accumulators (one split), or from the completed split sums.
template <TileKind Kind, w4a8_dtype Out>
W4A8_HD void store_tile(const GemmArgs& g, const std::int32_t (&acc)[tile_config(Kind).frags_m()]
                                                                    [tile_config(Kind).frags_n()][4],
                        long long m0, long long n0, int warp, int lane) {
  for_each_output<Kind>(g, acc, m0, n0, warp, lane, [&](long long m, long long n, std::int32_t v) {
    store_result<Out>(g, m, n, g.splits > 1 ? load_cg(&g.split_acc[m * g.n + n]) : v);
  });
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
