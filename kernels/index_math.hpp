// Index math of the W4A8 CUDA kernels, written once for host and device (CuTe's CUTE_HOST_DEVICE
// idea): which thread loads which bytes, the mma.sync m16n8k32 s8 fragment layouts (PTX ISA
// "Matrix Fragments for mma.m16n8k32"), tile coverage and edge predicates. The kernels and the host
// emulation (emulate.cpp) call exactly these functions; tests/kernels/ walks them exhaustively.
#pragma once

#include <cstdint>

#include "core/hd.hpp"

namespace w4a8::kern {

// ---- mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 ------------------------------------------
inline constexpr int kWarp = 32;
inline constexpr int kMmaM = 16, kMmaN = 8, kMmaK = 32;
inline constexpr int kAElems = 16;  // s8 elements of A a lane holds (4 x .b32)
inline constexpr int kBElems = 8;   // s8 elements of B a lane holds (2 x .b32)
inline constexpr int kCElems = 4;   // s32 accumulators a lane holds

struct RowCol {
  int row;
  int col;
};
W4A8_HD constexpr bool operator==(const RowCol& a, const RowCol& b) { return a.row == b.row && a.col == b.col; }

W4A8_HD constexpr int group_id(int lane) { return lane >> 2; }
W4A8_HD constexpr int thread_in_group(int lane) { return lane & 3; }

// A is 16 x 32 (row = m, col = k). post: every (row, col) is held by exactly one (lane, i).
W4A8_HD constexpr RowCol mma_a(int lane, int i) {
  const int row = group_id(lane) + (((i >> 2) & 1) ? 8 : 0);  // a0-3, a8-11: groupID; else +8
  const int col = thread_in_group(lane) * 4 + (i & 3) + (i >= 8 ? 16 : 0);
  return {row, col};
}
// B is 32 x 8 (row = k, col = n), stored "col": element (k, n) at n * 32 + k.
W4A8_HD constexpr RowCol mma_b(int lane, int i) {
  const int row = thread_in_group(lane) * 4 + (i & 3) + (i >= 4 ? 16 : 0);
  return {row, group_id(lane)};
}
// C/D is 16 x 8 (row = m, col = n).
W4A8_HD constexpr RowCol mma_c(int lane, int i) {
  return {group_id(lane) + (i >= 2 ? 8 : 0), thread_in_group(lane) * 2 + (i & 1)};
}

// Register r of A holds a[4r..4r+3]: one row, four consecutive k (one 32-bit shared-memory load).
static_assert(mma_a(5, 4).col == mma_a(5, 5).col - 1 && mma_a(5, 4).row == mma_a(5, 7).row);
static_assert(mma_b(9, 4).row + 3 == mma_b(9, 7).row && mma_b(9, 4).col == mma_b(9, 7).col);
static_assert(mma_c(31, 3).row == 15 && mma_c(31, 3).col == 7);

// ---- tiles --------------------------------------------------------------------------------------
// A block computes a bm x bn output tile, stepping through K bk bytes at a time; its warps form a
// warps_m x warps_n grid of (bm / warps_m) x (bn / warps_n) warp tiles made of 16 x 8 MMA tiles.
struct TileConfig {
  int bm, bn, bk, warps_m, warps_n;

