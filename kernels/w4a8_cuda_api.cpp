// The C entry point: checks the problem, carves the workspace, launches activation quantization and
// the fused GEMM (integer path) or the dequantize + cuBLAS GEMM (correction path) on the stream.
#include <cuda_runtime.h>

#include <string>

#include "kernels/launch.hpp"
#include "kernels/problem.hpp"
#include "kernels/w4a8_cuda.h"

namespace {

thread_local std::string g_last_error;

w4a8_status cuda_failure(int code, const char* where) {
  g_last_error = std::string(where) + ": ";
  g_last_error += code < 0 ? "cuBLAS call failed" : cudaGetErrorString(static_cast<cudaError_t>(code));
  return W4A8_ERR_CUDA;
}

}  // namespace

extern "C" const char* w4a8_cuda_last_error(void) { return g_last_error.c_str(); }

extern "C" int w4a8_cuda_device_count(int* cuda_error) {
  int n = 0;
  const cudaError_t e = cudaGetDeviceCount(&n);
  if (cuda_error) *cuda_error = static_cast<int>(e);
  return e == cudaSuccess ? n : -1;
}

extern "C" w4a8_status w4a8_gemm_cuda(const w4a8_problem* pp, void* workspace, size_t workspace_bytes,
                                      void* stream) {
  using namespace w4a8::kern;
  if (!pp) return W4A8_ERR_ARGUMENT;
  const w4a8_problem& p = *pp;
  if (const w4a8_status s = check_problem(p); s != W4A8_OK) return s;
  const Workspace ws = workspace_layout(p);
  if (ws.total > workspace_bytes || (ws.total && !workspace)) return W4A8_ERR_ARGUMENT;
  if (p.m == 0) return W4A8_OK;
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) return W4A8_ERR_NO_DEVICE;
  auto* base = static_cast<unsigned char*>(workspace);
  // The row-resident kernels hold K floats in shared memory.
  const long long smem_max = max_dynamic_smem();
  if (smem_max < 0) return cuda_failure(static_cast<int>(cudaGetLastError()), "cudaDeviceGetAttribute");
  if (static_cast<long long>(act_smem_bytes(p.k)) > smem_max) return W4A8_ERR_UNSUPPORTED;

  if (p.correction) {
    CorrectionArgs c;
    c.n = p.n, c.k = p.k, c.group = p.group_size, c.r = p.convrot_groupsize;
    c.weight = reinterpret_cast<const std::uint8_t*>(p.weight), c.s_rel = p.s_rel, c.s_channel = p.s_channel;
    c.codebook = p.codebook, c.correction = p.correction, c.nan_flag = p.nan_scale_flag;
    c.w_dequant = reinterpret_cast<float*>(base + ws.w_dequant);
    const int gemm_dtype = p.act_policy == kPolicyEager ? p.x_dtype : 0;
    const int e = launch_correction(c, p.x, p.x_dtype, p.ldx, p.m, p.bias, p.bias_dtype, p.out, p.out_dtype, p.ldo,
                                    reinterpret_cast<float*>(base + ws.x_f32),
                                    reinterpret_cast<float*>(base + ws.out_f32), gemm_dtype, stream);
    return e ? cuda_failure(e, "correction path") : W4A8_OK;
  }

  ActArgs a;
  a.m = p.m, a.k = p.k, a.r = p.convrot_groupsize, a.x = p.x, a.x_dtype = p.x_dtype, a.ldx = p.ldx;
  a.policy = p.act_policy;
  a.x_q = p.x_q ? p.x_q : reinterpret_cast<std::int8_t*>(base + ws.x_q);
  a.x_scale = p.x_scale ? p.x_scale : reinterpret_cast<float*>(base + ws.x_scale);
  if (const int e = launch_act_quant(a, stream)) return cuda_failure(e, "act_quant_kernel");

  GemmArgs g;
  g.m = p.m, g.n = p.n, g.k = p.k, g.group = p.group_size, g.x_q = a.x_q, g.x_scale = a.x_scale;
  g.weight = reinterpret_cast<const std::uint8_t*>(p.weight), g.s_rel = p.s_rel, g.s_channel = p.s_channel;
  g.codebook = p.codebook, g.bias = p.bias, g.bias_dtype = p.bias_dtype, g.out = p.out;
  g.out_dtype = p.out_dtype, g.ldo = p.ldo, g.acc_out = p.acc, g.nan_flag = p.nan_scale_flag;
  g.w_q_out = p.w_q;
  if (const int e = launch_w4a8_gemm(pick_tile(p.m), g, stream)) return cuda_failure(e, "w4a8_gemm_kernel");
  if (p.w_q)
    if (const int e = launch_w4a8_decode(pick_tile(p.m), g, stream)) return cuda_failure(e, "w4a8_decode_kernel");
  return W4A8_OK;
}
