#include "json/dump.hpp"

#include <cmath>
#include <string_view>

#include "core/hex.hpp"
#include "json/scan.hpp"
#include "json/wtf8.hpp"

namespace w4a8::json {

using namespace std::string_view_literals;  // "..."sv: appended without strlen

namespace {

void append_u_escape(std::string& out, char32_t unit) { hex::append_u_escape(out, unit); }

void dump_string_to(std::string& out, std::string_view s);

// Appends to one buffer: linear in the output, one growth pattern for the whole document.
void dump_to(std::string& out, const Value& v, NonFinite nf) {
  switch (v.kind) {
    case Kind::Null: out += "null"sv; return;
    case Kind::Bool: out += v.boolean ? "true"sv : "false"sv; return;
    case Kind::Int: out += v.text; return;
    case Kind::Float:
      if (std::isfinite(v.number)) {
        out += py_float_repr(v.number);
      } else {
        const std::string_view token = std::isnan(v.number) ? "NaN"sv : v.number < 0 ? "-Infinity"sv : "Infinity"sv;
        if (nf == NonFinite::String) out.push_back('"');
        out += token;
        if (nf == NonFinite::String) out.push_back('"');
      }
      return;
    case Kind::String: dump_string_to(out, v.text); return;
    case Kind::Array: {
      out.push_back('[');
      for (std::size_t i = 0; i < v.items.size(); ++i) {
        if (i > 0) out += ", "sv;
        dump_to(out, v.items[i], nf);
      }
      out.push_back(']');
      return;
    }
    case Kind::Object: {
      out.push_back('{');
      for (std::size_t i = 0; i < v.members.size(); ++i) {
        if (i > 0) out += ", "sv;
        dump_string_to(out, v.members[i].first);
        out += ": "sv;
        dump_to(out, v.members[i].second, nf);
      }
      out.push_back('}');
      return;
    }
  }
}

void dump_string_to(std::string& out, std::string_view s) {
  out.push_back('"');
  std::size_t pos = 0;
  while (pos < s.size()) {
    // Printable ASCII other than '"' and '\\' is written as is: copy such runs whole (names and
    // marker strings are nearly all of it).
    const std::size_t run = static_cast<std::size_t>(scan::dump_stop(s.data() + pos, s.data() + s.size()) - s.data());
    if (run > pos) {
      out.append(s.data() + pos, run - pos);
      pos = run;
      continue;
    }
    char32_t cp = 0;
    if (!decode_wtf8(s, pos, cp, /*allow_surrogates=*/true)) {
      // A byte that starts no WTF-8 sequence (a file name that is not UTF-8): Python holds it as
      // the lone surrogate U+DC80..U+DCFF (os.fsdecode's surrogateescape), so json.dumps writes
      // that escape, and the bytes can be recovered from it (os.fsencode).
      cp = 0xDC00 + static_cast<unsigned char>(s[pos]);
      ++pos;
    }
    switch (cp) {
      case '"': out += "\\\""; continue;
      case '\\': out += "\\\\"; continue;
      case '\b': out += "\\b"; continue;
      case '\f': out += "\\f"; continue;
      case '\n': out += "\\n"; continue;
      case '\r': out += "\\r"; continue;
      case '\t': out += "\\t"; continue;
      default: break;
    }
    if (cp >= ' ' && cp <= '~') {
      out.push_back(static_cast<char>(cp));
    } else if (cp >= 0x10000) {
      const char32_t v = cp - 0x10000;
      append_u_escape(out, 0xD800 + (v >> 10));
      append_u_escape(out, 0xDC00 + (v & 0x3FF));
    } else {
      append_u_escape(out, cp);
    }
  }
  out.push_back('"');
}

}  // namespace

std::string dump_string(std::string_view s) {
  std::string out;
  dump_string_to(out, s);
  return out;
}

void dump_append(std::string& out, const Value& v, NonFinite nf) { dump_to(out, v, nf); }

void dump_string_append(std::string& out, std::string_view wtf8) { dump_string_to(out, wtf8); }

std::string dump(const Value& v, NonFinite nf) {
  std::string out;
  dump_to(out, v, nf);
  return out;
}

}  // namespace w4a8::json
