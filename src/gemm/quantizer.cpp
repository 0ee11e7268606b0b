#include "gemm/quantizer.hpp"

#include <algorithm>
#include <cmath>

#include "gemm/operands.hpp"
#include "gemm/reference.hpp"

namespace w4a8::gemm {
namespace {

// Nearest index in a sorted table; ties resolve to the lower index (upstream's searchsorted pair).
template <class T>
int nearest(const T* levels, int count, double v) {
  int pos = int(std::lower_bound(levels, levels + count, v, [](T a, double b) { return double(a) < b; }) - levels);
  const int lo = std::clamp(pos - 1, 0, count - 1), hi = std::clamp(pos, 0, count - 1);
  const double dlo = std::fabs(v - double(levels[lo])), dhi = std::fabs(v - double(levels[hi]));
  return dhi < dlo ? hi : lo;
}

}  // namespace

Result<Layer> quantize_weights(std::span<const float> weights, std::uint64_t n, std::uint64_t k,
                               const QuantizeOptions& opt) {
  // Validate through the shared operand rules (same messages as upstream's weight-shape check).
  {
    OperandDesc d;
    d.weight = {st::Dtype::I8, {n, k / 2}};
    d.s_rel = {st::Dtype::F8_E4M3, {n, opt.group_size >= 4 ? k / std::uint64_t(opt.group_size) : 0}};
    d.s_channel = {st::Dtype::F32, {n}};
    d.input = {st::Dtype::F32, {1, k}};
    d.group_size = opt.group_size;
    d.convrot_groupsize = opt.convrot_groupsize;
    if (k % 2 != 0)
      return make_error(ErrorKind::OpContract, {std::to_string(k), std::to_string(opt.group_size),
                                                std::to_string(opt.convrot_groupsize)});
    W4A8_TRY(validate_operands(d));
  }
  if (weights.size() != n * k) return make_error(ErrorKind::UsageError, {"weights do not hold n * k values"});
  for (float v : weights)
    if (!std::isfinite(v)) return make_error(ErrorKind::UsageError, {"weights must be finite to quantize"});
  const std::uint64_t g = std::uint64_t(opt.group_size), groups = k / g;
  Layer l = make_zero_layer(n, k, opt.group_size, opt.convrot_groupsize);
  if (opt.codebook) {
    l.codebook_shape = Shape{16};
    l.codebook.assign(kFixedCodebook.begin(), kFixedCodebook.end());
  }
  const float* cb = kFixedCodebook.data();
  std::vector<float> row(k), gscale(groups);
  std::vector<int> code(k);
  std::vector<float> shifted(k);
  for (std::uint64_t i = 0; i < n; ++i) {
    std::copy(weights.begin() + long(i * k), weights.begin() + long((i + 1) * k), row.begin());
    convrot_row(row.data(), std::int64_t(k), opt.convrot_groupsize);
    for (std::uint64_t q = 0; q < groups; ++q) {
      const float* w = &row[q * g];
      float amax = 0;
      for (std::uint64_t t = 0; t < g; ++t) amax = std::max(amax, std::fabs(w[t]));
      if (opt.codebook) {
        float s = std::max(amax, 1e-8f);
        for (std::uint64_t t = 0; t < g; ++t) code[q * g + t] = nearest(cb, 16, double(w[t] / s));
        for (int it = 0; it < 2; ++it) {  // ALS: least-squares scale for the chosen levels, reassign
          double num = 0, den = 0;
          for (std::uint64_t t = 0; t < g; ++t) {
            const double c = cb[code[q * g + t]];
            num += double(w[t]) * c;
            den += c * c;
          }
          s = std::max(float(num / std::max(den, 1e-8)), 1e-8f);
          for (std::uint64_t t = 0; t < g; ++t) code[q * g + t] = nearest(cb, 16, double(w[t] / s));
        }
        gscale[q] = s;
        for (std::uint64_t t = 0; t < g; ++t) shifted[q * g + t] = cb[code[q * g + t]] * s;
      } else {
        const float s = std::max(amax / 7.0f, 1e-8f);
        gscale[q] = s;
        for (std::uint64_t t = 0; t < g; ++t) {
          const int v = std::clamp(int(std::nearbyint(w[t] / s)), -8, 7);
          code[q * g + t] = v + 8;
          shifted[q * g + t] = float(v) * s;
        }
      }
    }
    float smax = 0;
    for (float v : shifted) smax = std::max(smax, std::fabs(v));
    const float s_channel = std::max(smax / 127.0f, 1e-8f);
    l.s_channel[i] = s_channel;
    for (std::uint64_t q = 0; q < groups; ++q) {
      // Saturate to 448 (the largest finite FP8) rather than store NaN.
      const float ratio = std::min(gscale[q] / s_channel, 448.0f);
      const std::uint8_t b = f32_to_fp8_e4m3fn_rne(ratio);
      l.s_rel[i * groups + q] = b;
      if (opt.codebook) {
        // Re-assign on the decoded int8 grid the GEMM will actually use.
        std::array<std::int8_t, 16> levels;
        for (int c = 0; c < 16; ++c) levels[std::size_t(c)] = decode_weight(std::uint8_t(c), b, cb);
        for (std::uint64_t t = 0; t < g; ++t)
          code[q * g + t] = nearest(levels.data(), 16, double(row[q * g + t] / s_channel));
      }
    }
    for (std::uint64_t j = 0; j < k; j += 2)
      l.weight[i * (k / 2) + j / 2] = std::uint8_t((code[j] & 0xF) | ((code[j + 1] & 0xF) << 4));
  }
  return l;
}

std::vector<double> dequantize_weights(const Layer& layer) {
  const std::uint64_t n = layer.N(), k = layer.K(), g = std::uint64_t(layer.group_size);
  const std::vector<std::int8_t> wq = decode_weights(layer);
  const std::int64_t r = layer.convrot_groupsize;
  const double inv = 1.0 / std::sqrt(double(r));
  std::vector<double> out(n * k);
  std::vector<double> rot(k);
  for (std::uint64_t i = 0; i < n; ++i) {
    for (std::uint64_t j = 0; j < k; ++j) {
      rot[j] = double(wq[i * k + j]) * layer.s_channel[i];
      if (layer.has_correction()) rot[j] += layer.correction[(j / g) * n + i];
    }
    // Un-rotate with the fast transform in float64 (H is its own inverse).
    for (std::uint64_t b = 0; b < k; b += std::uint64_t(r)) {
      double* x = &rot[b];
      for (std::int64_t s = 1; s < r; s *= 4)
        for (std::int64_t base = 0; base < r; base += 4 * s)
          for (std::int64_t o = 0; o < s; ++o) {
            double& a0 = x[base + o]; double& a1 = x[base + o + s];
            double& a2 = x[base + o + 2 * s]; double& a3 = x[base + o + 3 * s];
            const double y0 = a0 + a1 + a2 - a3, y1 = a0 + a1 - a2 + a3, y2 = a0 - a1 + a2 + a3, y3 = -a0 + a1 + a2 + a3;
            a0 = y0; a1 = y1; a2 = y2; a3 = y3;
          }
      for (std::int64_t t = 0; t < r; ++t) x[t] *= inv;
    }
    std::copy(rot.begin(), rot.end(), out.begin() + long(i * k));
  }
  return out;
}

double relative_l2(std::span<const double> a, std::span<const float> b) {
  double num = 0, den = 0;
  for (std::size_t i = 0; i < a.size() && i < b.size(); ++i) {
    num += (a[i] - b[i]) * (a[i] - b[i]);
    den += double(b[i]) * b[i];
  }
  return den == 0 ? (num == 0 ? 0.0 : INFINITY) : std::sqrt(num / den);
}

}  // namespace w4a8::gemm
