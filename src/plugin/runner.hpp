// Runs one gemm::Layer through any kernel plugin: the shared operand validation and the problem in
// the kernels' layout (kern::make_layer_problem), the plugin's capability flags and check_problem
// (a problem it cannot run is refused before run() is called), then run() on host buffers (HOST
// plugins) or on device buffers obtained through the plugin's own alloc/copy functions (CUDA_DEVICE
// plugins), and the result read back as a gemm::GemmResult.
#pragma once

#include <cstdint>

#include "core/result.hpp"
#include "gemm/layer.hpp"
#include "gemm/reference.hpp"
#include "plugin/plugin.hpp"

namespace w4a8::plugin {

// Capabilities a problem needs (W4A8_CAP_*): its path, policy, code width, scale storage, and
// W4A8_CAP_INTERMEDIATES when the caller wants them.
std::uint64_t required_caps(const w4a8_problem& p, bool intermediates);

// @return GemmResult (out; with `intermediates` also w_q, x_q, x_scale and acc as the plugin wrote
//         them on the integer path, w_q from the reference decode on the correction path, where the
//         ABI returns no dequantized weight), or make_layer_problem()'s error (operand validation,
//         CudaUnsupported), PluginUnsupported (capabilities, check_problem), CudaNoDevice (a device
//         plugin found no device), PluginFailed (run, alloc, copy or synchronize failed).
// Row strides the plugin is given: x with ldx = K + x_pad (the padding holds a NaN pattern, so a read
// of it shows), out with ldo = N + out_pad (the padding must stay as it was). The ABI allows any
// ldx >= K and ldo >= N; an audit passes padded strides so a kernel that assumes K and N is caught.
struct Strides {
  std::int64_t x_pad = 0, out_pad = 0;
};
// broke_contract (optional): set to true when the error is what the checks after a successful `run`
// found (a buffer written past its end or into its padding, an input written, an output element left
// unwritten, a NaN scale decoded): the plugin returned a wrong result rather than failing. An audit
// judges that case wrong; `gemm` reports it as the same PluginFailed.
Result<gemm::GemmResult> run_layer(const Plugin& plugin, const gemm::Layer& layer, const gemm::Activations& x,
                                   const gemm::GemmOptions& opt, bool intermediates, Strides strides = {},
                                   bool* broke_contract = nullptr);

}  // namespace w4a8::plugin
