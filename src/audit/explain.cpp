#include "audit/explain.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdio>
#include <limits>
#include <numeric>

#include "gemm/tensor_io.hpp"

namespace w4a8::audit {

namespace {

using gemm::ActPolicy;
using gemm::FloatDtype;

constexpr double kU32 = 0x1p-24;  // float32 unit roundoff
double unit_roundoff(FloatDtype d) { return d == FloatDtype::BF16 ? 0x1p-8 : d == FloatDtype::F16 ? 0x1p-11 : kU32; }
double max_finite(FloatDtype d) {
  return d == FloatDtype::F16 ? 65504.0 : d == FloatDtype::BF16 ? 0x1.fep127 : double(std::numeric_limits<float>::max());
}
bool same(float a, float b) { return a == b || (a != a && b != b); }
std::string fmt(const char* f, double a) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, a);
  return buf;
}
std::string at2(std::uint64_t flat, std::uint64_t cols) {
  return "[" + std::to_string(flat / cols) + ", " + std::to_string(flat % cols) + "]";
}
std::int32_t wrap32(std::int64_t v) { return std::int32_t(std::uint32_t(std::uint64_t(v))); }

// Rounding bounds of one activation row: how far any legal evaluation of the rotation (and, under
// the eager policy, the dtype roundings) can move each rotated value from the exact one.
struct RowBounds {
  std::vector<double> y;            // exact rotated row
  std::vector<double> err;          // |computed - exact| bound per element
  std::vector<std::uint8_t> exact;  // per block of R: every evaluation order gives y exactly (err 0)
  double absmax_err = 0;            // bound on the error of the row's absmax
  // Every block exact: the row's legal scales, f32(absmax / 127) (the reference's) and
  // f32(absmax * f32(1 / 127)) (a constant multiply), absmax that of the policy's rotated values.
  bool all_exact = false;
  std::array<float, 2> scales{};
};

}  // namespace

bool rotation_is_exact(const float* x, std::int64_t r) {
  int a = std::numeric_limits<int>::max();  // exponent of the lowest set bit over the block
  for (std::int64_t j = 0; j < r; ++j) {
    const float v = x[j];
    if (v == 0) continue;
    if (!std::isfinite(v)) return false;
    int e = 0;
    const auto m = std::uint32_t(std::ldexp(std::frexp(std::fabs(v), &e), 24));  // |v| = m * 2^(e - 24)
    a = std::min(a, e - 24 + std::countr_zero(m));
  }
  if (a == std::numeric_limits<int>::max()) return true;  // all zero
  int log_sqrt_r = 0;
  for (std::int64_t t = r; t > 1; t /= 4) ++log_sqrt_r;
  if (a - log_sqrt_r < -149) return false;  // H's 2^-k factor would push bits below float32's
  std::uint64_t units = 0;                  // sum |x_j| in units of 2^a
  for (std::int64_t j = 0; j < r; ++j) {
    const double u = std::ldexp(std::fabs(double(x[j])), -a);
    if (u > 0x1p24) return false;
    units += std::uint64_t(u);
  }
  // Every partial sum is at most sum |x_j| in magnitude: past FLT_MAX an order could overflow.
  return units <= (std::uint64_t{1} << 24) && std::ldexp(double(units), a) <= double(std::numeric_limits<float>::max());
}

