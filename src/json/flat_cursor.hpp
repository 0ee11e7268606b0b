// Private to src/json: the one-pass scanner behind the fast paths (flat_object.hpp: a flat marker
// object, built; flat_layers.hpp: a whole _quantization_metadata text, checked by skip() as
// CPython's scanner reads it, only the layers' places kept). Both share its tokens and strings.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <string_view>

#include "core/hex.hpp"

#include "json/flat_object.hpp"
#include "json/parse.hpp"
#include "json/scan.hpp"
#include "json/value.hpp"
#include "json/wtf8.hpp"

namespace w4a8::json::flat {

inline constexpr std::size_t kMembers = kFlatMembers;
inline constexpr std::size_t kIntDigits = kFlatIntDigits;

// A scalar's kind and literal (a string's contents, an int's canonical text), not yet a Value: a
// declined input allocates nothing.
struct Scalar {
  Kind kind = Kind::Null;
  std::string_view lit;
  bool boolean = false;
};

struct Cursor {
  const char* p;
  const char* end;
  // Why skip(), number() or a string refused: Syntax, unless an int had too many digits or nesting
  // went too deep (json.loads' ValueError and RecursionError, with what their messages print), or a
  // string was not UTF-8 (Unicode).
  ParseFailure failure = ParseFailure::Syntax;
  std::size_t digits = 0;  // IntTooLong
  bool in_array = false;   // TooDeep
  bool calling = false;    // TooDeep at a NaN/Infinity token (ParseError::calling)
  // Nested containers json.loads accepts (LoadsOptions::max_depth, at most kMaxDepth); skip() fails
  // TooDeep past it.
  std::size_t max_depth = static_cast<std::size_t>(kPythonMaxDepth);

