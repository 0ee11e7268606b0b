// The CPU reference W4A8 GEMM: out = x @ W^T + bias for an asym_w4a8_int8 layer, returning every
// intermediate. Two implementations with one contract: gemm_literal (the spec, line by line) and
// gemm_fast (blocked, SIMD-dispatched at run time, threaded), bit-exact with each other on every
// field of GemmResult.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "core/result.hpp"
#include "gemm/layer.hpp"
#include "gemm/numerics.hpp"

namespace w4a8::gemm {

enum class Impl : std::uint8_t { Literal, Fast };
// Instruction sets of the fast path; Auto picks the best the CPU has (__builtin_cpu_supports).
enum class Isa : std::uint8_t { Auto, Scalar, Avx2, Avx512Vnni };

struct GemmOptions {
  ActPolicy policy = ActPolicy::F32;
  FloatDtype out_dtype = FloatDtype::F32;
  Isa isa = Isa::Auto;   // fast path only; an ISA the CPU lacks falls back to the best it has
  unsigned threads = 1;  // fast path only; 0 = std::thread::hardware_concurrency()
};

struct GemmResult {
  ActPolicy policy = ActPolicy::F32;     // which activation policy produced it
  FloatDtype out_dtype = FloatDtype::F32;
  bool correction_path = false;
  Isa isa = Isa::Scalar;                 // what the fast path ran (Scalar for literal)
  std::uint64_t M = 0, N = 0, K = 0;
  std::vector<std::int8_t> w_q;          // [N, K] the int8 grid (both paths)
  // Integer path only:
  std::vector<std::int8_t> x_q;          // [M, K]
  std::vector<float> x_scale;            // [M] float32 scale (before any eager rounding)
  std::vector<std::int32_t> acc;         // [M, N] int32 (wraps mod 2^32 beyond |acc| < 2^31)
  // Correction path only:
  std::vector<float> w_dequant;          // [N, K] un-rotated float weight (rounded to the
                                         // activation dtype under Eager)
  std::vector<float> out;                // [M, N] values exactly representable in out_dtype
};

// @return GemmResult, or validate_call()'s / check_decodable()'s error (before any work), or
//         UsageError when the result would exceed kMaxElements.
Result<GemmResult> gemm_literal(const Layer& layer, const Activations& x, const GemmOptions& opt = {});
Result<GemmResult> gemm_fast(const Layer& layer, const Activations& x, const GemmOptions& opt = {});
Result<GemmResult> gemm(Impl impl, const Layer& layer, const Activations& x, const GemmOptions& opt = {});

// The ISA Isa::Auto resolves to on this CPU, and what a requested one resolves to.
Isa best_isa();
Isa resolve_isa(Isa requested);
std::string_view isa_name(Isa isa);

// Building blocks, exposed for tests and the CUDA comparison:
// w_q [N, K] of a validated layer (pre: check_decodable() is Ok).
std::vector<std::int8_t> decode_weights(const Layer& layer);
// Rotated (and, under Eager, dtype-rounded) row, its f32 scale, and x_q. pre: x.size() == k.
void quantize_row(const float* x, std::int64_t k, std::int64_t r, ActPolicy p, FloatDtype act,
                  float* x_rot_scratch, std::int8_t* x_q, float* scale);
// The same with a given rotation (convrot_row or a bit-identical SIMD version).
void quantize_row_with(void (*rotate)(float*, std::int64_t, std::int64_t), const float* x, std::int64_t k,
                       std::int64_t r, ActPolicy p, FloatDtype act, float* x_rot_scratch, std::int8_t* x_q,
                       float* scale);

}  // namespace w4a8::gemm
