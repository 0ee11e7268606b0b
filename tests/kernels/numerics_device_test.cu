// Device vs host parity of the shared scalar numerics (src/gemm/numerics.hpp) and the kernels'
// decode: one W4A8_HD evaluator, compiled by nvcc for the GPU and by the host compiler for the CPU,
// run over every input class and pair of classes (numerics_cases.hpp), exhaustively over 8- and
// 16-bit inputs, and over a 6 x 2^20 sweep of float32 patterns. Results must be bit-identical,
// except NaN payloads of arithmetic results (the GPU returns a canonical NaN where x86 propagates an
// operand's payload): those must be NaN on both sides and are counted. Skips without a device.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "gemm/numerics.hpp"
#include "kernels/decode.hpp"
#include "kernels/index_math.hpp"
#include "numerics_cases.hpp"

namespace w4a8::kern::test {
namespace {

enum Fn : int {
  kFp8,           // a: byte
  kBf16ToF32,     // a: 16-bit
  kF16ToF32,      // a: 16-bit
  kToBf16,        // a: float
  kToF16,         // a: float
  kRint,          // a: float
  kCvtRni,        // a: float
  kRneClamp,      // a: float, bounds -128..127
  kRneClamp127,   // a: float, bounds -127..127
  kRowScale,      // a: float
  kI2F,           // a: int32
  kDivScaleBf16,  // a: float (Eager, bf16 activations)
  kMul,           // a, b: float
  kAdd,
  kSub,
  kDiv,
  kQuantEagerF16,   // a: x_rot, b: divisor
  kFinishBf16Bias,  // a: value, b: bias
  kCorrOutF16,      // a: sum, b: bias (gemm f16, out bf16)
  kButterfly,       // a, b: (x0, x1); x2 = b, x3 = a; c: which output
  kEpilogue,        // a: acc, b: scale_m, c: s_channel
  kDecodeUniform,   // a: code | scale byte << 8
  kDecodeCodebook,
  kDecode4,         // a: 16 code bits, b: table row seed
  kFastDiv,         // a: x, b: divisor
  kFnCount
};
const char* kFnNames[kFnCount] = {"fp8",       "bf16_to_f32", "f16_to_f32",     "f32_to_bf16",   "f32_to_f16",
                                  "rint",      "cvt_rni",     "rne_clamp",      "rne_clamp127",  "row_scale",
                                  "i32_to_f32", "div_scale",  "mul",            "add",           "sub",
                                  "div",       "quant_eager", "finish_bf16",    "corr_out",      "butterfly",
                                  "epilogue",  "decode",      "decode_codebook", "decode4",      "fast_div"};
// Results that are floats (NaN payloads may differ on arithmetic).
__host__ __device__ constexpr bool arithmetic(int fn) {
  return fn == kRint || fn == kRowScale || fn == kDivScaleBf16 || fn == kMul || fn == kAdd || fn == kSub || fn == kDiv ||
         fn == kButterfly || fn == kEpilogue || fn == kFinishBf16Bias || fn == kCorrOutF16;
}

W4A8_HD std::uint32_t eval(int fn, std::uint32_t a, std::uint32_t b, std::uint32_t c, const float* codebook) {
  using namespace gemm;
  const float fa = f32_from_bits(a), fb = f32_from_bits(b), fc = f32_from_bits(c);
  switch (fn) {
    case kFp8: return f32_bits(fp8_e4m3fn_to_f32(std::uint8_t(a)));
    case kBf16ToF32: return f32_bits(bf16_to_f32(std::uint16_t(a)));
    case kF16ToF32: return f32_bits(f16_to_f32(std::uint16_t(a)));
    case kToBf16: return f32_to_bf16_rne(fa);
    case kToF16: return f32_to_f16_rne(fa);
    case kRint: return f32_bits(f32_rint(fa));
    case kCvtRni: return fa != fa ? 0u : std::uint32_t(cvt_rni_sat_s32(fa));
    case kRneClamp: return std::uint32_t(rne_clamp(fa, -128, 127));
    case kRneClamp127: return std::uint32_t(rne_clamp(fa, -127, 127));
    case kRowScale: return f32_bits(row_scale(fa));
    case kI2F: return f32_bits(i32_to_f32(std::int32_t(a)));
    case kDivScaleBf16: return f32_bits(division_scale(fa, ActPolicy::Eager, FloatDtype::BF16));
    case kMul: return f32_bits(f32_mul(fa, fb));
    case kAdd: return f32_bits(f32_add(fa, fb));
    case kSub: return f32_bits(f32_sub(fa, fb));
    case kDiv: return f32_bits(f32_div(fa, fb));
    case kQuantEagerF16: return std::uint32_t(quantize_act(fa, fb, ActPolicy::Eager, FloatDtype::F16));
    case kFinishBf16Bias: return f32_bits(finish_output(fa, FloatDtype::BF16, &fb));
    case kCorrOutF16: return f32_bits(corrected_output(fa, true, fb, FloatDtype::F16, FloatDtype::BF16));
    case kButterfly: {
      float x0 = fa, x1 = fb, x2 = fb, x3 = fa;
      convrot_butterfly(x0, x1, x2, x3);
      return f32_bits(c == 0 ? x0 : (c == 1 ? x1 : (c == 2 ? x2 : x3)));
    }
    case kEpilogue: return f32_bits(epilogue(std::int32_t(a), fb, fc));
    case kDecodeUniform: return std::uint32_t(decode_weight(std::uint8_t(a & 15), std::uint8_t(a >> 8), nullptr));
    case kDecodeCodebook: return std::uint32_t(decode_weight(std::uint8_t(a & 15), std::uint8_t(a >> 8), codebook));
    case kDecode4: {
      const std::uint32_t t[4] = {b, b * 2654435761u, b ^ 0x5A5A5A5Au, ~b};
      return decode4(a, t);
    }
    case kFastDiv: return fast_div(a, make_fast_div(b));
    default: return 0xDEADBEEFu;
  }
}

__global__ void eval_kernel(int fn, const std::uint32_t* a, const std::uint32_t* b, const std::uint32_t* c,
                            std::uint32_t* out, long long n, const float* codebook) {
  for (long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<long long>(gridDim.x) * blockDim.x)
    out[i] = eval(fn, a[i], b ? b[i] : 0u, c ? c[i] : 0u, codebook);
}

#define W4A8_REQUIRE_CUDA()                                                                              \
  do {                                                                                                   \
    int n_ = 0;                                                                                          \
    const cudaError_t e_ = cudaGetDeviceCount(&n_);                                                      \
    if (e_ != cudaSuccess || n_ == 0)                                                                    \
      GTEST_SKIP() << "no CUDA device: cudaGetDeviceCount returned " << int(e_) << " (" << cudaGetErrorString(e_) \
                   << ")";                                                                               \
  } while (0)

struct Inputs {
  std::vector<std::uint32_t> a, b, c;
};

const float kCodebook[16] = {-1.0f, -0.6962f, -0.5251f, -0.3949f, -0.2844f, -0.1848f, -0.0911f, 0.0f,
                             0.0796f, 0.1609f, 0.2461f, 0.3379f, 0.4407f, 0.5626f, 0.7230f, 1.0f};

Inputs inputs_for(int fn) {
  Inputs in;
  auto add = [&](std::uint32_t a, std::uint32_t b = 0, std::uint32_t c = 0) {
    in.a.push_back(a), in.b.push_back(b), in.c.push_back(c);
  };
  switch (fn) {
    case kFp8:
      for (std::uint32_t v = 0; v < 256; ++v) add(v);
      break;
    case kBf16ToF32:
    case kF16ToF32:
      for (std::uint32_t v = 0; v < 65536; ++v) add(v);
      break;
    case kDecodeUniform:
    case kDecodeCodebook:
      for (std::uint32_t v = 0; v < 4096; ++v) add((v & 15) | ((v >> 4) << 8));
      break;
    case kDecode4:
      for (std::uint32_t v = 0; v < 65536; ++v)
        for (std::uint32_t seed : {0x00000000u, 0x7F80FF01u, 0x12345678u}) add(v, seed);
      break;
    case kFastDiv:
      for (std::uint32_t d = 1; d <= 512; ++d)
        for (std::uint32_t x : {0u, 1u, d - 1, d, d + 1, 4095u, 65535u, 0x7FFFFFFFu, 0x40000001u}) add(x, d);
      break;
    case kI2F:
      for (std::int32_t v : kAccClasses) add(std::uint32_t(v));
      for (std::uint32_t hi = 0; hi < (1u << 20); ++hi)
        for (std::uint32_t lo : kSweepLow12) add((hi << 12) | lo);
      break;
    case kMul:
    case kAdd:
    case kSub:
    case kDiv:
    case kQuantEagerF16:
    case kFinishBf16Bias:
    case kCorrOutF16:
      for (std::uint32_t x : kFloatClasses)
        for (std::uint32_t y : kFloatClasses) add(x, y);
      break;
    case kButterfly:
      for (std::uint32_t x : kFloatClasses)
        for (std::uint32_t y : kFloatClasses)
          for (std::uint32_t o = 0; o < 4; ++o) add(x, y, o);
      break;
    case kEpilogue:
      for (std::int32_t acc : kAccClasses)
        for (std::uint32_t x : kFloatClasses)
          for (std::uint32_t y : kFloatClasses) add(std::uint32_t(acc), x, y);
      break;
    default:  // unary float functions: the classes and the sweep
      for (std::uint32_t x : kFloatClasses) add(x);
      for (std::uint32_t hi = 0; hi < (1u << 20); ++hi)
        for (std::uint32_t lo : kSweepLow12) add((hi << 12) | lo);
  }
  return in;
}

std::uint32_t* to_device(const std::vector<std::uint32_t>& v) {
  std::uint32_t* d = nullptr;
  EXPECT_EQ(cudaMalloc(&d, v.size() * 4), cudaSuccess);
  EXPECT_EQ(cudaMemcpy(d, v.data(), v.size() * 4, cudaMemcpyHostToDevice), cudaSuccess);
  return d;
}

TEST(NumericsDevice, BitIdenticalToHostOnEveryClass) {
  W4A8_REQUIRE_CUDA();
  float* cb = nullptr;
  ASSERT_EQ(cudaMalloc(&cb, sizeof kCodebook), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(cb, kCodebook, sizeof kCodebook, cudaMemcpyHostToDevice), cudaSuccess);
  for (int fn = 0; fn < kFnCount; ++fn) {
    const Inputs in = inputs_for(fn);
    const long long n = static_cast<long long>(in.a.size());
    std::uint32_t *a = to_device(in.a), *b = to_device(in.b), *c = to_device(in.c), *out = nullptr;
    ASSERT_EQ(cudaMalloc(&out, in.a.size() * 4), cudaSuccess);
    eval_kernel<<<1024, 256>>>(fn, a, b, c, out, n, cb);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess) << kFnNames[fn];
    std::vector<std::uint32_t> dev(in.a.size());
    ASSERT_EQ(cudaMemcpy(dev.data(), out, dev.size() * 4, cudaMemcpyDeviceToHost), cudaSuccess);
    long long mismatches = 0, nan_payload = 0;
    for (long long i = 0; i < n; ++i) {
      const std::uint32_t host = eval(fn, in.a[i], in.b[i], in.c[i], kCodebook);
      if (host == dev[i]) continue;
      const float hf = gemm::f32_from_bits(host), df = gemm::f32_from_bits(dev[i]);
      if (arithmetic(fn) && hf != hf && df != df) {
        ++nan_payload;
        continue;
      }
      if (mismatches++ < 5)
        ADD_FAILURE() << kFnNames[fn] << "(" << std::hex << in.a[i] << ", " << in.b[i] << ", " << in.c[i]
                      << "): host " << host << " device " << dev[i];
    }
    EXPECT_EQ(mismatches, 0) << kFnNames[fn] << " over " << n << " inputs";
    std::printf("[ numerics ] %-16s %9lld inputs, %lld NaN-payload-only differences\n", kFnNames[fn], n, nan_payload);
    for (void* p : {static_cast<void*>(a), static_cast<void*>(b), static_cast<void*>(c), static_cast<void*>(out)})
      cudaFree(p);
  }
  cudaFree(cb);
}

}  // namespace
}  // namespace w4a8::kern::test
