// Every ISA variant of the fast reference forced in turn (one parameterized test per variant, skipped
// with a reason when this CPU lacks it) on the same cases, with N, K and M tails that are multiples
// of no vector width, every storage variant (4/6 bits, codebook/uniform, FP8/F32 scales), against the
// literal reference bit for bit; plus the integer micro-kernels and the SIMD rotation directly,
// including int32 wrap-around.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>

#include "gemm/convrot_simd.hpp"
#include "gemm/cpu_features.hpp"
#include "gemm/int_kernels.hpp"
#include "gemm/reference.hpp"

namespace w4a8::gemm {
namespace {

// Our CPUID/XCR0 reading answers as GCC's runtime does for the same feature names (this test, not the
// library, links libgcc's detector).
TEST(CpuFeatures, AgreeWithGccRuntime) {
  __builtin_cpu_init();
  const CpuFeatures& f = cpu_features();
  EXPECT_EQ(f.avx2, __builtin_cpu_supports("avx2") != 0);
  EXPECT_EQ(f.avx512f, __builtin_cpu_supports("avx512f") != 0);
  EXPECT_EQ(f.avx512bw, __builtin_cpu_supports("avx512bw") != 0);
  EXPECT_EQ(f.avx512vnni, __builtin_cpu_supports("avx512vnni") != 0);
  std::printf("avx2=%d avx512f=%d avx512bw=%d avx512vnni=%d\n", f.avx2, f.avx512f, f.avx512bw, f.avx512vnni);
}

class IsaVariant : public ::testing::TestWithParam<Isa> {
 protected:
  void SetUp() override {
    if (resolve_isa(GetParam()) != GetParam())
      GTEST_SKIP() << "skipped: this CPU lacks " << isa_name(GetParam()) << " (best: " << isa_name(best_isa()) << ")";
  }
};

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size() * 4) == 0);
}

// A random valid layer of the given storage variant.
Layer random_layer(std::mt19937& rng, std::uint64_t n, std::uint64_t k, std::int64_t g, std::int64_t r, int bits,
                   ScaleDtype sd, bool codebook) {
  Layer l = make_zero_layer(n, k, g, r, bits, sd);
  std::uniform_int_distribution<int> byte(0, 255);
  for (auto& b : l.weight) b = std::uint8_t(byte(rng));
  const std::uint64_t groups = k / std::uint64_t(g);
  for (std::uint64_t i = 0; i < n * groups; ++i) {
    if (sd == ScaleDtype::F32) {
      const float v = std::ldexp(float(byte(rng) + 1) / 64.0f, int(rng() % 6) - 3) * ((rng() % 9) ? 1.0f : -1.0f);
      std::memcpy(&l.s_rel[i * 4], &v, 4);
    } else {
      int b = 0x28 + int(rng() % 0x38);
      l.s_rel[i] = std::uint8_t(b);
    }
  }
  for (auto& s : l.s_channel) s = float(int(rng() % 1000) + 1) / 4096.0f;
  if (codebook) {
    l.codebook_shape = Shape{16};
    l.codebook.resize(16);
    for (auto& v : l.codebook) v = float(int(rng() % 2001) - 1000) / 1000.0f;
  }
  return l;
}

TEST_P(IsaVariant, TailsAndStorageVariantsMatchLiteral) {
  std::mt19937 rng(1234);
  const std::uint64_t ns[] = {1, 15, 17, 33, 63, 65, 130};
  const std::uint64_t ms[] = {1, 2, 5, 7, 47, 49, 97};
  int cases = 0;
  for (int bits : {4, 6})
    for (ScaleDtype sd : {ScaleDtype::Fp8E4M3, ScaleDtype::F32})
      for (bool cb : {false, true}) {
        if (bits == 6 && cb) continue;
        for (std::uint64_t n : ns) {
          // K: multiples of 16 (32 at 6 bits) that are not multiples of 64 or 128, plus one that is.
          const std::uint64_t k = bits == 6 ? std::uint64_t(32 * (1 + 2 * (rng() % 4))) : std::uint64_t(16 * (1 + 2 * (rng() % 9)));
          const std::int64_t g = bits == 6 ? 16 : (k % 32 == 0 ? 32 : 16);
          const std::int64_t r = (k % 64 == 0) ? 64 : 16;
          const std::uint64_t m = ms[rng() % 7];
          const Layer l = random_layer(rng, n, k, g, r, bits, sd, cb);
          Activations x;
          x.dtype = (rng() % 2) ? FloatDtype::BF16 : FloatDtype::F32;
          x.shape = {m, k};
          x.values.resize(m * k);
          for (auto& v : x.values) v = round_to(x.dtype, std::ldexp(float(int(rng() % 20001) - 10000) / 10000.0f, int(rng() % 8) - 2));
          GemmOptions opt;
          opt.policy = (rng() % 2) ? ActPolicy::Eager : ActPolicy::F32;
          opt.isa = GetParam();
          opt.threads = 1 + unsigned(rng() % 3);
          auto lit = gemm_literal(l, x, opt);
          auto fast = gemm_fast(l, x, opt);
          ASSERT_TRUE(lit.ok()) << lit.error().message;
          ASSERT_TRUE(fast.ok()) << fast.error().message;
          ASSERT_EQ(fast->isa, GetParam());
          const std::string what = "bits " + std::to_string(bits) + " n " + std::to_string(n) + " k " + std::to_string(k) +
                                   " m " + std::to_string(m);
          ASSERT_EQ(lit->w_q, fast->w_q) << what;
          ASSERT_EQ(lit->x_q, fast->x_q) << what;
          ASSERT_TRUE(same_bits(lit->x_scale, fast->x_scale)) << what;
          ASSERT_EQ(lit->acc, fast->acc) << what;
          ASSERT_TRUE(same_bits(lit->out, fast->out)) << what;
          auto prep = prepare_layer(l, opt);
          ASSERT_TRUE(prep.ok());
          auto pr = gemm_prepared(*prep, x, opt);
          ASSERT_TRUE(pr.ok());
          ASSERT_EQ(pr->acc, lit->acc) << what;
          ASSERT_TRUE(same_bits(pr->out, lit->out)) << what;
          ++cases;
        }
      }
  EXPECT_EQ(cases, 6 * 7);  // (4 bits x FP8/F32 x codebook/uniform) + (6 bits x FP8/F32), 7 N each
}

