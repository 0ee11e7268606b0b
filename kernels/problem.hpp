// Host-side checks, workspace layout and launch plan of a w4a8_problem (the C ABI's operand
// contract), shared by the CUDA entry point, the host emulation and both plugin modules. Plain C++:
// no CUDA needed.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/act_row.hpp"
#include "kernels/gemm_tile.hpp"
#include "kernels/w4a8_cuda.h"

namespace w4a8::kern {

// Limits of this build (beyond them: W4A8_ERR_UNSUPPORTED). Elements of any one operand/result.
inline constexpr std::int64_t kMaxProblemElements = std::int64_t(1) << 40;
inline constexpr std::int64_t kMaxGridY = 65535;
inline constexpr std::int64_t kMaxK = (std::int64_t(1) << 31) - 256;  // 32-bit k arithmetic in the kernels
// Devices with more resident blocks than this are planned as if they had this many (it bounds the
// split-K workspace, which workspace_size must size without asking the device).
inline constexpr long long kMaxSlots = 8192;

// post: W4A8_OK iff the problem meets the kernel contract (K % 16, K % G, K % R, G >= 4 dividing 16
// or a multiple of 16, R a power of 4: the same accept/reject decision as gemm::validate_operands on
// well-typed operands) and this build's limits; the first failing check wins. *why (when given) gets
// a static text naming the check ("" on W4A8_OK).
w4a8_status check_problem(const w4a8_problem& p, const char** why = nullptr);

// One layer's weight as check_problem sees it, without buffers or activations (the consumer matrix
// judges a checkpoint from its header alone).
struct LayerShape {
  std::int64_t n = 0, k = 0;
  std::int64_t group_size = 16, convrot_groupsize = 256;
  std::int32_t bits = 4;                  // 0 or 4, or 6 (refused: unsupported by this kernel)
  int s_rel_dtype = W4A8_SCALE_FP8_E4M3;  // a w4a8_scale_dtype value (any other int is refused)
};
// post: the status and text check_problem gives a problem with these fields whose every other field
// is valid (m = 0), from the same checks in the same order: sizes, bits, scale storage, the kernel
// contract, then the weight's size limits (N * K, K). check_problem runs these very checks first.
w4a8_status check_layer_shape(const LayerShape& s, const char** why = nullptr);

// This thread's last failure text for the C entry points and plugins ("" when none).
void set_last_error(const char* text);
void set_last_error(const char* where, const char* detail);
const char* last_error();

// Workspace layout: byte offsets of each scratch buffer (SIZE_MAX when the problem supplies it or
// the path does not need it) and the total, each buffer 256-byte aligned.
struct Workspace {
  std::size_t x_q_frag = SIZE_MAX, x_scale = SIZE_MAX;                     // integer path
  std::size_t table = SIZE_MAX, split_acc = SIZE_MAX, split_count = SIZE_MAX;  // integer path
  std::size_t w_dequant = SIZE_MAX, x_f32 = SIZE_MAX, out_f32 = SIZE_MAX;  // correction path
  std::size_t total = 0;
};
// pre: check_problem(p) == W4A8_OK.
Workspace workspace_layout(const w4a8_problem& p);

// The device as the launch plan sees it: SMs and resident GEMM blocks per SM.
struct DeviceShape {
  int sms = 132;           // H200 / H100 SXM
  int blocks_per_sm = 2;
};
// Launch plan of the integer path (pre: check_problem OK, no correction).
struct GemmPlan {
  TileKind kind = TileKind::kSmallM;
  long long tiles_m = 0, tiles_n = 0, k_tiles = 0;
  int splits = 1;
  int scale_words = 0;
  int smem_bytes = 0;  // dynamic shared memory of one GEMM block
};
GemmPlan plan_gemm(const w4a8_problem& p, const DeviceShape& dev);

// Kernel arguments of the prologue and the GEMM with the workspace at `ws` (device or host
// pointers alike). pre: check_problem OK, integer path, p.m > 0.
ActArgs make_act_args(const w4a8_problem& p, const Workspace& w, unsigned char* ws, const GemmPlan& plan);
GemmArgs make_gemm_args(const w4a8_problem& p, const Workspace& w, unsigned char* ws, const GemmPlan& plan);

}  // namespace w4a8::kern