namespace {

RowBounds row_bounds(const CaseSpec& c, const float* x, ActPolicy pol) {
  RowBounds b;
  const auto k = std::int64_t(c.k), r = c.r;
  b.y = rotate_row_f64(x, k, r);
  b.err.resize(std::size_t(k));
  b.exact.resize(std::size_t(r > 0 ? k / r : 0));
  const bool eager = gemm::effective_policy(pol, c.x_dtype) == ActPolicy::Eager;
  const double ud = eager ? unit_roundoff(c.x_dtype) : 0.0;
  const double inv_sqrt_r = 1.0 / std::sqrt(double(r));
  b.all_exact = true;
  for (std::int64_t blk = 0; blk < k; blk += r) {
    // A block every order computes exactly has no rounding error to allow for; under the eager
    // policy its one rounding to the activation dtype is then a known value, not a bound.
    if (rotation_is_exact(x + blk, r)) {
      b.exact[std::size_t(blk / r)] = 1;
      continue;
    }
    b.all_exact = false;
    double s = 0;
    for (std::int64_t j = 0; j < r; ++j) s += std::fabs(double(x[blk + j]));
    // Any order of R products summed in float32: |err| <= R * u * sum |h_j x_j|.
    const double e = double(r) * kU32 * s * inv_sqrt_r;
    for (std::int64_t j = 0; j < r; ++j) {
      const double ej = e + ud * std::fabs(b.y[std::size_t(blk + j)]);
      b.err[std::size_t(blk + j)] = ej;
      b.absmax_err = std::max(b.absmax_err, ej);
    }
  }
  if (b.all_exact) {
    float absmax = 0;
    for (const double v : b.y) absmax = std::max(absmax, std::fabs(eager ? gemm::round_to(c.x_dtype, float(v)) : float(v)));
    b.scales = {gemm::row_scale(absmax), gemm::row_scale_floor(absmax * (1.0f / 127.0f))};
  }
  return b;
}

// The value an exactly rotated element is quantized from: exact (the rotation is), and under the
// eager policy rounded to the activation dtype, as the policy's rotation output is.
float exact_rotated(double y, ActPolicy pol, FloatDtype xd) {
  const float v = float(y);
  return gemm::effective_policy(pol, xd) == ActPolicy::Eager ? gemm::round_to(xd, v) : v;
}

// The two x_q an exactly rotated element may take with divisor sd: its rotated value divided by sd,
// the quotient rounded to float32 as the reference does, or kept exact (then, eager, rounded to the
// activation dtype through float32); rne. Rounding a tie another way, or multiplying by a rounded
// reciprocal, gives neither. pre: y exact and finite.
std::array<int, 2> exact_element_q(double y, float sd, ActPolicy pol, FloatDtype xd) {
  const ActPolicy eff = gemm::effective_policy(pol, xd);
  const float yv = exact_rotated(y, pol, xd);
  const int first = gemm::quantize_act(yv, sd, eff, xd);
  const double t = double(yv) / double(sd);
  if (t != t) return {first, first};
  const double qe = eff == ActPolicy::Eager ? double(gemm::round_to(xd, float(t))) : t;
  return {first, int(std::clamp(std::nearbyint(qe), -128.0, 127.0))};
}
bool exact_element_allows(int q, double y, float sd, ActPolicy pol, FloatDtype xd) {
  const auto c = exact_element_q(y, sd, pol, xd);
  return q == c[0] || q == c[1];
}

// x_q values an implementation may legally produce for exact rotated value y and divisor sd:
// every rne of a quotient within the rounding bound of y / sd.
struct QRange {
  int lo, hi;
};
QRange legal_q(double y, double err, double sd, double rel_extra, ActPolicy pol, FloatDtype xd) {
  const double ud = gemm::effective_policy(pol, xd) == ActPolicy::Eager ? unit_roundoff(xd) : 0.0;
  const double t = y / sd;
  const double delta = err / sd + (2 * kU32 + ud + rel_extra) * std::fabs(t) + 1e-9;
  auto q = [](double v) { return v != v ? 0 : int(std::clamp(std::nearbyint(v), -128.0, 127.0)); };
  return {q(t - delta), q(t + delta)};
}

Verdict grade(std::uint64_t differing, std::uint64_t explained) {
  return differing == 0 ? Verdict::Exact : explained == differing ? Verdict::Order : Verdict::Fail;
}

// Output cast then bias, as the reference's epilogue does; pre is the float32 value before the cast.
float finish(float pre, FloatDtype od, const gemm::Layer& l, std::uint64_t n) {
  return gemm::finish_output(pre, od, l.has_bias() ? &l.bias[n] : nullptr);
}
// The epilogue's order: N ulps of the output dtype before and after the bias, and the bias itself
// rounded to the output dtype or not (a fused epilogue adds the float32 bias before its one cast).
double epilogue_tol(double pre, double o, FloatDtype od, double n_ulps, const gemm::Layer& l, std::uint64_t n) {
  const double bias = l.has_bias() ? n_ulps * ulp_of(l.bias[n], od) : 0.0;
  return n_ulps * (ulp_of(pre, od) + ulp_of(o, od)) + 4 * kU32 * std::fabs(pre) + bias;
}

void non_explained(CaseVerdict& v, const Policy& p) {
  auto stage_of = [](const std::string& name) {
    return name == "w_q"                        ? Stage::Decode
           : name == "x_q" || name == "x_scale" ? Stage::Quantize
           : name == "acc"                      ? Stage::Accumulate
                                                : Stage::Output;
  };
  for (const auto& t : v.tensors) {
    StageResult& s = v.stages[int(stage_of(t.name))];
    std::string why;
    const bool ok = passes(t, p, &why);
    const Verdict tv = !ok ? Verdict::Fail : t.mismatches == 0 ? Verdict::Exact : Verdict::Order;
    if (s.verdict == Verdict::Absent || int(tv) > int(s.verdict) || (tv == Verdict::Fail)) s.verdict = tv;
    s.differing += t.mismatches;
    if (ok) s.explained += t.mismatches;
    s.detail += (s.detail.empty() ? "" : "; ") +
                (ok ? t.name + ": " + std::to_string(t.mismatches) + " differ, within " + policy_name(p) : why);
  }
}

}  // namespace

