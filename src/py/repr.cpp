#include "py/repr.hpp"

#include <charconv>

#include "core/hex.hpp"
#include "json/scan.hpp"
#include "json/wtf8.hpp"

namespace w4a8::py {

using namespace std::string_view_literals;  // "..."sv: appended without strlen

namespace {

void append_hex(std::string& out, char32_t v, int digits) { hex::append(out, v, digits); }

}  // namespace

std::string repr_str(std::string_view s, Version v) {
  std::string out;
  out.reserve(s.size() + 2);
  append_repr_str(out, s, v);
  return out;
}

void append_repr_str(std::string& out, std::string_view s, Version v) {
  std::size_t pos = static_cast<std::size_t>(json::scan::repr_stop(s.data(), s.data() + s.size()) - s.data());
  if (pos == s.size()) {  // most names: nothing to escape, no quote inside
    out += '\'';
    out += s;
    out += '\'';
    return;
  }
  // Quote choice: '"' only when the text has a single quote and no double quote.
  const bool has_single = s.find('\'', pos) != std::string_view::npos;
  const bool has_double = s.find('"', pos) != std::string_view::npos;
  const char quote = has_single && !has_double ? '"' : '\'';
  out += quote;
  out.append(s.substr(0, pos));
  while (pos < s.size()) {
    // A run of printable ASCII other than the quote and '\\' is its own repr: copied whole (names
    // are mostly that; the text report prints one per layer).
    const std::size_t run = pos;
    while (pos < s.size() && s[pos] >= ' ' && s[pos] < 0x7F && s[pos] != quote && s[pos] != '\\') ++pos;
    if (pos != run) {
      out.append(s.substr(run, pos - run));
      continue;
    }
    const std::size_t start = pos;
    char32_t cp = 0;
    if (!json::decode_wtf8(s, pos, cp, /*allow_surrogates=*/true)) {
      cp = 0xFFFD;  // not WTF-8: no Python str has these bytes; show a replacement
      pos = start + 1;
    }
    if (cp == static_cast<char32_t>(quote) || cp == '\\') {
      out.push_back('\\');
      out.push_back(static_cast<char>(cp));
    } else if (cp == '\t') {
      out += "\\t";
    } else if (cp == '\n') {
      out += "\\n";
    } else if (cp == '\r') {
      out += "\\r";
    } else if (cp < ' ' || cp == 0x7F) {
      out += "\\x";
      append_hex(out, cp, 2);
    } else if (cp < 0x7F) {
      out.push_back(static_cast<char>(cp));
    } else if (is_printable(cp, v)) {
      out.append(s.substr(start, pos - start));
    } else if (cp <= 0xFF) {
      out += "\\x";
      append_hex(out, cp, 2);
    } else if (cp <= 0xFFFF) {
      out += "\\u";
      append_hex(out, cp, 4);
    } else {
      out += "\\U";
      append_hex(out, cp, 8);
    }
  }
  out.push_back(quote);
}

void append_repr_shape(std::string& out, std::span<const std::uint64_t> shape) {
  // Built in a local buffer and appended once (appending piece by piece was a call per piece, and
  // the report prints a shape per tensor).
  constexpr std::size_t kPiece = 2 + 20;  // ", " and UINT64_MAX's 20 digits
  char buf[256];
  std::size_t n = 0;
  buf[n++] = '(';
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (n + kPiece > sizeof buf) {
      out.append(buf, n);
      n = 0;
    }
    if (i > 0) {
      buf[n++] = ',';
      buf[n++] = ' ';
    }
    n = static_cast<std::size_t>(std::to_chars(buf + n, buf + sizeof buf, shape[i]).ptr - buf);  // fits: kPiece
  }
  if (n + 2 > sizeof buf) {
    out.append(buf, n);
    n = 0;
  }
  if (shape.size() == 1) buf[n++] = ',';
  buf[n++] = ')';
  out.append(buf, n);
}

std::string repr_shape(std::span<const std::uint64_t> shape) {
  std::string out;
  append_repr_shape(out, shape);
  return out;
}

std::string shown_name(std::string_view s, Version v) {
  std::string r = repr_str(s, v);
  // Only quoted: the bytes are the name itself, between two quote characters.
  if (r.size() == s.size() + 2 && std::string_view(r).substr(1, s.size()) == s) return std::string(s);
  return r;
}

std::string repr_str_list(std::span<const std::string> items, Version v) {
  std::string out = "[";
  for (std::size_t i = 0; i < items.size(); ++i) {
    if (i > 0) out += ", ";
    out += repr_str(items[i], v);
  }
  out += ']';
  return out;
}

}  // namespace w4a8::py