  W4A8_HD constexpr int threads() const { return warps_m * warps_n * kWarp; }
  W4A8_HD constexpr int warp_tile_m() const { return bm / warps_m; }
  W4A8_HD constexpr int warp_tile_n() const { return bn / warps_n; }
  W4A8_HD constexpr int frags_m() const { return warp_tile_m() / kMmaM; }
  W4A8_HD constexpr int frags_n() const { return warp_tile_n() / kMmaN; }
  W4A8_HD constexpr int k_steps() const { return bk / kMmaK; }
  // Shared rows are padded by 16 bytes so 16-byte stores stay aligned and the 8 rows x 4 words of a
  // fragment load fall in 32 distinct banks (tests check this for every config).
  W4A8_HD constexpr int smem_stride() const { return bk + 16; }
  W4A8_HD constexpr int a_chunks() const { return bm * bk / 16; }  // 16-byte chunks of the A tile
  W4A8_HD constexpr int b_chunks() const { return bn * bk / 16; }  // 16 decoded codes each
  W4A8_HD constexpr int a_iters() const { return a_chunks() / threads(); }
  W4A8_HD constexpr int b_iters() const { return b_chunks() / threads(); }
  W4A8_HD constexpr int smem_a_bytes() const { return bm * smem_stride(); }
  W4A8_HD constexpr int smem_b_bytes() const { return bn * smem_stride(); }
  W4A8_HD constexpr bool valid() const {
    return bm > 0 && bn > 0 && bk > 0 && warps_m > 0 && warps_n > 0 && bm % (warps_m * kMmaM) == 0 &&
           bn % (warps_n * kMmaN) == 0 && bk % kMmaK == 0 && a_chunks() % threads() == 0 &&
           b_chunks() % threads() == 0 && smem_stride() % 16 == 0;
  }
};

// Position of a 16-byte chunk inside a tile: row (m for A, n for B) and k offset (multiple of 16).
struct Chunk {
  int row;
  int k;
};
W4A8_HD constexpr bool operator==(const Chunk& a, const Chunk& b) { return a.row == b.row && a.k == b.k; }

// Chunk loaded by thread t in iteration it; consecutive threads take consecutive k of one row so a
// warp reads long contiguous runs. post: over t < threads, it < iters, each chunk exactly once.
W4A8_HD constexpr Chunk tile_chunk(const TileConfig& c, int t, int it) {
  const int id = it * c.threads() + t;
  const int per_row = c.bk / 16;
  return {id / per_row, (id % per_row) * 16};
}

// Warp w's tile origin inside the block tile.
W4A8_HD constexpr RowCol warp_origin(const TileConfig& c, int warp) {
  return {(warp % c.warps_m) * c.warp_tile_m(), (warp / c.warps_m) * c.warp_tile_n()};
}

// Output element of accumulator (mi, ni, i) of lane `lane` in warp `warp`, block-tile relative.
W4A8_HD constexpr RowCol acc_element(const TileConfig& c, int warp, int lane, int mi, int ni, int i) {
  const RowCol o = warp_origin(c, warp);
  const RowCol e = mma_c(lane, i);
  return {o.row + mi * kMmaM + e.row, o.col + ni * kMmaN + e.col};
}

// Byte offset in the padded shared tile of register r (0..3) of the A fragment (mi, ks).
W4A8_HD constexpr int smem_a_offset(const TileConfig& c, int warp, int lane, int mi, int ks, int r) {
  const RowCol e = mma_a(lane, 4 * r);
  return (warp_origin(c, warp).row + mi * kMmaM + e.row) * c.smem_stride() + ks * kMmaK + e.col;
}
// Byte offset of register r (0..1) of the B fragment (ni, ks); B rows are n, so k is contiguous.
W4A8_HD constexpr int smem_b_offset(const TileConfig& c, int warp, int lane, int ni, int ks, int r) {
  const RowCol e = mma_b(lane, 4 * r);
  return (warp_origin(c, warp).col + ni * kMmaN + e.col) * c.smem_stride() + ks * kMmaK + e.row;
}

// ---- grid and edge predicates -------------------------------------------------------------------
W4A8_HD constexpr long long ceil_div(long long a, long long b) { return (a + b - 1) / b; }

// A chunk is loaded iff its row exists and its 16 k values lie inside K (K % 16 == 0, so a chunk
// is either wholly inside or wholly outside); otherwise the shared tile gets zeros.
W4A8_HD constexpr bool chunk_in_bounds(long long row0, long long k0, const Chunk& ch, long long rows,
                                       long long k) {
  return row0 + ch.row < rows && k0 + ch.k < k;
}
// Output element (m, n) is stored iff it exists.
W4A8_HD constexpr bool store_in_bounds(long long m, long long n, long long rows, long long cols) {
  return m < rows && n < cols;
}

// ---- weight decode addressing ---------------------------------------------------------------------
// Packed codes: element 2i in the low nibble of byte i, 2i+1 in the high nibble.
W4A8_HD constexpr int nibble(std::uint8_t byte, int which) { return which ? (byte >> 4) : (byte & 15); }
// Index into s_rel [N, K/G] for weight element (n, k).
W4A8_HD constexpr long long s_rel_index(long long n, long long k, long long k_total, int group) {
  return n * (k_total / group) + k / group;
}

// ---- activation kernel (one block per row) --------------------------------------------------------
inline constexpr int kActThreads = 256;

// ConvRot stage of stride s (1, 4, ..., R/4) on a row of K floats holds K/4 independent 4-point
// butterflies; butterfly b touches first + {0, s, 2s, 3s}. Threads take b = t, t + threads, ...
// post: for fixed (r, s), the 4 * (k / 4) touched indices cover [0, k) exactly once.
W4A8_HD constexpr long long butterfly_first(long long b, long long r, long long s) {
  const long long per_block = r / 4;                   // butterflies in one length-R block
  const long long block = b / per_block, w = b % per_block;
  return block * r + (w / s) * 4 * s + (w % s);
}

}  // namespace w4a8::kern
