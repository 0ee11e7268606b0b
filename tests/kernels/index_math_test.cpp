// Exhaustive host checks of the kernels' index math (kernels/index_math.hpp, tile_config.hpp).
// Laws are numbered after the post: lines they check.
#include <gtest/gtest.h>

#include <array>
#include <cstring>
#include <random>
#include <set>
#include <vector>

#include "kernels/emulate.hpp"
#include "kernels/index_math.hpp"
#include "kernels/kernel_numerics.hpp"
#include "kernels/problem.hpp"
#include "kernels/tile_config.hpp"

namespace w4a8::kern {
namespace {

// ---- 1. mma.m16n8k32 .s8 fragments against the PTX ISA text ---------------------------------------
// Transcribed from PTX ISA 9.7.14.5.10 "Matrix Fragments for mma.m16n8k32" (.s8/.u8), as written
// there (conditions spelled as in the text, independently of index_math.hpp's bit tricks).
RowCol isa_a(int laneid, int i) {
  const int groupID = laneid >> 2, threadID_in_group = laneid % 4;
  const int row = ((0 <= i && i < 4) || (8 <= i && i < 12)) ? groupID : groupID + 8;
  const int col = i < 8 ? (threadID_in_group * 4) + (i & 0x3) : (threadID_in_group * 4) + (i & 0x3) + 16;
  return {row, col};
}
RowCol isa_b(int laneid, int i) {
  const int groupID = laneid >> 2, threadID_in_group = laneid % 4;
  const int row = i < 4 ? (threadID_in_group * 4) + (i & 0x3) : (threadID_in_group * 4) + (i & 0x3) + 16;
  return {row, groupID};
}
RowCol isa_c(int laneid, int i) {
  const int groupID = laneid >> 2, threadID_in_group = laneid % 4;
  return {i < 2 ? groupID : groupID + 8, (threadID_in_group * 2) + (i & 0x1)};
}

TEST(MmaFragments, MatchIsaFormulas) {
  for (int lane = 0; lane < 32; ++lane) {
    for (int i = 0; i < 16; ++i) EXPECT_EQ(mma_a(lane, i), isa_a(lane, i)) << lane << " a" << i;
    for (int i = 0; i < 8; ++i) EXPECT_EQ(mma_b(lane, i), isa_b(lane, i)) << lane << " b" << i;
    for (int i = 0; i < 4; ++i) EXPECT_EQ(mma_c(lane, i), isa_c(lane, i)) << lane << " c" << i;
  }
}

// Hand-read from the ISA's figures: a few lanes' complete fragments.
TEST(MmaFragments, MatchIsaFigures) {
  // Lane 0 (T0): A a0..a3 at row 0 cols 0..3, a4..a7 row 8 cols 0..3, a8..a11 row 0 cols 16..19,
  // a12..a15 row 8 cols 16..19.
  const std::array<RowCol, 16> a0 = {{{0, 0}, {0, 1}, {0, 2}, {0, 3}, {8, 0}, {8, 1}, {8, 2}, {8, 3},
                                      {0, 16}, {0, 17}, {0, 18}, {0, 19}, {8, 16}, {8, 17}, {8, 18}, {8, 19}}};
  for (int i = 0; i < 16; ++i) EXPECT_EQ(mma_a(0, i), a0[i]);
  // Lane 31 (T31): group 7, thread 3: A row 7/15, cols 12..15 and 28..31.
  EXPECT_EQ(mma_a(31, 0), (RowCol{7, 12}));
  EXPECT_EQ(mma_a(31, 7), (RowCol{15, 15}));
  EXPECT_EQ(mma_a(31, 15), (RowCol{15, 31}));
  // B: lane 5 (group 1, thread 1): b0..b3 rows 4..7 col 1, b4..b7 rows 20..23 col 1.
  for (int i = 0; i < 4; ++i) EXPECT_EQ(mma_b(5, i), (RowCol{4 + i, 1}));
  for (int i = 4; i < 8; ++i) EXPECT_EQ(mma_b(5, i), (RowCol{20 + i - 4, 1}));
  // C: lane 6 (group 1, thread 2): c0 c1 at row 1 cols 4, 5; c2 c3 at row 9 cols 4, 5.
  EXPECT_EQ(mma_c(6, 0), (RowCol{1, 4}));
  EXPECT_EQ(mma_c(6, 1), (RowCol{1, 5}));
  EXPECT_EQ(mma_c(6, 2), (RowCol{9, 4}));
  EXPECT_EQ(mma_c(6, 3), (RowCol{9, 5}));
}

// post: each map is a bijection onto its matrix.
TEST(MmaFragments, AreBijections) {
  std::set<std::pair<int, int>> a, b, c;
  for (int lane = 0; lane < 32; ++lane) {
    for (int i = 0; i < 16; ++i) {
      const RowCol e = mma_a(lane, i);
      ASSERT_TRUE(e.row >= 0 && e.row < 16 && e.col >= 0 && e.col < 32);
      a.insert({e.row, e.col});
    }
    for (int i = 0; i < 8; ++i) {
      const RowCol e = mma_b(lane, i);
      ASSERT_TRUE(e.row >= 0 && e.row < 32 && e.col >= 0 && e.col < 8);
      b.insert({e.row, e.col});
    }
    for (int i = 0; i < 4; ++i) {
      const RowCol e = mma_c(lane, i);
      ASSERT_TRUE(e.row >= 0 && e.row < 16 && e.col >= 0 && e.col < 8);
      c.insert({e.row, e.col});
    }
  }
  EXPECT_EQ(a.size(), 16u * 32u);
  EXPECT_EQ(b.size(), 32u * 8u);
  EXPECT_EQ(c.size(), 16u * 8u);
}

// The emulated warp MMA, fed through the ISA maps, is the matrix product.
TEST(MmaFragments, EmulatedMmaIsMatrixProduct) {
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> byte(-128, 127), acc0(-1000000, 1000000);
  for (int rep = 0; rep < 20; ++rep) {
    std::int8_t A[16][32], B[32][8];
    std::int32_t C[16][8];
    for (auto& r : A) for (auto& v : r) v = static_cast<std::int8_t>(byte(rng));
    for (auto& r : B) for (auto& v : r) v = static_cast<std::int8_t>(byte(rng));
    for (auto& r : C) for (auto& v : r) v = acc0(rng);
    std::uint32_t a[32][4] = {}, b[32][2] = {};
    std::int32_t c[32][4];
    for (int lane = 0; lane < 32; ++lane) {
      for (int i = 0; i < 16; ++i) {
        const RowCol e = isa_a(lane, i);
        a[lane][i / 4] |= std::uint32_t(std::uint8_t(A[e.row][e.col])) << (8 * (i % 4));
      }
      for (int i = 0; i < 8; ++i) {
        const RowCol e = isa_b(lane, i);
        b[lane][i / 4] |= std::uint32_t(std::uint8_t(B[e.row][e.col])) << (8 * (i % 4));
      }
      for (int i = 0; i < 4; ++i) c[lane][i] = C[isa_c(lane, i).row][isa_c(lane, i).col];
    }
    emulate_mma_m16n8k32(a, b, c);
    for (int lane = 0; lane < 32; ++lane)
      for (int i = 0; i < 4; ++i) {
        const RowCol e = isa_c(lane, i);
        std::int64_t want = C[e.row][e.col];
        for (int k = 0; k < 32; ++k) want += std::int64_t(A[e.row][k]) * B[k][e.col];
        ASSERT_EQ(c[lane][i], want);
      }
  }
}

// ---- 2. block tiles ----------------------------------------------------------------------------------
const TileConfig kConfigs[] = {kSmallM, kLargeM};

// post: tile_chunk covers every 16-byte chunk of the A and B tiles exactly once, inside the tile.
TEST(TileChunks, CoverEachChunkOnce) {
  for (const TileConfig& c : kConfigs) {
    for (int rows : {c.bm, c.bn}) {
      const int iters = rows == c.bm ? c.a_iters() : c.b_iters();
      std::vector<int> seen(static_cast<std::size_t>(rows * c.bk / 16), 0);
      for (int t = 0; t < c.threads(); ++t)
        for (int it = 0; it < iters; ++it) {
          const Chunk ch = tile_chunk(c, t, it);
          ASSERT_TRUE(ch.row >= 0 && ch.row < rows && ch.k >= 0 && ch.k + 16 <= c.bk && ch.k % 16 == 0);
          ++seen[ch.row * (c.bk / 16) + ch.k / 16];
        }
      for (int s : seen) EXPECT_EQ(s, 1);
    }
  }
}

// post: the accumulators of all warps and lanes cover the bm x bn tile exactly once.
TEST(TileAccumulators, CoverTileOnce) {
  for (const TileConfig& c : kConfigs) {
    std::vector<int> seen(static_cast<std::size_t>(c.bm * c.bn), 0);
    for (int w = 0; w < c.threads() / 32; ++w)
      for (int lane = 0; lane < 32; ++lane)
        for (int mi = 0; mi < c.frags_m(); ++mi)
          for (int ni = 0; ni < c.frags_n(); ++ni)
            for (int i = 0; i < 4; ++i) {
              const RowCol e = acc_element(c, w, lane, mi, ni, i);
              ASSERT_TRUE(e.row >= 0 && e.row < c.bm && e.col >= 0 && e.col < c.bn);
              ++seen[e.row * c.bn + e.col];
            }
    for (int s : seen) EXPECT_EQ(s, 1);
  }
}

// Fragment loads read exactly the tile bytes the ISA maps name, 4-byte aligned, and the 32 lanes of
// one load hit 32 distinct shared-memory banks.
TEST(TileFragments, SharedOffsetsMatchMapsAndAvoidBankConflicts) {
  for (const TileConfig& c : kConfigs) {
    for (int w = 0; w < c.threads() / 32; ++w)
      for (int ks = 0; ks < c.k_steps(); ++ks) {
        for (int mi = 0; mi < c.frags_m(); ++mi)
          for (int r = 0; r < 4; ++r) {
            std::set<int> banks;
            for (int lane = 0; lane < 32; ++lane) {
              const int off = smem_a_offset(c, w, lane, mi, ks, r);
              ASSERT_EQ(off % 4, 0);
              ASSERT_TRUE(off >= 0 && off + 4 <= c.smem_a_bytes());
              for (int j = 0; j < 4; ++j) {
                const RowCol e = isa_a(lane, 4 * r + j);
                const int row = warp_origin(c, w).row + mi * 16 + e.row, k = ks * 32 + e.col;
                ASSERT_TRUE(row < c.bm && k < c.bk);  // inside the region the chunks fill
                ASSERT_EQ(off + j, row * c.smem_stride() + k);
              }
              banks.insert((off / 4) % 32);
            }
            EXPECT_EQ(banks.size(), 32u);
          }
        for (int ni = 0; ni < c.frags_n(); ++ni)
          for (int r = 0; r < 2; ++r) {
            std::set<int> banks;
            for (int lane = 0; lane < 32; ++lane) {
              const int off = smem_b_offset(c, w, lane, ni, ks, r);
              ASSERT_EQ(off % 4, 0);
              ASSERT_TRUE(off >= 0 && off + 4 <= c.smem_b_bytes());
              for (int j = 0; j < 4; ++j) {
                const RowCol e = isa_b(lane, 4 * r + j);
                const int n = warp_origin(c, w).col + ni * 8 + e.col, k = ks * 32 + e.row;
                ASSERT_TRUE(n < c.bn && k < c.bk);
                ASSERT_EQ(off + j, n * c.smem_stride() + k);
              }
              banks.insert((off / 4) % 32);
            }
            EXPECT_EQ(banks.size(), 32u);
          }
      }
  }
}

// ---- 3. grids and edge predicates over odd shapes -----------------------------------------------------
const long long kRows[] = {1, 7, 8, 13, 15, 16, 17, 31, 32, 33, 127, 128, 129, 257};
const long long kCols[] = {1, 8, 13, 63, 64, 65, 127, 128, 129, 200};
const long long kKs[] = {16, 48, 64, 80, 128, 144, 272};

// post: over the grid, every stored (m, n) is inside M x N and each is stored exactly once.
TEST(Grid, EveryOutputStoredOnce) {
  for (long long m : kRows)
    for (long long n : kCols) {
      const TileConfig c = tile_config(pick_tile(m));
      std::vector<int> seen(static_cast<std::size_t>(m * n), 0);
      for (long long by = 0; by < ceil_div(m, c.bm); ++by)
        for (long long bx = 0; bx < ceil_div(n, c.bn); ++bx)
          for (int w = 0; w < c.threads() / 32; ++w)
            for (int lane = 0; lane < 32; ++lane)
              for (int mi = 0; mi < c.frags_m(); ++mi)
                for (int ni = 0; ni < c.frags_n(); ++ni)
                  for (int i = 0; i < 4; ++i) {
                    const RowCol e = acc_element(c, w, lane, mi, ni, i);
                    const long long gm = by * c.bm + e.row, gn = bx * c.bn + e.col;
                    if (store_in_bounds(gm, gn, m, n)) ++seen[gm * n + gn];
                  }
      for (int s : seen) ASSERT_EQ(s, 1) << m << "x" << n;
    }
}

// post: every load the predicates allow lies inside its buffer (x_q [M, K], packed [N, K/2],
// s_rel [N, K/G]); every chunk they refuse lies wholly outside the matrix.
TEST(Grid, PredicatedLoadsStayInBounds) {
  for (const TileConfig& c : kConfigs)
    for (long long rows : kRows)
      for (long long k : kKs)
        for (int g : {4, 8, 16, 48}) {
          if (k % g) continue;
          const long long blocks = ceil_div(rows, c.bm > c.bn ? c.bm : c.bn) + 1;
          for (long long b = 0; b < blocks; ++b)
            for (long long k0 = 0; k0 < k; k0 += c.bk)
              for (int t = 0; t < c.threads(); ++t)
                for (int it = 0; it < c.b_iters(); ++it) {
                  const Chunk ch = tile_chunk(c, t, it);
                  const long long r0 = b * c.bn;
                  if (!chunk_in_bounds(r0, k0, ch, rows, k)) {
                    ASSERT_TRUE(r0 + ch.row >= rows || k0 + ch.k >= k);
                    continue;
                  }
                  const long long row = r0 + ch.row, kk = k0 + ch.k;
                  // packed codes: 8 bytes at row * K/2 + kk/2
                  ASSERT_LE(row * (k / 2) + kk / 2 + 8, rows * (k / 2));
                  ASSERT_EQ((row * (k / 2) + kk / 2) % 8, 0);  // 8-byte aligned vector load
                  // x_q: 16 bytes at row * K + kk (A chunks use the same predicate)
                  ASSERT_LE(row * k + kk + 16, rows * k);
                  ASSERT_EQ((row * k + kk) % 16, 0);
                  // s_rel bytes of the 4 code words
                  const int q_per_scale = g >= 16 ? 4 : g / 4;
                  for (int q = 0; q < 4; ++q) {
                    const long long idx = s_rel_index(row, kk, k, g) + q / q_per_scale;
                    ASSERT_EQ(idx, s_rel_index(row, kk + 4 * q, k, g));  // the kernel's shortcut
                    ASSERT_EQ(idx, s_rel_index(row, kk + 4 * q + 3, k, g));  // one scale per word
                    ASSERT_LT(idx, rows * (k / g));
                  }
                }
        }
}

// ---- 4. ConvRot butterflies ------------------------------------------------------------------------
// post: each stage's butterflies cover the row exactly once, each inside one length-R block, with
// members at stride s.
TEST(ConvRot, ButterfliesCoverEachStageOnce) {
  for (long long r = 4; r <= 4096; r *= 4)
    for (long long mult : {1, 2, 3}) {
      const long long k = r * mult;
      for (long long s = 1; s < r; s *= 4) {
        std::vector<int> seen(static_cast<std::size_t>(k), 0);
        for (long long b = 0; b < k / 4; ++b) {
          const long long f = butterfly_first(b, r, s);
          ASSERT_EQ(f / r, (f + 3 * s) / r);
          ASSERT_EQ((f % (4 * s)) / s, 0);  // first member is digit 0 at this stage
          for (int q = 0; q < 4; ++q) ++seen[f + q * s];
        }
        for (int v : seen) ASSERT_EQ(v, 1);
      }
    }
}

// ---- 5. fixed facts --------------------------------------------------------------------------------
TEST(TileConfigs, FitSharedMemoryAndRegisters) {
  for (const TileConfig& c : kConfigs) {
    EXPECT_TRUE(c.valid());
    EXPECT_LE(c.smem_a_bytes() + c.smem_b_bytes() + kDecodeTableBytes, 48 * 1024);  // static smem
    EXPECT_LE(c.threads(), 1024);
  }
  EXPECT_EQ(pick_tile(1), TileKind::kSmallM);
  EXPECT_EQ(pick_tile(kSmallMThreshold), TileKind::kSmallM);
  EXPECT_EQ(pick_tile(kSmallMThreshold + 1), TileKind::kLargeM);
}

// The decode table's index is a bijection of (scale byte, code) onto 4096 entries.
TEST(DecodeTable, IndexIsBijection) {
  std::vector<int> seen(kDecodeTableBytes, 0);
  for (int s = 0; s < 256; ++s)
    for (int c = 0; c < 16; ++c) ++seen[decode_table_index(s, c)];
  for (int v : seen) EXPECT_EQ(v, 1);
}

// ---- 6. the C ABI's argument checks and workspace layout -------------------------------------------
TEST(ProblemCheck, ArgumentsAlignmentAndWorkspace) {
  alignas(16) static std::int8_t buf[4096];
  static float f[256];
  w4a8_problem p{};
  p.m = 3, p.n = 8, p.k = 64, p.group_size = 16, p.convrot_groupsize = 16;
  p.x = f, p.ldx = 64, p.weight = buf, p.s_rel = reinterpret_cast<const std::uint8_t*>(buf), p.s_channel = f;
  p.out = f, p.ldo = 8;
  EXPECT_EQ(check_problem(p), W4A8_OK);
  Workspace w = workspace_layout(p);
  EXPECT_EQ(w.x_q, 0u);
  EXPECT_EQ(w.x_scale, 256u);  // 3 * 64 bytes rounded up to 256
  EXPECT_EQ(w.total, 512u);
  EXPECT_EQ(w4a8_gemm_cuda_workspace_size(&p), 512u);
  p.x_q = buf + 16;
  EXPECT_EQ(check_problem(p), W4A8_OK);
  EXPECT_EQ(workspace_layout(p).x_q, SIZE_MAX);
  p.x_q = buf + 8;
  EXPECT_EQ(check_problem(p), W4A8_ERR_ARGUMENT);  // x_q must be 16-byte aligned
  p.x_q = nullptr;
  p.weight = buf + 4;
  EXPECT_EQ(check_problem(p), W4A8_ERR_ARGUMENT);  // weight must be 8-byte aligned
  p.weight = buf;
  p.ldo = 7;
  EXPECT_EQ(check_problem(p), W4A8_ERR_ARGUMENT);
  p.ldo = 8, p.x_dtype = static_cast<w4a8_dtype>(3);
  EXPECT_EQ(check_problem(p), W4A8_ERR_ARGUMENT);
  p.x_dtype = W4A8_DTYPE_F32, p.act_policy = 2;
  EXPECT_EQ(check_problem(p), W4A8_ERR_ARGUMENT);
  p.act_policy = 0, p.m = 70000 * 128LL;  // grid rows beyond 65535 blocks
  p.ldx = 64;
  EXPECT_EQ(check_problem(p), W4A8_ERR_UNSUPPORTED);
  p.m = 3, p.correction = f;
  w = workspace_layout(p);
  EXPECT_EQ(w.w_dequant, 0u);
  EXPECT_EQ(w.x_f32, 2048u);            // 8 * 64 floats
  EXPECT_EQ(w.out_f32, 2048u + 768u);   // 3 * 64 floats
  EXPECT_EQ(w.total, 2048u + 768u + 256u);
  EXPECT_EQ(w4a8_check_problem(nullptr), W4A8_ERR_ARGUMENT);
}

}  // namespace
}  // namespace w4a8::kern
