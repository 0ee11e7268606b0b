// Seeded generators of JSON-ish documents full of the edge cases that decide json.loads verdicts,
// and encoders that turn a document into the byte strings json.loads(bytes) sees.
#pragma once

#include <cstdint>
#include <cstdio>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "json/wtf8.hpp"

namespace w4a8::testing {

class DocGen {
 public:
  explicit DocGen(std::uint64_t seed) : rng_(seed) {}

  std::size_t below(std::size_t n) { return std::uniform_int_distribution<std::size_t>(0, n - 1)(rng_); }
  bool chance(int percent) { return below(100) < static_cast<std::size_t>(percent); }
  template <class T, std::size_t N>
  const T& pick(const T (&arr)[N]) { return arr[below(N)]; }

  // A document: mostly valid JSON, sometimes with one broken token.
  std::string document(int max_depth = 4) {
    std::string out = ws();
    value(out, max_depth);
    out += ws();
    if (chance(5)) out += pick(kTrailers);
    return out;
  }

  void value(std::string& out, int depth) {
    const std::size_t k = below(depth > 0 ? 10 : 6);
    switch (k) {
      case 0: out += pick(kLiterals); break;
      case 1: case 2: number(out); break;
      case 3: case 4: case 5: string(out); break;
      case 6: case 7: array(out, depth - 1); break;
      default: object(out, depth - 1); break;
    }
  }

  void number(std::string& out) {
    if (chance(30)) {
      out += pick(kNumbers);
      return;
    }
    if (chance(30)) out += '-';
    const std::size_t n = chance(1) ? 4290 + below(20) : 1 + below(chance(10) ? 40 : 6);
    out += static_cast<char>('1' + below(9));
    for (std::size_t i = 1; i < n; ++i) out += static_cast<char>('0' + below(10));
    if (chance(30)) {
      out += '.';
      for (std::size_t i = 0, m = 1 + below(20); i < m; ++i) out += static_cast<char>('0' + below(10));
    }
    if (chance(25)) {
      out += chance(50) ? 'e' : 'E';
      if (chance(60)) out += chance(50) ? '-' : '+';
      out += std::to_string(below(chance(10) ? 400 : 30));
    }
  }

  void string(std::string& out) {
    out += '"';
    for (std::size_t i = 0, n = below(8); i < n; ++i) {
      const std::size_t k = below(12);
      if (k < 4) {
        out += static_cast<char>('a' + below(26));
      } else if (k < 7) {
        out += pick(kEscapes);
      } else if (k < 8) {
        out += pick(kRawChars);
      } else if (k < 9) {
        char buf[8];
        std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(below(0x10000)));
        out += buf;
      } else {
        json::append_wtf8(out, random_code_point());
      }
    }
    out += '"';
  }

  char32_t random_code_point() {
    switch (below(5)) {
      case 0: return static_cast<char32_t>(below(0x80));
      case 1: return static_cast<char32_t>(0x80 + below(0x780));
      case 2: return static_cast<char32_t>(0xD800 + below(0x800));  // surrogates
      case 3: return static_cast<char32_t>(0x800 + below(0xF800));
      default: return static_cast<char32_t>(0x10000 + below(0x100000));
    }
  }

  void array(std::string& out, int depth) {
    out += '[';
    out += ws();
    const std::size_t n = below(5);
    for (std::size_t i = 0; i < n; ++i) {
      if (i > 0) out += separator(',');
      value(out, depth);
      out += ws();
    }
    if (n > 0 && chance(3)) out += ',';  // trailing comma
    out += ']';
  }

  void object(std::string& out, int depth) {
    out += '{';
    out += ws();
    const std::size_t n = below(5);
    for (std::size_t i = 0; i < n; ++i) {
      if (i > 0) out += separator(',');
      if (chance(3)) out += pick(kBadKeys);
      else if (chance(30)) out += pick(kDupKeys);
      else string(out);
      out += ws();
      out += separator(':');
      value(out, depth);
      out += ws();
    }
    if (n > 0 && chance(3)) out += ',';
    out += '}';
  }

  std::string ws() {
    if (!chance(30)) return "";
    std::string out;
    for (std::size_t i = 0, n = 1 + below(3); i < n; ++i) out += chance(97) ? pick(kWhitespace) : pick(kBadWhitespace);
    return out;
  }

  std::string separator(char c) {
    if (chance(2)) return std::string(pick(kBadSeparators));
    return ws() + c + ws();
  }

  // One random byte-level defect (delete, insert, replace, truncate, duplicate a span).
  std::string mutate(std::string s) {
    static const char kInteresting[] = {'\0', '"', '\\', '[', ']', '{', '}', ',', ':', '-', '.', 'e',
                                        '0', ' ', '\t', '\x1f', '\x7f', '\xed', '\xa0', '\xc0', '\xff'};
    const std::size_t pos = s.empty() ? 0 : below(s.size() + 1);
    switch (below(5)) {
      case 0: if (pos < s.size()) s.erase(pos, 1); break;
      case 1: s.insert(pos, 1, pick(kInteresting)); break;
      case 2: if (pos < s.size()) s[pos] = pick(kInteresting); break;
      case 3: s.resize(pos); break;
      default: if (pos < s.size()) s.insert(pos, s.substr(pos, 1 + below(4))); break;
    }
    return s;
  }

