// Index math of the W4A8 CUDA kernels, written once for host and device (CuTe's CUTE_HOST_DEVICE
// idea): the mma.sync m16n8k32 s8 fragment layouts (PTX ISA "Matrix Fragments for mma.m16n8k32"),
// the k permutation that lets both operands be read straight from the natural packed layout, the
// shared-memory layouts of a pipeline stage and their swizzles, which thread copies which bytes,
// split-K partitions and a division by a runtime constant without a divide instruction. The
// kernels and the host emulation (emulate.cpp) call exactly these functions; tests/kernels/ walks
// them exhaustively.
#pragma once

#include <cstdint>

#include "core/hd.hpp"

// Full unrolling of fixed-trip loops in device code (register arrays stay in registers).
#if defined(__CUDACC__)
#define W4A8_UNROLL _Pragma("unroll")
#else
#define W4A8_UNROLL
#endif

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

static_assert(mma_a(5, 4).col == mma_a(5, 5).col - 1 && mma_a(5, 4).row == mma_a(5, 7).row);
static_assert(mma_b(9, 4).row + 3 == mma_b(9, 7).row && mma_b(9, 4).col == mma_b(9, 7).col);
static_assert(mma_c(31, 3).row == 15 && mma_c(31, 3).col == 7);

// ---- the k permutation -----------------------------------------------------------------------------
// An integer dot product does not depend on the order of its terms, so the 32 k slots of one mma
// may hold any 32 real k, as long as A and B agree. Within a 128-k chunk c of a stage, mma k-step j
// (0..3) gives lane (gid, tig) the 8 CONSECUTIVE real k = 128c + 32 tig + 8j + [0, 8): register r
// (b[r] for B; a[2r], a[2r+1] for A) holds 4 of them. Those 8 codes are one little-endian 32-bit
// word of the natural packed row (nibble q = k + q), and the 8 x_q bytes are one 8-byte run, so no
// per-layer repacking of the weight is needed and one 16-byte shared load serves 4 k-steps.
inline constexpr int kChunkK = 128;  // real k per chunk
W4A8_HD constexpr int kperm_first(int c, int j, int tig, int r) { return kChunkK * c + 32 * tig + 8 * j + 4 * r; }
// Real k (stage-local) of mma k index kk (0..31: B row / A column) of k-step j in chunk c.
// post: for fixed (c, j), a bijection of [0, 32) onto {128c + 8j + 32 t + [0, 8) : t < 4}; over
// j < 4 these sets tile [128c, 128c + 128).
W4A8_HD constexpr int kperm(int c, int j, int kk) {
  return kperm_first(c, j, (kk & 15) >> 2, kk >> 4) + (kk & 3);
}
static_assert(kperm(0, 0, 0) == 0 && kperm(0, 0, 4) == 32 && kperm(0, 0, 16) == 4 && kperm(1, 3, 31) == 128 + 96 + 24 + 7);

// ---- tiles -------------------------------------------------------------------------------------------
// A block computes a bm x bn output tile over its k range, bk real k per pipeline stage (a multiple
// of 128), `stages` stages in flight. Its warps form a warps_m x warps_n grid of warp tiles made of
// 16 x 8 MMA tiles.
struct TileConfig {
  int bm, bn, bk, warps_m, warps_n, stages;

  W4A8_HD constexpr int threads() const { return warps_m * warps_n * kWarp; }
  W4A8_HD constexpr int warp_tile_m() const { return bm / warps_m; }
  W4A8_HD constexpr int warp_tile_n() const { return bn / warps_n; }
  W4A8_HD constexpr int frags_m() const { return warp_tile_m() / kMmaM; }
  W4A8_HD constexpr int frags_n() const { return warp_tile_n() / kMmaN; }
  W4A8_HD constexpr int chunks() const { return bk / kChunkK; }
  W4A8_HD constexpr int k_steps() const { return bk / kMmaK; }
  // Shared bytes of one stage's operands (no padding: swizzles avoid bank conflicts).
  W4A8_HD constexpr int a_bytes() const { return bm * bk; }
  W4A8_HD constexpr int code_bytes() const { return bn * bk / 2; }
  // 16-byte copies per stage and per thread.
  W4A8_HD constexpr int a_copies() const { return bm * bk / 16; }
  W4A8_HD constexpr int code_copies() const { return bn * bk / 32; }
  W4A8_HD constexpr int a_iters() const { return (a_copies() + threads() - 1) / threads(); }
  W4A8_HD constexpr int code_iters() const { return (code_copies() + threads() - 1) / threads(); }
  W4A8_HD constexpr bool valid() const {
    return bm > 0 && bn > 0 && warps_m > 0 && warps_n > 0 && stages >= 2 && bk >= kChunkK && bk % kChunkK == 0 &&
           bm % (warps_m * kMmaM) == 0 && bn % (warps_n * kMmaN) == 0 && a_copies() % threads() == 0 &&
           code_copies() % threads() == 0 && threads() == 128;
  }
};

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

