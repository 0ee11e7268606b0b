#include "gemm/layer.hpp"

#include <cstring>

#include "core/checked.hpp"

namespace w4a8::gemm {

std::uint64_t Layer::K() const {
  if (s_rel_shape.size() != 2 || group_size <= 0) return 0;
  const auto k = checked_mul(s_rel_shape[1], std::uint64_t(group_size));
  return k ? *k : 0;
}

int Layer::bits() const {
  const std::uint64_t k = K(), cols = row_bytes();
  if (k == 0) return 0;
  if (packed_row_bytes(k, 4) == cols && k % 2 == 0) return 4;
  if (packed_row_bytes(k, 6) == cols && k % 4 == 0) return 6;
  return 0;
}

Layer make_zero_layer(std::uint64_t n, std::uint64_t k, std::int64_t g, std::int64_t r, int bits, ScaleDtype scales) {
  Layer l;
  l.group_size = g;
  l.convrot_groupsize = r;
  const std::uint64_t row = packed_row_bytes(k, bits);
  l.weight_shape = {n, row};
  // Code 8 is 0x88 per nibble byte; code 32 is low nibble 0 and top bits 0b10 (0xAA per high byte).
  l.weight.assign(n * row, bits == 6 ? 0x00 : 0x88);
  if (bits == 6)
    for (std::uint64_t i = 0; i < n; ++i) std::memset(l.weight.data() + i * row + k / 2, 0xAA, k / 4);
  const std::uint64_t groups = g > 0 ? k / std::uint64_t(g) : 0;
  l.s_rel_shape = {n, groups};
  if (scales == ScaleDtype::F32) {
    l.s_rel_dtype = st::Dtype::F32;
    l.s_rel.assign(n * groups * 4, 0);
    const float one = 1.0f;
    for (std::uint64_t i = 0; i < n * groups; ++i) std::memcpy(&l.s_rel[i * 4], &one, 4);
  } else {
    l.s_rel.assign(n * groups, 0x38);  // FP8 E4M3FN 1.0
  }
  l.s_channel_shape = {n};
  l.s_channel.assign(n, 1.0f);
  return l;
}

}  // namespace w4a8::gemm
