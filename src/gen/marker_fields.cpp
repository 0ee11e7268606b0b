#include "gen/marker_fields.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <string_view>

#include "gen/byte_order.hpp"
#include "gen/json_spell.hpp"
#include "gen/repr_oracle.hpp"
#include "json/wtf8.hpp"

namespace w4a8::gen {
namespace {

IntField ok(JsonDoc d, std::string v) { return {std::move(d), {true, std::move(v), {}, {}}}; }
IntField err(JsonDoc d, ErrorKind k, std::string arg) { return {std::move(d), {false, {}, k, std::move(arg)}}; }

// ASCII digits of v mapped into the digit block starting at `zero` (U+0660 Arabic-Indic, U+0966
// Devanagari, U+FF10 fullwidth): int() accepts every Unicode decimal digit.
std::string unicode_digits(long long v, char32_t zero) {
  std::string s = std::to_string(v), out;
  for (char c : s) {
    if (c == '-') { out += '-'; continue; }
    const char32_t cp = zero + static_cast<char32_t>(c - '0');
    if (cp < 0x800) { out += static_cast<char>(0xC0 | (cp >> 6)); out += static_cast<char>(0x80 | (cp & 0x3F)); }
    else { out += static_cast<char>(0xE0 | (cp >> 12)); out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F)); out += static_cast<char>(0x80 | (cp & 0x3F)); }
  }
  return out;
}

// The exact decimal of a finite double as a JSON float literal ("3.99" -> "3.9900000000000002131...").
std::string exact_text(double d) {
  const ExactDecimal x = exact_decimal(d);
  std::string s = x.digits;
  const long long point = static_cast<long long>(s.size()) + x.exp10;  // digits before the point
  if (point <= 0) s = "0." + std::string(static_cast<std::size_t>(-point), '0') + s;
  else if (point >= static_cast<long long>(s.size())) s += std::string(static_cast<std::size_t>(point) - s.size(), '0') + ".0";
  else s.insert(static_cast<std::size_t>(point), ".");
  return (x.negative ? "-" : "") + s;
}

}  // namespace

IntField int_field(long long v, ChoiceSource& src) {
  const std::string dec = std::to_string(v);
  switch (src.below(14)) {
    case 0: case 1: case 2: case 3: return ok(jint(v), dec);
    case 12: {  // a fraction int() truncates: v + 2**-k, exact for |v| < 2**40 (canonical text: exact digits)
      if (v < 0 || v >= (1LL << 40)) return ok(jint(v), dec);
      const int k = 1 + static_cast<int>(src.below(12));
      const double d = static_cast<double>(v) + std::ldexp(1.0, -k);
      return ok(jfloat(exact_text(d), d), dec);
    }
    case 13: {  // the double just below v + 1 (many digits; int() gives v), for 0 <= v < 2**40
      if (v < 0 || v >= (1LL << 40)) return ok(jint(v), dec);
      const double d = std::nextafter(static_cast<double>(v + 1), 0.0);
      return ok(jfloat(exact_text(d), d), dec);
    }
    case 5: return ok(jfloat(dec + ".0", static_cast<double>(v)), dec);
    case 6: return ok(jfloat(dec + ".75", static_cast<double>(v) + (v < 0 ? -0.75 : 0.75)), dec);  // truncation
    case 7: return ok(jstr(dec), dec);
    case 8: {  // whitespace Python's str.strip() removes: ASCII, NBSP, ideographic space, U+2028
      static constexpr const char* kWs[] = {" ", "\t", "\n", "\xc2\xa0", "\xe3\x80\x80", "\xe2\x80\xa8", "\x0b"};
      const char* after = kWs[src.below(7)];  // read before `before`: the decoding pinned inputs use
      const char* before = kWs[src.below(7)];
      return ok(jstr(before + dec + after), dec);
    }
    case 9: return ok(jstr((v >= 0 ? "+" : "") + dec), dec);
    case 10: {  // single underscores between digits
      if (dec.size() >= 2 && dec[0] != '-') return ok(jstr(dec.substr(0, 1) + "_" + dec.substr(1)), dec);
      return ok(jstr(v >= 0 ? "0" + dec : dec), dec);  // leading zeros are fine for int(str)
    }
    default: {
      static constexpr char32_t kZeros[] = {0x0660, 0x0966, 0xFF10};
      return ok(jstr(unicode_digits(v, kZeros[src.below(3)])), dec);
    }
  }
}

