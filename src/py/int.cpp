#include "py/int.hpp"

#include <charconv>
#include <cmath>
#include <string_view>

#include "json/number.hpp"
#include "json/wtf8.hpp"
#include "py/repr.hpp"
#include "py/unicode_tables.hpp"

namespace w4a8::py {

namespace {

inline constexpr std::size_t kMaxStrDigits = 4300;   // sys.get_int_max_str_digits() default
inline constexpr std::size_t kReprPrecision = 200;   // "%.200R" in int()'s error message

bool ascii_space(char c) { return c == ' ' || (c >= '\t' && c <= '\r'); }  // Py_ISSPACE

// First n code points of UTF-8 text (repr output is valid UTF-8).
std::string first_code_points(const std::string& s, std::size_t n) {
  std::size_t pos = 0;
  char32_t cp = 0;
  for (std::size_t i = 0; i < n && pos < s.size(); ++i)
    if (!json::decode_wtf8(s, pos, cp)) ++pos;
  return s.substr(0, pos);
}

Error invalid_literal(std::string_view original, Version pv) {
  const std::string r = first_code_points(repr_str(original, pv), kReprPrecision);
  return make_error(ErrorKind::PyIntInvalidLiteral, {r});
}

// "-000" -> "0", "+0012" -> "12", "-12" -> "-12" (digits are ASCII).
std::string canonical(bool negative, std::string_view digits) {
  const std::size_t nz = digits.find_first_not_of('0');
  if (nz == std::string_view::npos) return "0";
  return (negative ? "-" : "") + std::string(digits.substr(nz));
}

// int(str, 10) in CPython (Unicode data of pv): Unicode spaces -> ' ' and Unicode digits -> ASCII, stopping at
// the first other non-ASCII code point (it becomes '?'); then the ASCII parser: spaces, sign,
// digits with single inner underscores (a bad underscore fails before the digit limit is
// checked; trailing junk before or after it, by interpreter_facts), spaces, end.
Result<BigInt> int_from_str(std::string_view text, Version pv) {
  std::string ascii;
  ascii.reserve(text.size());
  std::size_t pos = 0;
  char32_t cp = 0;
  while (pos < text.size()) {
    if (!json::decode_wtf8(text, pos, cp, /*allow_surrogates=*/true)) {
      ascii.push_back('?');
      break;
    }
    if (cp < 0x7F) ascii.push_back(static_cast<char>(cp));
    else if (is_space(cp, pv)) ascii.push_back(' ');
    else if (const int d = decimal_value(cp, pv); d >= 0) ascii.push_back(static_cast<char>('0' + d));
    else {
      ascii.push_back('?');
      break;
    }
  }
  // The C parser reads a NUL-terminated buffer: an embedded NUL ends it (and then fails).
  const std::string_view s(ascii.c_str());
  std::size_t i = 0;
  while (i < s.size() && ascii_space(s[i])) ++i;
  bool negative = false;
  if (i < s.size() && (s[i] == '+' || s[i] == '-')) negative = s[i++] == '-';
  if (i < s.size() && s[i] == '_') return invalid_literal(text, pv);
  std::string digits;
  char prev = 0;
  for (; i < s.size() && ((s[i] >= '0' && s[i] <= '9') || s[i] == '_'); prev = s[i++]) {
    if (s[i] == '_') {
      if (prev == '_') return invalid_literal(text, pv);
    } else {
      digits.push_back(s[i]);
    }
  }
  if (prev == '_') return invalid_literal(text, pv);
  const bool limit_last = interpreter_facts(pv).int_limit_after_trailing;
  if (!limit_last && digits.size() > kMaxStrDigits) return max_str_digits_error(digits.size(), pv);
  if (digits.empty()) return invalid_literal(text, pv);
  while (i < s.size() && ascii_space(s[i])) ++i;
  if (limit_last && i != s.size()) return invalid_literal(text, pv);  // junk the C parser sees
  if (digits.size() > kMaxStrDigits) return max_str_digits_error(digits.size(), pv);
  if (i != ascii.size()) return invalid_literal(text, pv);  // an embedded NUL and what follows it
  return BigInt{canonical(negative, digits)};
}

}  // namespace

Error max_str_digits_error(std::size_t digits, Version pv) {
  return make_error(ErrorKind::PyIntMaxStrDigits,
                    {interpreter_facts(pv).int_max_str_digits_limit, std::to_string(digits)});
}

bool BigInt::to_i64(long long& out) const {
  const auto* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, out);
  return ec == std::errc() && ptr == end;
}

int BigInt::compare(long long v) const {
  long long mine = 0;
  if (to_i64(mine)) return mine < v ? -1 : (mine > v ? 1 : 0);
  return negative() ? -1 : 1;  // outside int64 on its side of zero
}

Result<BigInt> to_int(const json::Value& v, Version pv) {
  switch (v.kind) {
    case json::Kind::Bool: return BigInt{v.boolean ? "1" : "0"};
    case json::Kind::Int: return BigInt{v.text};
    case json::Kind::Float:
      if (std::isnan(v.number)) return make_error(ErrorKind::PyIntFloatNan);
      if (std::isinf(v.number)) return make_error(ErrorKind::PyIntFloatInfinity);
      return BigInt{json::exact_integer_text(std::trunc(v.number))};
    case json::Kind::String: return int_from_str(v.text, pv);
    case json::Kind::Null: return make_error(ErrorKind::PyIntBadType, {"'NoneType'"});
    case json::Kind::Array: return make_error(ErrorKind::PyIntBadType, {"'list'"});
    case json::Kind::Object: return make_error(ErrorKind::PyIntBadType, {"'dict'"});
  }
  return make_error(ErrorKind::PyIntBadType, {"'object'"});
}

Result<BigInt> to_int_or(const json::Value* v, long long absent, Version pv) {
  if (v != nullptr) return to_int(*v, pv);
  return BigInt{std::to_string(absent)};  // an int's own text is canonical
}

}  // namespace w4a8::py
