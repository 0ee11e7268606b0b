#include "gen/json_spell.hpp"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <vector>

#include "core/hex.hpp"
#include "json/wtf8.hpp"

namespace w4a8::gen {
namespace {

// ---- exact decimal expansion: a big integer in base 1e9, least significant limb first ----------
using Big = std::vector<std::uint32_t>;
constexpr std::uint32_t kBase = 1'000'000'000;

void mul_small(Big& n, std::uint32_t k) {
  std::uint64_t carry = 0;
  for (auto& limb : n) {
    const std::uint64_t v = std::uint64_t{limb} * k + carry;
    limb = static_cast<std::uint32_t>(v % kBase);
    carry = v / kBase;
  }
  while (carry) {
    n.push_back(static_cast<std::uint32_t>(carry % kBase));
    carry /= kBase;
  }
}

// n *= base**count, in steps that keep limb * step below 2**64.
void mul_pow(Big& n, std::uint32_t base, int count, std::uint32_t step, int step_count) {
  for (; count >= step_count; count -= step_count) mul_small(n, step);
  std::uint32_t rest = 1;
  for (; count > 0; --count) rest *= base;
  if (rest > 1) mul_small(n, rest);
}

std::string big_text(const Big& n) {
  std::string out = std::to_string(n.back());
  char buf[16];
  for (std::size_t i = n.size() - 1; i-- > 0;) {
    std::snprintf(buf, sizeof buf, "%09u", n[i]);
    out += buf;
  }
  return out;
}

// ---- spelling ------------------------------------------------------------------------------------

std::string exponent_text(long long x, ChoiceSource& src) {
  std::string out(1, src.flip() ? 'E' : 'e');
  if (x < 0) out += '-';
  else if (src.below(3) == 1) out += '+';
  const std::string digits = std::to_string(x < 0 ? -x : x);
  std::size_t width = digits.size();
  switch (src.below(4)) {
    case 1: width = std::max<std::size_t>(width, 4); break;  // "e+0001": the 4-digit form
    case 2: width = std::max<std::size_t>(width, 5); break;
    case 3: width += 1; break;
    default: break;
  }
  out.append(width - digits.size(), '0');
  return out + digits;
}

// Zero (sign kept): "0.0"-like forms, or a literal far below half the smallest subnormal.
std::string spell_zero(bool negative, ChoiceSource& src) {
  std::string out = negative ? "-" : "";
  switch (src.below(5)) {
    case 0: return out + "0.0";
    case 1: return out + "0." + std::string(1 + src.below(4), '0');
    case 2: {  // one choice a statement (a call's argument order is unspecified)
      const std::string exp = exponent_text(static_cast<long long>(src.below(30)) - 15, src);
      return out + "0" + (src.flip() ? ".0" : "") + exp;
    }
    default: {
      // d * 10**-x with d <= 9 and x >= 400 is < 1e-399, far below 2**-1075 (~2.5e-324): rounds to 0.
      out += static_cast<char>('1' + src.below(9));
      if (src.flip()) out += "." + std::to_string(src.below(1000));
      return out + exponent_text(-(400 + static_cast<long long>(src.below(9600))), src);
    }
  }
}

std::string spell_infinity(bool negative, ChoiceSource& src) {
  std::string out = negative ? "-" : "";
  if (src.below(3) == 0) return out + "Infinity";
  // d * 10**x with 1 <= d and x >= 309 is >= 1e309, past DBL_MAX + ulp/2 (~1.7977e308): rounds to inf.
  out += static_cast<char>('1' + src.below(9));
  if (src.flip()) out += "." + std::to_string(src.below(1000));
  return out + exponent_text(309 + static_cast<long long>(src.below(700)), src);
}

class Speller {
 public:
  explicit Speller(ChoiceSource& src) : src_(src) {}

  std::string document(const json::Value& v) {
    ws(false);
    value(v);
    ws(false);
    return std::move(out_);
  }

  void value(const json::Value& v) {
    switch (v.kind) {
      case json::Kind::Null: out_ += "null"; return;
      case json::Kind::Bool: out_ += v.boolean ? "true" : "false"; return;
      case json::Kind::Int: out_ += v.text == "0" && src_.below(8) == 7 ? "-0" : v.text; return;
      case json::Kind::Float: out_ += spell_float(v.number, src_); return;
      case json::Kind::String: out_ += spell_string(v.text, src_); return;
      case json::Kind::Array:
        out_ += '[';
        for (std::size_t i = 0; i < v.items.size(); ++i) {
          if (i) { ws(false); out_ += ','; }
          ws(i > 0);
          value(v.items[i]);
        }
        ws(false);
        out_ += ']';
        return;
      case json::Kind::Object:
        object(
            v.members.size(), [&](std::size_t i) -> const std::string& { return v.members[i].first; },
            [&](std::size_t i) { value(v.members[i].second); }, true);
        return;
    }
  }

