#include "gemm/layer.hpp"

namespace w4a8::gemm {

Layer make_zero_layer(std::uint64_t n, std::uint64_t k, std::int64_t g, std::int64_t r) {
  Layer l;
  l.group_size = g;
  l.convrot_groupsize = r;
  l.weight_shape = {n, k / 2};
  l.weight.assign(n * (k / 2), 0x88);  // code 8 in both nibbles: value 0 without a codebook
  const std::uint64_t groups = g > 0 ? k / std::uint64_t(g) : 0;
  l.s_rel_shape = {n, groups};
  l.s_rel.assign(n * groups, 0x38);    // FP8 E4M3FN 1.0
  l.s_channel_shape = {n};
  l.s_channel.assign(n, 1.0f);
  return l;
}

}  // namespace w4a8::gemm
