#include "audit/tensor_compare.hpp"

#include <algorithm>
#include <charconv>
#include <cctype>
#include <cmath>
#include <cstring>

#include "audit/fp8_values.hpp"
#include "gemm/tensor_io.hpp"

namespace w4a8::audit {

namespace {
json::Value u(std::uint64_t x) {
  json::Value v;
  v.kind = json::Kind::Int;
  v.text = std::to_string(x);
  return v;
}
json::Value num(double d) { return json::Value::from_float(d); }

// Bits of v on dtype d's grid mapped to a monotone signed integer (+0 and -0 both 0).
std::int64_t ordered(float v, gemm::FloatDtype d) {
  std::uint32_t bits = 0, sign = 0;
  switch (d) {
    case gemm::FloatDtype::BF16:
      bits = gemm::f32_to_bf16_rne(v), sign = 0x8000u;
      break;
    case gemm::FloatDtype::F16:
      bits = gemm::f32_to_f16_rne(v), sign = 0x8000u;
      break;
    default:
      bits = gemm::f32_bits(v), sign = 0x80000000u;
      break;
  }
  const std::int64_t mag = std::int64_t(bits & (sign - 1));
  return (bits & sign) ? -mag : mag;
}
// An 8-bit float code on a monotone signed scale: sign and magnitude (+0 and -0 both 0), or the
// code itself for unsigned codes (F8_E8M0).
std::int64_t ordered_code(std::uint8_t c, bool signed_codes) {
  if (!signed_codes) return c;
  return (c & 0x80) != 0 ? -std::int64_t(c & 0x7F) : std::int64_t(c & 0x7F);
}
}  // namespace

Result<Policy> parse_policy(std::string_view s) {
  Policy p;
  // A tolerance: a decimal number (strtod alone also took hex "0x10", " 1" and "infinity").
  auto param = [&](std::string_view rest, double& out) {
    if (rest.empty() || !(std::isdigit(static_cast<unsigned char>(rest.front())) || rest.front() == '.')) return false;
    for (const char ch : rest)
      if (!std::isdigit(static_cast<unsigned char>(ch)) && ch != '.' && ch != 'e' && ch != 'E' && ch != '+' && ch != '-')
        return false;
    const std::string t(rest);
    char* end = nullptr;
    out = std::strtod(t.c_str(), &end);
    return !t.empty() && end == t.c_str() + t.size() && std::isfinite(out) && out >= 0;
  };
  // An ulp count: decimal digits only, at most 2^40 (a float32 pair is at most 2^33 ulps apart; the
  // bound keeps it exact in the double it is stored in). "0.5", "1e3" or 2^64 + 1 are refused, never
  // rounded or wrapped.
  auto count = [&](std::string_view rest, double& out) {
    std::uint64_t n = 0;
    const auto [end, ec] = std::from_chars(rest.data(), rest.data() + rest.size(), n);
    if (rest.empty() || ec != std::errc{} || end != rest.data() + rest.size() || n > (std::uint64_t{1} << 40)) return false;
    out = double(n);
    return true;
  };
  if (s == "exact") return Policy{Policy::Kind::Exact, 0};
  if (s == "explained") return Policy{Policy::Kind::Explained, 1};
  if (s.starts_with("explained:") && count(s.substr(10), p.param)) return Policy{Policy::Kind::Explained, p.param};
  if (s.starts_with("ulp:") && count(s.substr(4), p.param)) return Policy{Policy::Kind::Ulp, p.param};
  if (s.starts_with("rel:") && param(s.substr(4), p.param)) return Policy{Policy::Kind::Rel, p.param};
  return make_error(ErrorKind::AuditPolicy, {"'" + std::string(s) + "'"});
}

std::string policy_name(const Policy& p) {
  char buf[64];
  switch (p.kind) {
    case Policy::Kind::Exact:
      return "exact";
    case Policy::Kind::Ulp:
      return "ulp:" + std::to_string(std::uint64_t(p.param));
    case Policy::Kind::Rel:
      std::snprintf(buf, sizeof buf, "rel:%g", p.param);
      return buf;
    case Policy::Kind::Explained:
      return p.param == 1 ? "explained" : "explained:" + std::to_string(std::uint64_t(p.param));
  }
  return "?";
}

TensorData float_tensor_data(std::string name, gemm::FloatDtype d, std::vector<std::uint64_t> shape,
                             std::vector<float> v) {
  TensorData t;
  t.name = std::move(name), t.is_float = true, t.fdtype = d, t.shape = std::move(shape), t.f = std::move(v);
  t.dtype = d == gemm::FloatDtype::BF16 ? "BF16" : d == gemm::FloatDtype::F16 ? "F16" : "F32";
  return t;
}

Result<std::vector<TensorData>> read_tensors(const st::File& f) {
  std::vector<TensorData> out;
  for (const auto& t : f.header().tensors) {
    TensorData d;
    d.name = t.name, d.shape = t.shape, d.dtype = std::string(st::dtype_name(t.dtype));
    const auto bytes = f.data(t);
    if (gemm::float_dtype_of(t.dtype, d.fdtype)) {
      auto v = gemm::read_floats(f, t, t.name);
      if (!v.ok()) return std::move(v).error();
      d.f = std::move(*v);
    } else if (const Fp8Decoder decode = fp8_decoder(t.dtype)) {
      d.codes.assign(bytes.begin(), bytes.end());
      d.signed_codes = fp8_signed(t.dtype);
      d.f.resize(bytes.size());
      for (std::size_t k = 0; k < bytes.size(); ++k) d.f[k] = decode(bytes[k]);
    } else {
      d.is_float = false;
      const bool is_signed = t.dtype == st::Dtype::I8 || t.dtype == st::Dtype::I16 || t.dtype == st::Dtype::I32 ||
                             t.dtype == st::Dtype::I64;
      d.unsigned64 = t.dtype == st::Dtype::U64;
      d.bytewise = !(is_signed || d.unsigned64 || t.dtype == st::Dtype::BOOL || t.dtype == st::Dtype::U8 ||
                     t.dtype == st::Dtype::U16 || t.dtype == st::Dtype::U32);
      const unsigned w = d.bytewise ? 1 : st::dtype_bits(t.dtype) / 8;
      d.i.resize(bytes.size() / w);
      for (std::size_t k = 0; k < d.i.size(); ++k) {
        std::uint64_t raw = 0;
        std::memcpy(&raw, bytes.data() + k * w, w);  // little-endian host
        if (is_signed && w < 8 && (raw >> (8 * w - 1)) & 1) raw |= ~std::uint64_t(0) << (8 * w);
        d.i[k] = std::int64_t(raw);
      }
    }
    out.push_back(std::move(d));
  }
  return out;
}

std::uint64_t ulp_distance(float a, float b, gemm::FloatDtype d) {
  const bool na = a != a, nb = b != b;
  if (na || nb) return na && nb ? 0 : kNanUlp;
  const std::int64_t x = ordered(a, d), y = ordered(b, d);
  return x > y ? std::uint64_t(x - y) : std::uint64_t(y - x);
}

double ulp_of(double v, gemm::FloatDtype d) {
  const int mant = d == gemm::FloatDtype::BF16 ? 7 : d == gemm::FloatDtype::F16 ? 10 : 23;
  const int emin = d == gemm::FloatDtype::F16 ? -14 : -126;
  const double a = std::fabs(v);
  int e = a > 0 ? std::ilogb(a) : emin;
  if (e < emin) e = emin;
  return std::ldexp(1.0, e - mant);
}

int ulp_bucket(std::uint64_t ulp) {
  if (ulp <= 2) return int(ulp);
  if (ulp <= 4) return 3;
  if (ulp <= 8) return 4;
  if (ulp <= 16) return 5;
  if (ulp <= 64) return 6;
  if (ulp <= 256) return 7;
  if (ulp <= 4096) return 8;
  return 9;
}

std::string index_text(const std::vector<std::uint64_t>& idx) {
  std::string s = "[";
  for (std::size_t i = 0; i < idx.size(); ++i) s += (i ? ", " : "") + std::to_string(idx[i]);
  return s + "]";
}

TensorStats compare_tensors(const TensorData& e, const TensorData& a) {
  TensorStats s;
  s.name = e.name, s.dtype = e.dtype, s.shape = e.shape, s.is_float = e.is_float, s.bytewise = e.bytewise;
  s.count = e.size();
  // Same dtype and same shape, not merely as many elements: a transposed output, or one written in
  // another dtype than the case asks for, is wrong however its values compare.
  if (e.shape != a.shape || e.dtype != a.dtype || e.is_float != a.is_float) {
    s.shape_error = "expected " + e.dtype + " " + index_text(e.shape) + ", got " + a.dtype + " " + index_text(a.shape);
    s.mismatches = s.count;
    return s;
  }
  // Tile map over the last two dimensions folded to rows x columns.
  const std::uint64_t cols = e.shape.empty() ? 1 : e.shape.back();
  const std::uint64_t rows = cols ? s.count / cols : 0;
  if (e.shape.size() >= 2 && rows && cols && !e.bytewise) {
    s.tile_m = (rows + kMaxTilesPerSide - 1) / kMaxTilesPerSide;
    s.tile_n = (cols + kMaxTilesPerSide - 1) / kMaxTilesPerSide;
    s.tiles_m = (rows + s.tile_m - 1) / s.tile_m;
    s.tiles_n = (cols + s.tile_n - 1) / s.tile_n;
    s.tiles.assign(s.tiles_m * s.tiles_n, 0);
  }
  auto unravel = [&](std::uint64_t flat) {
    if (e.bytewise) return std::vector<std::uint64_t>{flat};  // a byte offset
    std::vector<std::uint64_t> idx(e.shape.size(), 0);
    for (std::size_t d = e.shape.size(); d-- > 0;) {
      const std::uint64_t dim = std::max<std::uint64_t>(e.shape[d], 1);
      idx[d] = flat % dim;
      flat /= dim;
    }
    return idx;
  };
  double num2 = 0, den2 = 0;
  for (std::uint64_t k = 0; k < s.count; ++k) {
    double ev, av;
    std::uint64_t dist;
    if (e.is_float) {
      ev = e.f[k], av = a.f[k];
      dist = ulp_distance(e.f[k], a.f[k], e.fdtype);
      if (!e.codes.empty() && dist != kNanUlp && dist != 0) {  // 8-bit floats: steps between codes
        const std::int64_t x = ordered_code(e.codes[k], e.signed_codes), y = ordered_code(a.codes[k], a.signed_codes);
        dist = std::uint64_t(x > y ? x - y : y - x);
      }
      if (dist == kNanUlp)
        ++s.nan_mismatches;
      else if (dist != 0 && (std::isinf(e.f[k]) || std::isinf(a.f[k])))
        ++s.inf_mismatches;  // FLT_MAX vs inf is 1 ulp on the grid, but an overflow, not a rounding
    } else if (e.unsigned64) {
      const auto ue = std::uint64_t(e.i[k]), ua = std::uint64_t(a.i[k]);
      ev = double(ue), av = double(ua);
      dist = ue >= ua ? ue - ua : ua - ue;
    } else {
      ev = double(e.i[k]), av = double(a.i[k]);
      // |e - a| without signed overflow (I64 extremes).
      const auto ue = std::uint64_t(e.i[k]), ua = std::uint64_t(a.i[k]);
      dist = e.i[k] >= a.i[k] ? ue - ua : ua - ue;
    }
    ++s.hist[std::size_t(ulp_bucket(dist))];
    if (dist == 0) {
      if (std::isfinite(ev)) den2 += ev * ev;
      continue;
    }
    ++s.mismatches;
    s.max_ulp = std::max(s.max_ulp, dist);
    // A NaN against a number has no distance: max abs and relative L2 are then NaN, not a number (they
    // read "inf", as if the difference were an overflow). An infinity against another value is inf.
    const double diff = std::fabs(ev - av);
    if (std::isnan(diff) || std::isnan(s.max_abs))
      s.max_abs = std::numeric_limits<double>::quiet_NaN();
    else
      s.max_abs = std::max(s.max_abs, diff);
    if (std::isfinite(ev)) den2 += ev * ev;
    num2 += std::isnan(diff) ? std::numeric_limits<double>::quiet_NaN()
            : std::isfinite(diff) ? diff * diff
                                  : std::numeric_limits<double>::infinity();
    if (s.first.size() < kFirstMismatches) s.first.push_back({unravel(k), ev, av, dist});
    if (!s.tiles.empty()) {
      auto& t = s.tiles[(k / cols / s.tile_m) * s.tiles_n + (k % cols) / s.tile_n];
      t = std::max(t, dist);
    }
  }
  s.rel_l2 = std::isnan(num2) ? num2 : num2 == 0 ? 0 : den2 == 0 ? std::numeric_limits<double>::infinity() : std::sqrt(num2 / den2);
  return s;
}

bool passes(const TensorStats& s, const Policy& p, std::string* why) {
  auto fail = [&](std::string w) {
    if (why) *why = std::move(w);
    return false;
  };
  if (!s.present) return fail(s.name + ": missing");
  if (!s.shape_error.empty()) return fail(s.name + ": " + s.shape_error);
  if (s.mismatches == 0) return true;
  if (s.bytewise)
    return fail(s.name + ": " + std::to_string(s.mismatches) + " of " + std::to_string(s.count) + " bytes differ (" +
                s.dtype + " is compared byte for byte)");
  if (!s.is_float || p.kind == Policy::Kind::Exact)
    return fail(s.name + ": " + std::to_string(s.mismatches) + " of " + std::to_string(s.count) + " elements differ");
  if (s.nan_mismatches) return fail(s.name + ": " + std::to_string(s.nan_mismatches) + " NaN mismatches");
  if (s.inf_mismatches)
    return fail(s.name + ": " + std::to_string(s.inf_mismatches) + " infinity mismatches (inf against a finite value or -inf)");
  if (p.kind == Policy::Kind::Ulp && double(s.max_ulp) > p.param)
    return fail(s.name + ": max " + std::to_string(s.max_ulp) + " ulp > " + std::to_string(std::uint64_t(p.param)));
  if (p.kind == Policy::Kind::Rel && !(s.rel_l2 <= p.param)) {
    char buf[96];
    std::snprintf(buf, sizeof buf, ": relative L2 %.3g > %.3g", s.rel_l2, p.param);
    return fail(s.name + buf);
  }
  return true;
}

json::Value stats_to_json(const TensorStats& s) {
  json::Value v = json::Value::object();
  v.set("name", json::Value::from_string(s.name));
  v.set("dtype", json::Value::from_string(s.dtype));
  json::Value sh = json::Value::array();
  for (auto d : s.shape) sh.items.push_back(u(d));
  v.set("shape", std::move(sh));
  if (!s.present) v.set("missing", json::Value::from_bool(true));
  if (s.bytewise) v.set("bytewise", json::Value::from_bool(true));  // count, mismatches, indices: bytes
  if (!s.shape_error.empty()) v.set("shape_error", json::Value::from_string(s.shape_error));
  v.set("count", u(s.count));
  v.set("mismatches", u(s.mismatches));
  if (s.is_float) {
    v.set("nan_mismatches", u(s.nan_mismatches));
    v.set("inf_mismatches", u(s.inf_mismatches));
    if (s.max_ulp == kNanUlp)
      v.set("max_ulp", json::Value::from_string("NaN"));  // (no distance: NaN against a number)
    else
      v.set("max_ulp", u(s.max_ulp));
    v.set("rel_l2", num(s.rel_l2));
  } else {
    v.set("max_abs_diff", u(s.max_ulp));
  }
  v.set("max_abs", num(s.max_abs));
  json::Value first = json::Value::array();
  for (const auto& m : s.first) {
    json::Value o = json::Value::object();
    json::Value idx = json::Value::array();
    for (auto d : m.index) idx.items.push_back(u(d));
    o.set("index", std::move(idx));
    o.set("expected", num(m.expected));
    o.set("actual", num(m.actual));
    if (m.ulp == kNanUlp)
      o.set("ulp", json::Value::from_string("NaN"));
    else
      o.set("ulp", u(m.ulp));
    first.items.push_back(std::move(o));
  }
  v.set("first_mismatches", std::move(first));
  json::Value h = json::Value::array();
  for (auto c : s.hist) h.items.push_back(u(c));
  v.set("ulp_histogram", std::move(h));
  return v;
}

}  // namespace w4a8::audit
