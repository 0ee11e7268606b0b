// Exhaustive host checks of the kernels' index math (kernels/index_math.hpp, tile_config.hpp).
// Laws are numbered after the post: lines they check.
#include <gtest/gtest.h>

#include <array>
#include <functional>
#include <string>
#include <cstring>
#include <random>
#include <set>
#include <vector>

#include "kernels/emulate.hpp"
#include "kernels/index_math.hpp"
#include "kernels/gemm_tile.hpp"
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

// ---- 2. the k permutation --------------------------------------------------------------------------
// post (kperm): per k-step a bijection of the 32 mma k slots onto {128c + 8j + 32t + [0, 8)}; the 4
// k-steps tile the chunk.
TEST(KPerm, BijectionPerStepTilingTheChunk) {
  for (int c = 0; c < 2; ++c) {
    std::vector<int> seen(128, 0);
    for (int j = 0; j < 4; ++j) {
      std::set<int> step;
      for (int kk = 0; kk < 32; ++kk) {
        const int real = kperm(c, j, kk) - 128 * c;
        ASSERT_TRUE(real >= 0 && real < 128);
        step.insert(real);
        ++seen[real];
      }
      ASSERT_EQ(step.size(), 32u);
      for (int t = 0; t < 4; ++t)
        for (int i = 0; i < 8; ++i) EXPECT_EQ(step.count(8 * j + 32 * t + i), 1u);
    }
    for (int v : seen) EXPECT_EQ(v, 1);
  }
}

// A and B agree on the real k of every mma k slot (the dot product pairs the same terms), and each
// lane's register r holds the 4 consecutive real k from kperm_first: what its loads provide.
TEST(KPerm, LaneRegistersHoldConsecutiveRealK) {
  for (int lane = 0; lane < 32; ++lane)
    for (int c = 0; c < 2; ++c)
      for (int j = 0; j < 4; ++j) {
        const int tig = thread_in_group(lane);
        for (int r = 0; r < 2; ++r)
          for (int i = 0; i < 4; ++i)
            EXPECT_EQ(kperm(c, j, isa_b(lane, 4 * r + i).row), kperm_first(c, j, tig, r) + i);
        for (int q = 0; q < 4; ++q)
          for (int i = 0; i < 4; ++i)
            EXPECT_EQ(kperm(c, j, isa_a(lane, 4 * q + i).col), kperm_first(c, j, tig, q >> 1) + i);
      }
}

// post (xq_frag_offset): a bijection onto the padded buffer, quads consecutive, and each lane's 16
// bytes of a k-step are its A registers a0..a3 in ISA order: x_q[row(lane, i), k0 + kperm(j, col)].
TEST(XqFrag, BijectionInRegisterOrder) {
  for (long long m : {1, 16, 17, 40})
    for (long long k : {16, 128, 144, 400}) {
      const long long rows = frag_rows(m), chunks = frag_chunks(k), bytes = rows * chunks * kChunkK;
      std::vector<int> seen(static_cast<std::size_t>(bytes), 0);
      for (long long r = 0; r < rows; ++r)
        for (long long kk = 0; kk < chunks * kChunkK; ++kk) {
          const long long off = xq_frag_offset(r, kk, chunks);
          ASSERT_TRUE(off >= 0 && off < bytes);
          ++seen[static_cast<std::size_t>(off)];
          if (kk % 4) {
            ASSERT_EQ(off, xq_frag_offset(r, kk - kk % 4, chunks) + kk % 4);
          }
        }
      for (int v : seen) ASSERT_EQ(v, 1);
      for (long long mb = 0; mb < rows / 16; ++mb)
        for (long long c = 0; c < chunks; ++c)
          for (int j = 0; j < 4; ++j)
            for (int lane = 0; lane < 32; ++lane)
              for (int i = 0; i < 16; ++i) {
                const RowCol e = isa_a(lane, i);
                const long long off = ((mb * chunks + c) * 4 + j) * 512 + lane * 16 + i;
                ASSERT_EQ(off, xq_frag_offset(mb * 16 + e.row, kperm(int(c), j, e.col), chunks));
              }
    }
}

