// An owning host-side W4A8 layer: the stored tensors of one asym_w4a8_int8 linear layer
// (../shared/spec/w4a8-gemm.md "Stored tensors"), each with the shape it was given so that malformed
// operand sets stay representable and get validate_operands()'s exact error.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <vector>

#include "gemm/numerics.hpp"
#include "safetensors/dtype.hpp"

namespace w4a8::gemm {

using Shape = std::vector<std::uint64_t>;

struct Layer {
  std::int64_t group_size = 16;          // G
  std::int64_t convrot_groupsize = 256;  // R

  st::Dtype weight_dtype = st::Dtype::I8;
  Shape weight_shape;                    // [N, K/2]
  std::vector<std::uint8_t> weight;      // packed codes, row-major, low nibble = even element

  st::Dtype s_rel_dtype = st::Dtype::F8_E4M3;
  Shape s_rel_shape;                     // [N, K/G]
  std::vector<std::uint8_t> s_rel;       // FP8 E4M3FN bytes

  st::Dtype s_channel_dtype = st::Dtype::F32;
  Shape s_channel_shape;                 // [N]
  std::vector<float> s_channel;

  std::optional<Shape> codebook_shape;   // [16] when present
  std::vector<float> codebook;

  std::optional<Shape> correction_shape;  // [K/G, N] when present (forces the float path)
  std::vector<float> correction;

  std::optional<Shape> bias_shape;       // [N] when present
  FloatDtype bias_dtype = FloatDtype::F32;
  std::vector<float> bias;               // values exactly representable in bias_dtype

  // Sizes as the stored shapes say (meaningful once validate_operands() accepted the layer).
  std::uint64_t N() const { return weight_shape.size() == 2 ? weight_shape[0] : 0; }
  std::uint64_t K() const { return weight_shape.size() == 2 ? 2 * weight_shape[1] : 0; }
  bool has_codebook() const { return codebook_shape.has_value(); }
  bool has_correction() const { return correction_shape.has_value(); }
  bool has_bias() const { return bias_shape.has_value(); }
};

// A well-formed all-zero layer (codes 8 = value 0, s_rel 1.0 = byte 0x38, s_channel 1) of the given
// size; callers then fill the data. pre: n * k fits memory; k % g == 0.
Layer make_zero_layer(std::uint64_t n, std::uint64_t k, std::int64_t g, std::int64_t r);

// Activations [M, K] of a floating dtype; values exactly representable in dtype.
struct Activations {
  FloatDtype dtype = FloatDtype::F32;
  Shape shape;                           // [..., K] (upstream's x.shape[-1] is K), usually [M, K]
  std::vector<float> values;
  std::uint64_t M() const;  // product of the leading dimensions (1 for a 1-D input); 0 if none
  std::uint64_t K() const { return shape.empty() ? 0 : shape.back(); }
};

}  // namespace w4a8::gemm
