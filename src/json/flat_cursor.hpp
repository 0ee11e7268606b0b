// Private to src/json: the one-pass scanner behind the flat fast paths (flat_object.hpp,
// flat_layers.hpp). Both accept the same shape of marker object, so they share this reader: what the
// layers reader lets through is, by construction, what loads_flat_object accepts.
#pragma once

#include <cstddef>
#include <cstring>
#include <string_view>

#include "json/flat_object.hpp"
#include "json/scan.hpp"
#include "json/value.hpp"
#include "json/wtf8.hpp"

namespace w4a8::json::flat {

inline constexpr std::size_t kMembers = kFlatMembers;
inline constexpr std::size_t kIntDigits = kFlatIntDigits;
// How deep skip() follows arrays and objects inside what it was given (Python's json nests about a
// thousand deep before its RecursionError: anything deeper here is the general parser's, which models it).
inline constexpr std::size_t kSkipDepth = 32;

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

  void ws() {
    while (p < end && (*p == ' ' || *p == '\n' || *p == '\t' || *p == '\r')) ++p;
  }
  bool take(char c) {
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
  // A string with no escape: printable ASCII, DEL, and strict UTF-8 (what a Python str holds; the
  // validator's text is a header's decoded string, which the container checked). out views it: it is
  // the string, so it can be a key. Used for the keys that are kept (layers) or compared ("layers").
  bool unescaped_string(std::string_view& out) {
    if (!take('"')) return false;
    const char* const b = p;
    p = scan::printable_stop<false>(p, end);  // (ASCII keys, the usual ones, in one pass)
    const bool ascii = p != end && *p == '"';
    if (!ascii) p = scan::string_stop(p, end);  // stops at '"', '\\' or a control byte
    if (p == end || *p != '"') return false;
    out = {b, static_cast<std::size_t>(p - b)};
    ++p;
    return ascii || utf8(out);
  }
  // A string as json.loads reads it (strict): escapes \" \\ \/ \b \f \n \r \t and \uXXXX (any four hex
  // digits, a lone surrogate too), no control byte, other bytes strict UTF-8. Checked, not decoded.
  bool skip_string() {
    if (!take('"')) return false;
    const char* const b = p;
    while (true) {
      p = scan::string_stop(p, end);
      if (p == end || static_cast<unsigned char>(*p) < 0x20) return false;
      if (*p++ == '"') break;
      if (p == end) return false;
      switch (*p++) {
        case '"': case '\\': case '/': case 'b': case 'f': case 'n': case 'r': case 't': break;
        case 'u':
          for (int i = 0; i < 4; ++i, ++p)
            if (p == end || !hex_digit(*p)) return false;
          break;
        default: return false;
      }
    }
    return utf8({b, static_cast<std::size_t>(p - 1 - b)});
  }
  static bool hex_digit(char c) {
    const auto l = static_cast<unsigned char>(c | 0x20);  // (locale-free)
    return (c >= '0' && c <= '9') || (l >= 'a' && l <= 'f');
  }
  static bool utf8(std::string_view s) {
    const auto* u = reinterpret_cast<const unsigned char*>(s.data());
    return scan::non_ascii(u, u + s.size()) == u + s.size() || find_invalid_wtf8(s, false) == std::string_view::npos;
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
  // A number in Python's grammar, -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][-+]?[0-9]+)?, of at most kIntDigits
  // characters (far below the 4300-digit limit on ints). What follows is the caller's to check: a
  // '.' without digits after it, or "01", is then not a ',' or a closing bracket, and declined there.
  bool number() {
    const char* const b = p;
    take('-');
    if (p == end || *p < '0' || *p > '9') return false;
    const auto digits = [&] {
      const char* const d = p;
      while (p < end && *p >= '0' && *p <= '9') ++p;
      return p != d;
    };
    if (*p == '0') ++p;
    else digits();
    if (p < end && *p == '.') {
      ++p;
      if (!digits()) return false;
    }
    if (p < end && (*p == 'e' || *p == 'E')) {
      ++p;
      if (p < end && (*p == '+' || *p == '-')) ++p;
      if (!digits()) return false;
    }
    return static_cast<std::size_t>(p - b) <= kIntDigits;
  }
  // Any value json.loads accepts, but for what is left to the general parser: NaN and Infinity, numbers
  // over kIntDigits characters, nesting over kSkipDepth. Strings and keys as skip_string(); a repeated
  // key is fine: nothing here is kept, and the general parser, given the text later, merges it as
  // Python does. Leading whitespace is the caller's. Recursion is bounded by kSkipDepth.
  bool skip(std::size_t depth = 0) {
    if (p == end) return false;
    switch (*p) {
      case '"': return skip_string();
      case 't': return word("true");
      case 'f': return word("false");
      case 'n': return word("null");
      case '[':
      case '{': {
        const bool object = *p++ == '{';
        const char close = object ? '}' : ']';
        if (depth == kSkipDepth) return false;
        ws();
        if (take(close)) return true;
        while (true) {
          if (object) {
            if (!skip_string()) return false;
            ws();
            if (!take(':')) return false;
            ws();
          }
          if (!skip(depth + 1)) return false;
          ws();
          if (take(close)) return true;
          if (!take(',')) return false;
          ws();
        }
      }
      default: return number();
    }
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
