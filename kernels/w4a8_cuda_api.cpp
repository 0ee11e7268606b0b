// The C entry point: checks the problem, carves the workspace, plans the launch for the current
// device (tile shape, split-K), then launches the prologue and the fused GEMM (integer path) or the
// dequantize + cuBLAS GEMM (correction path) on the stream, plus the optional NaN-scale scan and w_q
// decode. Every refusal and failure leaves its reason in w4a8_cuda_last_error().
#include <cuda_runtime.h>

#include <string>

#include "kernels/launch.hpp"
#include "kernels/problem.hpp"
#include "kernels/w4a8_cuda.h"

namespace {

using namespace w4a8::kern;

w4a8_status cuda_failure(int code, const char* where) {
  set_last_error(where, code < 0 ? "cuBLAS call failed" : cudaGetErrorString(static_cast<cudaError_t>(code)));
  return W4A8_ERR_CUDA;
}

w4a8_status unsupported(const char* why) {
  set_last_error("w4a8_gemm_cuda", why);
  return W4A8_ERR_UNSUPPORTED;
}

w4a8_status run_correction(const w4a8_problem& p, const Workspace& ws, unsigned char* base, void* stream) {
  CorrectionArgs c;
  c.n = p.n, c.k = p.k, c.group = p.group_size, c.r = p.convrot_groupsize;
  c.weight = reinterpret_cast<const std::uint8_t*>(p.weight), c.s_rel = p.s_rel, c.s_channel = p.s_channel;
  c.codebook = p.codebook, c.correction = p.correction;
  c.w_dequant = reinterpret_cast<float*>(base + ws.w_dequant);
  const w4a8_dtype gemm_dtype = p.act_policy == kPolicyEager ? p.x_dtype : W4A8_DTYPE_F32;
  const int e = launch_correction(c, p.x, p.x_dtype, p.ldx, p.m, p.bias, p.bias_dtype, p.out, p.out_dtype, p.ldo,
                                  reinterpret_cast<float*>(base + ws.x_f32), reinterpret_cast<float*>(base + ws.out_f32),
                                  gemm_dtype, stream);
  return e ? cuda_failure(e, "correction path") : W4A8_OK;
}

w4a8_status run_integer(const w4a8_problem& p, const Workspace& ws, unsigned char* base, const DeviceInfo& dev,
                        void* stream) {
  // The split-K factor depends on how many GEMM blocks this device keeps resident.
  GemmPlan plan = plan_gemm(p, DeviceShape{dev.sms, 1});
  if (plan.smem_bytes > dev.smem_optin) return unsupported("the GEMM block's shared memory exceeds this device's limit");
  const GemmArgs probe = make_gemm_args(p, ws, base, plan);  // the kernel variant
  const int resident = gemm_blocks_per_sm(plan.kind, probe.small_group, probe.codes16, plan.smem_bytes);
  if (resident < 0) return cuda_failure(static_cast<int>(cudaGetLastError()), "cudaOccupancyMaxActiveBlocksPerMultiprocessor");
  if (resident == 0) return unsupported("a GEMM block does not fit on one SM of this device");
  plan = plan_gemm(p, DeviceShape{dev.sms, resident});

  if (const int e = launch_prologue(make_act_args(p, ws, base, plan), stream)) return cuda_failure(e, "act_quant_kernel");
  const GemmArgs g = make_gemm_args(p, ws, base, plan);
  if (const int e = launch_w4a8_gemm(plan, g, stream)) return cuda_failure(e, "w4a8_gemm_kernel");
  if (p.w_q)
    if (const int e = launch_w4a8_decode(g, stream)) return cuda_failure(e, "w4a8_decode_kernel");
  return W4A8_OK;
}

}  // namespace

extern "C" const char* w4a8_cuda_last_error(void) { return last_error(); }

extern "C" int w4a8_cuda_device_count(int* cuda_error) {
  int n = 0;
  const cudaError_t e = cudaGetDeviceCount(&n);
  if (cuda_error) *cuda_error = static_cast<int>(e);
  return e == cudaSuccess ? n : -1;
}

extern "C" w4a8_status w4a8_gemm_cuda(const w4a8_problem* pp, void* workspace, size_t workspace_bytes,
                                      void* stream) {
  if (!pp) {
    set_last_error("w4a8_gemm_cuda: problem is NULL");
    return W4A8_ERR_ARGUMENT;
  }
  const w4a8_problem& p = *pp;
  const char* why = "";
  if (const w4a8_status s = check_problem(p, &why); s != W4A8_OK) {
    set_last_error("w4a8_gemm_cuda", why);
    return s;
  }
  const Workspace ws = workspace_layout(p);
  if (ws.total > workspace_bytes || (ws.total && !workspace)) {
    set_last_error("w4a8_gemm_cuda: workspace missing or smaller than w4a8_gemm_cuda_workspace_size()");
    return W4A8_ERR_ARGUMENT;
  }
  set_last_error("");
  if (p.m == 0) return W4A8_OK;
  int devices = 0;
  if (const cudaError_t e = cudaGetDeviceCount(&devices); e != cudaSuccess || devices == 0) {
    set_last_error("cudaGetDeviceCount", e != cudaSuccess ? cudaGetErrorString(e) : "0 devices");
    return W4A8_ERR_NO_DEVICE;
  }
  const DeviceInfo dev = device_info();
  if (dev.sms <= 0) return cuda_failure(static_cast<int>(cudaGetLastError()), "device attributes");
  // The row-resident kernels hold K floats in shared memory.
  if (static_cast<long long>(row_smem_bytes(p.k)) > dev.smem_optin)
    return unsupported("K * 4 bytes of shared memory (one activation or weight row) exceed this device's limit");
  auto* base = static_cast<unsigned char*>(workspace);
  if (p.nan_scale_flag)
    if (const int e = launch_nan_scan(p.s_rel, p.n * (p.k / p.group_size), p.nan_scale_flag, stream))
      return cuda_failure(e, "nan_scan_kernel");
  return p.correction ? run_correction(p, ws, base, stream) : run_integer(p, ws, base, dev, stream);
}