// ---- 3. stage layout -----------------------------------------------------------------------------------
const TileConfig kConfigs[] = {kSmallM, kLargeM};

// post: the producer's copies fill each 16-byte slot of the A and code regions exactly once.
TEST(StageLayout, CopiesCoverEachSlotOnce) {
  for (const TileConfig& c : kConfigs) {
    std::vector<int> a(c.a_bytes() / 16, 0), b(c.code_bytes() / 16, 0);
    for (int t = 0; t < c.threads(); ++t) {
      for (int it = 0; it < c.a_iters(); ++it) {
        const int id = it * c.threads() + t, off = (id / 128) * kFragChunkBytes + 16 * (id % 128);
        ASSERT_TRUE(off >= 0 && off < c.a_bytes());
        ++a[off / 16];
      }
      for (int it = 0; it < c.code_iters(); ++it) {
        const Unit u = copy_unit(c.bk / 32, c.threads(), t, it);
        ASSERT_LT(u.row, c.bn);
        const int off = code_smem_offset(c, u.row, u.unit);
        ASSERT_TRUE(off % 16 == 0 && off >= 0 && off < c.code_bytes());
        ++b[off / 16];
      }
    }
    for (int v : a) EXPECT_EQ(v, 1);
    for (int v : b) EXPECT_EQ(v, 1);
  }
}

// Every 16-byte shared load of the consumer: 8 lanes at a time (a 128-bit load is served a quarter
// warp per pass) hit 8 distinct 16-byte bank groups, i.e. no bank conflict.
TEST(StageLayout, ConsumerLoadsAreConflictFree) {
  for (const TileConfig& c : kConfigs)
    for (int w = 0; w < c.threads() / 32; ++w)
      for (int ch = 0; ch < c.chunks(); ++ch) {
        for (int mi = 0; mi < c.frags_m(); ++mi)
          for (int j = 0; j < 4; ++j)
            for (int q = 0; q < 4; ++q) {
              std::set<int> groups;
              for (int lane = 8 * q; lane < 8 * q + 8; ++lane) {
                const int off = a_frag_offset(c, warp_origin(c, w).row / 16 + mi, ch, j, lane);
                ASSERT_TRUE(off % 16 == 0 && off >= 0 && off + 16 <= c.a_bytes());
                groups.insert((off / 16) % 8);
              }
              EXPECT_EQ(groups.size(), 8u);
            }
        for (int ni = 0; ni < c.frags_n(); ++ni)
          for (int q = 0; q < 4; ++q) {
            std::set<int> groups;
            for (int lane = 8 * q; lane < 8 * q + 8; ++lane)
              groups.insert((code_smem_offset(c, b_frag_row(c, w, lane, ni), b_frag_unit(lane, ch)) / 16) % 8);
            EXPECT_EQ(groups.size(), 8u);
          }
      }
}

// ---- 4. producer and consumer through real stages ------------------------------------------------------
// A copy policy that lands at once and checks each copy against its operand's buffer.
struct CheckedCopy {
  struct Buf {
    const std::uint8_t* base;
    long long bytes;
  };
  std::vector<Buf> bufs;
  int violations = 0;
  void copy(void* dst, const void* src, int size, int src_bytes) {
    const auto* s = static_cast<const std::uint8_t*>(src);
    if (src_bytes < 0 || src_bytes > size || reinterpret_cast<std::uintptr_t>(dst) % std::uintptr_t(size)) ++violations;
    if (src_bytes > 0) {
      bool inside = false;
      for (const Buf& b : bufs) inside |= s >= b.base && s + src_bytes <= b.base + b.bytes;
      if (!inside || reinterpret_cast<std::uintptr_t>(s) % std::uintptr_t(size)) ++violations;
      std::memcpy(dst, s, std::size_t(src_bytes));
    }
    std::memset(static_cast<std::uint8_t*>(dst) + src_bytes, 0, std::size_t(size - src_bytes));
  }
  void copy16(void* d, const void* s, int n) { copy(d, s, 16, n); }
  void copy8(void* d, const void* s, int n) { copy(d, s, 8, n); }
  void copy4(void* d, const void* s, int n) { copy(d, s, 4, n); }
};

