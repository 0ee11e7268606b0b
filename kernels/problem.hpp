// Host-side checks and sizes of a w4a8_problem (the C ABI's operand contract), shared by the CUDA
// entry point and the host emulation. Plain C++: no CUDA needed.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/w4a8_cuda.h"

namespace w4a8::kern {

// Limits of this build (beyond them: W4A8_ERR_UNSUPPORTED). Elements of any one operand/result.
inline constexpr std::int64_t kMaxProblemElements = std::int64_t(1) << 40;
inline constexpr std::int64_t kMaxGridY = 65535;

// post: W4A8_OK iff the problem meets the kernel contract (K % 16, K % G, K % R, G >= 4 dividing 16
// or a multiple of 16, R a power of 4: the same accept/reject decision as gemm::validate_operands on
// well-typed operands) and this build's limits; the first failing check wins.
w4a8_status check_problem(const w4a8_problem& p);

// Workspace layout: byte offsets of each scratch buffer (SIZE_MAX when the problem supplies it or
// the path does not need it) and the total, each buffer 256-byte aligned.
struct Workspace {
  std::size_t x_q = SIZE_MAX, x_scale = SIZE_MAX;                    // integer path
  std::size_t w_dequant = SIZE_MAX, x_f32 = SIZE_MAX, out_f32 = SIZE_MAX;  // correction path
  std::size_t total = 0;
};
// pre: check_problem(p) == W4A8_OK.
Workspace workspace_layout(const w4a8_problem& p);

}  // namespace w4a8::kern