 private:
  // Whitespace JSON allows between tokens; choice 0: the canonical ", " / ": " layout.
  void ws(bool canonical_space) {
    static constexpr const char* kWs[] = {"", " ", "\n", "\t", "\r\n", "\n  ", " \r\t\n "};
    const std::uint64_t c = src_.below(12);
    if (c == 0 || c >= std::size(kWs)) {
      if (canonical_space) out_ += ' ';
      return;
    }
    out_ += kWs[c];
  }

  // A scalar that is not the member's value (the real one comes later, so json.loads drops this).
  json::Value decoy() {
    switch (src_.below(6)) {
      case 0: return json::Value::null();
      case 1: return json::Value::from_bool(true);
      case 2: return json::Value::from_int(0);
      case 3: return json::Value::from_string("");
      case 4: return json::Value::from_float(-1.5);
      default: return json::Value::from_string("decoy");
    }
  }

 public:
  // An object of n members: key(i) its key, value(i) writes its value. A member may first appear
  // with a decoy value, its real one following at once or (defer) after later members.
  template <class Key, class Val>
  void object(std::size_t n, Key key, Val val, bool defer) {
    out_ += '{';
    struct Deferred {
      std::size_t member, after;  // emit member right after entry `after`
    };
    std::vector<Deferred> deferred;
    auto emit = [&](std::size_t i, bool first, bool as_decoy) {
      if (!first) { ws(false); out_ += ','; }
      ws(!first);
      out_ += spell_string(key(i), src_);
      ws(false);
      out_ += ':';
      ws(true);
      if (as_decoy) value(decoy());
      else val(i);
    };
    for (std::size_t i = 0; i < n; ++i) {
      if (src_.below(8) == 7) {
        emit(i, i == 0, true);
        deferred.push_back({i, defer ? i + src_.below(n - i) : i});
      } else {
        emit(i, i == 0, false);
      }
      for (const Deferred& d : deferred)
        if (d.after == i) emit(d.member, false, false);
    }
    ws(false);
    out_ += '}';
  }

  void raw(std::string_view text) { out_ += text; }
  std::string take() { return std::move(out_); }
  void space() { ws(false); }