// compute_stage's Sink for the check: each MMA's fragments against the matrices, element by element.
struct CheckingSink {
  std::function<void(int mi, int ni, int call, const std::uint32_t (&a)[4], const std::uint32_t (&b)[2])> check;
  int calls[8][8] = {};
  void mma(int mi, int ni, const std::uint32_t (&a)[4], const std::uint32_t (&b)[2]) { check(mi, ni, calls[mi][ni]++, a, b); }
};

std::int8_t byte_at(std::uint32_t w, int i) { return std::int8_t((w >> (8 * i)) & 0xFFu); }

// For odd shapes, every group size class and both code-copy widths: the producer's copies stay in
// their buffers, and every byte of every MMA fragment is the matrix element the ISA maps and kperm
// name: x_q[m, k] for A; for B the code of (n, k) (table row s = identity on codes) and the scale byte
// s_rel[n, k / G] (table row s = s) - zero outside the matrices.
template <TileKind Kind, bool SmallG, bool Codes16>
void check_stages(long long M, long long N, long long K, int G, bool misalign_weight, std::mt19937& rng) {
  constexpr TileConfig C = tile_config(Kind);
  std::uniform_int_distribution<int> byte(0, 255);
  std::vector<std::int8_t> xq(std::size_t(M * K));
  for (auto& v : xq) v = std::int8_t(byte(rng));
  std::vector<std::uint8_t> codes_store(std::size_t(N * K / 2) + 16);
  std::uint8_t* codes = codes_store.data() + (misalign_weight ? 8 : 0);
  for (long long i = 0; i < N * K / 2; ++i) codes[i] = std::uint8_t(byte(rng));
  std::vector<std::uint8_t> srel(std::size_t(N * (K / G)));
  for (auto& v : srel) v = std::uint8_t(byte(rng));
  std::vector<float> sch(std::size_t(N), 1.f);
  w4a8_problem p{};
  p.m = M, p.n = N, p.k = K, p.group_size = G, p.convrot_groupsize = 4, p.ldx = K, p.ldo = N;
  p.weight = reinterpret_cast<const std::int8_t*>(codes), p.s_rel = srel.data(), p.s_channel = sch.data();
  p.x = sch.data(), p.out = sch.data();
  float xs = 1.f;
  p.x_scale = &xs;
  ASSERT_EQ(check_problem(p), W4A8_OK);
  const GemmPlan plan = plan_gemm(p, DeviceShape{});
  ASSERT_EQ(plan.kind, Kind);
  const Workspace ws = workspace_layout(p);
  std::vector<unsigned char> wsb(ws.total, 0);
  // x_q in fragment order where the prologue would put it (zeros in the padding).
  std::int8_t* frag = reinterpret_cast<std::int8_t*>(wsb.data() + ws.x_q_frag);
  for (long long m = 0; m < M; ++m)
    for (long long k = 0; k < K; ++k) frag[xq_frag_offset(m, k, frag_chunks(K))] = xq[std::size_t(m * K + k)];
  const GemmArgs g = make_gemm_args(p, ws, wsb.data(), plan);
  ASSERT_EQ(g.small_group, SmallG);
  ASSERT_EQ(g.codes16, Codes16) << M << "x" << N << "x" << K << " G=" << G << " misaligned=" << misalign_weight;
  std::vector<std::uint8_t> stage(std::size_t(stage_bytes(C, plan.scale_words)));
  std::vector<std::uint8_t> table(kDecodeTableBytes);
  CheckedCopy cp;
  cp.bufs = {{reinterpret_cast<const std::uint8_t*>(frag), frag_rows(M) * frag_chunks(K) * kChunkK},
             {codes, N * K / 2},
             {srel.data(), N * (K / G)}};
  for (int pass = 0; pass < 2; ++pass) {
    for (int s = 0; s < 256; ++s)
      for (int c = 0; c < 16; ++c) table[std::size_t(decode_table_index(s, c))] = std::uint8_t(pass == 0 ? c : s);
    for (long long by = 0; by < plan.tiles_m; ++by)
      for (long long bx = 0; bx < plan.tiles_n; ++bx)
        for (long long kt = 0; kt < plan.k_tiles; ++kt) {
          const long long m0 = by * C.bm, n0 = bx * C.bn, k0 = kt * C.bk;
          std::fill(stage.begin(), stage.end(), 0xCD);
          // Only the last tile may end past K (the kernel issues it with Full = false).
          for (int t = 0; t < C.threads(); ++t) {
            StageProducer<Kind, SmallG, Codes16> producer(g, m0, n0, t, kt);
            if (kt == plan.k_tiles - 1) producer.template issue<false>(g, stage.data(), n0, t, cp);
            else producer.template issue<true>(g, stage.data(), n0, t, cp);
          }
          ASSERT_EQ(cp.violations, 0) << M << "x" << N << "x" << K << " G=" << G;
          for (int w = 0; w < C.threads() / 32; ++w)
            for (int lane = 0; lane < 32; ++lane) {
              int bad = 0;
              CheckingSink sink;
              sink.check = [&](int mi, int ni, int call, const std::uint32_t (&a)[4], const std::uint32_t (&b)[2]) {
                const int c = call / 4, j = call % 4;
                const RowCol wo = warp_origin(C, w);
                for (int i = 0; i < 16; ++i) {
                  const RowCol e = isa_a(lane, i);
                  const long long m = m0 + wo.row + mi * 16 + e.row, k = k0 + kperm(c, j, e.col);
                  const std::int8_t want = m < M && k < K ? xq[std::size_t(m * K + k)] : 0;
                  bad += byte_at(a[i / 4], i % 4) != want;
                }
                for (int i = 0; i < 8; ++i) {
                  const RowCol e = isa_b(lane, i);
                  const long long n = n0 + wo.col + ni * 8 + e.col, k = k0 + kperm(c, j, e.row);
                  const std::int8_t got = byte_at(b[i / 4], i % 4);
                  if (pass == 0) {
                    const int want = n < N && k < K ? nibble(codes[n * (K / 2) + k / 2], int(k & 1)) : 0;
                    bad += got != want;
                  } else if (n < N && k < K) {
                    bad += got != std::int8_t(srel[std::size_t(n * (K / G) + k / G)]);
                  }
                }
              };
              compute_stage<Kind, SmallG>(g, stage.data(), table.data(), kt, n0, w, lane, sink);
              for (int mi = 0; mi < C.frags_m(); ++mi)
                for (int ni = 0; ni < C.frags_n(); ++ni) ASSERT_EQ(sink.calls[mi][ni], C.k_steps());
              ASSERT_EQ(bad, 0) << M << "x" << N << "x" << K << " G=" << G << " tile " << by << "," << bx << " kt=" << kt
                                << " warp " << w << " lane " << lane << " pass " << pass;
            }
        }
  }
}

