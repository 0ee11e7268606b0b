// WTF-8 (generalized UTF-8): UTF-8 that may also carry surrogate code points U+D800..DFFF as
// 3-byte sequences, one per code point, so any Python str maps 1:1 to bytes (a lone high surrogate
// followed by a lone low one stays two code points, as in Python). Byte order == code point order.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace w4a8::json {

inline constexpr char32_t kMaxCodePoint = 0x10FFFF;

constexpr bool is_surrogate(char32_t cp) { return cp >= 0xD800 && cp <= 0xDFFF; }
constexpr bool is_high_surrogate(char32_t cp) { return cp >= 0xD800 && cp <= 0xDBFF; }
constexpr bool is_low_surrogate(char32_t cp) { return cp >= 0xDC00 && cp <= 0xDFFF; }

// Writes cp (<= kMaxCodePoint, surrogates included) at p in its shortest encoding (1 to 4 bytes);
// returns the end. For decoders that size their output once instead of appending byte by byte.
inline char* put_wtf8(char* p, char32_t cp) {
  if (cp < 0x80) {
    *p++ = static_cast<char>(cp);
  } else if (cp < 0x800) {
    *p++ = static_cast<char>(0xC0 | (cp >> 6));
    *p++ = static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    *p++ = static_cast<char>(0xE0 | (cp >> 12));
    *p++ = static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    *p++ = static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    *p++ = static_cast<char>(0xF0 | (cp >> 18));
    *p++ = static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    *p++ = static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    *p++ = static_cast<char>(0x80 | (cp & 0x3F));
  }
  return p;
}

// Appends cp (as put_wtf8).
void append_wtf8(std::string& out, char32_t cp);

// Decodes the code point at s[pos] and advances pos. Rejects overlong forms, > U+10FFFF, truncated
// or stray bytes, and surrogates unless allow_surrogates. post: on false, pos is unchanged.
bool decode_wtf8(std::string_view s, std::size_t& pos, char32_t& cp, bool allow_surrogates = true);

// Offset of the first byte that does not start a valid sequence, or npos when s is valid.
std::size_t find_invalid_wtf8(std::string_view s, bool allow_surrogates);

// System text (a file name, a message naming one) as the str Python holds for it (os.fsdecode:
// strict UTF-8, each byte that does not decode a lone surrogate U+DC80..U+DCFF), in WTF-8. So a
// Value holding it dumps as json.dumps dumps that str (json::dump_os_string's text, in a document).
std::string wtf8_from_os(std::string_view bytes);

// The inverse, for a str from json.loads that is to be reported beside system text: \udc80..\udcff
// become the bytes they stand for (os.fsencode's surrogateescape), any other lone surrogate U+FFFD.
// wtf8_from_os(os_from_wtf8(s)) == s for every str without such other surrogates.
std::string os_from_wtf8(std::string_view wtf8);

}  // namespace w4a8::json