IntField small_int_field(ChoiceSource& src) {
  switch (src.below(12)) {
    case 9: {  // the double just below 4: int() is 3
      const double d = std::nextafter(4.0, 0.0);
      return ok(jfloat(exact_text(d), d), "3");
    }
    case 10: return ok(jfloat("-0.0", -0.0), "0");
    case 11: return ok(jfloat("0.0", 0.0), "0");
    case 0: return ok(jbool(true), "1");
    case 1: return ok(jbool(false), "0");
    case 2: return ok(jfloat("3.99", 3.99), "3");
    case 3: return ok(jfloat("-0.5", -0.5), "0");
    case 4: return ok(jint("-1000000000000000000000"), "-1000000000000000000000");
    case 5: return ok(jfloat("-1e1", -10.0), "-10");
    default: {
      const long long v = static_cast<long long>(src.below(8)) - 4;  // -4..3
      return int_field(v, src);
    }
  }
}

IntField huge_int_field(ChoiceSource& src) {
  static constexpr const char* kHuge[] = {"18446744073709551616", "100000000000000000000000000000",
                                          "340282366920938463463374607431768211457"};
  const std::string d = kHuge[src.below(3)];
  if (src.flip()) return ok(jstr(d), d);
  return ok(jint(d), d);
}

IntField bad_int_field(ErrorKind kind, ChoiceSource& src) {
  switch (kind) {
    case ErrorKind::PyIntFloatNan: return err(jfloat("NaN", std::numeric_limits<double>::quiet_NaN()), kind, "");
    case ErrorKind::PyIntFloatInfinity: {
      static constexpr const char* kInf[] = {"Infinity", "-Infinity", "1e400", "-2e308"};
      const std::string t = kInf[src.below(4)];
      return err(jfloat(t, t[0] == '-' ? -HUGE_VAL : HUGE_VAL), kind, "");
    }
    case ErrorKind::PyIntInvalidLiteral: {
      static constexpr const char* kBad[] = {"16.0", "abc", "", " ", "1__6", "_16", "16_", "0x10", "1 6",
                                             "\xc2\xb2" /*superscript two*/, "1e2", "16\x01", "\xe2\x85\xa0" /*roman numeral one*/,
                                             "--4", "4'", "\"16\"", "\\16"};
      const std::string s = kBad[src.below(std::size(kBad))];
      return err(jstr(s), kind, oracle_py::repr_str(s));
    }
    case ErrorKind::PyIntBadType:
      switch (src.below(4)) {
        case 0: return err(jnull(), kind, "'NoneType'");
        case 1: return err(jarr({}), kind, "'list'");
        case 2: return err(jarr({jint(16)}), kind, "'list'");
        default: return err(jobj({{"v", jint(16)}}), kind, "'dict'");
      }
    case ErrorKind::PyIntMaxStrDigits: {
      const std::size_t n = kMaxIntDigits + 1 + (src.flip() ? 0 : src.below(40));  // often just past the limit
      return err(jstr(std::string(n, '7')), kind, std::to_string(n));
    }
    default: return err(jnull(), ErrorKind::PyIntBadType, "'NoneType'");
  }
}

std::optional<IntField> with_digit_tail(const std::string& digits, ChoiceSource& src) {
  using namespace std::string_view_literals;
  struct Tail {
    std::string_view text;
    DigitTail kind;
  };
  static constexpr Tail kTails[] = {
      {"x"sv, DigitTail::ByVersion},
      {" x"sv, DigitTail::ByVersion},
      {"."sv, DigitTail::ByVersion},
      {"+"sv, DigitTail::ByVersion},
      {"e5"sv, DigitTail::ByVersion},
      {"\xc3\xa9"sv, DigitTail::ByVersion},  // U+00E9
      {"x_"sv, DigitTail::ByVersion},
      {" "sv, DigitTail::LimitFirst},
      {"\xe3\x80\x80"sv, DigitTail::LimitFirst},  // U+3000, which str.strip() removes
      {"\0x"sv, DigitTail::LimitFirst},
      {"\0\xc3\xa9"sv, DigitTail::LimitFirst},
      {"_"sv, DigitTail::InvalidFirst},
      {"_x"sv, DigitTail::InvalidFirst},
  };
  const std::uint64_t k = src.below(std::size(kTails) + 1);
  if (k == 0) return std::nullopt;
  const Tail& tail = kTails[k - 1];
  const std::string lead = src.below(4) == 3 ? " \t" : "";
  IntOutcome o{false, {}, ErrorKind::PyIntMaxStrDigits, std::to_string(digits.size()), tail.kind};
  o.text = lead + digits + std::string(tail.text);
  JsonDoc d = jstr(o.text);
  return IntField{std::move(d), std::move(o)};
}

}  // namespace w4a8::gen