TEST(Stages, FragmentsHoldTheNamedElements) {
  std::mt19937 rng(23);
  for (long long M : {1, 5, 16})
    for (long long N : {8, 63, 65})
      for (long long K : {16, 48, 256, 272, 528})
        for (int G : {4, 8, 16, 48}) {
          if (K % G) continue;
          if (G < 16) check_stages<TileKind::kSmallM, true, false>(M, N, K, G, K % 64 == 0, rng);
          else if (K % 32 == 0) check_stages<TileKind::kSmallM, false, true>(M, N, K, G, false, rng);
          else check_stages<TileKind::kSmallM, false, false>(M, N, K, G, false, rng);
        }
  for (long long M : {17, 64, 65})
    for (long long N : {64, 129})
      for (long long K : {32, 144, 384})
        for (int G : {8, 16, 32, 96, 128}) {
          if (K % G) continue;
          if (G < 16) check_stages<TileKind::kLargeM, true, false>(M, N, K, G, false, rng);
          else if (K == 384) check_stages<TileKind::kLargeM, false, false>(M, N, K, G, /*misalign=*/true, rng);
          else if (K % 32 == 0) check_stages<TileKind::kLargeM, false, true>(M, N, K, G, false, rng);
          else check_stages<TileKind::kLargeM, false, false>(M, N, K, G, false, rng);
        }
}

