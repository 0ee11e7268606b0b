// The raw C ABI on a device, as production callers use it: device buffers the caller owns, no
// intermediates requested (the workspace carries x_q, x_scale, the decode table and the split-K
// sums), a caller-chosen stream, several host threads, one workspace reused across calls. Outputs
// against the CPU reference: bit-exact on the integer path, within the cuBLAS-order bound on the
// correction path. Every test skips with the reason when there is no device.
#include <gtest/gtest.h>

#include <cuda_runtime.h>

#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "kernels/dtype_io.hpp"
#include "kernels/layer_problem.hpp"
#include "kernels/w4a8_cuda.h"
#include "cuda_require.hpp"
#include "layer_gen.hpp"

namespace w4a8::kern::test {
namespace {

using gemm::FloatDtype;


// Device copies of a LayerProblem's operands (all pointers in `d` are device pointers), freed on
// destruction. Intermediates are requested only when `intermediates` is set; the NaN flag always.
class DeviceProblem {
 public:
  DeviceProblem(const LayerProblem& lp, const gemm::Layer& layer, bool intermediates) : lp_(lp) {
    const w4a8_problem& h = lp.p;
    d = w4a8_problem{};
    d.m = h.m, d.n = h.n, d.k = h.k, d.group_size = h.group_size, d.convrot_groupsize = h.convrot_groupsize;
    d.x_dtype = h.x_dtype, d.ldx = h.ldx, d.bias_dtype = h.bias_dtype, d.out_dtype = h.out_dtype, d.ldo = h.ldo;
    d.act_policy = h.act_policy;
    d.x = put(lp.x.data(), lp.x.size());
    d.weight = static_cast<const std::int8_t*>(put(layer.weight.data(), layer.weight.size()));
    d.s_rel = static_cast<const std::uint8_t*>(put(layer.s_rel.data(), layer.s_rel.size()));
    d.s_channel = static_cast<const float*>(put(layer.s_channel.data(), layer.s_channel.size() * 4));
    if (h.codebook) d.codebook = static_cast<const float*>(put(h.codebook, 16 * 4));
    if (h.correction)
      d.correction = static_cast<const float*>(put(h.correction, std::size_t(h.k / h.group_size * h.n) * 4));
    if (h.bias) d.bias = put(lp.bias.data(), lp.bias.size());
    d.out = put(nullptr, lp.out.size());
    d.nan_scale_flag = static_cast<std::int32_t*>(put(nullptr, 4));
    if (intermediates && !h.correction) {
      d.x_q = static_cast<std::int8_t*>(put(nullptr, lp.x_q.size()));
      d.x_scale = static_cast<float*>(put(nullptr, lp.x_scale.size() * 4));
      d.acc = static_cast<std::int32_t*>(put(nullptr, lp.acc.size() * 4));
    }
    ws_bytes = w4a8_gemm_cuda_workspace_size(&d);
    // The workspace sits between two guard regions of one allocation: the call must stay inside.
    ws_alloc = static_cast<unsigned char*>(put(nullptr, ws_bytes + 2 * kGuard));
    cudaMemset(ws_alloc, kGuardByte, ws_bytes + 2 * kGuard);
    ws = ws_alloc + kGuard;
  }
  ~DeviceProblem() {
    for (void* p : owned_) cudaFree(p);
  }
  w4a8_status run(cudaStream_t stream) { return w4a8_gemm_cuda(&d, ws_bytes ? ws : nullptr, ws_bytes, stream); }
  // out (read at stride ldo) and the NaN flag, after synchronizing `stream`.
  std::vector<float> out(cudaStream_t stream, std::int32_t* flag = nullptr) {
    EXPECT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
    std::vector<std::uint8_t> bytes(lp_.out.size());
    EXPECT_EQ(cudaMemcpy(bytes.data(), d.out, bytes.size(), cudaMemcpyDeviceToHost), cudaSuccess);
    if (flag) {
      EXPECT_EQ(cudaMemcpy(flag, d.nan_scale_flag, 4, cudaMemcpyDeviceToHost), cudaSuccess);
    }
    std::vector<float> v(std::size_t(d.m * d.n));
    for (std::int64_t a = 0; a < d.m; ++a)
      for (std::int64_t c = 0; c < d.n; ++c) v[std::size_t(a * d.n + c)] = load_as_f32(bytes.data(), a * d.ldo + c, d.out_dtype);
    return v;
  }
  bool guards_intact() {
    std::vector<unsigned char> g(2 * kGuard);
    cudaMemcpy(g.data(), ws_alloc, kGuard, cudaMemcpyDeviceToHost);
    cudaMemcpy(g.data() + kGuard, ws + ws_bytes, kGuard, cudaMemcpyDeviceToHost);
    for (unsigned char b : g)
      if (b != kGuardByte) return false;
    return true;
  }

