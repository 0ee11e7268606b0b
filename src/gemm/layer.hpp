// An owning host-side W4A8 layer: the stored tensors of one asym_w4a8_int8 linear layer
// (docs/gemm.md "Stored tensors"), each with the shape it was given so that malformed operand sets
// stay representable and get validate_operands()'s exact error. As upstream (comfy-kitchen >= 0.2.36)
// the bit width is not stored: it follows from the shapes (bits()).
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
  Shape weight_shape;                    // [N, K*bits/8]: K/2 at 4 bits, 3K/4 at 6 bits
  std::vector<std::uint8_t> weight;      // packed codes, row-major (numerics.hpp: unpack_code_bits)

  st::Dtype s_rel_dtype = st::Dtype::F8_E4M3;  // F8_E4M3 or F32
  Shape s_rel_shape;                     // [N, K/G]
  std::vector<std::uint8_t> s_rel;       // raw bytes: FP8 E4M3FN, or little-endian F32 (4 a scale)

  st::Dtype s_channel_dtype = st::Dtype::F32;
  Shape s_channel_shape;                 // [N]
  std::vector<float> s_channel;

  std::optional<Shape> codebook_shape;   // [16] when present
  st::Dtype codebook_dtype = st::Dtype::F32;  // as stored (values are read only when F32)
  std::vector<float> codebook;

  std::optional<Shape> correction_shape;  // [K/G, N] when present (forces the float path)
  st::Dtype correction_dtype = st::Dtype::F32;
  std::vector<float> correction;

  std::optional<Shape> bias_shape;       // [N] when present
  FloatDtype bias_dtype = FloatDtype::F32;
  std::vector<float> bias;               // values exactly representable in bias_dtype

  // Sizes as the stored shapes say (meaningful once validate_operands() accepted the layer):
  // K = s_rel.shape[1] * G (0 when that overflows), bits = weight.shape[1] * 8 / K (4 or 6; 0 when
  // the row width matches neither).
  std::uint64_t N() const { return weight_shape.size() == 2 ? weight_shape[0] : 0; }
  std::uint64_t K() const;
  int bits() const;
  std::uint64_t row_bytes() const { return weight_shape.size() == 2 ? weight_shape[1] : 0; }
  ScaleDtype scale_dtype() const { return s_rel_dtype == st::Dtype::F32 ? ScaleDtype::F32 : ScaleDtype::Fp8E4M3; }
  // Group scale q of row i as float32. pre: the layer was validated.
  float s_rel_at(std::uint64_t i, std::uint64_t q) const {
    const std::uint64_t groups = s_rel_shape[1];
    return scale_value(s_rel.data() + i * groups * scale_bytes(scale_dtype()), q, scale_dtype());
  }
  bool has_codebook() const { return codebook_shape.has_value(); }
  bool has_correction() const { return correction_shape.has_value(); }
  bool has_bias() const { return bias_shape.has_value(); }
};

// A well-formed all-zero layer (uniform code value 0: code 8, or 32 at 6 bits; s_rel 1.0; s_channel 1)
// of the given size; callers then fill the data. pre: n * k fits memory; k % g == 0; bits 4 or 6.
Layer make_zero_layer(std::uint64_t n, std::uint64_t k, std::int64_t g, std::int64_t r, int bits = 4,
                      ScaleDtype scales = ScaleDtype::Fp8E4M3);

// Activations [M, K] of a floating dtype; values exactly representable in dtype.
struct Activations {
  FloatDtype dtype = FloatDtype::F32;
  Shape shape;                           // [..., K] (upstream's x.shape[-1] is K), usually [M, K]
  std::vector<float> values;
  std::uint64_t M() const;  // product of the leading dimensions (1 for a 1-D input); 0 if none
  std::uint64_t K() const { return shape.empty() ? 0 : shape.back(); }
};

}  // namespace w4a8::gemm
