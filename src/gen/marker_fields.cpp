#include "gen/marker_fields.hpp"

#include <cmath>
#include <limits>

#include "py/repr.hpp"

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

}  // namespace

IntField int_field(long long v, ChoiceSource& src) {
  const std::string dec = std::to_string(v);
  switch (src.below(12)) {
    case 0: case 1: case 2: case 3: case 4: return ok(jint(v), dec);
    case 5: return ok(jfloat(dec + ".0", static_cast<double>(v)), dec);
    case 6: return ok(jfloat(dec + ".75", static_cast<double>(v) + (v < 0 ? -0.75 : 0.75)), dec);  // truncation
    case 7: return ok(jstr(dec), dec);
    case 8: {  // whitespace Python's str.strip() removes: ASCII, NBSP, ideographic space, U+2028
      static constexpr const char* kWs[] = {" ", "\t", "\n", "\xc2\xa0", "\xe3\x80\x80", "\xe2\x80\xa8", "\x0b"};
      return ok(jstr(std::string(kWs[src.below(7)]) + dec + kWs[src.below(7)]), dec);
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
  switch (src.below(9)) {
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
      return err(jstr(s), kind, py::repr_str(s));
    }
    case ErrorKind::PyIntBadType:
      switch (src.below(4)) {
        case 0: return err(jnull(), kind, "'NoneType'");
        case 1: return err(jarr({}), kind, "'list'");
        case 2: return err(jarr({jint(16)}), kind, "'list'");
        default: return err(jobj({{"v", jint(16)}}), kind, "'dict'");
      }
    case ErrorKind::PyIntMaxStrDigits: {
      const std::size_t n = 4301 + src.below(40);
      return err(jstr(std::string(n, '7')), kind, std::to_string(n));
    }
    default: return err(jnull(), ErrorKind::PyIntBadType, "'NoneType'");
  }
}

}  // namespace w4a8::gen