  w4a8_problem d;
  std::size_t ws_bytes = 0;
  unsigned char* ws = nullptr;

 private:
  static constexpr std::size_t kGuard = 4096;
  static constexpr unsigned char kGuardByte = 0xA7;
  void* put(const void* src, std::size_t bytes) {
    void* p = nullptr;
    EXPECT_EQ(cudaMalloc(&p, bytes ? bytes : 1), cudaSuccess);
    if (src) {
      EXPECT_EQ(cudaMemcpy(p, src, bytes, cudaMemcpyHostToDevice), cudaSuccess);
    }
    else EXPECT_EQ(cudaMemset(p, 0, bytes ? bytes : 1), cudaSuccess);
    owned_.push_back(p);
    return p;
  }
  const LayerProblem& lp_;
  std::vector<void*> owned_;
  unsigned char* ws_alloc = nullptr;
};

std::string diff_out(const std::vector<float>& got, const std::vector<float>& want) {
  if (got.size() != want.size()) return "sizes differ";
  for (std::size_t i = 0; i < got.size(); ++i)
    if (gemm::f32_bits(got[i]) != gemm::f32_bits(want[i]))
      return "out[" + std::to_string(i) + "]: " + std::to_string(got[i]) + " vs " + std::to_string(want[i]);
  return "";
}

// Runs case c through the raw ABI on `stream` and checks out against the reference.
void check_raw(const Case& c, cudaStream_t stream, bool intermediates, int calls = 1) {
  const gemm::Layer layer = make_layer(c);
  const gemm::Activations x = make_acts(c);
  auto ref = gemm::gemm_literal(layer, x, options(c));
  auto lp = make_layer_problem(layer, x, options(c), layout(c));
  ASSERT_TRUE(ref.ok() && lp.ok()) << describe(c);
  DeviceProblem dp(**lp, layer, intermediates);
  for (int i = 0; i < calls; ++i) {  // the same workspace again: the prologue re-zeroes the sums
    ASSERT_EQ(dp.run(stream), W4A8_OK) << describe(c) << ": " << w4a8_cuda_last_error();
    const std::vector<float> got = dp.out(stream);
    if (c.correction) {
      EXPECT_EQ(check_correction_out(c, x, *ref, got), "") << describe(c) << " call " << i;
    } else {
      EXPECT_EQ(diff_out(got, ref->out), "") << describe(c) << " call " << i;
    }
  }
  EXPECT_TRUE(dp.guards_intact()) << describe(c) << ": wrote outside the workspace";
}

// Production configuration: no intermediates, every workspace buffer carved by the kernel itself.
TEST(CudaRaw, ProductionConfigurationOutOnly) {
  W4A8_REQUIRE_CUDA();
  int idx = 0;
  for (std::uint64_t m : {1, 7, 16, 17, 100})
    for (auto [n, k] : {std::pair<std::uint64_t, std::uint64_t>{64, 8192}, {65, 1024}, {300, 4096}})
      for (bool corr : {false, true}) {
        if (corr && k > 1024) continue;
        Case c;
        c.m = m, c.n = n, c.k = k, c.g = 16, c.r = 256, c.correction = corr, c.bias = idx % 2;
        c.x_dtype = FloatDtype::BF16, c.out_dtype = FloatDtype::BF16, c.seed = 4242u + idx++;
        check_raw(c, nullptr, /*intermediates=*/false, /*calls=*/2);
      }
}

// A caller stream created non-blocking (no implicit sync with the legacy default stream).
TEST(CudaRaw, NonDefaultStream) {
  W4A8_REQUIRE_CUDA();
  cudaStream_t s = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), cudaSuccess);
  Case c;
  c.m = 5, c.n = 200, c.k = 4096, c.g = 16, c.r = 256, c.bias = true, c.seed = 55;
  check_raw(c, s, /*intermediates=*/true);
  c.m = 70, c.seed = 56;
  check_raw(c, s, /*intermediates=*/false);
  cudaStreamDestroy(s);
}

