// The two tile shapes of the fused W4A8 GEMM and the rule that picks one. Decode-shaped problems
// (few rows) are bound by reading the packed weights, so they use a 16-row tile and many blocks
// across N; large M is bound by the MMAs, so it uses 128 x 128 tiles that reuse each decoded
// weight tile for 128 rows.
#pragma once

#include "kernels/index_math.hpp"

namespace w4a8::kern {

enum class TileKind : int { kSmallM = 0, kLargeM = 1 };

// A function rather than constexpr variables: class-type constexpr globals are not visible in
// device code.
W4A8_HD constexpr TileConfig tile_config(TileKind k) {
  return k == TileKind::kSmallM
             ? TileConfig{/*bm=*/16, /*bn=*/64, /*bk=*/128, /*warps_m=*/1, /*warps_n=*/4}
             : TileConfig{/*bm=*/128, /*bn=*/128, /*bk=*/64, /*warps_m=*/2, /*warps_n=*/4};
}
inline constexpr TileConfig kSmallM = tile_config(TileKind::kSmallM);
inline constexpr TileConfig kLargeM = tile_config(TileKind::kLargeM);
static_assert(kSmallM.valid() && kLargeM.valid());
static_assert(kSmallM.threads() == 128 && kLargeM.threads() == 256);
// Register budget of the accumulators: frags_m * frags_n * 4 int32 per thread.
static_assert(kSmallM.frags_m() * kSmallM.frags_n() * kCElems == 8);
static_assert(kLargeM.frags_m() * kLargeM.frags_n() * kCElems == 64);

// Rows at or below this use kSmallM.
inline constexpr long long kSmallMThreshold = 32;

W4A8_HD constexpr TileKind pick_tile(long long m) {
  return m <= kSmallMThreshold ? TileKind::kSmallM : TileKind::kLargeM;
}

// Decoded weight table: one int8 per (scale byte, code), 256 x 16, built per block in shared memory.
inline constexpr int kDecodeTableBytes = 256 * 16;
W4A8_HD constexpr int decode_table_index(int scale_byte, int code) { return scale_byte * 16 + code; }

}  // namespace w4a8::kern
