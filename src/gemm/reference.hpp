// The CPU reference W4A8 GEMM: out = x @ W^T + bias for an asym_w4a8_int8 layer, returning every
// intermediate. Two implementations with one contract: gemm_literal (the spec, line by line) and
// gemm_fast (blocked, SIMD-dispatched at run time, threaded), bit-exact with each other on every
// field of GemmResult.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "core/result.hpp"
#include "core/upstream.hpp"
#include "gemm/buffer.hpp"
#include "gemm/layer.hpp"
#include "gemm/numerics.hpp"

namespace w4a8::gemm {

enum class Impl : std::uint8_t { Literal, Fast };
// Instruction sets of the fast path; Auto picks the best the CPU has (gemm/cpu_features.hpp).
enum class Isa : std::uint8_t { Auto, Scalar, Avx2, Avx512Vnni };

struct GemmOptions {
  ActPolicy policy = ActPolicy::F32;
  FloatDtype out_dtype = FloatDtype::F32;
  Isa isa = Isa::Auto;   // fast path only; an ISA the CPU lacks falls back to the best it has
  unsigned threads = 1;  // fast path only; 0 = std::thread::hardware_concurrency()
  // Whose operand validation (order and messages) to reproduce; the numerics are the same in every
  // release this project knows.
  upstream::ComfyKitchen comfy_kitchen = upstream::kLatestComfyKitchen;
};

struct GemmResult {
  ActPolicy policy = ActPolicy::F32;     // which activation policy produced it
  FloatDtype out_dtype = FloatDtype::F32;
  bool correction_path = false;
  Isa isa = Isa::Scalar;                 // what the fast path ran (Scalar for literal)
  upstream::ComfyKitchen comfy_kitchen = upstream::kLatestComfyKitchen;  // whose validation ran
  std::uint64_t M = 0, N = 0, K = 0;
  int bits = 4;                          // code width of the layer (4 or 6)
  std::vector<std::int8_t> w_q;          // [N, K] the int8 grid (both paths; empty from gemm_prepared:
                                         // see PreparedLayer::w_q)
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

// A layer decoded once for many activation batches (audits, small M): the int8 grid and, for the
// integer path, the fast path's packed panels and column sums. gemm_prepared() then costs only the
// activation quantization and the integer GEMM; its results are bit-identical to gemm_fast's and
// gemm_literal's except that GemmResult::w_q stays empty (read it here once). The correction path
// caches w_q only: its float weight depends on the call's policy and activation dtype. Immutable
// after prepare_layer(), so one PreparedLayer may serve concurrent calls.
class PreparedLayer {
 public:
  const Layer& layer() const { return layer_; }
  std::span<const std::int8_t> w_q() const { return w_q_.span(); }  // [N, K]
  std::uint64_t N() const { return n_; }
  std::uint64_t K() const { return k_; }
  int bits() const { return bits_; }
  upstream::ComfyKitchen comfy_kitchen() const { return ck_; }
  // Bytes held (layer copy, grid, panels): what an audit keeps alive per prepared layer.
  std::uint64_t memory_bytes() const;

 private:
  friend Result<PreparedLayer> prepare_layer(Layer layer, const GemmOptions& opt);
  friend Result<GemmResult> gemm_prepared(const PreparedLayer& p, const Activations& x, const GemmOptions& opt);
  Layer layer_;
  std::uint64_t n_ = 0, k_ = 0;
  int bits_ = 4;
  upstream::ComfyKitchen ck_ = upstream::kLatestComfyKitchen;
  Buffer<std::int8_t> w_q_;
  Buffer<std::int8_t> panels_;  // integer path only (int_kernels.hpp layout)
  std::vector<std::int32_t> wsum_;
};

// Validates the layer alone (operand rules of opt.comfy_kitchen, with a placeholder input [1, K]),
// checks it decodes without NaN, then decodes and packs it with opt.threads.
// @return PreparedLayer, or validate_call()'s / check_decodable()'s error.
Result<PreparedLayer> prepare_layer(Layer layer, const GemmOptions& opt = {});
// Runs x through a prepared layer (opt.isa, opt.threads, policy, out_dtype; the input is validated
// against the layer under the release it was prepared for).
// @return GemmResult (w_q empty), or OpInputK / OpDtype / UsageError for the input.
Result<GemmResult> gemm_prepared(const PreparedLayer& p, const Activations& x, const GemmOptions& opt = {});

// The ISA Isa::Auto resolves to on this CPU, and what a requested one resolves to.
Isa best_isa();
Isa resolve_isa(Isa requested);
std::string_view isa_name(Isa isa);

// Building blocks, exposed for tests and the CUDA comparison:
// w_q [N, K] of a validated layer (pre: check_decodable() is Ok): the literal decode, element by
// element (numerics.hpp unpack_code_bits, code_value_bits, scale_value, decode_weight_value).
std::vector<std::int8_t> decode_weights(const Layer& layer);
// The same grid through the fast path's tables, with threads (into out: N * K bytes).
std::vector<std::int8_t> decode_weights_fast(const Layer& layer, unsigned threads);
void decode_weights_fast(const Layer& layer, unsigned threads, std::int8_t* out);
// Rotated (and, under Eager, dtype-rounded) row, its f32 scale, and x_q. pre: x.size() == k.
void quantize_row(const float* x, std::int64_t k, std::int64_t r, ActPolicy p, FloatDtype act,
                  float* x_rot_scratch, std::int8_t* x_q, float* scale);
// The same with a given rotation (convrot_row or a bit-identical SIMD version).
void quantize_row_with(void (*rotate)(float*, std::int64_t, std::int64_t), const float* x, std::int64_t k,
                       std::int64_t r, ActPolicy p, FloatDtype act, float* x_rot_scratch, std::int8_t* x_q,
                       float* scale);

}  // namespace w4a8::gemm
