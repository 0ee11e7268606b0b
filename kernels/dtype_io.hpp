// The ABI's float dtypes (w4a8_dtype) read and written through the shared scalar numerics
// (src/gemm/numerics.hpp): the kernels keep no arithmetic of their own.
#pragma once

#include <cstdint>

#include "gemm/numerics.hpp"
#include "kernels/w4a8_cuda.h"

namespace w4a8::kern {

// Activation quantization policy of w4a8_problem::act_policy.
enum ActPolicyCode : int { kPolicyF32 = 0, kPolicyEager = 1 };

W4A8_HD constexpr gemm::FloatDtype float_dtype(w4a8_dtype d) {
  return d == W4A8_DTYPE_BF16 ? gemm::FloatDtype::BF16
                              : (d == W4A8_DTYPE_F16 ? gemm::FloatDtype::F16 : gemm::FloatDtype::F32);
}
W4A8_HD constexpr gemm::ActPolicy act_policy(int code) {
  return code == kPolicyEager ? gemm::ActPolicy::Eager : gemm::ActPolicy::F32;
}
static_assert(float_dtype(W4A8_DTYPE_F32) == gemm::FloatDtype::F32);
static_assert(float_dtype(W4A8_DTYPE_BF16) == gemm::FloatDtype::BF16);
static_assert(float_dtype(W4A8_DTYPE_F16) == gemm::FloatDtype::F16);

// Element i of a tensor of dtype d, as float32 (exact).
W4A8_HD float load_as_f32(const void* p, long long i, w4a8_dtype d) {
  if (d == W4A8_DTYPE_BF16) return gemm::bf16_to_f32(static_cast<const std::uint16_t*>(p)[i]);
  if (d == W4A8_DTYPE_F16) return gemm::f16_to_f32(static_cast<const std::uint16_t*>(p)[i]);
  return static_cast<const float*>(p)[i];
}
// v rounded to dtype d (round to nearest even), the value a tensor of that dtype holds.
W4A8_HD float round_to_dtype(float v, w4a8_dtype d) { return gemm::round_to(float_dtype(d), v); }
// Stores v (already representable in d, or rounded to nearest even) as element i.
W4A8_HD void store_from_f32(void* p, long long i, w4a8_dtype d, float v) {
  if (d == W4A8_DTYPE_BF16) static_cast<std::uint16_t*>(p)[i] = gemm::f32_to_bf16_rne(v);
  else if (d == W4A8_DTYPE_F16) static_cast<std::uint16_t*>(p)[i] = gemm::f32_to_f16_rne(v);
  else static_cast<float*>(p)[i] = v;
}
// Compile-time dtype variant for the GEMM epilogue (one instantiation per output dtype).
template <w4a8_dtype D>
W4A8_HD void store_as(void* p, long long i, float v) {
  if constexpr (D == W4A8_DTYPE_BF16) static_cast<std::uint16_t*>(p)[i] = gemm::f32_to_bf16_rne(v);
  else if constexpr (D == W4A8_DTYPE_F16) static_cast<std::uint16_t*>(p)[i] = gemm::f32_to_f16_rne(v);
  else static_cast<float*>(p)[i] = v;
}

}  // namespace w4a8::kern