  // (Inlined: called between every two tokens; out of line it cost 5 % of the metadata read.)
  [[gnu::always_inline]] void ws() {
    while (p < end && (*p == ' ' || *p == '\n' || *p == '\t' || *p == '\r')) ++p;
  }
  [[gnu::always_inline]] bool take(char c) {
    if (p == end || *p != c) return false;
    ++p;
    return true;
  }
  // A string of printable ASCII other than '"' and '\\'; out views it.
  bool plain_string(std::string_view& out) {
    if (!take('"')) return false;
    const char* const b = p;
    p = scan::printable_stop<false>(p, end);  // stops at '"', '\\' or a byte outside printable ASCII
    if (p == end || *p != '"') return false;
    out = {b, static_cast<std::size_t>(p - b)};
    ++p;
    return true;
  }
  // A string with no escape; out views it: it is the string, so it can be a key.
  bool unescaped_string(std::string_view& out) {
    if (!take('"')) return false;
    const char* const b = p;
    p = scan::printable_stop<false>(p, end);  // (printable ASCII, the usual key, in one inlined pass)
    if (p == end || *p != '"') {
      if (!string_rest(false)) return false;
      --p;
    }
    out = {b, static_cast<std::size_t>(p - b)};
    ++p;
    return true;
  }
  // A string as json.loads reads it (strict): escapes \" \\ \/ \b \f \n \r \t and \uXXXX (any four hex
  // digits, a lone surrogate too), no control byte. Checked, not decoded.
  bool skip_string() { return take('"') && string_rest(true); }
  // After a string's opening quote: up to and past its closing one. An escape is refused unless
  // `escapes`; a byte of 0x80 or more must begin a UTF-8 sequence (strict: a surrogate's is refused),
  // else failure is Unicode (json.loads' input was not text: the general parser's to answer).
  bool string_rest(bool escapes) {
    while (true) {
      p = scan::printable_stop<false>(p, end);  // stops at '"', '\\', a control byte, 0x7F and up
      if (p == end) return false;
      const auto c = static_cast<unsigned char>(*p);
      if (c == '"') {
        ++p;
        return true;
      }
      if (c >= 0x7F) {
        std::size_t n = 0;
        char32_t cp = 0;
        if (c > 0x7F && !decode_wtf8({p, static_cast<std::size_t>(end - p)}, n, cp, false)) {
          failure = ParseFailure::Unicode;
          return false;
        }
        p += c > 0x7F ? n : 1;
        continue;
      }
      if (c < 0x20 || !escapes) return false;
      if (++p == end) return false;
      switch (*p++) {
        case '"': case '\\': case '/': case 'b': case 'f': case 'n': case 'r': case 't': break;
        case 'u': {
          char32_t unit = 0;  // (the general parser's reader of the four digits)
          if (!hex::read_u16({p, static_cast<std::size_t>(end - p)}, 0, unit)) return false;
          p += 4;
          break;
        }
        default: return false;
      }
    }
  }
  bool word(std::string_view w) {
    if (static_cast<std::size_t>(end - p) < w.size() || std::memcmp(p, w.data(), w.size()) != 0) return false;
    p += w.size();
    return true;
  }
  bool scalar(Scalar& v) {
    if (p == end) return false;
    switch (*p) {
      case '"': v.kind = Kind::String; return plain_string(v.lit);
      case 't': v = {Kind::Bool, {}, true}; return word("true");
      case 'f': v = {Kind::Bool, {}, false}; return word("false");
      case 'n': v = {Kind::Null, {}, false}; return word("null");
      default: break;
    }
    // An int: what follows must end it (a '.', 'e' or digit after it is left to the general parser).
    const char* const b = p;
    take('-');
    const char* const digits = p;
    if (p == end || *p < '0' || *p > '9') return false;
    if (*p++ != '0')
      while (p < end && *p >= '0' && *p <= '9') ++p;
    if (static_cast<std::size_t>(p - digits) > kIntDigits) return false;
    if (p < end && (*p == '.' || *p == 'e' || *p == 'E' || (*p >= '0' && *p <= '9'))) return false;
    const std::string_view lit(b, static_cast<std::size_t>(p - b));
    v = {Kind::Int, lit == "-0" ? std::string_view("0") : lit, false};  // Python's int text is canonical
    return true;
  }
  // A number as CPython's scanner reads one: -?(0|[1-9][0-9]*), then a fraction only when a digit
  // follows the '.', an exponent only when digits follow the 'e' (and its sign), else the number
  // ends before them and what is left is the caller's to refuse; or NaN, Infinity, -Infinity. An int
  // of more than kPythonMaxIntDigits digits is IntTooLong (a float may be of any length).
  bool number() {
    if (word("NaN") || word("Infinity") || word("-Infinity")) return true;
    take('-');
    const char* const int_part = p;
    const auto digit_at = [&](const char* q) { return q < end && *q >= '0' && *q <= '9'; };
    const auto digits_from = [&](const char* q) {
      while (digit_at(q)) ++q;
      return q;
    };
    if (!digit_at(p)) return false;
    p = *p == '0' ? p + 1 : digits_from(p);
    const auto int_digits = static_cast<std::size_t>(p - int_part);
    bool is_float = false;
    if (p < end && *p == '.' && digit_at(p + 1)) {
      p = digits_from(p + 1);
      is_float = true;
    }
    if (p < end && (*p == 'e' || *p == 'E')) {
      const char* q = p + 1;
      if (q < end && (*q == '+' || *q == '-')) ++q;
      if (digit_at(q)) {
        p = digits_from(q);
        is_float = true;
      }
    }
    if (!is_float && int_digits > kPythonMaxIntDigits) {
      failure = ParseFailure::IntTooLong;
      digits = int_digits;
      return false;
    }
    return true;
  }
  // Any value json.loads accepts, without keeping it, given `depth` containers open around it (they
  // count toward Python's nesting limit, max_depth: a container past it is TooDeep). Strings
  // and keys as skip_string(); a repeated key is fine (the general parser, given the text later,
  // merges it as Python does). Leading whitespace is the caller's. Iterative: the open containers'
  // kinds are bytes in a fixed array.
  bool skip(std::size_t depth) {
    // Of each container opened here: an object (else an array). A byte each, left uninitialized
    // (each is written when its container opens, before it is read): room for kMaxDepth costs nothing
    // to set up, and skip() runs once a layer.
    bool object[static_cast<std::size_t>(kMaxDepth) + 1];
    const std::size_t limit = std::min(max_depth, static_cast<std::size_t>(kMaxDepth));
    std::size_t open = 0;
    while (true) {  // at a value
      if (p == end) return false;
      if (*p == '{' || *p == '[') {
        const bool is_object = *p++ == '{';
        if (depth + open + 1 > limit) {
          failure = ParseFailure::TooDeep;
          in_array = !is_object;
          return false;
        }
        object[open++] = is_object;
        ws();
        if (!take(is_object ? '}' : ']')) {
          if (is_object && !member_key()) return false;
          continue;  // to its first value
        }
        --open;  // empty
      } else if (depth + open >= limit && depth + open > 0 && constant_here()) {
        failure = ParseFailure::TooDeep;  // (its parse_constant call is one level more)
        calling = true;
        return false;
      } else if (!(*p == '"' ? skip_string() : *p == 't' ? word("true") : *p == 'f' ? word("false")
                                             : *p == 'n' ? word("null") : number())) {
        return false;
      }
      // After a value: close what ends here, then on to the next value, or done.
      while (true) {
        if (open == 0) return true;
        ws();
        const bool in_object = object[open - 1];
        if (take(in_object ? '}' : ']')) {
          --open;
          continue;
        }
        if (!take(',')) return false;
        ws();
        if (in_object && !member_key()) return false;
        break;
      }
    }
  }
  // At NaN, Infinity or -Infinity (not consumed).
  bool constant_here() const {
    const std::string_view rest(p, static_cast<std::size_t>(end - p));
    return rest.starts_with("NaN") || rest.starts_with("Infinity") || rest.starts_with("-Infinity");
  }
  // `"key" :` and the whitespace after it, in a skipped object.
  bool member_key() {
    if (!skip_string()) return false;
    ws();
    if (!take(':')) return false;
    ws();
    return true;
  }
  // At '{': a flat object up to its '}' inclusive: at most kMembers members, plain keys, none
  // repeated, scalar values. keys/values receive them (n of each). Leading whitespace is the caller's.
  bool object(std::string_view (&keys)[kMembers], Scalar (&values)[kMembers], std::size_t& n) {
    n = 0;
    if (!take('{')) return false;
    ws();
    if (take('}')) return true;
    while (true) {
      if (n == kMembers || !plain_string(keys[n])) return false;
      for (std::size_t i = 0; i < n; ++i)
        if (keys[i] == keys[n]) return false;  // a repeated key: the general parser merges it
      ws();
      if (!take(':')) return false;
      ws();
      if (!scalar(values[n])) return false;
      ++n;
      ws();
      if (take('}')) return true;
      if (!take(',')) return false;
      ws();
    }
  }
};

}  // namespace w4a8::json::flat
