// Activation ConvRot + per-row int8 quantization, as the steps between the barriers of the
// one-block-per-row kernel (act_quant.cu); the host emulation runs the same steps in loops.
// Every step is element-wise or a max (exact in any order), so the thread split cannot change
// a result.
#pragma once

#include <cstdint>

#include "kernels/kernel_numerics.hpp"

namespace w4a8::kern {

enum : int { kPolicyF32 = 0, kPolicyEager = 1 };

struct ActArgs {
  long long m = 0, k = 0, r = 0;
  const void* x = nullptr;  // [M, K] in x_dtype, row stride ldx
  int x_dtype = 0;
  long long ldx = 0;
  int policy = kPolicyF32;
  std::int8_t* x_q = nullptr;  // [M, K], row stride k
  float* x_scale = nullptr;    // [M]
};

// Step 1: element i of row m, as float32 (exact).
W4A8_HD float act_load(const ActArgs& a, long long m, long long i) {
  return load_as_f32(a.x, m * a.ldx + i, a.x_dtype);
}
// Step 2: ConvRot stages of stride 1, 4, ..., R/4, each a set of rotate_butterfly(b) calls.
// Step 3: the value the quantizer sees (rounded to the activation dtype under Eager).
W4A8_HD float act_rotated_value(const ActArgs& a, float v) {
  return a.policy == kPolicyEager ? round_to_dtype(v, a.x_dtype) : v;
}
// Running absmax; a NaN sticks (like torch's amax and the reference), so the result does not depend
// on the order of the reduction.
W4A8_HD float max_abs(float acc, float v) {
  const float av = v < 0.f ? -v : v;
  return (av > acc || av != av) ? av : acc;
}
// Step 4: the divisor (Eager, bf16/fp16: the f32 scale rounded to that dtype, 0 -> its tiny).
W4A8_HD float act_divisor(const ActArgs& a, float scale) {
  if (a.policy != kPolicyEager || a.x_dtype == 0) return scale;
  const float s = round_to_dtype(scale, a.x_dtype);
  if (s != 0.f) return s;
  return a.x_dtype == 2 ? 6.103515625e-05f : 1.17549435e-38f;  // finfo(dtype).tiny
}
// Step 5: x_q of one element; under Eager the quotient is rounded to the activation dtype first.
W4A8_HD std::int8_t act_quantize(const ActArgs& a, float v, float divisor) {
  float q = div_rn(v, divisor);
  if (a.policy == kPolicyEager) q = round_to_dtype(q, a.x_dtype);
  return static_cast<std::int8_t>(round_clamp(q, -128.f, 127.f));
}

}  // namespace w4a8::kern
