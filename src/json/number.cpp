#include "json/number.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <clocale>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string>
#include <system_error>
#include <vector>

#include <locale.h>

namespace w4a8::json {

namespace {

bool is_digit(char c) { return c >= '0' && c <= '9'; }

// strtod in the "C" locale, whatever the process's LC_NUMERIC: glibc's strtod is correctly rounded
// (round to nearest even), gives +-inf on overflow and the correctly rounded subnormal or +-0.0 on
// underflow, as Python's float() does. (std::from_chars for double would do, but libc++ 14, the
// standard library of OSS-Fuzz-style builds, lacks it.)
double strtod_c(std::string_view lit, bool& whole) {
  static const locale_t c_locale = newlocale(LC_ALL_MASK, "C", static_cast<locale_t>(nullptr));
  char small[128];
  std::string big;
  const char* text = small;
  if (lit.size() < sizeof small) {
    std::memcpy(small, lit.data(), lit.size());
    small[lit.size()] = '\0';
  } else {
    big.assign(lit);
    text = big.c_str();
  }
  char* end = nullptr;
  const double d = strtod_l(text, &end, c_locale);
  whole = end == text + lit.size() && !lit.empty();
  return d;
}

}  // namespace

double float_from_literal(std::string_view lit) {
  bool whole = false;
  const double d = strtod_c(lit, whole);
  return whole ? d : std::numeric_limits<double>::quiet_NaN();  // not a JSON literal: caller broke the contract
}

namespace {

// 1e0 .. 1e308, each correctly rounded (as Rust's float literals in serde_json's POW10 table).
const std::array<double, 309>& pow10_table() {
  static const std::array<double, 309> table = [] {
    std::array<double, 309> t{};
    for (std::size_t i = 0; i < t.size(); ++i) {
      bool whole = false;
      t[i] = strtod_c("1e" + std::to_string(i), whole);
    }
    return t;
  }();
  return table;
}

std::int32_t saturate_i32(std::int64_t v) {
  return static_cast<std::int32_t>(std::clamp<std::int64_t>(v, INT32_MIN, INT32_MAX));
}

// "a * 10 + b > max" without overflowing (serde_json's overflow! macro).
template <class T>
bool mul10_add_overflows(T a, T b, T max) { return a >= max / 10 && (a > max / 10 || b > max % 10); }

}  // namespace

bool serde_float_from_literal(std::string_view lit, double& out) {
  std::size_t i = 0;
  const bool positive = !(i < lit.size() && lit[i] == '-');
  if (!positive) ++i;
  std::uint64_t significand = 0;
  std::int32_t exponent = 0;
  auto digit = [&](std::size_t k) { return k < lit.size() && is_digit(lit[k]); };
  // Integer part: once the u64 significand is full, each further digit adds one to the exponent.
  for (; digit(i); ++i) {
    const auto d = static_cast<std::uint64_t>(lit[i] - '0');
    if (mul10_add_overflows<std::uint64_t>(significand, d, UINT64_MAX)) {
      for (; digit(i); ++i) exponent = saturate_i32(std::int64_t{exponent} + 1);
      break;
    }
    significand = significand * 10 + d;
  }
  // Fraction: digits past a full significand are dropped.
  if (i < lit.size() && lit[i] == '.') {
    for (++i; digit(i); ++i) {
      const auto d = static_cast<std::uint64_t>(lit[i] - '0');
      if (mul10_add_overflows<std::uint64_t>(significand, d, UINT64_MAX)) {
        while (digit(i)) ++i;
        break;
      }
      significand = significand * 10 + d;
      --exponent;
    }
  }
  if (i < lit.size() && (lit[i] == 'e' || lit[i] == 'E')) {
    ++i;
    bool positive_exp = true;
    if (i < lit.size() && (lit[i] == '+' || lit[i] == '-')) positive_exp = lit[i++] == '+';
    std::int32_t exp = 0;
    for (; digit(i); ++i) {
      const auto d = static_cast<std::int32_t>(lit[i] - '0');
      if (mul10_add_overflows<std::int32_t>(exp, d, INT32_MAX)) {
        if (significand != 0 && positive_exp) return false;
        out = positive ? 0.0 : -0.0;
        return true;
      }
      exp = exp * 10 + d;
    }
    exponent = saturate_i32(positive_exp ? std::int64_t{exponent} + exp : std::int64_t{exponent} - exp);
  }
  const auto& pow10 = pow10_table();
  double f = static_cast<double>(significand);
  while (true) {
    const std::int64_t mag = exponent < 0 ? -std::int64_t{exponent} : exponent;
    if (mag < static_cast<std::int64_t>(pow10.size())) {
      if (exponent >= 0) {
        f *= pow10[static_cast<std::size_t>(mag)];
        if (std::isinf(f)) return false;
      } else {
        f /= pow10[static_cast<std::size_t>(mag)];
      }
      break;
    }
    if (f == 0.0) break;
    if (exponent >= 0) return false;
    f /= 1e308;
    exponent += 308;
  }
  out = positive ? f : -f;
  return true;
}

std::string exact_integer_text(double d) {
  const bool negative = d < 0;
  int e2 = 0;
  const double m = std::frexp(std::fabs(d), &e2);  // |d| = m * 2^e2, 0.5 <= m < 1
  if (m == 0.0) return "0";
  auto mant = static_cast<std::uint64_t>(std::ldexp(m, 53));
  int shift = e2 - 53;
  std::string out;
  if (shift <= 0) {
    out = std::to_string(mant >> -shift);  // exact: d is integral
  } else {
    // Little-endian base-1e9 limbs; multiply by 2^shift in steps of at most 2^28.
    constexpr std::uint64_t kBase = 1'000'000'000;
    std::vector<std::uint64_t> limbs{mant % kBase, (mant / kBase) % kBase, mant / kBase / kBase};
    while (shift > 0) {
      const int step = shift < 28 ? shift : 28;
      shift -= step;
      std::uint64_t carry = 0;
      for (auto& limb : limbs) {
        const std::uint64_t x = (limb << step) + carry;
        limb = x % kBase;
        carry = x / kBase;
      }
      while (carry > 0) {
        limbs.push_back(carry % kBase);
        carry /= kBase;
      }
    }
    while (limbs.size() > 1 && limbs.back() == 0) limbs.pop_back();
    out = std::to_string(limbs.back());
    for (std::size_t i = limbs.size() - 1; i-- > 0;) {
      const std::string part = std::to_string(limbs[i]);
      out.append(9 - part.size(), '0');
      out += part;
    }
  }
  return negative ? "-" + out : out;
}

std::string py_float_repr(double d) {
  if (std::isnan(d)) return "nan";
  if (std::isinf(d)) return d < 0 ? "-inf" : "inf";
  // Shortest round-trip digits (same choice as CPython's dtoa mode 0), read off scientific form.
  char buf[64];
  const auto res = std::to_chars(buf, buf + sizeof buf, std::fabs(d), std::chars_format::scientific);
  const std::string_view sci(buf, static_cast<std::size_t>(res.ptr - buf));
  const std::size_t epos = sci.find('e');
  std::string digits;
  for (char c : sci.substr(0, epos))
    if (c != '.') digits.push_back(c);
  int exp10 = 0;
  std::from_chars(sci.data() + epos + 1 + (sci[epos + 1] == '+'), sci.data() + sci.size(), exp10);
  const int decpt = exp10 + 1;  // value = 0.DIGITS * 10^decpt
  const int n = static_cast<int>(digits.size());
  std::string out = std::signbit(d) ? "-" : "";
  if (decpt <= -4 || decpt > 16) {
    out += digits[0];
    if (n > 1) out += "." + digits.substr(1);
    const int e = decpt - 1;
    out += e < 0 ? "e-" : "e+";
    const std::string mag = std::to_string(e < 0 ? -e : e);
    if (mag.size() < 2) out += '0';
    out += mag;
  } else if (decpt <= 0) {
    out += "0." + std::string(static_cast<std::size_t>(-decpt), '0') + digits;
  } else if (decpt >= n) {
    out += digits + std::string(static_cast<std::size_t>(decpt - n), '0') + ".0";
  } else {
    out += digits.substr(0, static_cast<std::size_t>(decpt)) + "." + digits.substr(static_cast<std::size_t>(decpt));
  }
  return out;
}

}  // namespace w4a8::json
