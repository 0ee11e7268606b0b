// Host-side launchers of the CUDA kernels (defined in the .cu files), called by the C entry point.
// Each returns the cudaError_t of its launch as an int (0 = success).
#pragma once

#include <cstddef>

#include "kernels/act_row.hpp"
#include "kernels/gemm_tile.hpp"

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
  std::int32_t* nan_flag = nullptr;
};

// Dynamic shared memory the activation kernel needs for a row of k floats.
inline std::size_t act_smem_bytes(long long k) { return static_cast<std::size_t>(k) * sizeof(float); }

int launch_act_quant(const ActArgs& a, void* stream);
int launch_w4a8_gemm(TileKind kind, const GemmArgs& g, void* stream);
// Writes g.w_q_out [N, K]: the decoded grid exactly as the GEMM's B loads produce it.
int launch_w4a8_decode(TileKind kind, const GemmArgs& g, void* stream);
// W = un-rotate(w_q * s_channel + correction) into c.w_dequant, then out = x @ W^T (+ bias) with a
// float32 cuBLAS GEMM, rounded as a GEMM in gemm_dtype (the activation dtype under Eager, else f32).
// Returns a cudaError_t, or -1 for a cuBLAS failure.
int launch_correction(const CorrectionArgs& c, const void* x, int x_dtype, long long ldx, long long m,
                      const void* bias, int bias_dtype, void* out, int out_dtype, long long ldo,
                      float* x_f32_scratch, float* out_f32_scratch, int gemm_dtype, void* stream);
// Largest dynamic shared memory a block may opt into on the current device (bytes), or -1.
long long max_dynamic_smem();

}  // namespace w4a8::kern
