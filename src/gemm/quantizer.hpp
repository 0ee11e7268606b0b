// Quantizer: float weights [N, K] -> the stored asym_w4a8_int8 tensors, following comfy-kitchen's
// symmetric recipe (w4a8-gemm.md; upstream quantize_w4a8_int8_weight): ConvRot, per-group scales
// (absmax, then 2 ALS refinements with the codebook), FP8 s_rel = group / channel scale, channel
// scale = absmax of the shifted row / 127, codes re-assigned on the decoded int8 grid.
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
  bool codebook = true;  // fixed 16-level codebook; false: uniform codes c - 8
};

// @return the layer (no correction, no bias), or OpContract / OpHadamardSize for an illegal K, G, R,
//         OpTooLarge, or UsageError when weights.size() != n * k or a weight is not finite.
Result<Layer> quantize_weights(std::span<const float> weights, std::uint64_t n, std::uint64_t k,
                               const QuantizeOptions& opt = {});

// The float weight a layer stands for, in the original basis: unrotate(w_q * s_channel
// (+ correction)), in float64. pre: validate_operands accepted the layer.
std::vector<double> dequantize_weights(const Layer& layer);

// ||a - b||_2 / ||b||_2 (0 when both are zero).
double relative_l2(std::span<const double> a, std::span<const float> b);

}  // namespace w4a8::gemm
