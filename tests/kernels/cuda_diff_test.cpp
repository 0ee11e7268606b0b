// Differential tests of the CUDA kernels against the CPU reference (and the host emulation): the
// integer intermediates and the outputs bit for bit, the correction path's w_dequant bit for bit
// and its cuBLAS output within a derived bound. Without a device every GPU test SKIPS with the
// reason; the host-side checks of the C entry point still run.
#include <gtest/gtest.h>
#include <rapidcheck.h>

#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "gemm/operands.hpp"
#include "kernels/cuda_layer.hpp"
#include "kernels/layer_problem.hpp"
#include "kernels/w4a8_cuda.h"
#include "cuda_require.hpp"
#include "layer_gen.hpp"

namespace w4a8::kern::test {
namespace {

using gemm::ActPolicy;
using gemm::FloatDtype;


gemm::GemmOptions ref_options(const Case& c) {
  gemm::GemmOptions o = options(c);
  o.threads = 0;  // all cores for the big shapes
  return o;
}

// Integer path: everything bit-exact against gemm_fast (itself bit-exact with gemm_literal).
void check_exact(const Case& c) {
  const gemm::Layer layer = make_layer(c);
  const gemm::Activations x = make_acts(c);
  auto ref = gemm::gemm_fast(layer, x, ref_options(c));
  ASSERT_TRUE(ref.ok()) << ref.error().message;
  auto dev = gemm_cuda(layer, x, options(c), layout(c));
  ASSERT_TRUE(dev.ok()) << describe(c) << ": " << dev.error().message;
  EXPECT_EQ(diff_results(*dev, *ref), "") << describe(c);
}

std::vector<std::int64_t> legal_groups(std::uint64_t k) {
  std::vector<std::int64_t> out;
  for (std::int64_t g : {4, 8, 16, 32, 48, 64, 96, 128, 192, 256})
    if (k % std::uint64_t(g) == 0) out.push_back(g);
  return out;
}
std::vector<std::int64_t> legal_rotations(std::uint64_t k) {
  std::vector<std::int64_t> out;
  for (std::int64_t r = 4; std::uint64_t(r) <= k && r <= 4096; r *= 4)
    if (k % std::uint64_t(r) == 0) out.push_back(r);
  return out;
}

// Small shapes (also the compute-sanitizer run): every legal G and R, codebook and uniform, bias
// dtypes, activation/output dtypes, both policies, odd strides.
TEST(CudaDiffSmall, EveryGroupAndRotation) {
  W4A8_REQUIRE_CUDA();
  const FloatDtype dts[] = {FloatDtype::F32, FloatDtype::BF16, FloatDtype::F16};
  int idx = 0;
  for (std::uint64_t m : {1, 7, 8, 13, 33})
    for (auto [n, k] : {std::pair<std::uint64_t, std::uint64_t>{8, 16}, {13, 64}, {72, 256}, {136, 192}}) {
      std::vector<std::pair<std::int64_t, std::int64_t>> grs;
      const auto gs = legal_groups(k), rs = legal_rotations(k);
      for (std::size_t i = 0; i < gs.size(); ++i) grs.push_back({gs[i], rs[i % rs.size()]});
      for (std::size_t i = 0; i < rs.size(); ++i) grs.push_back({gs[(i * 3) % gs.size()], rs[i]});
      for (auto [g, r] : grs) {
        Case c;
        c.m = m, c.n = n, c.k = k, c.g = g, c.r = r, c.codebook = idx % 2, c.bias = idx % 3 != 0;
        c.bias_dtype = dts[(idx / 3) % 3], c.x_dtype = dts[idx % 3], c.out_dtype = dts[(idx / 2) % 3];
        c.policy = (idx / 5) % 2 ? ActPolicy::Eager : ActPolicy::F32;
        c.ldx_pad = idx % 4 == 1 ? 3 : 0, c.ldo_pad = idx % 4 == 2 ? 5 : 0, c.seed = 1000u + idx++;
        check_exact(c);
        if (HasFailure()) return;
      }
    }
}

// The shape grid: M = 1, 7, 8, 13, 257, 4096; N, K from tiny to 8192+.
TEST(CudaDiff, ShapeGrid) {
  W4A8_REQUIRE_CUDA();
  int idx = 0;
  const std::pair<std::uint64_t, std::uint64_t> small_nk[] = {{8, 16}, {40, 272}, {1000, 1024}, {8200, 8448}};
  for (std::uint64_t m : {1, 7, 8, 13, 257})
    for (auto [n, k] : small_nk) {
      Case c;
      c.m = m, c.n = n, c.k = k, c.g = 16, c.r = k % 256 == 0 ? 256 : 16, c.codebook = idx % 2, c.bias = true;
      c.out_dtype = idx % 3 == 0 ? FloatDtype::BF16 : FloatDtype::F32, c.seed = 2000u + idx++;
      check_exact(c);
    }
  for (auto [n, k] : {std::pair<std::uint64_t, std::uint64_t>{3072, 3072}, {129, 8448}}) {
    Case c;
    c.m = 4096, c.n = n, c.k = k, c.g = 16, c.r = 256, c.codebook = true, c.bias = true;
    c.x_dtype = FloatDtype::BF16, c.out_dtype = FloatDtype::BF16, c.seed = 3000u + idx++;
    check_exact(c);
  }
}

// The device agrees with the host emulation (same steps) on a case mix, byte for byte.
TEST(CudaDiffSmall, MatchesEmulation) {
  W4A8_REQUIRE_CUDA();
  for (std::uint32_t s = 0; s < 6; ++s) {
    Case c;
    c.m = 3 + 31 * s, c.n = 17 + 40 * s, c.k = 256, c.g = s % 2 ? 8 : 64, c.r = s % 3 ? 64 : 4;
    c.codebook = s % 2, c.bias = true, c.x_dtype = FloatDtype::F16, c.out_dtype = FloatDtype::F16, c.seed = 77 + s;
    const gemm::Layer layer = make_layer(c);
    const gemm::Activations x = make_acts(c);
    auto emu = gemm_emulated(layer, x, options(c), layout(c));
    auto dev = gemm_cuda(layer, x, options(c), layout(c));
    ASSERT_TRUE(emu.ok() && dev.ok());
    EXPECT_EQ(diff_results(*dev, *emu), "") << describe(c);
  }
}

// Correction path: w_dequant bit-exact; out within the float32 dot-product bound of the reference
// (cuBLAS sums in another order): |d - r| <= 2 K u sum|x w| + 2 ulp_out(r), u = 2^-24.
TEST(CudaDiffSmall, CorrectionPath) {
  W4A8_REQUIRE_CUDA();
  int idx = 0;
  for (std::uint64_t m : {1, 13, 257})
    for (auto [n, k, g, r] : {std::tuple<std::uint64_t, std::uint64_t, std::int64_t, std::int64_t>{8, 16, 4, 16},
                              {72, 256, 32, 256}, {130, 1024, 128, 64}}) {
      Case c;
      c.m = m, c.n = n, c.k = k, c.g = g, c.r = r, c.correction = true, c.bias = idx % 2;
      c.codebook = idx % 3 == 0, c.out_dtype = idx % 2 ? FloatDtype::BF16 : FloatDtype::F32;
      c.ldx_pad = idx % 2, c.seed = 4000u + idx++;
      const gemm::Layer layer = make_layer(c);
      const gemm::Activations x = make_acts(c);
      auto ref = gemm::gemm_literal(layer, x, options(c));
      auto dev = gemm_cuda(layer, x, options(c), layout(c));
      ASSERT_TRUE(ref.ok() && dev.ok()) << describe(c);
      EXPECT_EQ(diff_results(*dev, *ref, /*compare_out=*/false), "") << describe(c);
      EXPECT_EQ(check_correction_out(c, x, *ref, dev->out), "") << describe(c);
    }
}

// Random cases, device vs reference (integer path: bit-exact; correction path: w_dequant
// bit-exact, out checked by CorrectionPath's bound elsewhere, so compared without out here).
TEST(CudaDiffSmall, RandomCases) {
  W4A8_REQUIRE_CUDA();
  EXPECT_TRUE(rc::check("device == reference on random cases", [] {
    const Case c = draw_case();
    const gemm::Layer layer = make_layer(c);
    const gemm::Activations x = make_acts(c);
    auto ref = gemm::gemm_literal(layer, x, options(c));
    RC_ASSERT(ref.ok());
    auto dev = gemm_cuda(layer, x, options(c), layout(c));
    RC_ASSERT(dev.ok());
    RC_ASSERT(diff_results(*dev, *ref, /*compare_out=*/!c.correction) == std::string());
  }));
}

// Two runs give byte-identical outputs and intermediates (both paths).
TEST(CudaDiffSmall, Repeatable) {
  W4A8_REQUIRE_CUDA();
  for (bool corr : {false, true}) {
    Case c;
    c.m = 257, c.n = 200, c.k = 512, c.g = 32, c.r = 256, c.correction = corr, c.bias = true, c.seed = 5;
    const gemm::Layer layer = make_layer(c);
    const gemm::Activations x = make_acts(c);
    auto a = gemm_cuda(layer, x, options(c));
    auto b = gemm_cuda(layer, x, options(c));
    ASSERT_TRUE(a.ok() && b.ok());
    EXPECT_EQ(diff_results(*a, *b), "") << describe(c);
  }
}

// Rows are independent on the device too (small-M and large-M tiles give the same row).
TEST(CudaDiffSmall, RowsIndependent) {
  W4A8_REQUIRE_CUDA();
  Case c;
  c.m = 100, c.n = 72, c.k = 256, c.g = 16, c.r = 64, c.bias = true, c.seed = 9;
  const gemm::GemmOptions opt = options(c);
  EXPECT_EQ(rows_independent_diff([&](const gemm::Layer& l, const gemm::Activations& x) { return gemm_cuda(l, x, opt); },
                                  c, {0, 50, 99}),
            "");
}

// Tile edges of both block shapes: M around 16 / 32 / 64 / 128, N around 64 / 128.
TEST(CudaDiffSmall, TileEdgeShapes) {
  W4A8_REQUIRE_CUDA();
  for (const Case& c : tile_edge_cases()) {
    check_exact(c);
    if (HasFailure()) return;
  }
}

// |acc| far above 2^24 (the epilogue's int32 -> float32 conversion rounds): x_q = 127, w_q = -127.
TEST(CudaDiffSmall, AccumulatorsAbove2To24) {
  W4A8_REQUIRE_CUDA();
  EXPECT_EQ(large_accumulator_diff([](const gemm::Layer& l, const gemm::Activations& x) { return gemm_cuda(l, x, {}); }),
            "");
}

// Every group-size class on uniform codes at long K (G = 48: scale windows straddle stages), on
// the split-K shape (M <= 16) and the large-M shape.
TEST(CudaDiff, GroupSizesAtLongK) {
  W4A8_REQUIRE_CUDA();
  for (const Case& c : long_k_group_cases({1, 16, 20}, 200)) check_exact(c);
}

// K = 16384 on both paths: the activation / dequantize kernels opt into 64 KiB of shared memory.
TEST(CudaDiff, K16384BothPaths) {
  W4A8_REQUIRE_CUDA();
  for (std::uint64_t m : {1, 33}) {
    Case c;
    c.m = m, c.n = 300, c.k = 16384, c.g = 128, c.r = 4096, c.bias = true, c.seed = 161;
    check_exact(c);
  }
  Case c;
  c.m = 3, c.n = 40, c.k = 16384, c.g = 128, c.r = 4096, c.correction = true, c.seed = 162;
  const gemm::Layer layer = make_layer(c);
  const gemm::Activations x = make_acts(c);
  auto ref = gemm::gemm_literal(layer, x, options(c));
  auto dev = gemm_cuda(layer, x, options(c));
  ASSERT_TRUE(ref.ok() && dev.ok()) << (dev.ok() ? "" : dev.error().message);
  EXPECT_EQ(diff_results(*dev, *ref, /*compare_out=*/false), "");
  EXPECT_EQ(check_correction_out(c, x, *ref, dev->out), "");
}

// ---- host-side behaviour of the C entry point (runs with or without a device) -------------------
TEST(CudaEntry, RejectsBrokenContractBeforeAnyWork) {
  w4a8_problem p{};
  p.m = 1, p.n = 8, p.k = 40, p.group_size = 8, p.convrot_groupsize = 4, p.ldx = 40, p.ldo = 8;
  alignas(8) static const std::int8_t w[8] = {};
  static const std::uint8_t s[1] = {};
  static const float f[64] = {};
  float out[8];
  p.x = f, p.weight = w, p.s_rel = s, p.s_channel = f, p.out = out;
  EXPECT_EQ(w4a8_gemm_cuda(&p, nullptr, 0, nullptr), W4A8_ERR_CONTRACT);  // K % 16
  p.k = 48, p.ldx = 48, p.group_size = 12;
  EXPECT_EQ(w4a8_gemm_cuda(&p, nullptr, 0, nullptr), W4A8_ERR_CONTRACT);  // G shape
  p.group_size = 16, p.convrot_groupsize = 8;
  EXPECT_EQ(w4a8_gemm_cuda(&p, nullptr, 0, nullptr), W4A8_ERR_CONTRACT);  // R not a power of 4
  p.convrot_groupsize = 16, p.ldx = 47;
  EXPECT_EQ(w4a8_gemm_cuda(&p, nullptr, 0, nullptr), W4A8_ERR_ARGUMENT);  // stride < K
  p.ldx = 48;
  alignas(16) static std::int8_t xq[64];
  p.x_q = xq + 4;
  EXPECT_EQ(w4a8_gemm_cuda(&p, nullptr, 0, nullptr), W4A8_ERR_ARGUMENT);  // misaligned x_q
  p.x_q = nullptr;
  p.x_scale = reinterpret_cast<float*>(out);
  EXPECT_EQ(w4a8_gemm_cuda(&p, nullptr, 0, nullptr), W4A8_ERR_ARGUMENT);  // workspace missing
  EXPECT_EQ(w4a8_gemm_cuda(nullptr, nullptr, 0, nullptr), W4A8_ERR_ARGUMENT);
}

TEST(CudaEntry, ReportsMissingDeviceOrRuns) {
  int code = 0;
  const int n = w4a8_cuda_device_count(&code);
  Case c;
  c.m = 2, c.n = 8, c.k = 64, c.g = 16, c.r = 16;
  auto r = gemm_cuda(make_layer(c), make_acts(c), options(c));
  if (n > 0) {
    EXPECT_TRUE(r.ok());
  } else {
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().kind, ErrorKind::CudaNoDevice);
    EXPECT_NE(r.error().message.find("no CUDA device: cudaGetDeviceCount returned " + std::to_string(code)),
              std::string::npos)
        << r.error().message;
  }
}

}  // namespace
}  // namespace w4a8::kern::test
