// The two block shapes of the fused W4A8 GEMM, the rule that picks one, and the split-K plan.
// Decode-shaped problems (M <= 16) are bound by streaming the packed weight from memory: one 16-row
// MMA tile, 128 columns a block (each A fragment serves 4 weight fragments), 256 k a stage, 3 stages
// (2 in flight), and split-K so that a few hundred blocks cover every SM even when N / 128 is far
// below the number of SMs. Larger M reuses each decoded weight fragment for 4 MMA row tiles (64 rows
// a block).
#pragma once

#include "kernels/index_math.hpp"

namespace w4a8::kern {

enum class TileKind : int { kSmallM = 0, kLargeM = 1 };

// A function rather than constexpr variables: class-type constexpr globals are not visible in
// device code.
W4A8_HD constexpr TileConfig tile_config(TileKind k) {
  return k == TileKind::kSmallM
             ? TileConfig{/*bm=*/16, /*bn=*/128, /*bk=*/256, /*warps_m=*/1, /*warps_n=*/4, /*stages=*/3}
             : TileConfig{/*bm=*/64, /*bn=*/64, /*bk=*/128, /*warps_m=*/1, /*warps_n=*/4, /*stages=*/3};
}
inline constexpr TileConfig kSmallM = tile_config(TileKind::kSmallM);
inline constexpr TileConfig kLargeM = tile_config(TileKind::kLargeM);
static_assert(kSmallM.valid() && kLargeM.valid());
static_assert(kSmallM.threads() == 128 && kLargeM.threads() == 128);
// Register budget of the accumulators: frags_m * frags_n * 4 int32 per thread.
static_assert(kSmallM.frags_m() * kSmallM.frags_n() * kCElems == 16);
static_assert(kLargeM.frags_m() * kLargeM.frags_n() * kCElems == 32);

// Rows at or below this use kSmallM.
inline constexpr long long kSmallMThreshold = 16;

W4A8_HD constexpr TileKind pick_tile(long long m) {
  return m <= kSmallMThreshold ? TileKind::kSmallM : TileKind::kLargeM;
}

// ---- split-K ------------------------------------------------------------------------------------
// Upper bound on splits (also sizes nothing: the split accumulators are [M, N] whatever the count).
inline constexpr int kMaxSplits = 16;
// Each split keeps at least this many k tiles so its pipeline fills.
inline constexpr long long kMinTilesPerSplit = 2;

// Splits for a grid of `tiles` output tiles over `k_tiles` k tiles on a device that holds
// `slots` = SMs x resident blocks per SM: as many as fit in one wave of slots (integer sums are
// exact in any order, so the result does not depend on the count).
// post: 1 <= result <= kMaxSplits; result == 1 when tiles >= slots / 2 or k_tiles < 2 kMinTilesPerSplit.
W4A8_HD constexpr int plan_splits(long long tiles, long long k_tiles, long long slots) {
  if (tiles <= 0 || 2 * tiles > slots) return 1;
  long long s = slots / tiles;
  const long long by_k = k_tiles / kMinTilesPerSplit;
  if (s > by_k) s = by_k;
  if (s > kMaxSplits) s = kMaxSplits;
  return s < 1 ? 1 : int(s);
}

}  // namespace w4a8::kern
