// Seeded random W4A8 layers and activations for the kernel tests (emulation and CUDA), plus a
// bit-exact comparison of two GemmResults that names the first difference.
#pragma once

#include <cstdint>
#include <string>

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

// Largest |a - b| / max(|b|, tiny) over out, for paths whose float order differs (cuBLAS).
double max_rel_diff(const gemm::GemmResult& a, const gemm::GemmResult& b);

}  // namespace w4a8::kern::test
