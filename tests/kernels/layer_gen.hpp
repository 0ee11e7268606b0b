// Seeded random W4A8 layers and activations for the kernel tests (emulation and CUDA), plus a
// bit-exact comparison of two GemmResults that names the first difference.
#pragma once

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <memory>
#include <string>
#include <vector>

#include "gemm/layer.hpp"
#include "gemm/reference.hpp"
#include "kernels/layer_problem.hpp"

namespace w4a8::kern::test {

struct Case {
  std::uint64_t m = 1, n = 8, k = 16;
  std::int64_t g = 16, r = 16;
  bool codebook = false, correction = false, bias = false;
  gemm::FloatDtype x_dtype = gemm::FloatDtype::F32, bias_dtype = gemm::FloatDtype::F32,
                   out_dtype = gemm::FloatDtype::F32;
  gemm::ActPolicy policy = gemm::ActPolicy::F32;
  std::int64_t ldx_pad = 0, ldo_pad = 0;
  std::uint32_t seed = 1;
};

std::string describe(const Case& c);
gemm::Layer make_layer(const Case& c);
gemm::Activations make_acts(const Case& c);
gemm::GemmOptions options(const Case& c);
LayoutOptions layout(const Case& c);

// "" when a and b agree bit for bit on every field the kernels produce (w_q, x_q, x_scale, acc, out;
// w_dequant on the correction path); else the first difference.
std::string diff_results(const gemm::GemmResult& a, const gemm::GemmResult& b, bool compare_out = true);

// Draws a random legal case (RapidCheck; shrinks towards small shapes): G in {4..64}, R in
// {4..256}, K a multiple of lcm(16, G, R) up to ~512, M < 70, N < 140, any dtypes/policy/strides,
// correction path one time in seven.
Case draw_case();

// The correction path's out (cuBLAS sums in another order than the reference): "" when every
// out[a, j] of `got` is within the float32 dot-product bound of ref's,
//   |got - want| <= 2 K u sum_q |x[a, q] w_dequant[j, q]| + 2 ulp_out |want|,  u = 2^-24,
// where ulp_out is the output dtype's relative rounding unit (2^-8 bf16, 2^-11 f16, 2^-24 f32): a sum
// that differs in its last float bits can round to the neighbouring bf16 value. Else the first
// element outside the bound, with both values and the bound.
std::string check_correction_out(const Case& c, const gemm::Activations& x, const gemm::GemmResult& ref,
                                 const std::vector<float>& got);

// ---- case lists shared by the emulation and the device tests ----------------------------------------
// Tile edges of both block shapes: M in {16, 17, 32, 33, 128, 129} x N in {63, .., 129}, K = 512,
// G rotating over 8 / 16 / 64, codebook / bias / output dtype rotating.
std::vector<Case> tile_edge_cases();
// Every group-size class (4, 8, 48, 128) on uniform codes at K = 4608, bf16 in and out, for each m.
std::vector<Case> long_k_group_cases(std::initializer_list<std::uint64_t> ms, std::uint64_t n);
// A layer and constant activations whose accumulators exceed 2^24 in magnitude (x_q = 127, w_q
// mostly -127: code 0 with scale 448; every 97th byte codes 8, weight 0).
gemm::Layer large_acc_layer(std::uint64_t k);
gemm::Activations constant_acts(std::uint64_t m, std::uint64_t k, float v);
// An implementation of the layer under test (emulation, device, ...).
using LayerImpl = std::function<Result<gemm::GemmResult>(const gemm::Layer&, const gemm::Activations&)>;
// "" when impl agrees with gemm_literal bit for bit on the large_acc_layer shapes (M 1 and 20, K 2048
// and 8192), which do reach |acc| > 2^24; else what failed.
std::string large_accumulator_diff(const LayerImpl& impl);
// "" when each listed row of case c, computed alone by impl, equals that row of the whole batch
// (acc and out); else the first difference.
std::string rows_independent_diff(const LayerImpl& impl, const Case& c, std::initializer_list<std::uint64_t> rows);

// A layer and its problem (host pointers into the layer), for raw-ABI tests.
struct OwnedProblem {
  gemm::Layer layer;
  std::unique_ptr<LayerProblem> lp;
};
// pre: c passes the shared validation.
OwnedProblem owned_problem(const Case& c);
// The small problem of the refusal and NaN-flag tests (M 2, N 8, K 64, G 16, R 16).
OwnedProblem small_problem();

}  // namespace w4a8::kern::test
