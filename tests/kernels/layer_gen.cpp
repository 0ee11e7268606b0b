#include "layer_gen.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <numeric>
#include <sstream>

#include <rapidcheck.h>

namespace w4a8::kern::test {

namespace {
const char* dname(gemm::FloatDtype d) {
  return d == gemm::FloatDtype::F32 ? "f32" : d == gemm::FloatDtype::BF16 ? "bf16" : "f16";
}
std::uint32_t fbits(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
}  // namespace

std::string describe(const Case& c) {
  std::ostringstream o;
  o << "M=" << c.m << " N=" << c.n << " K=" << c.k << " G=" << c.g << " R=" << c.r << (c.codebook ? " codebook" : " uniform")
    << (c.correction ? " correction" : "") << (c.bias ? std::string(" bias=") + dname(c.bias_dtype) : "")
    << " x=" << dname(c.x_dtype) << " out=" << dname(c.out_dtype)
    << (c.policy == gemm::ActPolicy::Eager ? " eager" : " f32-policy") << " ldx+" << c.ldx_pad << " ldo+" << c.ldo_pad
    << " seed=" << c.seed;
  return o.str();
}

gemm::Layer make_layer(const Case& c) {
  std::mt19937 rng(c.seed * 2654435761u + 17u);
  gemm::Layer l = gemm::make_zero_layer(c.n, c.k, c.g, c.r);
  std::uniform_int_distribution<int> byte(0, 255);
  for (auto& b : l.weight) b = static_cast<std::uint8_t>(byte(rng));
  // Scale bytes: mostly in the range where v * s spans the int8 grid (some clamp), a few anywhere
  // (subnormals, negatives, 448), never the NaN patterns 0x7F / 0xFF.
  std::uniform_int_distribution<int> typical(c.codebook ? 0x50 : 0x28, c.codebook ? 0x76 : 0x5E);
  for (auto& s : l.s_rel) {
    int v = byte(rng) < 24 ? byte(rng) : typical(rng);
    if ((v & 0x7F) == 0x7F) v ^= 1;
    s = static_cast<std::uint8_t>(v);
  }
  std::uniform_real_distribution<float> ch(1e-4f, 1e-2f);
  for (auto& s : l.s_channel) s = ch(rng);
  if (c.codebook) {
    l.codebook_shape = gemm::Shape{16};
    std::normal_distribution<float> nd(0.f, 0.5f);
    l.codebook.resize(16);
    for (auto& v : l.codebook) v = nd(rng);
    std::sort(l.codebook.begin(), l.codebook.end());
  }
  if (c.correction) {
    l.correction_shape = gemm::Shape{c.k / std::uint64_t(c.g), c.n};
    std::uniform_real_distribution<float> cd(-1e-3f, 1e-3f);
    l.correction.resize(c.k / std::uint64_t(c.g) * c.n);
    for (auto& v : l.correction) v = cd(rng);
  }
  if (c.bias) {
    l.bias_shape = gemm::Shape{c.n};
    l.bias_dtype = c.bias_dtype;
    std::normal_distribution<float> bd(0.f, 2.f);
    l.bias.resize(c.n);
    for (auto& v : l.bias) v = gemm::round_to(c.bias_dtype, bd(rng));
  }
  return l;
}

gemm::Activations make_acts(const Case& c) {
  std::mt19937 rng(c.seed * 40503u + 5u);
  gemm::Activations x;
  x.dtype = c.x_dtype;
  x.shape = {c.m, c.k};
  x.values.resize(c.m * c.k);
  std::normal_distribution<float> nd(0.f, 1.f);
  std::uniform_int_distribution<int> pick(0, 99);
  for (std::uint64_t i = 0; i < c.m; ++i) {
    const int kind = pick(rng);  // a few all-zero rows (scale floor 1e-30) and outlier rows
    for (std::uint64_t j = 0; j < c.k; ++j) {
      float v = kind < 3 ? 0.f : nd(rng) * (kind < 8 ? 100.f : 1.f);
      x.values[i * c.k + j] = gemm::round_to(c.x_dtype, v);
    }
  }
  return x;
}

gemm::GemmOptions options(const Case& c) {
  gemm::GemmOptions o;
  o.policy = c.policy;
  o.out_dtype = c.out_dtype;
  return o;
}

LayoutOptions layout(const Case& c) { return LayoutOptions{c.ldx_pad, c.ldo_pad}; }

Case draw_case() {
  Case c;
  c.g = *rc::gen::elementOf(std::vector<std::int64_t>{4, 8, 16, 32, 48, 64});
  c.r = *rc::gen::elementOf(std::vector<std::int64_t>{4, 16, 64, 256});
  const std::int64_t unit = std::lcm(std::lcm(std::int64_t(16), c.g), c.r);
  c.k = std::uint64_t(unit * *rc::gen::inRange<std::int64_t>(1, std::max<std::int64_t>(2, 512 / unit + 1)));
  c.m = *rc::gen::inRange<std::uint64_t>(1, 70);
  c.n = *rc::gen::inRange<std::uint64_t>(1, 140);
  c.codebook = *rc::gen::arbitrary<bool>();
  c.bias = *rc::gen::arbitrary<bool>();
  c.correction = *rc::gen::weightedElement<bool>({{1, true}, {6, false}});
  const std::vector<gemm::FloatDtype> dts = {gemm::FloatDtype::F32, gemm::FloatDtype::BF16, gemm::FloatDtype::F16};
  c.x_dtype = *rc::gen::elementOf(dts);
  c.out_dtype = *rc::gen::elementOf(dts);
  c.bias_dtype = *rc::gen::elementOf(dts);
  c.policy = *rc::gen::element(gemm::ActPolicy::F32, gemm::ActPolicy::Eager);
  c.ldx_pad = *rc::gen::inRange<std::int64_t>(0, 4);
  c.ldo_pad = *rc::gen::inRange<std::int64_t>(0, 4);
  c.seed = *rc::gen::arbitrary<std::uint32_t>();
  return c;
}

namespace {
template <class T>
std::string diff_vec(const char* what, const std::vector<T>& a, const std::vector<T>& b, std::uint64_t cols) {
  if (a.size() != b.size()) return std::string(what) + ": sizes " + std::to_string(a.size()) + " vs " + std::to_string(b.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    bool eq;
    if constexpr (std::is_same_v<T, float>) eq = fbits(a[i]) == fbits(b[i]);
    else eq = a[i] == b[i];
    if (!eq) {
      std::ostringstream o;
      o << what << "[" << i / cols << ", " << i % cols << "]: " << +a[i] << " vs " << +b[i];
      return o.str();
    }
  }
  return "";
}
}  // namespace

std::string diff_results(const gemm::GemmResult& a, const gemm::GemmResult& b, bool compare_out) {
  if (a.M != b.M || a.N != b.N || a.K != b.K) return "shapes differ";
  if (a.correction_path != b.correction_path) return "paths differ";
  std::string d;
  if (a.correction_path) {
    if (!(d = diff_vec("w_dequant", a.w_dequant, b.w_dequant, a.K)).empty()) return d;
  } else {
    if (!(d = diff_vec("w_q", a.w_q, b.w_q, a.K)).empty()) return d;
    if (!(d = diff_vec("x_q", a.x_q, b.x_q, a.K)).empty()) return d;
    if (!(d = diff_vec("x_scale", a.x_scale, b.x_scale, 1)).empty()) return d;
    if (!(d = diff_vec("acc", a.acc, b.acc, a.N)).empty()) return d;
  }
  if (compare_out && !(d = diff_vec("out", a.out, b.out, a.N)).empty()) return d;
  return "";
}

std::vector<Case> tile_edge_cases() {
  std::vector<Case> cs;
  int idx = 0;
  for (std::uint64_t m : {16, 17, 32, 33, 128, 129})
    for (std::uint64_t n : {63, 64, 65, 127, 128, 129}) {
      Case c;
      c.m = m, c.n = n, c.k = 512, c.g = idx % 3 == 0 ? 8 : (idx % 3 == 1 ? 16 : 64), c.r = 64;
      c.codebook = idx % 2, c.bias = idx % 4 != 0;
      c.out_dtype = idx % 5 == 0 ? gemm::FloatDtype::BF16 : gemm::FloatDtype::F32;
      c.seed = 7000u + idx++;
      cs.push_back(c);
    }
  return cs;
}

std::vector<Case> long_k_group_cases(std::initializer_list<std::uint64_t> ms, std::uint64_t n) {
  std::vector<Case> cs;
  int idx = 0;
  for (std::int64_t g : {4, 8, 48, 128})
    for (std::uint64_t m : ms) {
      Case c;
      c.m = m, c.n = n, c.k = 4608, c.g = g, c.r = 256, c.codebook = false, c.bias = true;
      c.x_dtype = gemm::FloatDtype::BF16, c.out_dtype = gemm::FloatDtype::BF16, c.seed = 900u + idx++;
      cs.push_back(c);
    }
  return cs;
}

gemm::Layer large_acc_layer(std::uint64_t k) {
  gemm::Layer layer = gemm::make_zero_layer(64, k, 16, 4);
  std::fill(layer.s_rel.begin(), layer.s_rel.end(), std::uint8_t(0x7E));
  for (std::size_t i = 0; i < layer.s_channel.size(); ++i) layer.s_channel[i] = 1e-3f * float(i + 1);
  std::fill(layer.weight.begin(), layer.weight.end(), std::uint8_t(0x00));
  for (std::size_t i = 0; i < layer.weight.size(); i += 97) layer.weight[i] = 0x88;
  return layer;
}

gemm::Activations constant_acts(std::uint64_t m, std::uint64_t k, float v) {
  gemm::Activations x;
  x.shape = {m, k};
  x.values.assign(m * k, v);
  return x;
}

std::string large_accumulator_diff(const LayerImpl& impl) {
  for (std::uint64_t m : {1, 20})
    for (std::uint64_t k : {2048, 8192}) {
      const gemm::Layer layer = large_acc_layer(k);
      const gemm::Activations x = constant_acts(m, k, 3.0f);
      auto ref = gemm::gemm_literal(layer, x, {});
      auto got = impl(layer, x);
      const std::string where = std::to_string(m) + "x" + std::to_string(k) + ": ";
      if (!ref.ok() || !got.ok()) return where + (ref.ok() ? got.error().message : ref.error().message);
      if (std::abs(double(ref->acc[0])) <= double(1 << 24)) return where + "|acc| does not exceed 2^24";
      if (const std::string d = diff_results(*got, *ref); !d.empty()) return where + d;
    }
  return "";
}

std::string rows_independent_diff(const LayerImpl& impl, const Case& c, std::initializer_list<std::uint64_t> rows) {
  const gemm::Layer layer = make_layer(c);
  const gemm::Activations x = make_acts(c);
  auto all = impl(layer, x);
  if (!all.ok()) return all.error().message;
  for (std::uint64_t row : rows) {
    gemm::Activations one;
    one.dtype = x.dtype;
    one.shape = {1, c.k};
    one.values.assign(x.values.begin() + long(row * c.k), x.values.begin() + long((row + 1) * c.k));
    auto r = impl(layer, one);
    if (!r.ok()) return r.error().message;
    for (std::uint64_t j = 0; j < c.n; ++j)
      if (r->acc[j] != all->acc[row * c.n + j] || fbits(r->out[j]) != fbits(all->out[row * c.n + j]))
        return "row " + std::to_string(row) + " col " + std::to_string(j);
  }
  return "";
}

OwnedProblem small_problem() {
  Case c;
  c.m = 2, c.n = 8, c.k = 64, c.g = 16, c.r = 16, c.seed = 3;
  return owned_problem(c);
}

OwnedProblem owned_problem(const Case& c) {
  OwnedProblem o;
  o.layer = make_layer(c);
  auto lp = make_layer_problem(o.layer, make_acts(c), options(c), layout(c));
  if (lp.ok()) o.lp = std::move(lp).value();
  return o;
}

std::string check_correction_out(const Case& c, const gemm::Activations& x, const gemm::GemmResult& ref,
                                 const std::vector<float>& got) {
  if (got.size() != c.m * c.n || ref.out.size() != c.m * c.n) return "out has the wrong size";
  const double ulp = c.out_dtype == gemm::FloatDtype::BF16  ? std::ldexp(1.0, -8)
                     : c.out_dtype == gemm::FloatDtype::F16 ? std::ldexp(1.0, -11)
                                                             : std::ldexp(1.0, -24);
  for (std::uint64_t a = 0; a < c.m; ++a)
    for (std::uint64_t j = 0; j < c.n; ++j) {
      double s = 0;
      for (std::uint64_t q = 0; q < c.k; ++q) s += std::fabs(double(x.values[a * c.k + q]) * ref.w_dequant[j * c.k + q]);
      const double want = ref.out[a * c.n + j], have = got[a * c.n + j];
      const double tol = 2.0 * double(c.k) * std::ldexp(1.0, -24) * s + 2.0 * ulp * std::fabs(want) + 1e-30;
      if (!(std::fabs(have - want) <= tol))
        return "out[" + std::to_string(a) + ", " + std::to_string(j) + "]: " + std::to_string(have) + " vs " +
               std::to_string(want) + " (bound " + std::to_string(tol) + ")";
    }
  return "";
}

}  // namespace w4a8::kern::test