namespace w4a8::gen {
namespace {

// Code points strings are made of: ASCII that JSON escapes or not, DEL, C1, non-ASCII of each plane
// (noncharacters and private use included) and surrogates (written lone; see any_text).
constexpr char32_t kAlphabet[] = {'a', 'Z', '0', ' ', '"', '\\', '/', '\b', '\f', '\n', '\r', '\t', 0x01, 0x1F, 0x7F,
                                  0x80, 0x85, 0xA0, 0xE9, 0x378, 0x5C42, 0x2028, 0xFEFF, 0xFFFE, 0xFFFF, 0xE000,
                                  0x10000, 0x1F600, 0x1D400, 0x10FFFF, 0xD800, 0xDBFF, 0xDC00, 0xDFFF};

// Floats with their canonical text (Python's repr): the extremes, negative zero, inexact decimals.
struct NamedFloat {
  const char* text;
  double value;
};
constexpr NamedFloat kFloats[] = {{"0.0", 0.0},
                                  {"-0.0", -0.0},
                                  {"0.1", 0.1},
                                  {"1.5", 1.5},
                                  {"-2.5", -2.5},
                                  {"1e-07", 1e-07},
                                  {"5e-324", 5e-324},
                                  {"2.2250738585072014e-308", 2.2250738585072014e-308},
                                  {"1.7976931348623157e+308", 1.7976931348623157e+308},
                                  {"1e+16", 1e+16},
                                  {"9007199254740992.0", 9007199254740992.0},
                                  {"0.3333333333333333", 0.3333333333333333},
                                  {"1e+23", 1e+23},
                                  {"123456.789", 123456.789},
                                  {"Infinity", HUGE_VAL},
                                  {"-Infinity", -HUGE_VAL}};

// Ints: small, around 2**53 and 2**64, and long ones up to exactly the digit limit.
JsonDoc any_int(ChoiceSource& src) {
  static constexpr const char* kInts[] = {"0", "-1", "7", "9007199254740993", "-9223372036854775809", "18446744073709551616",
                                          "100000000000000000000000000000000000001"};
  if (src.below(4) != 3) return jint(kInts[src.below(std::size(kInts))]);
  const std::size_t n = kMaxIntDigits - src.below(3);  // 4298..4300 digits: accepted
  std::string d(n, '0');
  d[0] = static_cast<char>('1' + src.below(9));
  d.back() = static_cast<char>('0' + src.below(10));
  return jint(src.flip() ? "-" + d : d);
}

}  // namespace

std::string any_text(ChoiceSource& src, std::size_t max_len) {
  std::string out;
  bool after_high = false;  // a lone high surrogate was just written
  for (std::uint64_t i = 0, n = src.below(max_len + 1); i < n; ++i) {
    char32_t cp = kAlphabet[src.below(std::size(kAlphabet))];
    if (after_high && cp >= 0xDC00 && cp <= 0xDFFF) cp = 'x';  // json.loads would join the two escapes
    after_high = cp >= 0xD800 && cp <= 0xDBFF;
    json::append_wtf8(out, cp);
  }
  return out;
}

JsonDoc any_value(ChoiceSource& src, int depth) {
  switch (src.below(depth > 0 ? 10 : 7)) {
    case 0: return jnull();
    case 1: return jbool(src.flip());
    case 2: case 3: return any_int(src);
    case 4: case 5: {
      const NamedFloat& f = kFloats[src.below(std::size(kFloats))];
      return jfloat(f.text, f.value);
    }
    case 6: return jstr(any_text(src, 6));
    case 7: {  // NaN only inside a list (top-level NaN makes equal duplicates conflict)
      std::vector<JsonDoc> items;
      for (std::uint64_t i = 0, n = src.below(4); i < n; ++i) items.push_back(any_value(src, depth - 1));
      if (src.chance(1, 4)) items.push_back(jfloat("NaN", std::numeric_limits<double>::quiet_NaN()));
      return jarr(std::move(items));
    }
    default: {
      std::vector<std::pair<std::string, JsonDoc>> ms;
      for (std::uint64_t i = 0, n = src.below(4); i < n; ++i) {
        JsonDoc value = any_value(src, depth - 1);  // before the key: one choice a statement
        ms.emplace_back(any_text(src, 3), std::move(value));
      }
      return jobj(std::move(ms));
    }
  }
}

void extra_fields(std::vector<std::pair<std::string, JsonDoc>>& f, ChoiceSource& src) {
  static constexpr const char* kKeys[] = {"comment", "calib", "quant_version", "\xc3\xa9t\xc3\xa9", "a\"b\\c", "tab\there", "",
                                          "k/ey", "\x7f", "\xf0\x9f\x98\x80", "\xed\xa0\x80lone"};
  const bool many = src.chance(1, 8);  // past 16 members: json.loads' indexed duplicate-key path
  const std::uint64_t n = many ? 14 + src.below(8) : 1 + src.below(3);
  for (std::uint64_t i = 0; i < n; ++i) {
    std::string key = many ? "k" + std::to_string(i) : kKeys[src.below(std::size(kKeys))];
    if (std::any_of(f.begin(), f.end(), [&](const auto& m) { return bytes_equal(m.first, key); })) continue;
    f.emplace_back(std::move(key), any_value(src, 2));
  }
}

}  // namespace w4a8::gen
