// Host-side launchers of the CUDA kernels (defined in the .cu files), called by the C entry point.
// Each returns the cudaError_t of its launch as an int (0 = success).
#pragma once

#include <cstddef>

#include "kernels/act_row.hpp"
#include "kernels/gemm_tile.hpp"
#include "kernels/problem.hpp"

namespace w4a8::kern {

struct CorrectionArgs {
  long long n = 0, k = 0;
  int group = 0, r = 0;
  const std::uint8_t* weight = nullptr;
  const std::uint8_t* s_rel = nullptr;
  const float* s_channel = nullptr;
  const float* codebook = nullptr;
  const float* correction = nullptr;  // [K/G, N]
  float* w_dequant = nullptr;         // [N, K] f32 workspace
};

// Dynamic shared memory of the row-resident kernels (activation, dequantize) for a row of k floats.
inline std::size_t row_smem_bytes(long long k) { return static_cast<std::size_t>(k) * sizeof(float); }

// The prologue: activation rotation + quantization, the decode table, zeroed split-K sums.
int launch_prologue(const ActArgs& a, void* stream);
int launch_w4a8_gemm(const GemmPlan& plan, const GemmArgs& g, void* stream);
// Writes g.w_q_out [N, K]: the decoded grid through the GEMM's table and decode4.
int launch_w4a8_decode(const GemmArgs& g, void* stream);
// Sets *flag = 1 when any of the bytes is an FP8 NaN (0x7F / 0xFF).
int launch_nan_scan(const std::uint8_t* s_rel, long long bytes, std::int32_t* flag, void* stream);
// W = un-rotate(w_q * s_channel + correction) into c.w_dequant, then out = x @ W^T (+ bias) with a
// float32 cuBLAS GEMM, rounded as a GEMM in gemm_dtype (the activation dtype under Eager, else f32).
// Returns a cudaError_t, or -1 for a cuBLAS failure.
int launch_correction(const CorrectionArgs& c, const void* x, w4a8_dtype x_dtype, long long ldx, long long m,
                      const void* bias, w4a8_dtype bias_dtype, void* out, w4a8_dtype out_dtype, long long ldo,
                      float* x_f32_scratch, float* out_f32_scratch, w4a8_dtype gemm_dtype, void* stream);

// The current device: SMs, the largest dynamic shared memory a block may opt into, and the GEMM
// blocks of a plan's kind / kernel variant / shared memory resident per SM. -1 when a query fails.
struct DeviceInfo {
  int sms = -1;
  long long smem_optin = -1;
};
DeviceInfo device_info();
int gemm_blocks_per_sm(TileKind kind, bool small_group, bool codes16, int smem_bytes);

}  // namespace w4a8::kern
