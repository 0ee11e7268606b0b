// Adapters between the reference's host types (gemm::Layer, gemm::Activations, gemm::GemmResult)
// and the C ABI's w4a8_problem: the same operands in the layout the kernels take, owned host
// buffers for inputs in their dtype, outputs and intermediates, and a GemmResult read back from
// them. Used by the emulation (host pointers) and by cuda_layer.cpp (copied to the device).
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "core/result.hpp"
#include "gemm/layer.hpp"
#include "gemm/reference.hpp"
#include "kernels/emulate.hpp"
#include "kernels/w4a8_cuda.h"

namespace w4a8::kern {

struct LayoutOptions {
  std::int64_t ldx_pad = 0;  // extra elements after each activation row (odd strides)
  std::int64_t ldo_pad = 0;  // extra elements after each output row
  // false: skip this project's kernel limits (check_problem): a foreign plugin's own check decides.
  bool kernel_limits = true;
};

// Host copies in the kernels' layout; p points into them and into the layer (which must outlive it).
struct LayerProblem {
  w4a8_problem p{};
  std::vector<std::uint8_t> x;        // [M, ldx] in x dtype (padding filled with a NaN pattern)
  std::vector<std::uint8_t> bias;     // [N] in bias dtype
  std::vector<std::int8_t> x_q;       // [M, K]
  std::vector<float> x_scale;         // [M]
  std::vector<std::int32_t> acc;      // [M, N]
  std::vector<std::int8_t> w_q;       // [N, K] (integer path, M > 0: the GEMM's decoded grid)
  std::vector<std::uint8_t> out;      // [M, ldo] in out dtype
  std::vector<float> w_dequant;       // [N, K] (correction path)
  std::int32_t nan_flag = 0;
};

w4a8_dtype to_abi_dtype(gemm::FloatDtype d);
std::size_t dtype_bytes(w4a8_dtype d);

// The shared operand validation (gemm::validate_call, then gemm::check_decodable: the reference's
// errors, byte for byte), then the problem. It has no NaN-decoding weights by construction.
// @return LayerProblem, or validate_call()'s / check_decodable()'s error, or CudaUnsupported when
//         check_problem() rejects what the shared validation accepted (limits of this build; only
//         with layout.kernel_limits).
Result<std::unique_ptr<LayerProblem>> make_layer_problem(const gemm::Layer& layer, const gemm::Activations& x,
                                                         const gemm::GemmOptions& opt,
                                                         const LayoutOptions& layout = {});

// The GemmResult the problem's buffers hold (out read at stride ldo; intermediates as filled).
gemm::GemmResult collect_result(const LayerProblem& lp, const gemm::GemmOptions& opt, bool correction_path);

// The CUDA path emulated on the CPU (emulate_w4a8_gemm) on a device of shape `dev`, as a GemmResult.
// @return GemmResult or make_layer_problem()'s error.
Result<gemm::GemmResult> gemm_emulated(const gemm::Layer& layer, const gemm::Activations& x,
                                       const gemm::GemmOptions& opt, const LayoutOptions& layout = {},
                                       EmuStats* stats = nullptr, const DeviceShape& dev = DeviceShape{132, 3});

}  // namespace w4a8::kern