// Two host threads, each with its own stream, problem and workspace, at the same time.
TEST(CudaRaw, TwoThreads) {
  W4A8_REQUIRE_CUDA();
  auto worker = [](Case c) {
    cudaStream_t s = nullptr;
    ASSERT_EQ(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), cudaSuccess);
    for (int rep = 0; rep < 3; ++rep) check_raw(c, s, rep % 2 == 0);
    cudaStreamDestroy(s);
  };
  Case a, b;
  a.m = 3, a.n = 130, a.k = 4096, a.g = 16, a.r = 256, a.seed = 1;
  b.m = 40, b.n = 33, b.k = 512, b.g = 8, b.r = 16, b.codebook = true, b.seed = 2;
  std::thread ta(worker, a), tb(worker, b);
  ta.join();
  tb.join();
}

// A NaN scale byte reaching the raw ABI (outside the contract) is reported through nan_scale_flag.
// (Every pointer in the problem is a device pointer: no intermediates requested.)
TEST(CudaRaw, NanScaleByteIsFlagged) {
  W4A8_REQUIRE_CUDA();
  OwnedProblem o = small_problem();
  ASSERT_TRUE(o.lp);
  o.layer.s_rel[5] = 0xFF;  // after the shared validation, which would refuse it
  DeviceProblem dp(*o.lp, o.layer, false);
  ASSERT_EQ(dp.run(nullptr), W4A8_OK) << w4a8_cuda_last_error();
  std::int32_t flag = 0;
  dp.out(nullptr, &flag);
  EXPECT_EQ(flag, 1);
}

// Refused storage variants: a status and a reason, nothing launched.
TEST(CudaRaw, RefusesSixBitAndF32Scales) {
  w4a8_problem p{};
  alignas(16) static std::int8_t w[64];
  static float f[64];
  p.m = 1, p.n = 8, p.k = 64, p.group_size = 16, p.convrot_groupsize = 16, p.ldx = 64, p.ldo = 8;
  p.x = f, p.weight = w, p.s_rel = reinterpret_cast<const std::uint8_t*>(w), p.s_channel = f, p.out = f;
  p.bits = 6;
  EXPECT_EQ(w4a8_gemm_cuda(&p, nullptr, 0, nullptr), W4A8_ERR_UNSUPPORTED);
  EXPECT_NE(std::string(w4a8_cuda_last_error()).find("unsupported by this kernel"), std::string::npos);
  p.bits = 0, p.s_rel_dtype = W4A8_SCALE_F32;
  EXPECT_EQ(w4a8_gemm_cuda(&p, nullptr, 0, nullptr), W4A8_ERR_UNSUPPORTED);
  EXPECT_NE(std::string(w4a8_cuda_last_error()).find("F32 group scales"), std::string::npos);
}

}  // namespace
}  // namespace w4a8::kern::test