// ---- the GEMM's x_q layout: fragment order ------------------------------------------------------------
// The prologue writes x_q for the GEMM in the order the MMA's A registers want it: per 16-row block
// mb and 128-k chunk c, 4 k-steps j of 32 lanes x 16 bytes, where lane (gid, tig)'s 16 bytes are its
// registers a0..a3 of k-step j: a0 / a2 from row gid, a1 / a3 from row gid + 8, each 4 of the real k
// kperm names (a0, a1: 128c + 32 tig + 8j + [0, 4); a2, a3: the next 4). One 16-byte shared load
// then yields one MMA's whole A operand, already in register order. Rows are padded to 16 and k to
// 128 with zeros.
inline constexpr int kFragRows = 16;
inline constexpr int kFragChunkBytes = kFragRows * kChunkK;  // 2048
W4A8_HD constexpr long long frag_rows(long long m) { return (m + kFragRows - 1) / kFragRows * kFragRows; }
W4A8_HD constexpr long long frag_chunks(long long k) { return (k + kChunkK - 1) / kChunkK; }
// Byte of x_q[m, k] in fragment order (chunks = frag_chunks(K)).
// post: a bijection of [0, frag_rows(M)) x [0, 128 chunks) onto [0, frag_rows(M) * 128 chunks); the
// 4 bytes k .. k + 3 (k % 4 == 0) are consecutive.
W4A8_HD constexpr long long xq_frag_offset(long long m, long long k, long long chunks) {
  const long long mb = m / kFragRows, c = k / kChunkK;
  const int r = static_cast<int>(m % kFragRows), kl = static_cast<int>(k % kChunkK);
  const int tig = kl / 32, j = (kl % 32) / 8, h = (kl % 8) / 4, i = kl % 4;
  const int lane = (r % 8) * 4 + tig, q = r / 8 + 2 * h;
  return ((mb * chunks + c) * 4 + j) * 512 + lane * 16 + q * 4 + i;
}
static_assert(xq_frag_offset(8, 4, 1) == 12 && xq_frag_offset(1, 32, 1) == 5 * 16 && xq_frag_offset(0, 8, 1) == 512);

// ---- shared-memory layout of one stage -------------------------------------------------------------
// A tile: (bm / 16) blocks x chunks() x 2048 bytes, a verbatim copy of the fragment-order runs
// (block-major); 16-byte unit u of run b comes from global run (m0 / 16 + b / chunks(), k chunk
// kt * chunks() + b % chunks()). A warp's fragment load reads 512 contiguous bytes: no conflicts.
W4A8_HD constexpr int a_frag_offset(const TileConfig& c, int block, int chunk, int j, int lane) {
  return ((block * c.chunks() + chunk) * 4 + j) * 512 + lane * 16;
}
// Code tile: bn rows of bk/2 packed bytes (bk/32 units of 32 codes). With 8 or more units a row,
// unit u of row r is stored at u ^ 4(r & 1) so rows 2q and 2q+1 fall in opposite halves of the
// 128-byte bank window; with 4 units (64-byte rows) they already do.
W4A8_HD constexpr int code_unit_swizzle(const TileConfig& c, int row, int unit) {
  return (c.bk / 32) >= 8 ? unit ^ ((row & 1) << 2) : unit;
}
W4A8_HD constexpr int code_smem_offset(const TileConfig& c, int row, int unit) {
  return row * (c.bk / 2) + 16 * code_unit_swizzle(c, row, unit);
}

// Which 16-byte unit thread t copies in iteration it (consecutive threads: consecutive units of a
// row, so a warp reads long contiguous runs). Invalid (past the tile) when row >= rows.
struct Unit {
  int row;
  int unit;
};
W4A8_HD constexpr Unit copy_unit(int units_per_row, int threads, int t, int it) {
  const int id = it * threads + t;
  return {id / units_per_row, id % units_per_row};
}

// The lane's code load in the consumer: unit of (ni, chunk c); rows block-tile relative.
W4A8_HD constexpr int b_frag_row(const TileConfig& c, int warp, int lane, int ni) {
  return warp_origin(c, warp).col + ni * kMmaN + group_id(lane);
}
W4A8_HD constexpr int b_frag_unit(int lane, int chunk) { return 4 * chunk + thread_in_group(lane); }