// ---- 5. split-K ------------------------------------------------------------------------------------------
// post (split_begin): the ranges partition [0, tiles) in order, none empty when splits <= tiles.
TEST(SplitK, RangesPartitionTheKTiles) {
  for (long long tiles = 1; tiles <= 70; ++tiles)
    for (int s = 1; s <= kMaxSplits && s <= tiles; ++s) {
      EXPECT_EQ(split_begin(tiles, s, 0), 0);
      EXPECT_EQ(split_begin(tiles, s, s), tiles);
      for (int z = 0; z < s; ++z) EXPECT_LT(split_begin(tiles, s, z), split_begin(tiles, s, z + 1));
    }
}

TEST(SplitK, PlanBoundsAndTheDecodeShape) {
  for (long long tiles : {1, 2, 5, 64, 128, 200, 1000})
    for (long long kt : {1, 3, 4, 8, 32, 64, 1024})
      for (long long slots : {1, 8, 132, 264, 396, 8192}) {
        const int s = plan_splits(tiles, kt, slots);
        ASSERT_GE(s, 1);
        ASSERT_LE(s, kMaxSplits);
        if (s > 1) {
          EXPECT_LE(tiles * s, slots);              // one wave
          EXPECT_GE(kt / s, kMinTilesPerSplit);     // each split fills its pipeline
        }
      }
  // N = K = 8192 at M <= 16 on an H200-sized device (132 SMs, 3 blocks each): 64 column tiles
  // alone would leave half the SMs idle; with split-K every SM holds more than two blocks.
  w4a8_problem p{};
  p.m = 16, p.n = 8192, p.k = 8192, p.group_size = 16;
  const GemmPlan plan = plan_gemm(p, DeviceShape{132, 3});
  EXPECT_EQ(plan.tiles_n * plan.tiles_m, 64);
  EXPECT_EQ(plan.splits, 6);
  EXPECT_GE(plan.tiles_n * plan.splits, 2 * 132);
}

// ---- 6. grids ----------------------------------------------------------------------------------------
const long long kRows[] = {1, 7, 8, 13, 15, 16, 17, 31, 32, 33, 63, 64, 65, 127, 128, 129, 257};
const long long kCols[] = {1, 8, 13, 63, 64, 65, 127, 128, 129, 200};

// Every accumulator element of a block tile (all warps, lanes, fragments), block-tile relative.
template <class F>
void for_each_acc(const TileConfig& c, F&& f) {
  for (int w = 0; w < c.threads() / 32; ++w)
    for (int lane = 0; lane < 32; ++lane)
      for (int mi = 0; mi < c.frags_m(); ++mi)
        for (int ni = 0; ni < c.frags_n(); ++ni)
          for (int i = 0; i < 4; ++i) f(acc_element(c, w, lane, mi, ni, i));
}

// post: over the grid, every stored (m, n) is inside M x N and each is stored exactly once.
TEST(Grid, EveryOutputStoredOnce) {
  for (long long m : kRows)
    for (long long n : kCols) {
      const TileConfig c = tile_config(pick_tile(m));
      std::vector<int> seen(static_cast<std::size_t>(m * n), 0);
      for (long long by = 0; by < ceil_div(m, c.bm); ++by)
        for (long long bx = 0; bx < ceil_div(n, c.bn); ++bx)
          for_each_acc(c, [&](RowCol e) {
            const long long gm = by * c.bm + e.row, gn = bx * c.bn + e.col;
            if (store_in_bounds(gm, gn, m, n)) ++seen[gm * n + gn];
          });
      for (int s : seen) ASSERT_EQ(s, 1) << m << "x" << n;
    }
}

