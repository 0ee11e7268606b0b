#include "json/flat_object.hpp"

#include <cstring>

namespace w4a8::json {
namespace {

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
    for (; p < end && *p != '"'; ++p)
      if (static_cast<unsigned char>(*p) < 0x20 || static_cast<unsigned char>(*p) > 0x7E || *p == '\\') return false;
    if (p == end) return false;
    out = {b, static_cast<std::size_t>(p - b)};
    ++p;
    return true;
  }
  bool word(std::string_view w) {
    if (static_cast<std::size_t>(end - p) < w.size() || std::memcmp(p, w.data(), w.size()) != 0) return false;
    p += w.size();
    return true;
  }
  // A scalar's kind and literal (a string's contents, an int's canonical text); built into a Value
  // only once the whole object is known to be flat, so a declined input allocates nothing.
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
    if (static_cast<std::size_t>(p - digits) > kFlatIntDigits) return false;
    if (p < end && (*p == '.' || *p == 'e' || *p == 'E' || (*p >= '0' && *p <= '9'))) return false;
    const std::string_view lit(b, static_cast<std::size_t>(p - b));
    v = {Kind::Int, lit == "-0" ? std::string_view("0") : lit, false};  // Python's int text is canonical
    return true;
  }
};

Value to_value(const Scalar& s) {
  Value v;
  v.kind = s.kind;
  v.boolean = s.boolean;
  if (s.kind == Kind::String || s.kind == Kind::Int) v.text.assign(s.lit);
  return v;
}

}  // namespace

std::optional<Value> loads_flat_object(std::string_view text, std::size_t spare) {
  Cursor c{text.data(), text.data() + text.size()};
  c.ws();
  if (!c.take('{')) return std::nullopt;
  // Members wait here as views (no allocation) and are built into one vector at the end.
  std::string_view keys[kFlatMembers];
  Scalar values[kFlatMembers];
  std::size_t n = 0;
  c.ws();
  if (!c.take('}')) {
    while (true) {
      if (n == kFlatMembers || !c.plain_string(keys[n])) return std::nullopt;
      for (std::size_t i = 0; i < n; ++i)
        if (keys[i] == keys[n]) return std::nullopt;  // a repeated key: the general parser merges it
      c.ws();
      if (!c.take(':')) return std::nullopt;
      c.ws();
      if (!c.scalar(values[n])) return std::nullopt;
      ++n;
      c.ws();
      if (c.take('}')) break;
      if (!c.take(',')) return std::nullopt;
      c.ws();
    }
  }
  c.ws();
  if (c.p != c.end) return std::nullopt;
  Value out = Value::object();
  out.members.reserve(n + spare);
  for (std::size_t i = 0; i < n; ++i) out.members.emplace_back(std::string(keys[i]), to_value(values[i]));
  return out;
}

}  // namespace w4a8::json
