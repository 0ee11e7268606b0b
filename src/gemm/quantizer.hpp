// Quantizer: float weights [N, K] -> the stored asym_w4a8_int8 tensors, following comfy-kitchen's
// symmetric quantize_w4a8_int8_weight as its 0.2.40 wheel implements it (docs/gemm.md "Quantizer"):
// ConvRot (in the weight's own dtype, as upstream: BF16/F16 rotated weights are rounded to it);
// per-group scales (4-bit codebook: absmax then 2 ALS refinements on the codebook's levels;
// 6-bit: absmax / 31 then 2 ALS refinements on the integer levels -31..31; 4-bit uniform: absmax / 7);
// channel scale = absmax of the dequantized row / 127; s_rel = group / channel scale, stored as FP8
// or F32; codes re-assigned on the decoded int8 grid (6-bit: after trying the stored scale's two
// neighbours and keeping the one whose grid fits the group best).
#pragma once

#include <array>
#include <cstdint>
#include <span>

#include "core/result.hpp"
#include "gemm/layer.hpp"

namespace w4a8::gemm {

// comfy-kitchen's fixed Lloyd-Max levels for a group-normalized Gaussian.
inline constexpr std::array<float, 16> kFixedCodebook = {
    -0.980602f, -0.794529f, -0.638165f, -0.500986f, -0.377321f, -0.263187f, -0.155210f, -0.050720f,
    0.052541f,  0.156985f,  0.265284f,  0.379533f,  0.502636f,  0.638953f,  0.794876f,  0.980671f};

struct QuantizeOptions {
  std::int64_t group_size = 16;
  std::int64_t convrot_groupsize = 256;
  int bits = 4;                             // 4 or 6 (6: uniform only, G % 16 == 0, K % 32 == 0)
  ScaleDtype scale_dtype = ScaleDtype::Fp8E4M3;  // storage of weight_s_rel
  // 4 bits: a 16-level codebook (the fixed table, or a Lloyd-Max fit when the rotated, group-normalized
  // weights are heavy-tailed, as upstream decides); false: uniform codes c - 8. Ignored at 6 bits
  // (upstream forces uniform there).
  bool codebook = true;
  // The dtype the weights were stored in (the values passed are exactly representable in it).
  // Upstream rotates in that dtype: torch's matmul accumulates in float32 and rounds each rotated
  // weight to BF16/F16 once, and only then converts to float32. Modelled as the exact rotation
  // (float64, exact for BF16/F16 inputs) rounded to float32, then to this dtype.
  FloatDtype source_dtype = FloatDtype::F32;
};

// @return the layer (no correction, no bias), or QuantBits, QuantShape (N or K is 0; G's shape;
//         K % 16, K % G, K % R; R not a power of 4: the message names the rule), OpSixBitLayout,
//         OpTooLarge, UsageError when weights.size() != n * k, or QuantNonFinite when a weight is
//         not finite or a row's rotation overflows the source dtype (upstream would store inf/NaN
//         scales), or, past that, a scale would overflow float32.
Result<Layer> quantize_weights(std::span<const float> weights, std::uint64_t n, std::uint64_t k,
                               const QuantizeOptions& opt = {});

// The float weight a layer stands for, in the original basis: unrotate(w_q * s_channel
// (+ correction)), in float64. pre: validate_operands accepted the layer.
std::vector<double> dequantize_weights(const Layer& layer);

// ||a - b||_2 / ||b||_2 (0 when both are zero).
double relative_l2(std::span<const double> a, std::span<const float> b);

}  // namespace w4a8::gemm
