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