std::string_view verdict_name(Verdict v) {
  switch (v) {
    case Verdict::Exact:
      return "exact";
    case Verdict::Order:
      return "order";
    case Verdict::Fail:
      return "fail";
    case Verdict::Absent:
      return "n/a";
  }
  return "?";
}
std::string_view stage_name(Stage s) {
  constexpr std::string_view n[] = {"decode", "quantize", "accumulate", "epilogue", "output"};
  return n[int(s)];
}

CaseVerdict contract_broken(std::string why) {
  CaseVerdict v;
  v.overall = Verdict::Fail;
  v.first_fail = std::string(stage_name(Stage::Output));
  StageResult& s = v.stages[int(Stage::Output)];
  s.verdict = Verdict::Fail;
  s.detail = std::move(why);
  return v;
}

std::vector<double> rotate_row_f64(const float* x, std::int64_t k, std::int64_t r) {
  std::vector<double> y(x, x + k);
  for (std::int64_t blk = 0; blk < k; blk += r)
    for (std::int64_t s = 1; s < r; s *= 4)
      for (std::int64_t base = blk; base < blk + r; base += 4 * s)
        for (std::int64_t o = 0; o < s; ++o) {
          double& a = y[std::size_t(base + o)];
          double& b = y[std::size_t(base + o + s)];
          double& c = y[std::size_t(base + o + 2 * s)];
          double& d = y[std::size_t(base + o + 3 * s)];
          const double y0 = (a + b + c - d) * 0.5, y1 = (a + b - c + d) * 0.5, y2 = (a - b + c + d) * 0.5,
                       y3 = (b - a + c + d) * 0.5;
          a = y0, b = y1, c = y2, d = y3;
        }
  return y;
}

