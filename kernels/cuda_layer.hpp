// The CUDA path on host-side layer types: copies the operands to the device, runs w4a8_gemm_cuda,
// copies outputs and intermediates back. What `w4a8check gemm --impl cuda` calls (only built when
// W4A8_HAVE_CUDA is defined).
#pragma once

#include "core/result.hpp"
#include "gemm/layer.hpp"
#include "gemm/reference.hpp"
#include "kernels/layer_problem.hpp"

namespace w4a8::kern {

// @return GemmResult (out and, on the integer path, w_q/x_q/x_scale/acc from the device; on the
//         correction path w_dequant from the device and the reference's w_q), or
//         make_layer_problem()'s error, or CudaNoDevice, CudaUnsupported,
//         CudaFailed.
Result<gemm::GemmResult> gemm_cuda(const gemm::Layer& layer, const gemm::Activations& x, const gemm::GemmOptions& opt,
                                   const LayoutOptions& layout = {});

// Ok when a CUDA device is usable; else CudaNoDevice with cudaGetDeviceCount's code and text.
Status cuda_available();

}  // namespace w4a8::kern