// The panel kernel alone: extreme values, every column tail, and int32 wrap-around (K large enough
// that 128 * 127 * K exceeds 2^31), against exact int64 sums taken mod 2^32.
TEST_P(IsaVariant, PanelKernelExtremesAndWrap) {
  using kernels::kPanel;
  const kernels::PanelFn fn = GetParam() == Isa::Avx512Vnni ? kernels::panel_avx512vnni
                              : GetParam() == Isa::Avx2     ? kernels::panel_avx2
                                                            : kernels::panel_scalar;
  std::mt19937 rng(99);
  for (std::int64_t k : {std::int64_t(16), std::int64_t(48), std::int64_t(140000)}) {
    for (int cols : {1, 17, 31, 33, 64}) {
      const std::int64_t rows = k > 1000 ? 3 : 13;
      std::vector<std::int8_t> x(std::size_t(rows * k)), w(std::size_t(cols * k));
      const bool extreme = k > 1000;
      for (auto& v : x) v = extreme ? std::int8_t(-128) : std::int8_t(int(rng() % 256) - 128);
      for (auto& v : w) v = extreme ? std::int8_t(-127) : std::int8_t(int(rng() % 255) - 127);
      std::vector<std::int8_t> panel(std::size_t(k * kPanel), 0);
      std::vector<std::int32_t> wsum(kPanel, 0);
      for (int c = 0; c < cols; ++c) {
        std::int32_t s = 0;
        for (std::int64_t j = 0; j < k; ++j) {
          panel[std::size_t(((j / 4) * kPanel + c) * 4 + j % 4)] = w[std::size_t(c * k + j)];
          s += w[std::size_t(c * k + j)];
        }
        wsum[std::size_t(c)] = s;
      }
      std::vector<std::int32_t> acc(std::size_t(rows * cols), 0x5A5A5A5A);
      fn(x.data(), rows, k, panel.data(), wsum.data(), acc.data(), cols, cols);
      for (std::int64_t a = 0; a < rows; ++a)
        for (int c = 0; c < cols; ++c) {
          std::int64_t s = 0;
          for (std::int64_t j = 0; j < k; ++j) s += std::int64_t(x[std::size_t(a * k + j)]) * w[std::size_t(c * k + j)];
          ASSERT_EQ(acc[std::size_t(a * cols + c)], std::int32_t(std::uint32_t(std::uint64_t(s))))
              << "k " << k << " cols " << cols << " row " << a << " col " << c;
        }
    }
  }
}

// The AVX2 rotation (used by every SIMD variant) against the scalar butterfly.
TEST(GemmIsa, Avx2RotationIsBitIdenticalToScalar) {
  if (resolve_isa(Isa::Avx2) != Isa::Avx2) GTEST_SKIP() << "skipped: this CPU lacks avx2";
  std::mt19937 rng(5);
  for (std::int64_t r : {4, 16, 64, 256, 1024}) {
    std::vector<float> a(std::size_t(r * 3));
    for (auto& v : a) v = std::ldexp(float(int(rng() % 2000001) - 1000000), -int(rng() % 30));
    std::vector<float> b = a;
    convrot_row(a.data(), std::int64_t(a.size()), r);
    convrot_row_avx2(b.data(), std::int64_t(b.size()), r);
    ASSERT_TRUE(same_bits(a, b)) << "R " << r;
    // Up to FLT_MAX / 2 (where the former stage-wise butterfly overflowed) and on the subnormal grid,
    // where the stride-1 stage's prescale by 1/sqrt(R) rounds.
    for (const int e : {127, -140}) {
      std::vector<float> c(std::size_t(r * 3));
      for (auto& v : c) v = std::ldexp(float(int(rng() % 2000001) - 1000000) / 1e6f, e);
      std::vector<float> d = c;
      convrot_row(c.data(), std::int64_t(c.size()), r);
      convrot_row_avx2(d.data(), std::int64_t(d.size()), r);
      ASSERT_TRUE(same_bits(c, d)) << "R " << r << " exponent " << e;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Gemm, IsaVariant, ::testing::Values(Isa::Scalar, Isa::Avx2, Isa::Avx512Vnni),
                         [](const ::testing::TestParamInfo<Isa>& i) { return std::string(isa_name(i.param)); });

}  // namespace
}  // namespace w4a8::gemm