CaseVerdict judge(const CaseSpec& c, const CaseData& d, const gemm::GemmResult& ref, const ImplOutput& act,
                  ActPolicy pol, const Policy& p) {
  CaseVerdict v;
  const std::uint64_t M = c.m, N = c.n, K = c.k;
  const FloatDtype od = c.out_dtype;
  const gemm::Layer& L = d.layer;

  // Every given tensor against the reference (reported under any policy).
  v.out_vs_ref = compare_tensors(float_tensor_data("output", od, {M, N}, ref.out),
                                 float_tensor_data("output", act.out_dtype, {M, N}, act.out));
  if (act.out_dtype != od)
    v.out_vs_ref.shape_error = "output is " + std::string(gemm::float_dtype_name(act.out_dtype)) + ", the case's out_dtype " +
                               std::string(gemm::float_dtype_name(od));
  if (act.w_q)
    v.tensors.push_back(
        compare_tensors(int_tensor_data("w_q", "I8", {N, K}, ref.w_q), int_tensor_data("w_q", "I8", {N, K}, *act.w_q)));
  if (!c.correction) {
    if (act.x_q)
      v.tensors.push_back(compare_tensors(int_tensor_data("x_q", "I8", {M, K}, ref.x_q),
                                          int_tensor_data("x_q", "I8", {M, K}, *act.x_q)));
    if (act.x_scale)
      v.tensors.push_back(compare_tensors(float_tensor_data("x_scale", FloatDtype::F32, {M}, ref.x_scale),
                                          float_tensor_data("x_scale", FloatDtype::F32, {M}, *act.x_scale)));
    if (act.acc)
      v.tensors.push_back(compare_tensors(int_tensor_data("acc", "I32", {M, N}, ref.acc),
                                          int_tensor_data("acc", "I32", {M, N}, *act.acc)));
  }
  v.tensors.push_back(v.out_vs_ref);

  if (p.kind != Policy::Kind::Explained || !v.out_vs_ref.shape_error.empty()) {
    non_explained(v, p.kind == Policy::Kind::Explained ? Policy{Policy::Kind::Exact, 0} : p);
  } else {
    auto& dec = v.stages[int(Stage::Decode)];
    if (act.w_q) {
      const TensorStats& t = v.tensors.front();
      dec.differing = t.mismatches;
      dec.verdict = grade(t.mismatches, 0);
      dec.detail = t.mismatches == 0 ? "w_q bit-exact"
                                     : std::to_string(t.mismatches) + " of " + std::to_string(t.count) +
                                           " w_q differ, first at " + index_text(t.first[0].index) + ": expected " +
                                           fmt("%g", t.first[0].expected) + ", got " + fmt("%g", t.first[0].actual);
    }
    const std::vector<std::int8_t>& W = act.w_q ? *act.w_q : ref.w_q;

    if (c.correction) {
      // Float GEMM: bound any summation order, and under the eager policy the roundings through the
      // activation dtype. Under the f32 policy nothing is rounded to that dtype, so its terms are 0
      // (with them, f16 activations let a kernel that ignores the correction pass as "order").
      auto& out = v.stages[int(Stage::Output)];
      const bool eager = gemm::effective_policy(pol, c.x_dtype) == ActPolicy::Eager;
      const double ux = eager ? unit_roundoff(c.x_dtype) : 0.0;
      // Both results are float32 sums in some order of the same products, each within K u of the exact
      // sum (and each product's rounding within 2^-150 absolutely, where they underflow): their
      // difference within twice that.
      const double gamma = 2 * double(K) * kU32 + 4 * ux;
      const double underflow = double(K) * 0x1p-149;
      // The weight is rotated back in float arithmetic, in any order: each physical weight carries
      // an error up to R u / sqrt(R) times its block's sum of |W_rot|, which can dwarf the weight
      // itself when the rotation cancels. Summed against |x| that is (1/sqrt R) * sum over blocks of
      // (sum |x|) (sum |W_rot|). Under the eager policy W_rot is first rounded to the activation
      // dtype (delta_j <= u_x |W_rot_j|, after it the rotation's output once, in gamma): a linear
      // map, so that rounding reaches the output exactly as sum_j delta_j (H x)_j, bounded by
      // u_x sum_j |W_rot_j| |(H x)_j| with H x the exact rotated activations (about sqrt(R)
      // tighter than bounding each weight by its block).
      const std::uint64_t R = std::uint64_t(std::max<std::int64_t>(L.convrot_groupsize, 1)), G = std::uint64_t(L.group_size);
      const double rot_gamma = 2 * double(R) * kU32, inv_sqrt_r = 1.0 / std::sqrt(double(R));
      const double max_out = max_finite(od);
      std::uint64_t diff = 0, expl = 0, first = ~0ull;
      std::vector<double> xabs(K), xblk(K / R), wblk(K / R);
      std::vector<double> yabs(K);
      for (std::uint64_t m = 0; m < M; ++m) {
        for (std::uint64_t k = 0; k < K; ++k) xabs[k] = std::fabs(double(d.x.values[m * K + k]));
        for (std::uint64_t b = 0; b < K / R; ++b) xblk[b] = std::accumulate(&xabs[b * R], &xabs[b * R] + R, 0.0);
        if (eager) {
          const std::vector<double> y = rotate_row_f64(d.x.values.data() + m * K, std::int64_t(K), std::int64_t(R));
          for (std::uint64_t k = 0; k < K; ++k) yabs[k] = std::fabs(y[k]);
        }
        for (std::uint64_t n = 0; n < N; ++n) {
          const float a = act.out[m * N + n], e = ref.out[m * N + n];
          if (same(a, e)) continue;
          ++diff;
          double s = 0;
          const float* w = ref.w_dequant.data() + n * K;
          for (std::uint64_t k = 0; k < K; ++k) s += xabs[k] * std::fabs(double(w[k]));
          double srot = 0, sround = 0;
          for (std::uint64_t b = 0; b < K / R; ++b) {
            double wsum = 0;
            for (std::uint64_t k = b * R; k < (b + 1) * R; ++k) {
              const double wr = std::fabs(double(W[n * K + k]) * L.s_channel[n] + double(L.correction[(k / G) * N + n]));
              wsum += wr;
              sround += wr * yabs[k];
            }
            srot += xblk[b] * wsum;
          }
          const float mag = std::isinf(e) ? float(max_out) : e;  // an overflowed reference: ulps at the edge
          // (1 + u_x): the rotation's error bound taken on W_rot after its rounding.
          double tol = gamma * s + underflow + rot_gamma * (1 + ux) * inv_sqrt_r * srot + 2 * ux * sround +
                       2 * ulp_of(mag, od) +
                       (eager ? 2 * ulp_of(mag, c.x_dtype) : 0);
          if (L.has_bias()) tol += 2 * ulp_of(L.bias[n], od) + (eager ? ulp_of(L.bias[n], c.x_dtype) : 0);
          bool ok = false;
          if (std::isinf(a) && std::isinf(e)) {
            ok = tol >= 2 * max_out;  // opposite infinities: only a bound spanning the whole range
          } else if (std::isinf(a) || std::isinf(e)) {
            // One side overflowed: explained when the bound reaches past the range on that side.
            const double fin = std::isinf(a) ? e : a;
            ok = (std::isinf(a) ? a : e) > 0 ? fin + tol > max_out : fin - tol < -max_out;
          } else {
            ok = std::fabs(double(a) - double(e)) <= tol;
          }
          if (ok)
            ++expl;
          else if (first == ~0ull)
            first = m * N + n;
        }
      }
      out.differing = diff, out.explained = expl, out.verdict = grade(diff, expl);
      out.detail = diff == 0 ? "correction path: output bit-exact"
                             : "correction path (float GEMM): " + std::to_string(diff) + " outputs differ, " +
                                   std::to_string(expl) + " within the summation-order bound" +
                                   (first != ~0ull ? "; first beyond it at " + at2(first, N) + ": got " +
                                                         fmt("%.9g", act.out[first]) + ", expected " + fmt("%.9g", ref.out[first])
                                                   : "");
    } else {
      // Rotation bounds of a row, computed the first time a row needs them.
      std::vector<RowBounds> rows_(M);
      auto row = [&](std::uint64_t m) -> const RowBounds& {
        if (rows_[m].y.empty() && K > 0) rows_[m] = row_bounds(c, d.x.values.data() + m * K, pol);
        return rows_[m];
      };
      auto scale_bound = [&](std::uint64_t m) {
        const double s = ref.x_scale[m];
        return row(m).absmax_err / 127.0 + 2 * kU32 * s + 2 * ulp_of(s, FloatDtype::F32);
      };
      const std::vector<float>& XS = act.x_scale ? *act.x_scale : ref.x_scale;
      auto& q = v.stages[int(Stage::Quantize)];
      if (act.x_scale || act.x_q) {
        std::uint64_t diff = 0, expl = 0, scale_diff = 0;
        std::string first_bad;
        if (act.x_scale)
          for (std::uint64_t m = 0; m < M; ++m) {
            const float got = (*act.x_scale)[m];
            if (same(got, ref.x_scale[m])) continue;
            ++diff, ++scale_diff;
            // A row that rotates exactly has an exact absmax: its scale is one of two values, not a
            // bound (a few ulps of freedom would move every tie of the row where a kernel likes).
            const RowBounds& rb = row(m);
            const bool legal = rb.all_exact ? got == rb.scales[0] || got == rb.scales[1]
                                            : std::fabs(double(got) - double(ref.x_scale[m])) <= scale_bound(m);
            if (legal)
              ++expl;
            else if (first_bad.empty())
              first_bad = "x_scale[" + std::to_string(m) + "] = " + fmt("%.9g", got) + ", expected " +
                          fmt("%.9g", ref.x_scale[m]) +
                          (rb.all_exact ? " (the row rotates exactly: f32(absmax / 127), or absmax * f32(1 / 127) = " +
                                              fmt("%.9g", rb.scales[1]) + ")"
                                        : "");
          }
        if (act.x_q)
          for (std::uint64_t m = 0; m < M; ++m) {
            const float sd = gemm::division_scale(XS[m], pol, c.x_dtype);
            for (std::uint64_t k = 0; k < K; ++k) {
              const std::int8_t qa = (*act.x_q)[m * K + k], qe = ref.x_q[m * K + k];
              const int a = qa, e = qe;
              if (a == e) continue;
              ++diff;
              const RowBounds& rb = row(m);
              bool legal = false;
              if (rb.exact[k / std::uint64_t(c.r)]) {
                legal = exact_element_allows(a, rb.y[k], sd, pol, c.x_dtype);
              } else {
                const QRange r = legal_q(rb.y[k], rb.err[k], sd, 0, pol, c.x_dtype);
                legal = a >= r.lo && a <= r.hi;
              }
              if (legal && std::abs(a - e) == 1)
                ++expl;
              else if (first_bad.empty())
                first_bad = "x_q" + at2(m * K + k, K) + " = " + std::to_string(a) + ", expected " + std::to_string(e) +
                            (rb.exact[k / std::uint64_t(c.r)]
                                 ? " (the row rotates exactly; its value " + fmt("%.9g", exact_rotated(rb.y[k], pol, c.x_dtype)) +
                                       " over its divisor " + fmt("%.9g", sd) + " is " +
                                       fmt("%.6f", double(exact_rotated(rb.y[k], pol, c.x_dtype)) / sd) + ")"
                                 : " (exact quotient " + fmt("%.6f", rb.y[k] / sd) + ")");
            }
          }
        q.differing = diff, q.explained = expl, q.verdict = grade(diff, expl);
        q.detail = diff == 0 ? "x_q and x_scale bit-exact"
                             : std::to_string(diff) + " differ (" + std::to_string(scale_diff) + " x_scale), " +
                                   std::to_string(expl) + " explained by order (x_scale within its bound, x_q at rounding ties)" +
                                   (first_bad.empty() ? "" : "; not explained: " + first_bad);
      }
      const std::vector<std::int8_t>& XQ = act.x_q ? *act.x_q : ref.x_q;
      // Its own accumulation, recomputed exactly (int32 wrap-around).
      // Rows whose operands equal the reference's take the reference's (exact) acc; others are summed.
      std::vector<std::int32_t> own_acc;
      if (act.x_q || act.w_q || act.acc) {
        own_acc = ref.acc;
        const bool w_same = !act.w_q || *act.w_q == ref.w_q;
        for (std::uint64_t m = 0; m < M; ++m) {
          const std::int8_t* xr = XQ.data() + m * K;
          if (w_same && std::equal(xr, xr + K, ref.x_q.data() + m * K)) continue;
          for (std::uint64_t n = 0; n < N; ++n) {
            std::int64_t s = 0;
            const std::int8_t* wr = W.data() + n * K;
            for (std::uint64_t k = 0; k < K; ++k) s += std::int64_t(xr[k]) * wr[k];
            own_acc[m * N + n] = wrap32(s);
          }
        }
      }
      auto& acc = v.stages[int(Stage::Accumulate)];
      if (act.acc) {
        std::uint64_t diff = 0, first = ~0ull;
        for (std::uint64_t i = 0; i < M * N; ++i)
          if ((*act.acc)[i] != own_acc[i] && diff++ == 0) first = i;
        acc.differing = diff, acc.verdict = grade(diff, 0);
        acc.detail = diff == 0 ? "acc == sum x_q * w_q of its own x_q and w_q"
                               : std::to_string(diff) +
                                     " acc differ from sum x_q * w_q of its own operands, first at " + at2(first, N) +
                                     ": " + std::to_string((*act.acc)[first]) + " vs " + std::to_string(own_acc[first]);
      }
      const std::vector<std::int32_t>& ACC = act.acc ? *act.acc : own_acc.empty() ? ref.acc : own_acc;
      if (act.acc || act.x_q) {
        auto& ep = v.stages[int(Stage::Epilogue)];
        std::uint64_t diff = 0, expl = 0, first = ~0ull;
        float first_exp = 0;
        for (std::uint64_t m = 0; m < M; ++m)
          for (std::uint64_t n = 0; n < N; ++n) {
            const float pre = gemm::epilogue(ACC[m * N + n], XS[m], L.s_channel[n]);
            const float o = finish(pre, od, L, n), a = act.out[m * N + n];
            if (same(a, o)) continue;
            ++diff;
            if (std::fabs(double(a) - double(o)) <= epilogue_tol(pre, o, od, p.param, L, n))
              ++expl;
            else if (first == ~0ull)
              first = m * N + n, first_exp = o;
          }
        ep.differing = diff, ep.explained = expl, ep.verdict = grade(diff, expl);
        ep.detail = diff == 0 ? "out bit-exact from its own acc and x_scale"
                              : std::to_string(diff) + " outputs differ from the epilogue of its own acc, " +
                                    std::to_string(expl) + " within " + std::to_string(std::uint64_t(p.param)) +
                                    " ulp (order)" +
                                    (first != ~0ull ? "; first beyond at " + at2(first, N) + ": got " +
                                                          fmt("%.9g", act.out[first]) + ", its own acc and x_scale give " +
                                                          fmt("%.9g", first_exp)
                                                    : "");
        if (!act.acc) ep.detail += " (acc not given: recomputed from its own x_q and w_q)";
      } else {
        // Outputs only: bound each output by the row's tie candidates and the epilogue's order.
        auto& out = v.stages[int(Stage::Output)];
        std::uint64_t diff = 0, expl = 0, first = ~0ull;
        std::vector<std::uint64_t> ties;
        for (std::uint64_t m = 0; m < M; ++m) {
          ties.clear();
          bool row_differs = false;
          for (std::uint64_t n = 0; n < N && !row_differs; ++n)
            row_differs = !same(act.out[m * N + n], ref.out[m * N + n]);
          if (!row_differs) continue;
          const RowBounds& rb = row(m);
          const double ref_scale = std::max(double(ref.x_scale[m]), 1e-300);
          double srel = scale_bound(m) / ref_scale;
          if (rb.all_exact) {
            // Its scale is one of two values: a tie candidate is an element those scales and the two
            // quotients leave more than one x_q for (an exact .5 tie alone is not one).
            srel = 0;
            std::array<float, 2> sds{};
            for (int i = 0; i < 2; ++i) {
              srel = std::max(srel, std::fabs(double(rb.scales[i]) - double(ref.x_scale[m])) / ref_scale);
              sds[i] = gemm::division_scale(rb.scales[i], pol, c.x_dtype);
            }
            for (std::uint64_t k = 0; k < K; ++k) {
              const auto a0 = exact_element_q(rb.y[k], sds[0], pol, c.x_dtype);
              const auto a1 = exact_element_q(rb.y[k], sds[1], pol, c.x_dtype);
              if (a0[0] != a0[1] || a0[0] != a1[0] || a0[0] != a1[1]) ties.push_back(k);
            }
          } else {
            const float sd = gemm::division_scale(ref.x_scale[m], pol, c.x_dtype);
            for (std::uint64_t k = 0; k < K; ++k) {
              const QRange r = legal_q(rb.y[k], rb.err[k], sd, srel, pol, c.x_dtype);
              if (r.lo != r.hi) ties.push_back(k);
            }
          }
          for (std::uint64_t n = 0; n < N; ++n) {
            const float a = act.out[m * N + n], e = ref.out[m * N + n];
            if (same(a, e)) continue;
            ++diff;
            double wsum = 0;
            for (auto k : ties) wsum += std::fabs(double(W[n * K + k]));
            const float pre = gemm::epilogue(ref.acc[m * N + n], ref.x_scale[m], L.s_channel[n]);
            const double unit = std::fabs(double(ref.x_scale[m]) * L.s_channel[n]);
            const double tol = wsum * unit * (1 + srel) + std::fabs(pre) * srel * 2 +
                               epilogue_tol(pre, e, od, p.param, L, n) + ulp_of(std::fabs(pre) + wsum * unit, od);
            if (std::fabs(double(a) - double(e)) <= tol)
              ++expl;
            else if (first == ~0ull)
              first = m * N + n;
          }
        }
        out.differing = diff, out.explained = expl, out.verdict = grade(diff, expl);
        out.detail =
            diff == 0
                ? "output bit-exact (no intermediates given)"
                : std::to_string(diff) + " outputs differ, " + std::to_string(expl) +
                      " within the bound of rounding ties and epilogue order (unattributed: no intermediates given)" +
                      (first != ~0ull ? "; first beyond it at " + at2(first, N) + ": got " + fmt("%.9g", act.out[first]) +
                                            ", expected " + fmt("%.9g", ref.out[first])
                                      : "");
      }
    }
  }
  for (int s = 0; s < kStages; ++s) {
    const Verdict sv = v.stages[s].verdict;
    if (sv == Verdict::Fail && v.first_fail.empty()) v.first_fail = std::string(stage_name(Stage(s)));
    if (sv == Verdict::Fail)
      v.overall = Verdict::Fail;
    else if (sv == Verdict::Order && v.overall == Verdict::Exact)
      v.overall = Verdict::Order;
  }
  return v;
}

}  // namespace w4a8::audit