 private:
  ChoiceSource& src_;
  std::string out_;
};

// Decodes one code point of WTF-8 (generated text: well-formed); advances i.
char32_t next_cp(std::string_view s, std::size_t& i) {
  const auto c = static_cast<unsigned char>(s[i]);
  const int len = c < 0x80 ? 1 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4;
  char32_t cp = len == 1 ? c : len == 2 ? (c & 0x1F) : len == 3 ? (c & 0x0F) : (c & 0x07);
  for (int k = 1; k < len && i + k < s.size(); ++k) cp = (cp << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3F);
  i += len;
  return cp;
}

void put_u_escape(std::string& out, char32_t u, std::uint64_t hex_case) {
  out += "\\u";
  for (int shift = 12, k = 0; shift >= 0; shift -= 4, ++k) {
    const bool upper = hex_case == 1 || (hex_case == 2 && k % 2);
    const char d = hex::digit(static_cast<std::uint32_t>(u >> shift));
    out += upper && d >= 'a' ? static_cast<char>(d - 'a' + 'A') : d;
  }
}

}  // namespace

ExactDecimal exact_decimal(double d) {
  ExactDecimal r;
  r.negative = std::signbit(d);
  d = std::fabs(d);
  if (d == 0) {
    r.digits = "0";
    return r;
  }
  int e = 0;
  const double f = std::frexp(d, &e);  // d = f * 2**e, 0.5 <= f < 1, at most 53 significant bits
  auto m = static_cast<std::uint64_t>(std::ldexp(f, 53));
  e -= 53;
  while (m % 2 == 0) { m /= 2; ++e; }
  Big n;
  for (std::uint64_t x = m; x; x /= kBase) n.push_back(static_cast<std::uint32_t>(x % kBase));
  if (e > 0) {
    mul_pow(n, 2, e, std::uint32_t{1} << 29, 29);
  } else {  // m * 2**e = m * 5**-e * 10**e
    mul_pow(n, 5, -e, 1'220'703'125u /* 5**13 */, 13);
    r.exp10 = e;
  }
  r.digits = big_text(n);
  const std::size_t zeros = r.digits.size() - 1 - r.digits.find_last_not_of('0');
  r.digits.resize(r.digits.size() - zeros);
  r.exp10 += static_cast<int>(zeros);
  return r;
}

std::string spell_float(double d, ChoiceSource& src) {
  if (std::isnan(d)) return "NaN";
  if (std::isinf(d)) return spell_infinity(d < 0, src);
  const ExactDecimal x = exact_decimal(d);
  if (x.digits == "0") return spell_zero(x.negative, src);
  // |d| = S * 10**q, S without leading zeros.
  std::string S = x.digits;
  long long q = x.exp10;
  if (src.below(4) == 3) {  // trailing zeros
    const std::size_t t = 1 + src.below(3);
    S.append(t, '0');
    q -= static_cast<long long>(t);
  }
  if (src.below(6) == 5) {  // a final 1 at least 20 digits below the leading one: < ulp/2, rounds back to d
    const long long lead = x.exp10 + static_cast<long long>(x.digits.size()) - 1;
    const long long m = std::max(0LL, q - lead + 19) + static_cast<long long>(src.below(3));
    S.append(static_cast<std::size_t>(m), '0');
    S += '1';
    q -= m + 1;
  }
  const long long len = static_cast<long long>(S.size());
  std::string I, F;
  long long ex = 0;  // |d| = I.F * 10**ex
  bool need_exp = false;
  switch (src.below(4)) {
    case 0: {  // plain: no exponent
      const long long k = len + q;  // digits before the point
      if (k <= 0) { I = "0"; F = std::string(static_cast<std::size_t>(-k), '0') + S; }
      else if (k >= len) { I = S + std::string(static_cast<std::size_t>(k - len), '0'); F = "0"; }
      else { I = S.substr(0, static_cast<std::size_t>(k)); F = S.substr(static_cast<std::size_t>(k)); }
      return (x.negative ? "-" : "") + I + "." + F;
    }
    case 1:  // scientific
      I = S.substr(0, 1);
      F = S.substr(1);
      ex = q + len - 1;
      break;
    case 2: {  // point anywhere inside S
      const long long k = 1 + static_cast<long long>(src.below(S.size()));
      I = S.substr(0, static_cast<std::size_t>(k));
      F = S.substr(static_cast<std::size_t>(k));
      ex = q + len - k;
      break;
    }
    default: {  // "0.000S"
      const std::size_t z = src.below(4);
      I = "0";
      F = std::string(z, '0') + S;
      ex = q + len + static_cast<long long>(z);
      break;
    }
  }
  if (F.empty()) {
    if (src.flip()) F = "0";
    else need_exp = true;  // "16e0": an exponent alone makes a float
  }
  std::string out = (x.negative ? "-" : "") + I + (F.empty() ? "" : "." + F);
  if (ex != 0 || need_exp || src.flip()) out += exponent_text(ex, src);
  return out;
}

std::string spell_string(std::string_view s, ChoiceSource& src) {
  std::string out = "\"";
  out.reserve(s.size() + 2);
  for (std::size_t i = 0; i < s.size();) {
    const char32_t cp = next_cp(s, i);
    const std::uint64_t c = src.below(4);  // 0 and 2..3: the plain form; 1: \u escape
    const std::uint64_t hex_case = c == 1 ? src.below(3) : 0;
    switch (cp) {
      case '"': out += c == 1 ? "\\u0022" : "\\\""; continue;
      case '\\': out += c == 1 ? "\\u005c" : "\\\\"; continue;
      case '/': out += c == 1 ? "\\u002f" : c == 2 ? "\\/" : "/"; continue;
      case '\b': out += c == 1 ? "\\u0008" : "\\b"; continue;
      case '\f': out += c == 1 ? "\\u000C" : "\\f"; continue;
      case '\n': out += c == 1 ? "\\u000a" : "\\n"; continue;
      case '\r': out += c == 1 ? "\\u000D" : "\\r"; continue;
      case '\t': out += c == 1 ? "\\u0009" : "\\t"; continue;
      default: break;
    }
    if (cp < 0x20 || (cp >= 0xD800 && cp <= 0xDFFF)) {  // must be escaped (strict mode; not UTF-8)
      put_u_escape(out, cp, hex_case);
    } else if (cp >= 0x10000) {
      if (c != 1) { json::append_wtf8(out, cp); continue; }
      const char32_t v = cp - 0x10000;
      put_u_escape(out, 0xD800 + (v >> 10), hex_case);
      put_u_escape(out, 0xDC00 + (v & 0x3FF), hex_case);
    } else if (c == 1) {
      put_u_escape(out, cp, hex_case);
    } else {
      json::append_wtf8(out, cp);
    }
  }
  return out + "\"";
}

std::string spell(const json::Value& v, ChoiceSource& src) { return Speller(src).document(v); }

std::string spell_tape(const json::Value& v, std::span<const std::uint8_t> tape) {
  ByteChoiceSource src(tape);
  return spell(v, src);
}

std::string spell_object(std::span<const std::pair<std::string, std::string>> members, ChoiceSource& src, bool defer) {
  Speller sp(src);
  sp.space();
  sp.object(
      members.size(), [&](std::size_t i) -> const std::string& { return members[i].first; },
      [&](std::size_t i) { sp.raw(members[i].second); }, defer);
  sp.space();
  return sp.take();
}

bool has_split_surrogates(std::string_view s) {
  for (std::size_t i = 0; i + 5 < s.size(); ++i)
    if (static_cast<unsigned char>(s[i]) == 0xED && (static_cast<unsigned char>(s[i + 1]) & 0xF0) == 0xA0 &&
        static_cast<unsigned char>(s[i + 3]) == 0xED && (static_cast<unsigned char>(s[i + 4]) & 0xF0) == 0xB0)
      return true;
  return false;
}

}  // namespace w4a8::gen