// post (accumulators): all warps and lanes cover the bm x bn tile exactly once.
TEST(TileAccumulators, CoverTileOnce) {
  for (const TileConfig& c : kConfigs) {
    std::vector<int> seen(static_cast<std::size_t>(c.bm * c.bn), 0);
    for_each_acc(c, [&](RowCol e) {
      ASSERT_TRUE(e.row >= 0 && e.row < c.bm && e.col >= 0 && e.col < c.bn);
      ++seen[e.row * c.bn + e.col];
    });
    for (int s : seen) EXPECT_EQ(s, 1);
  }
}

// ---- 7. ConvRot butterflies ------------------------------------------------------------------------
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

// post (prologue_side_jobs): table entries and zeroed words written exactly once over the grid.
TEST(Prologue, SideJobsCoverEachEntryOnce) {
  for (long long blocks : {1, 2, 3, 16, 17, 40}) {
    std::vector<std::int8_t> table(kDecodeTableBytes, 0x55);
    std::vector<std::uint32_t> zero(5000, 0xFFFFFFFFu);
    ActArgs a;
    a.table = table.data(), a.zero = zero.data(), a.zero_words = 4999;
    for (long long b = 0; b < blocks; ++b)
      for (int t = 0; t < kActThreads; ++t) prologue_side_jobs(a, b, blocks, t);
    for (int i = 0; i < kDecodeTableBytes; ++i)
      ASSERT_EQ(table[i], gemm::decode_weight(std::uint8_t(i & 15), std::uint8_t(i >> 4), nullptr));
    for (int i = 0; i < 4999; ++i) ASSERT_EQ(zero[i], 0u);
    EXPECT_EQ(zero[4999], 0xFFFFFFFFu);
  }
}

