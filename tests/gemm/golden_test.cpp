// Replays corpus/golden/*.safetensors, written by the independent float64 model
// tools/golden/w4a8_float64_model.py, through both implementations (float32 policy and output).
// Integers (w_q, x_q, acc) must match exactly. Floats: "exact" cases (every float32 step exact by
// construction) bit for bit; other cases within bounds derived from the spec's float32 steps:
//   x_scale: absmax is exact (integer activations, exact rotation), one rounding: |d| <= 2^-24 |s|.
//   out (integer path): f32(acc), f32(scale * s_c) with scale already rounded, the product, then the
//     bias add: |d| <= 5 * 2^-24 |acc * scale * s_c| + 2^-24 |out|.
//   correction path: W_rot (product + sum: 2 roundings) then p = log4(R) butterfly stages of 3 adds
//     each: |dW| <= (2 + 3p) 2^-24 sum_block |W_rot|; out sums K products in order:
//     |d| <= (K + 2) 2^-24 sum_k |x w| + sum_k |x| |dW| + 2^-24 |out|.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>

#include <unistd.h>

#include "gemm/reference.hpp"
#include "gemm/tensor_io.hpp"
#include "support/python.hpp"

namespace w4a8::gemm {
namespace {

constexpr double kU = 1.0 / 16777216.0;  // 2^-24

template <class T>
std::vector<T> raw(const st::File& f, const std::string& name) {
  const st::TensorInfo* t = f.header().find(name);
  EXPECT_NE(t, nullptr) << name;
  if (!t) return {};
  const auto b = f.data(*t);
  std::vector<T> v(b.size() / sizeof(T));
  if (!v.empty()) std::memcpy(v.data(), b.data(), v.size() * sizeof(T));
  return v;
}

std::vector<std::filesystem::path> golden_files() {
  std::vector<std::filesystem::path> out;
  for (const auto& e : std::filesystem::directory_iterator(std::string(W4A8_SOURCE_ROOT) + "/corpus/golden"))
    if (e.path().extension() == ".safetensors") out.push_back(e.path());
  std::sort(out.begin(), out.end());
  return out;
}

void replay(const std::filesystem::path& path, Impl impl) {
  SCOPED_TRACE(path.filename().string() + (impl == Impl::Fast ? " fast" : " literal"));
  auto f = st::File::open(path.string());
  ASSERT_TRUE(f.ok()) << f.error().message;
  const auto meta = [&](const char* key) { const std::string* v = f->header().meta(key); return v ? *v : ""; };
  const bool exact = meta("exact") == "1";
  const std::int64_t g = std::stoll(meta("group_size")), r = std::stoll(meta("convrot_groupsize"));
  auto layer = load_layer(*f, "layer", g, r);
  ASSERT_TRUE(layer.ok()) << layer.error().message;
  const st::TensorInfo* xt = f->header().find("input");
  ASSERT_NE(xt, nullptr);
  Activations x;
  x.shape = xt->shape;
  auto xv = read_floats(*f, *xt, "input");
  ASSERT_TRUE(xv.ok());
  x.values = *xv;
  GemmOptions opt;
  opt.threads = 2;
  auto res = gemm(impl, *layer, x, opt);
  ASSERT_TRUE(res.ok()) << res.error().message;
  const std::uint64_t m = res->M, n = res->N, k = res->K;
  EXPECT_EQ(raw<std::int8_t>(*f, "w_q"), res->w_q);
  const auto out64 = raw<double>(*f, "out");
  ASSERT_EQ(out64.size(), m * n);
  if (!layer->has_correction()) {
    EXPECT_EQ(raw<std::int8_t>(*f, "x_q"), res->x_q);
    EXPECT_EQ(raw<std::int32_t>(*f, "acc"), res->acc);
    const auto s64 = raw<double>(*f, "x_scale");
    for (std::uint64_t a = 0; a < m; ++a) {
      if (exact) {
        EXPECT_EQ(double(res->x_scale[a]), s64[a]) << a;
      }
      EXPECT_LE(std::abs(double(res->x_scale[a]) - s64[a]), kU * s64[a]) << a;
    }
    for (std::uint64_t a = 0; a < m; ++a)
      for (std::uint64_t i = 0; i < n; ++i) {
        const double got = res->out[a * n + i], want = out64[a * n + i];
        if (exact) {
          EXPECT_EQ(got, want) << a << "," << i;
        } else {
          const double core = std::abs(double(res->acc[a * n + i]) * s64[a] * layer->s_channel[i]);
          EXPECT_LE(std::abs(got - want), 5 * kU * core + kU * std::abs(want)) << a << "," << i;
        }
      }
  } else {
    const auto w64 = raw<double>(*f, "w_dequant");
    ASSERT_EQ(w64.size(), n * k);
    int p = 0;
    for (std::int64_t t = r; t > 1; t /= 4) ++p;
    std::vector<double> dw(n * k);
    for (std::uint64_t i = 0; i < n; ++i)
      for (std::uint64_t b = 0; b < k; b += std::uint64_t(r)) {
        double block = 0;  // sum |W_rot| over the block
        for (std::int64_t t = 0; t < r; ++t) {
          const std::uint64_t j = b + std::uint64_t(t);
          block += std::abs(double(res->w_q[i * k + j]) * layer->s_channel[i] +
                            layer->correction[(j / std::uint64_t(g)) * n + i]);
        }
        for (std::int64_t t = 0; t < r; ++t) {
          const std::uint64_t j = b + std::uint64_t(t);
          dw[i * k + j] = (2 + 3 * p) * kU * block;
          EXPECT_LE(std::abs(double(res->w_dequant[i * k + j]) - w64[i * k + j]), dw[i * k + j]) << i << "," << j;
        }
      }
    for (std::uint64_t a = 0; a < m; ++a)
      for (std::uint64_t i = 0; i < n; ++i) {
        double sxw = 0, sdw = 0;
        for (std::uint64_t j = 0; j < k; ++j) {
          sxw += std::abs(double(x.values[a * k + j]) * w64[i * k + j]);
          sdw += std::abs(double(x.values[a * k + j])) * dw[i * k + j];
        }
        const double want = out64[a * n + i];
        EXPECT_LE(std::abs(double(res->out[a * n + i]) - want), (double(k) + 2) * kU * sxw + sdw + kU * std::abs(want))
            << a << "," << i;
      }
  }
}

TEST(Golden, CorpusIsPresent) {
  const auto files = golden_files();
  EXPECT_GE(files.size(), 8u);
  int exact = 0;
  for (const auto& p : files) exact += p.filename().string().rfind("exact_", 0) == 0;
  EXPECT_GE(exact, 3);
}

// The corpus is exactly what the model writes (python3 + numpy + safetensors required: fails, never
// skips, without them), so the expectations cannot drift from their generator.
TEST(Golden, ModelRegeneratesCorpus) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("w4a8_golden_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const auto run = w4a8::testing::PythonCall::script("tools/golden/w4a8_float64_model.py")
                       .args({dir.string()})
                       .stdout_to("/dev/null")
                       .run();
  ASSERT_TRUE(run.ok()) << run.command;
  auto slurp = [](const std::filesystem::path& p) {
    std::ifstream in(p, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
  };
  for (const auto& p : golden_files()) {
    const auto fresh = dir / p.filename();
    ASSERT_TRUE(std::filesystem::exists(fresh)) << fresh;
    EXPECT_TRUE(slurp(p) == slurp(fresh)) << p.filename() << " differs from a fresh model run";
  }
  std::filesystem::remove_all(dir);
}

TEST(Golden, LiteralReplays) {
  for (const auto& p : golden_files()) replay(p, Impl::Literal);
}

TEST(Golden, FastReplays) {
  for (const auto& p : golden_files()) replay(p, Impl::Fast);
}

}  // namespace
}  // namespace w4a8::gemm
