#include "json/dump.hpp"

#include <cmath>
#include <cstdlib>
#include <string_view>

#include "core/hex.hpp"
#include "json/scan.hpp"
#include "json/wtf8.hpp"

namespace w4a8::json {

using namespace std::string_view_literals;  // "..."sv: appended without strlen

namespace {

void dump_string_to(std::string& out, std::string_view s, bool surrogates);

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
    case Kind::String: dump_string_to(out, v.text, true); return;
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
        dump_string_to(out, v.members[i].first, true);
        out += ": "sv;
        dump_to(out, v.members[i].second, nf);
      }
      out.push_back('}');
      return;
    }
  }
}

// The code point at s[pos] as dump_string writes it (at most 12 bytes: a surrogate pair), at p;
// advances pos. A byte that starts no WTF-8 sequence (a file name that is not UTF-8): Python holds it
// as the lone surrogate U+DC80..U+DCFF (os.fsdecode's surrogateescape), so json.dumps writes that
// escape, and the bytes can be recovered from it (os.fsencode). surrogates: an encoded surrogate
// is one code point (WTF-8, a str from json.loads), else three such bytes (system text).
char* put_escaped(char* p, std::string_view s, std::size_t& pos, bool surrogates) {
  char32_t cp = 0;
  if (!decode_wtf8(s, pos, cp, surrogates)) cp = 0xDC00 + static_cast<unsigned char>(s[pos++]);
  const auto u_escape = [&p](char32_t unit) {
    *p++ = '\\', *p++ = 'u';
    for (int shift = 12; shift >= 0; shift -= 4) *p++ = hex::digit(static_cast<unsigned>(unit >> shift));
  };
  const auto two = [&p](char c) { *p++ = '\\', *p++ = c; };
  switch (cp) {
    case '"': two('"'); return p;
    case '\\': two('\\'); return p;
    case '\b': two('b'); return p;
    case '\f': two('f'); return p;
    case '\n': two('n'); return p;
    case '\r': two('r'); return p;
    case '\t': two('t'); return p;
    default: break;
  }
  if (cp >= ' ' && cp <= '~') {
    *p++ = static_cast<char>(cp);
  } else if (cp >= 0x10000) {
    const char32_t v = cp - 0x10000;
    u_escape(0xD800 + (v >> 10));
    u_escape(0xDC00 + (v & 0x3FF));
  } else {
    u_escape(cp);
  }
  return p;
}

void dump_string_to(std::string& out, std::string_view s, bool surrogates) {
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
    char piece[12];
    out.append(piece, static_cast<std::size_t>(put_escaped(piece, s, pos, surrogates) - piece));
  }
  out.push_back('"');
}

}  // namespace

std::string dump_string(std::string_view s) {
  std::string out;
  dump_string_to(out, s, true);
  return out;
}

std::string dump_os_string(std::string_view bytes) {
  std::string out;
  dump_string_to(out, bytes, false);
  return out;
}

void dump_os_string_append(std::string& out, std::string_view bytes) { dump_string_to(out, bytes, false); }

void dump_append(std::string& out, const Value& v, NonFinite nf) { dump_to(out, v, nf); }

void dump_string_append(std::string& out, std::string_view wtf8) { dump_string_to(out, wtf8, true); }

std::size_t dump_os_string_piece(std::string_view bytes, std::size_t& pos, char* buf, std::size_t cap) {
  if (cap < 12) std::abort();  // no progress possible: a caller's loop would never end
  char* p = buf;
  while (pos < bytes.size() && static_cast<std::size_t>(p - buf) + 12 <= cap) p = put_escaped(p, bytes, pos, false);
  return static_cast<std::size_t>(p - buf);
}

std::string dump(const Value& v, NonFinite nf) {
  std::string out;
  dump_to(out, v, nf);
  return out;
}

}  // namespace w4a8::json