  // WTF-8 text -> the bytes of one of the encodings detect_encoding recognises (BOM or not), or
  // the text's own bytes. Non-WTF-8 text is returned unchanged.
  std::string encode(const std::string& text, std::size_t which) {
    std::vector<char32_t> cps;
    std::size_t pos = 0;
    char32_t cp = 0;
    while (pos < text.size()) {
      if (!json::decode_wtf8(text, pos, cp)) return text;
      cps.push_back(cp);
    }
    std::string out;
    auto put16 = [&](unsigned u, bool be) {
      out += static_cast<char>(be ? u >> 8 : u & 0xFF);
      out += static_cast<char>(be ? u & 0xFF : u >> 8);
    };
    auto put32 = [&](std::uint32_t u, bool be) {
      for (int i = 0; i < 4; ++i) out += static_cast<char>(u >> (be ? 24 - 8 * i : 8 * i));
    };
    switch (which % 9) {
      case 0: return text;
      case 1: return "\xEF\xBB\xBF" + text;
      case 2: case 3: case 4: case 5: {
        const bool be = which % 9 == 3 || which % 9 == 5;
        if (which % 9 >= 4) put16(0xFEFF, be);
        for (char32_t c : cps) {
          if (c >= 0x10000) {
            put16(0xD800 + ((c - 0x10000) >> 10), be);
            put16(0xDC00 + ((c - 0x10000) & 0x3FF), be);
          } else {
            put16(c, be);
          }
        }
        return out;
      }
      default: {
        const bool be = which % 9 == 7 || which % 9 == 8;
        if (which % 9 >= 7) put32(0xFEFF, be);
        for (char32_t c : cps) put32(c, be);
        return out;
      }
    }
  }

  std::mt19937_64& rng() { return rng_; }

 private:
  static constexpr std::string_view kLiterals[] = {"null", "true", "false", "NaN", "Infinity", "-Infinity",
                                              "-NaN", "nul", "True", "infinity", "nan", "+Infinity"};
  static constexpr std::string_view kNumbers[] = {
      "0", "-0", "-0.0", "0.0", "1e400", "-1e400", "1e-400", "2.5e-324", "5e-324", "1.7976931348623157e308",
      "1.7976931348623159e308", "9007199254740993", "9007199254740992.0", "18446744073709551616",
      "-9223372036854775809", "123456789012345678901234567890", "1E5", "1e+05", "1.0e-5", "0.1",
      "1e16", "1e15", "12345678901234567.0", "0.0001", "0.00001", "01", "00", "-01", "1.", ".5",
      "+1", "1e", "1e+", "1E-", "-", "1.e5", "0x10", "1_000", "١", "1.5e3000", "4.9e-324",
      "2.2250738585072011e-308", "0.30000000000000004", "100000000000000000000000.0"};
  static constexpr std::string_view kEscapes[] = {
      "\\\"", "\\\\", "\\/", "\\b", "\\f", "\\n", "\\r", "\\t", "\\u0000", "\\u001f", "\\u007f",
      "\\ud83d\\ude00", "\\uD83D\\uDE00", "\\ud800", "\\udc00", "\\udbff\\udfff", "\\ud800\\u0041",
      "\\ud800\\ud800", "\\udc00\\ud800", "\\ud800\\n", "\\ud800\\uzzzz", "\\x41", "\\a", "\\u12",
      "\\u12g4", "\\U0001F600", "\\'", "\\ ", "\\uFEFF", "\\u00e9", "\\u2028"};
  static constexpr std::string_view kRawChars[] = {"\t", "\n", "\x01", "\x1f", "\x7f", "'", "\xc3\xa9",
                                              "\xed\xa0\x80", "\xed\xb0\x80", "\xed\xa0\xbd\xed\xb8\x80",
                                              "\xf0\x9f\x98\x80", "\xef\xbb\xbf", "\xe2\x80\xa8", " "};
  static constexpr std::string_view kWhitespace[] = {" ", "\t", "\n", "\r", "  ", "\r\n"};
  static constexpr std::string_view kBadWhitespace[] = {"\f", "\v", "\xc2\xa0", "\xef\xbb\xbf", "\xe2\x80\x83", std::string_view("\0", 1)};
  static constexpr std::string_view kDupKeys[] = {"\"a\"", "\"a\"", "\"b\"", "\"\\u0061\"", "\"A\""};
  static constexpr std::string_view kBadKeys[] = {"a", "'a'", "1", "null", "\"a", "[]"};
  static constexpr std::string_view kBadSeparators[] = {";", "", ",,", "::", "=", ", ,"};
  static constexpr std::string_view kTrailers[] = {std::string_view("\0", 1), "x", " x", "]", "}", ",", "\"", "0", "\xef\xbb\xbf", std::string_view("\n\0", 2)};

  std::mt19937_64 rng_;
};

}  // namespace w4a8::testing