// ---- group scales of a stage -------------------------------------------------------------------------
// The stage starting at k0 uses groups g_lo = k0 / G .. (k0 + bk - 1) / G of each row: at most
// max_groups bytes, starting at byte a = n * (K/G) + g_lo of s_rel (any alignment). Each row's window
// is copied as `scale_words` 4-byte words from a & ~3 (s_rel is 4-byte aligned), so the byte of
// group g sits at a % 4 + (g - g_lo).
W4A8_HD constexpr int max_groups(int bk, long long g) { return int((bk - 1) / g) + 2; }
W4A8_HD constexpr int scale_words(int bk, long long g) { return (3 + max_groups(bk, g) + 3) / 4; }
// Scale words every thread copies in every tile (the widest window of G >= 16, that of G = 16,
// spread over the threads); G < 16 copies more.
W4A8_HD constexpr int scale_slots(const TileConfig& c) {
  return (c.bn * scale_words(c.bk, 16) + c.threads() - 1) / c.threads();
}
// Bytes of one stage: A, codes, then the scale windows (bn rows of 4 * words, at least the slots
// every thread writes), 16-byte aligned.
W4A8_HD constexpr int scale_tile_bytes(const TileConfig& c, int words) {
  const int windows = c.bn * 4 * words, slots = 4 * c.threads() * scale_slots(c);
  return ((windows > slots ? windows : slots) + 15) / 16 * 16;
}
W4A8_HD constexpr int stage_bytes(const TileConfig& c, int words) {
  return c.a_bytes() + c.code_bytes() + scale_tile_bytes(c, words);
}

// ---- the decode table -------------------------------------------------------------------------------
// One int8 per (scale byte, code), 256 rows of 16, built once per call in global memory and copied
// into each block's shared memory; row s is the 16 decoded values of scale byte s.
inline constexpr int kDecodeTableBytes = 256 * 16;
W4A8_HD constexpr int decode_table_index(int scale_byte, int code) { return scale_byte * 16 + code; }
// Dynamic shared memory of a GEMM block: the table, then `stages` stages.
W4A8_HD constexpr int gemm_smem_bytes(const TileConfig& c, int words) {
  return kDecodeTableBytes + c.stages * stage_bytes(c, words);
}

// ---- division by a runtime constant -----------------------------------------------------------------
// q = x / d for 0 <= x < 2^31 as one multiply-high and a shift (Granlund-Montgomery with 31-bit
// dividends): l = ceil(log2 d), m = ceil(2^(31+l) / d) < 2^32, q = (x * m) >> (31 + l).
// post: fast_div(x, make_fast_div(d)) == x / d for all 0 <= x < 2^31, 1 <= d < 2^31.
struct FastDiv {
  std::uint32_t mul = 0;  // 0: d == 1
  int shift = 0;          // l - 1 (applied after the high 32 bits)
};
W4A8_HD constexpr FastDiv make_fast_div(std::uint32_t d) {
  if (d <= 1) return {0u, 0};
  int l = 0;
  while ((std::uint64_t(1) << l) < d) ++l;
  const std::uint64_t m = ((std::uint64_t(1) << (31 + l)) + d - 1) / d;
  return {std::uint32_t(m), l - 1};
}
W4A8_HD constexpr std::uint32_t mul_hi(std::uint32_t a, std::uint32_t b) {
  return std::uint32_t((std::uint64_t(a) * b) >> 32);
}
W4A8_HD std::uint32_t fast_div(std::uint32_t x, const FastDiv& f) {
#if defined(__CUDA_ARCH__)
  return f.mul ? (__umulhi(x, f.mul) >> f.shift) : x;
#else
  return f.mul ? (mul_hi(x, f.mul) >> f.shift) : x;
#endif
}
static_assert(make_fast_div(16).mul == 0x80000000u && make_fast_div(16).shift == 3);

// ---- split-K ------------------------------------------------------------------------------------------
// Split z of `splits` takes k tiles [split_begin(z), split_begin(z + 1)).
// post: the ranges partition [0, tiles) in order; each is non-empty when splits <= tiles.
W4A8_HD constexpr long long split_begin(long long tiles, int splits, int z) { return tiles * z / splits; }

// ---- grid and edge predicates -------------------------------------------------------------------
W4A8_HD constexpr long long ceil_div(long long a, long long b) { return (a + b - 1) / b; }
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
