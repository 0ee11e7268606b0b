#include "kernels/cuda_layer.hpp"

#include <cuda_runtime.h>

#include <string>
#include <vector>

#include "kernels/problem.hpp"

namespace w4a8::kern {
namespace {

// Owns device allocations; frees them on every exit path.
class DeviceArena {
 public:
  ~DeviceArena() {
    for (void* p : ptrs_) cudaFree(p);
  }
  // Copies bytes host->device (or allocates zeroed memory when src is null). nullptr for 0 bytes.
  void* put(const void* src, std::size_t bytes, cudaError_t& err) {
    if (!bytes || err != cudaSuccess) return nullptr;
    void* d = nullptr;
    if ((err = cudaMalloc(&d, bytes)) != cudaSuccess) return nullptr;
    ptrs_.push_back(d);
    err = src ? cudaMemcpy(d, src, bytes, cudaMemcpyHostToDevice) : cudaMemset(d, 0, bytes);
    return d;
  }

 private:
  std::vector<void*> ptrs_;
};

template <class T>
std::size_t bytes_of(const std::vector<T>& v) {
  return v.size() * sizeof(T);
}

Error failed(const std::string& what, cudaError_t e) {
  return make_error(ErrorKind::CudaFailed, {what + ": " + cudaGetErrorString(e)});
}

}  // namespace

Status cuda_available() {
  int code = 0;
  const int n = w4a8_cuda_device_count(&code);
  if (n > 0) return Ok{};
  return make_error(ErrorKind::CudaNoDevice,
                    {std::to_string(code), n == 0 ? std::string("0 devices") : cudaGetErrorString(cudaError_t(code))});
}

Result<gemm::GemmResult> gemm_cuda(const gemm::Layer& layer, const gemm::Activations& x, const gemm::GemmOptions& opt,
                                   const LayoutOptions& layout) {
  auto made = make_layer_problem(layer, x, opt, layout);
  if (!made.ok()) return std::move(made).error();
  W4A8_TRY(cuda_available());
  LayerProblem& lp = **made;
  const w4a8_problem& h = lp.p;
  w4a8_problem d = h;
  DeviceArena arena;
  cudaError_t e = cudaSuccess;
  const std::size_t n = std::size_t(h.n), k = std::size_t(h.k);
  d.x = arena.put(lp.x.data(), bytes_of(lp.x), e);
  d.weight = static_cast<const std::int8_t*>(arena.put(layer.weight.data(), bytes_of(layer.weight), e));
  d.s_rel = static_cast<const std::uint8_t*>(arena.put(layer.s_rel.data(), bytes_of(layer.s_rel), e));
  d.s_channel = static_cast<const float*>(arena.put(layer.s_channel.data(), n * sizeof(float), e));
  d.codebook = h.codebook ? static_cast<const float*>(arena.put(h.codebook, 16 * sizeof(float), e)) : nullptr;
  d.correction = h.correction ? static_cast<const float*>(arena.put(h.correction, (k / std::size_t(h.group_size)) * n * sizeof(float), e)) : nullptr;
  d.bias = h.bias ? arena.put(lp.bias.data(), bytes_of(lp.bias), e) : nullptr;
  d.out = arena.put(nullptr, bytes_of(lp.out), e);
  d.x_q = h.x_q ? static_cast<std::int8_t*>(arena.put(nullptr, bytes_of(lp.x_q), e)) : nullptr;
  d.x_scale = h.x_scale ? static_cast<float*>(arena.put(nullptr, bytes_of(lp.x_scale), e)) : nullptr;
  d.acc = h.acc ? static_cast<std::int32_t*>(arena.put(nullptr, bytes_of(lp.acc), e)) : nullptr;
  d.w_q = h.w_q ? static_cast<std::int8_t*>(arena.put(nullptr, bytes_of(lp.w_q), e)) : nullptr;
  d.nan_scale_flag = static_cast<std::int32_t*>(arena.put(nullptr, sizeof(std::int32_t), e));
  const std::size_t ws_bytes = w4a8_gemm_cuda_workspace_size(&d);
  void* ws = arena.put(nullptr, ws_bytes, e);
  if (e != cudaSuccess) return failed("device buffers", e);

  const w4a8_status s = w4a8_gemm_cuda(&d, ws, ws_bytes, nullptr);
  if (s == W4A8_ERR_UNSUPPORTED) return make_error(ErrorKind::CudaUnsupported, {"w4a8_gemm_cuda returned W4A8_ERR_UNSUPPORTED"});
  if (s != W4A8_OK) return make_error(ErrorKind::CudaFailed, {std::string("w4a8_gemm_cuda: ") + w4a8_cuda_last_error() + " (status " + std::to_string(int(s)) + ")"});
  if ((e = cudaDeviceSynchronize()) != cudaSuccess) return failed("kernel execution", e);

  auto get = [&e](void* dst, const void* src, std::size_t bytes) {
    if (bytes && e == cudaSuccess) e = cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToHost);
  };
  get(lp.out.data(), d.out, bytes_of(lp.out));
  if (h.x_q) get(lp.x_q.data(), d.x_q, bytes_of(lp.x_q));
  if (h.x_scale) get(lp.x_scale.data(), d.x_scale, bytes_of(lp.x_scale));
  if (h.acc) get(lp.acc.data(), d.acc, bytes_of(lp.acc));
  if (h.w_q) get(lp.w_q.data(), d.w_q, bytes_of(lp.w_q));
  get(&lp.nan_flag, d.nan_scale_flag, sizeof(std::int32_t));
  if (h.correction)  // the dequantized weight stays in the workspace; read it back as an intermediate
    get(lp.w_dequant.data(), static_cast<const unsigned char*>(ws) + workspace_layout(d).w_dequant,
        bytes_of(lp.w_dequant));
  if (e != cudaSuccess) return failed("copy back", e);
  gemm::GemmResult r = collect_result(lp, opt, h.correction != nullptr);
  if (r.w_q.empty()) r.w_q = gemm::decode_weights(layer);  // correction path: the reference's grid
  return r;
}

}  // namespace w4a8::kern
