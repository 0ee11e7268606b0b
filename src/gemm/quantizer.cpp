#include "gemm/quantizer.hpp"

#include <algorithm>
#include <cmath>
#include <charconv>
#include <cstring>
#include <limits>
#include <string>

#include "gemm/operands.hpp"
#include "gemm/reference.hpp"

namespace w4a8::gemm {
namespace {

constexpr int kSixBitLevels = 31;               // 6-bit levels -31..31 (codes 1..63)
constexpr float kScaleSearchF32Step = 0.03f;    // F32-scale neighbours: +-3%
constexpr std::uint8_t kFp8MaxFinite = 0x7E;
constexpr std::uint64_t kCodebookSampleElems = std::uint64_t(1) << 22;  // rows sampled to pick a table
constexpr std::uint64_t kKurtosisSample = std::uint64_t(1) << 19;
constexpr std::uint64_t kFitSample = 300000;
constexpr double kKurtosisGate = -0.1;          // excess kurtosis above this: fit a table
constexpr int kAlsIters = 2;

// Nearest index in a sorted table, distances in float32 as upstream's; ties resolve to the lower
// index (upstream's searchsorted-and-compare).
int nearest(const float* levels, int count, float v) {
  const int pos = int(std::lower_bound(levels, levels + count, v) - levels);
  const int lo = std::clamp(pos - 1, 0, count - 1), hi = std::clamp(pos, 0, count - 1);
  const float dlo = std::fabs(v - levels[lo]), dhi = std::fabs(v - levels[hi]);
  return dhi < dlo ? hi : lo;
}

std::string shape2(std::uint64_t n, std::uint64_t k) { return shape_repr(Shape{n, k}); }

Status check_shape(std::uint64_t n, std::uint64_t k, const QuantizeOptions& o) {
  const std::int64_t g = o.group_size, r = o.convrot_groupsize;
  auto bad = [&](const std::string& why) { return make_error(ErrorKind::QuantShape, {shape2(n, k), why}); };
  if (o.bits != 4 && o.bits != 6) return make_error(ErrorKind::QuantBits, {std::to_string(o.bits)});
  if (n == 0) return bad("N is 0 (no output rows)");
  if (k == 0) return bad("K is 0 (no input columns)");
  if (o.bits == 6 && (k % 32 != 0 || g < 16 || g % 16 != 0))
    return make_error(ErrorKind::OpSixBitLayout, {std::to_string(k), std::to_string(g)});
  if (g < 4 || (16 % g != 0 && g % 16 != 0))
    return bad("group_size=" + std::to_string(g) + " must be >=4 and divide 16 or be a multiple of 16");
  if (k % 16 != 0) return bad("K=" + std::to_string(k) + " is not divisible by 16");
  if (k % std::uint64_t(g) != 0) return bad("K=" + std::to_string(k) + " is not divisible by group_size=" + std::to_string(g));
  if (!is_power_of_4(r)) return bad("convrot_groupsize=" + std::to_string(r) + " is not a power of 4 >= 4");
  if (k % std::uint64_t(r) != 0)
    return bad("K=" + std::to_string(k) + " is not divisible by convrot_groupsize=" + std::to_string(r));
  if (n > kMaxElements / k)
    return make_error(ErrorKind::OpTooLarge, {"weight", std::to_string(double(n) * double(k)), std::to_string(kMaxElements)});
  return Ok{};
}

// One row rotated as upstream rotates a weight stored in `dtype` (rotate_int8_convrot_weight: H built
// in that dtype, torch.matmul, then .float()). F32: the shared butterfly. BF16/F16: torch's CPU matmul
// accumulates the products w * (+-2^-p) (exact: H's entries are powers of two) in float32 and rounds
// each result to the dtype once; here the sum is exact in float64 (inputs of 8 or 11 significant bits,
// at most log2(R) carry bits: exact unless a group spans ~30 binades, and then off by far less than a
// float32 ulp), rounded to float32 and then to the dtype. That is torch's result whenever its float32
// accumulation is exact, and otherwise differs only when the exact sum sits on a rounding tie of
// the dtype (2-3 per million rotated weights at R = 256; none at R <= 64 on Gaussian weights), where
// torch's summation order decides. A sum past the dtype's range becomes +-inf, as torch's.
void rotate_row(float* row, std::int64_t k, std::int64_t r, FloatDtype dtype, std::vector<double>& tmp) {
  if (dtype == FloatDtype::F32) return convrot_row(row, k, r);
  tmp.assign(row, row + k);
  for (std::int64_t b = 0; b < k; b += r) {
    double* x = &tmp[std::size_t(b)];
    for (std::int64_t s = 1; s < r; s *= 4)  // x := x @ H_R, each stage's 0.5 exact in float64
      for (std::int64_t base = 0; base < r; base += 4 * s)
        for (std::int64_t o = 0; o < s; ++o) {
          double& a0 = x[base + o]; double& a1 = x[base + o + s];
          double& a2 = x[base + o + 2 * s]; double& a3 = x[base + o + 3 * s];
          const double y0 = a0 + a1 + a2 - a3, y1 = a0 + a1 - a2 + a3, y2 = a0 - a1 + a2 + a3, y3 = -a0 + a1 + a2 + a3;
          a0 = 0.5 * y0; a1 = 0.5 * y1; a2 = 0.5 * y2; a3 = 0.5 * y3;
        }
  }
  constexpr double kF32Max = double(std::numeric_limits<float>::max());
  for (std::int64_t j = 0; j < k; ++j) {
    const double v = tmp[std::size_t(j)];
    // (past FLT_MAX: inf, which BF16/F16 rounding would give from FLT_MAX too; no UB conversion)
    constexpr float kInf = std::numeric_limits<float>::infinity();
    const float f = std::fabs(v) <= kF32Max ? float(v) : (v > 0 ? kInf : -kInf);
    row[j] = round_to(dtype, f);
  }
}

// The float as written, shortest round-trip form (3.4e+38).
std::string shortest(float v) {
  char buf[32];
  return std::string(buf, std::to_chars(buf, buf + sizeof buf, v).ptr);
}

const char* dtype_label(FloatDtype d) {
  return d == FloatDtype::BF16 ? "BF16" : d == FloatDtype::F16 ? "F16" : "F32";
}

// Refusals of weights that have no finite quantization (exit 1, gemm.quantize.non_finite): a weight
// that is NaN or inf; a row whose rotation leaves the range of the dtype it is rotated in (upstream
// rotates without a check and stores inf/NaN group or channel scales, a layer that `validate
// --strict` and every kernel refuse); past the rotation, a scale that overflows float32.
Error not_finite_weight(std::uint64_t i, std::uint64_t j, float v) {
  return make_error(ErrorKind::QuantNonFinite,
                    {"weight [" + std::to_string(i) + ", " + std::to_string(j) + "] is " + shortest(v) +
                     " (weights must be finite to quantize)"});
}

Error rotation_overflow(std::span<const float> weights, std::uint64_t i, std::uint64_t k, std::int64_t r,
                        FloatDtype dtype) {
  float amax = 0;
  for (std::uint64_t j = 0; j < k; ++j) amax = std::max(amax, std::fabs(weights[i * k + j]));
  return make_error(ErrorKind::QuantNonFinite,
                    {"row " + std::to_string(i) + " (max |w| = " + shortest(amax) + ") overflows " + dtype_label(dtype) +
                     " in the rotation (convrot_groupsize=" + std::to_string(r) + "; comfy-kitchen" +
                     (dtype == FloatDtype::F32 ? std::string()
                                               : std::string(" rotates ") + dtype_label(dtype) + " weights in " +
                                                     dtype_label(dtype) + " and") +
                     " would store inf/NaN scales)"});
}

Error scale_overflow(std::span<const float> weights) {
  float amax = 0;
  for (float v : weights) amax = std::max(amax, std::fabs(v));
  return make_error(ErrorKind::QuantNonFinite,
                    {"max |w| = " + shortest(amax) + ": a group or channel scale overflows float32"});
}

bool all_finite(std::span<const float> v) {
  return std::all_of(v.begin(), v.end(), [](float x) { return std::isfinite(x); });
}

// Every `stride`-th of `count` indices so that at most `limit` remain (upstream samples at random
// with torch's generator, which this project cannot reproduce; an even stride is deterministic).
std::vector<float> strided(const std::vector<float>& v, std::uint64_t limit) {
  if (v.size() <= limit) return v;
  std::vector<float> out(limit);
  for (std::uint64_t i = 0; i < limit; ++i) out[i] = v[std::size_t(i * v.size() / limit)];
  return out;
}

// Lloyd-Max fit of 16 levels: quantile initialisation (linear interpolation), 25 iterations.
std::array<float, 16> fit_codebook(std::vector<float> samples) {
  samples = strided(samples, kFitSample);
  std::vector<float> sorted = samples;
  std::sort(sorted.begin(), sorted.end());
  std::array<float, 16> cb{};
  const double last = double(sorted.size() - 1);
  for (int i = 0; i < 16; ++i) {
    const double pos = last * double(i) / 15.0;
    const std::size_t lo = std::size_t(std::floor(pos)), hi = std::min(lo + 1, sorted.size() - 1);
    cb[std::size_t(i)] = float(sorted[lo] + (double(sorted[hi]) - sorted[lo]) * (pos - double(lo)));
  }
  for (int it = 0; it < 25; ++it) {
    std::array<double, 16> sum{};
    std::array<std::uint64_t, 16> cnt{};
    for (float s : samples) {
      int best = 0;
      float bd = std::fabs(s - cb[0]);
      for (int c = 1; c < 16; ++c) {
        const float d = std::fabs(s - cb[std::size_t(c)]);
        if (d < bd) bd = d, best = c;  // argmin: the first minimum
      }
      sum[std::size_t(best)] += s;
      ++cnt[std::size_t(best)];
    }
    for (int c = 0; c < 16; ++c)
      if (cnt[std::size_t(c)]) cb[std::size_t(c)] = float(sum[std::size_t(c)] / double(cnt[std::size_t(c)]));
  }
  return cb;
}

// Upstream's choice of one table for the whole tensor: the fixed table unless the rotated,
// group-normalized weights of a row sample are heavy-tailed (excess kurtosis > -0.1).
// (A sampled row whose rotation overflows: that row's refusal.)
Result<std::array<float, 16>> choose_codebook(std::span<const float> w, std::uint64_t n, std::uint64_t k,
                                              std::int64_t g, std::int64_t r, FloatDtype dtype) {
  const std::uint64_t max_rows = std::max<std::uint64_t>(1, kCodebookSampleElems / k);
  std::vector<std::uint64_t> rows;
  if (n > max_rows) {
    for (std::uint64_t i = 0; i < max_rows; ++i)
      rows.push_back(max_rows == 1 ? 0 : std::uint64_t(double(i) * double(n - 1) / double(max_rows - 1)));
  } else {
    for (std::uint64_t i = 0; i < n; ++i) rows.push_back(i);
  }
  std::vector<float> normalized;
  normalized.reserve(rows.size() * k);
  std::vector<float> row(k);
  std::vector<double> tmp;
  for (std::uint64_t i : rows) {
    std::copy(w.begin() + long(i * k), w.begin() + long((i + 1) * k), row.begin());
    rotate_row(row.data(), std::int64_t(k), r, dtype, tmp);
    if (!all_finite(row)) return rotation_overflow(w, i, k, r, dtype);
    for (std::uint64_t q = 0; q < k; q += std::uint64_t(g)) {
      float amax = 0;
      for (std::uint64_t t = 0; t < std::uint64_t(g); ++t) amax = std::max(amax, std::fabs(row[q + t]));
      const float s = std::max(amax, 1e-8f);
      for (std::uint64_t t = 0; t < std::uint64_t(g); ++t) normalized.push_back(row[q + t] / s);
    }
  }
  const std::vector<float> x = strided(normalized, kKurtosisSample);
  double mean = 0;
  for (float v : x) mean += v;
  mean /= double(x.size());
  double var = 0;
  for (float v : x) var += (v - mean) * (v - mean);
  const double sd = x.size() > 1 ? std::sqrt(var / double(x.size() - 1)) : 0.0;  // torch.std: unbiased
  double m4 = 0;
  for (float v : x) {
    const double z = (v - mean) / (sd + 1e-9);
    m4 += z * z * z * z;
  }
  const double excess = m4 / double(x.size()) - 3.0;
  if (excess <= kKurtosisGate) return kFixedCodebook;
  return fit_codebook(std::move(normalized));
}

// Decoded int8 levels of a level table under scale s (sorted when the table is).
void grid_levels(const float* table, int count, float s, float* out) {
  for (int l = 0; l < count; ++l) out[l] = float(decode_weight_value(table[l], s));
}

// Grid assignment of one group: nearest decoded level to w / s_channel; returns the squared error.
double assign_grid(const float* w, std::uint64_t g, float s_channel, const float* levels, int count, int* idx) {
  double err = 0;
  for (std::uint64_t t = 0; t < g; ++t) {
    const float target = w[t] / s_channel;
    idx[t] = nearest(levels, count, target);
    const double d = double(levels[idx[t]]) - double(target);
    err += d * d;
  }
  return err;
}

Status check_finite_result(const Layer& l, std::span<const float> weights) {
  bool ok = all_finite(l.codebook) && all_finite(l.s_channel);
  if (l.scale_dtype() == ScaleDtype::Fp8E4M3) {
    ok = ok && std::none_of(l.s_rel.begin(), l.s_rel.end(), fp8_e4m3fn_is_nan);
  } else {
    for (std::size_t i = 0; ok && i + 4 <= l.s_rel.size(); i += 4) {
      float v;
      std::memcpy(&v, l.s_rel.data() + i, 4);
      ok = std::isfinite(v);
    }
  }
  if (ok) return Ok{};
  return scale_overflow(weights);
}

}  // namespace

Result<Layer> quantize_weights(std::span<const float> weights, std::uint64_t n, std::uint64_t k,
                               const QuantizeOptions& opt) {
  W4A8_TRY(check_shape(n, k, opt));
  if (weights.size() != n * k) return make_error(ErrorKind::UsageError, {"weights do not hold n * k values"});
  for (std::uint64_t e = 0; e < weights.size(); ++e)
    if (!std::isfinite(weights[e])) return not_finite_weight(e / k, e % k, weights[e]);
  const int bits = opt.bits;
  const bool codebook = bits == 4 && opt.codebook;
  const std::uint64_t g = std::uint64_t(opt.group_size), groups = k / g;
  Layer l = make_zero_layer(n, k, opt.group_size, opt.convrot_groupsize, bits, opt.scale_dtype);
  // The level table the ALS loop and the grid assignment work on (none for 4-bit uniform).
  std::vector<float> table;
  if (codebook) {
    auto cb = choose_codebook(weights, n, k, opt.group_size, opt.convrot_groupsize, opt.source_dtype);
    if (!cb.ok()) return cb.error();
    l.codebook_shape = Shape{16};
    l.codebook.assign(cb->begin(), cb->end());
    table = l.codebook;
  } else if (bits == 6) {
    for (int v = -kSixBitLevels; v <= kSixBitLevels; ++v) table.push_back(float(v));
  }
  const int count = int(table.size());
  auto assign_levels = [&](const float* w, float s, int* idx) {
    for (std::uint64_t t = 0; t < g; ++t) {
      const float v = w[t] / s;
      idx[t] = bits == 6 ? int(std::clamp(std::nearbyint(v), -31.0f, 31.0f)) + kSixBitLevels
                         : nearest(table.data(), count, v);
    }
  };
  const std::uint64_t row_bytes = l.row_bytes();
  std::vector<float> row(k), gscale(groups), shifted(k);
  std::vector<int> idx(k), cand_idx(g);
  std::vector<double> rot_tmp;
  std::vector<float> levels(std::size_t(std::max(count, 1))), cand_levels(levels.size());
  for (std::uint64_t i = 0; i < n; ++i) {
    std::copy(weights.begin() + long(i * k), weights.begin() + long((i + 1) * k), row.begin());
    rotate_row(row.data(), std::int64_t(k), opt.convrot_groupsize, opt.source_dtype, rot_tmp);
    if (!all_finite(row)) return rotation_overflow(weights, i, k, opt.convrot_groupsize, opt.source_dtype);
    for (std::uint64_t q = 0; q < groups; ++q) {
      const float* w = &row[q * g];
      int* id = &idx[q * g];
      float amax = 0;
      for (std::uint64_t t = 0; t < g; ++t) amax = std::max(amax, std::fabs(w[t]));
      if (count == 0) {  // 4-bit uniform: absmax / 7, codes c - 8
        const float s = std::max(amax / 7.0f, 1e-8f);
        gscale[q] = s;
        for (std::uint64_t t = 0; t < g; ++t) {
          const int v = int(std::clamp(std::nearbyint(w[t] / s), -8.0f, 7.0f));
          id[t] = v + 8;
          shifted[q * g + t] = float(v) * s;
        }
        continue;
      }
      float s = std::max(bits == 6 ? amax / float(kSixBitLevels) : amax, 1e-8f);
      assign_levels(w, s, id);
      for (int it = 0; it < kAlsIters; ++it) {  // least-squares scale for the chosen levels, reassign
        double num = 0, den = 0;
        for (std::uint64_t t = 0; t < g; ++t) {
          const double c = table[std::size_t(id[t])];
          num += double(w[t]) * c;
          den += c * c;
        }
        s = std::max(float(num / std::max(den, 1e-8)), 1e-8f);
        assign_levels(w, s, id);
      }
      gscale[q] = s;
      for (std::uint64_t t = 0; t < g; ++t) shifted[q * g + t] = table[std::size_t(id[t])] * s;
    }
    float smax = 0;
    for (float v : shifted) smax = std::max(smax, std::fabs(v));
    const float s_channel = std::max(smax / 127.0f, 1e-8f);
    l.s_channel[i] = s_channel;
    std::uint8_t* s_rel_row = l.s_rel.data() + i * groups * scale_bytes(opt.scale_dtype);
    for (std::uint64_t q = 0; q < groups; ++q) {
      const float ratio = gscale[q] / s_channel;
      float stored;
      std::uint8_t byte = 0;
      if (opt.scale_dtype == ScaleDtype::Fp8E4M3) {
        byte = f32_to_fp8_e4m3fn_rne(std::min(ratio, 448.0f));  // saturate rather than store NaN
        stored = fp8_e4m3fn_to_f32(byte);
      } else {
        stored = ratio;
      }
      if (count > 0) {
        const float* w = &row[q * g];
        int* id = &idx[q * g];
        grid_levels(table.data(), count, stored, levels.data());
        double best = assign_grid(w, g, s_channel, levels.data(), count, id);
        if (bits == 6) {
          // Scale search: the stored scale's two neighbours in its dtype; keep a strictly better fit.
          float cands[2];
          std::uint8_t cand_bytes[2] = {0, 0};
          int nc = 0;
          if (opt.scale_dtype == ScaleDtype::Fp8E4M3) {
            auto add = [&](int b) {
              cand_bytes[nc] = std::uint8_t(b);
              cands[nc] = fp8_e4m3fn_to_f32(cand_bytes[nc]);
              ++nc;
            };
            if (byte >= 1) add(std::max(byte - 1, 1));  // byte 0's lower neighbour is NaN upstream: never better
            add(std::min<int>(byte + 1, kFp8MaxFinite));
          } else {
            cands[nc++] = stored * (1.0f - kScaleSearchF32Step);
            cands[nc++] = stored * (1.0f + kScaleSearchF32Step);
          }
          for (int c = 0; c < nc; ++c) {
            grid_levels(table.data(), count, cands[c], cand_levels.data());
            const double err = assign_grid(w, g, s_channel, cand_levels.data(), count, cand_idx.data());
            if (err < best) {
              best = err;
              stored = cands[c];
              byte = cand_bytes[c];
              std::copy(cand_idx.begin(), cand_idx.end(), id);
            }
          }
          for (std::uint64_t t = 0; t < g; ++t) id[t] += 1;  // level index 0..62 -> code 1..63
        }
      }
      if (opt.scale_dtype == ScaleDtype::Fp8E4M3) s_rel_row[q] = byte;
      else std::memcpy(s_rel_row + 4 * q, &stored, 4);
    }
    std::uint8_t* packed = l.weight.data() + i * row_bytes;
    std::fill(packed, packed + row_bytes, std::uint8_t(0));
    for (std::uint64_t j = 0; j < k; ++j) pack_code_bits(packed, k, j, bits, std::uint8_t(idx[j]));
  }
  W4A8_TRY(check_finite_result(l, weights));
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