// ---- 8. fixed facts --------------------------------------------------------------------------------
TEST(TileConfigs, FitSharedMemoryOnEveryTargetArch) {
  for (const TileConfig& c : kConfigs) {
    EXPECT_TRUE(c.valid());
    EXPECT_EQ(c.a_copies() % c.threads(), 0);
    EXPECT_EQ(c.code_copies() % c.threads(), 0);
    // The largest scale window (G = 4); 99 KiB is the per-block opt-in limit of sm_89.
    EXPECT_LE(gemm_smem_bytes(c, scale_words(c.bk, 4)), 99 * 1024);
  }
  EXPECT_EQ(scale_words(256, 16), 5);  // 17 groups + 3 bytes of alignment
  EXPECT_EQ(scale_words(256, 4), 17);
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

// ---- 9. the C ABI's argument checks and workspace layout -------------------------------------------
TEST(ProblemCheck, ArgumentsAlignmentAndWorkspace) {
  alignas(16) static std::int8_t buf[4096];
  static float f[256];
  w4a8_problem p{};
  p.m = 3, p.n = 8, p.k = 64, p.group_size = 16, p.convrot_groupsize = 16;
  p.x = f, p.ldx = 64, p.weight = buf, p.s_rel = reinterpret_cast<const std::uint8_t*>(buf), p.s_channel = f;
  p.out = f, p.ldo = 8;
  EXPECT_EQ(check_problem(p), W4A8_OK);
  Workspace w = workspace_layout(p);
  EXPECT_EQ(w.x_q_frag, 0u);   // 16 rows x 128 k, fragment order
  EXPECT_EQ(w.x_scale, 2048u);
  EXPECT_EQ(w.table, 2048u + 256u);
  EXPECT_EQ(w.split_acc, SIZE_MAX);  // one k tile: never split
  EXPECT_EQ(w.total, 2048u + 256u + 4096u);
  EXPECT_EQ(w4a8_gemm_cuda_workspace_size(&p), 2048u + 256u + 4096u);
  p.x_q = buf + 16, p.x_scale = f;
  EXPECT_EQ(check_problem(p), W4A8_OK);
  EXPECT_EQ(workspace_layout(p).x_scale, SIZE_MAX);
  EXPECT_EQ(workspace_layout(p).total, 2048u + 4096u);
  p.x_scale = nullptr;
  p.x_q = buf + 8;
  EXPECT_EQ(check_problem(p), W4A8_ERR_ARGUMENT);  // x_q must be 16-byte aligned
  p.x_q = nullptr;
  p.weight = buf + 4;
  EXPECT_EQ(check_problem(p), W4A8_ERR_ARGUMENT);  // weight must be 8-byte aligned
  p.weight = buf;
  p.s_rel = reinterpret_cast<const std::uint8_t*>(buf) + 2;
  EXPECT_EQ(check_problem(p), W4A8_ERR_ARGUMENT);  // s_rel must be 4-byte aligned
  p.s_rel = reinterpret_cast<const std::uint8_t*>(buf);
  p.ldo = 7;
  EXPECT_EQ(check_problem(p), W4A8_ERR_ARGUMENT);
  p.ldo = 8, p.x_dtype = static_cast<w4a8_dtype>(3);
  EXPECT_EQ(check_problem(p), W4A8_ERR_ARGUMENT);
  p.x_dtype = W4A8_DTYPE_F32, p.act_policy = 2;
  EXPECT_EQ(check_problem(p), W4A8_ERR_ARGUMENT);
  p.act_policy = 0, p.m = 70000 * 128LL;  // grid rows beyond 65535 blocks
  EXPECT_EQ(check_problem(p), W4A8_ERR_UNSUPPORTED);
  p.m = 3;
  // comfy-kitchen 0.2.40 storage variants: refused with a reason naming this kernel.
  const char* why = nullptr;
  p.bits = 6;
  EXPECT_EQ(check_problem(p, &why), W4A8_ERR_UNSUPPORTED);
  EXPECT_NE(std::string(why).find("unsupported by this kernel"), std::string::npos) << why;
  EXPECT_EQ(w4a8_check_problem(&p), W4A8_ERR_UNSUPPORTED);
  EXPECT_NE(std::string(last_error()).find("6-bit"), std::string::npos) << last_error();
  p.bits = 5;
  EXPECT_EQ(check_problem(p), W4A8_ERR_ARGUMENT);
  p.bits = 4;
  EXPECT_EQ(check_problem(p), W4A8_OK);
  p.s_rel_dtype = W4A8_SCALE_F32;
  EXPECT_EQ(check_problem(p, &why), W4A8_ERR_UNSUPPORTED);
  EXPECT_NE(std::string(why).find("F32 group scales"), std::string::npos) << why;
  p.s_rel_dtype = static_cast<w4a8_scale_dtype>(7);
  EXPECT_EQ(check_problem(p), W4A8_ERR_ARGUMENT);
  p.s_rel_dtype = W4A8_SCALE_FP8_E4M3;
  // Split-K needs the [M, N] sums and one counter per tile.
  p.m = 1, p.n = 64, p.k = 8192, p.ldx = 8192, p.ldo = 64;
  w = workspace_layout(p);
  EXPECT_EQ(w.table, 16u * 8192u + 256u);
  EXPECT_EQ(w.split_acc, 16u * 8192u + 256u + 4096u);
  EXPECT_EQ(w.split_count, 16u * 8192u + 256u + 4096u + 256u);
  EXPECT_EQ(w.total, 16u * 8192u + 256u + 4096u + 256u + 256u);
  p.m = 3, p.n = 8, p.k = 64, p.ldx = 64, p.ldo = 8, p.correction = f;
  w = workspace_layout(p);
  EXPECT_EQ(w.w_dequant, 0u);
  EXPECT_EQ(w.x_f32, 2048u);            // 8 * 64 floats
  EXPECT_EQ(w.out_f32, 2048u + 768u);   // 3 * 64 floats
  EXPECT_EQ(w.total, 2048u + 768u + 256u);
  EXPECT_EQ(w4a8_check_problem(nullptr), W4A8_ERR_ARGUMENT);
}

}  // namespace
}  // namespace w4a8::kern
