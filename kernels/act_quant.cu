// The GEMM's prologue: one block per activation row (ConvRot + per-row int8 quantization, float32 or
// eager policy, the row held in dynamic shared memory as float32), the blocks also building the
// decode table and zeroing the split-K sums. Steps from act_row.hpp, shared with the emulation.
#include <cuda_runtime.h>

#include "kernels/launch.hpp"

namespace w4a8::kern {
namespace {

__global__ void __launch_bounds__(kActThreads) act_quant_kernel(const ActArgs a) {
  extern __shared__ float row[];
  __shared__ float warp_max[kActThreads / kWarp];
  const int t = static_cast<int>(threadIdx.x);
  const long long m = blockIdx.x;

  prologue_side_jobs(a, m, gridDim.x, t);
  for (long long i = t; i < a.k; i += kActThreads) row[i] = act_load(a, m, i);
  for (long long s = 1; s < a.r; s *= 4) {
    __syncthreads();
    for (long long b = t; b < a.k / 4; b += kActThreads) rotate_butterfly(row, b, a.r, s);
  }
  __syncthreads();
  float mx = 0.f;
  for (long long i = t; i < a.k; i += kActThreads) {
    const float v = act_rotated_value(a, row[i]);
    row[i] = v;
    mx = gemm::absmax_step(mx, v);
  }
  // The max is exact and a NaN sticks, so the reduction order does not matter.
  for (int off = kWarp / 2; off > 0; off /= 2) mx = gemm::absmax_step(mx, __shfl_xor_sync(0xffffffffu, mx, off));
  if (t % kWarp == 0) warp_max[t / kWarp] = mx;
  __syncthreads();
  mx = 0.f;
  for (int w = 0; w < kActThreads / kWarp; ++w) mx = gemm::absmax_step(mx, warp_max[w]);
  const float scale = gemm::row_scale(mx), divisor = act_divisor(a, scale);
  for (long long q = t; q < act_quads(a); q += kActThreads) act_store_quad(a, m, q, row, divisor);
  if (m == a.m - 1) act_zero_pad_rows(a, t);
  if (t == 0) a.x_scale[m] = scale;
}

}  // namespace

int launch_prologue(const ActArgs& a, void* stream) {
  const std::size_t smem = row_smem_bytes(a.k);
  if (smem > 48 * 1024) {
    const cudaError_t e = cudaFuncSetAttribute(act_quant_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                               static_cast<int>(smem));
    if (e != cudaSuccess) return static_cast<int>(e);
  }
  act_quant_kernel<<<static_cast<unsigned>(a.m), kActThreads, smem, static_cast<cudaStream_t>(stream)>>>(a);
  return static_cast<int>(cudaGetLastError());
}

}  // namespace w4a8::kern
