#include "json/wtf8.hpp"

#include <cstdint>
#include <cstring>

namespace w4a8::json {

void append_wtf8(std::string& out, char32_t cp) {
  char buf[4];
  out.append(buf, static_cast<std::size_t>(put_wtf8(buf, cp) - buf));
}

bool decode_wtf8(std::string_view s, std::size_t& pos, char32_t& cp, bool allow_surrogates) {
  if (pos >= s.size()) return false;
  const auto b0 = static_cast<unsigned char>(s[pos]);
  if (b0 < 0x80) {
    cp = b0;
    ++pos;
    return true;
  }
  std::size_t len = 0;
  char32_t min = 0;
  if (b0 >= 0xC2 && b0 <= 0xDF) len = 2, min = 0x80, cp = b0 & 0x1F;
  else if (b0 >= 0xE0 && b0 <= 0xEF) len = 3, min = 0x800, cp = b0 & 0x0F;
  else if (b0 >= 0xF0 && b0 <= 0xF4) len = 4, min = 0x10000, cp = b0 & 0x07;
  else return false;  // continuation byte, C0/C1, F5..FF
  if (s.size() - pos < len) return false;
  for (std::size_t i = 1; i < len; ++i) {
    const auto b = static_cast<unsigned char>(s[pos + i]);
    if ((b & 0xC0) != 0x80) return false;
    cp = (cp << 6) | (b & 0x3F);
  }
  if (cp < min || cp > kMaxCodePoint) return false;
  if (is_surrogate(cp) && !allow_surrogates) return false;
  pos += len;
  return true;
}

std::size_t find_invalid_wtf8(std::string_view s, bool allow_surrogates) {
  std::size_t pos = 0;
  char32_t cp = 0;
  while (pos < s.size()) {
    // ASCII eight bytes at a time (JSON text mostly is; a marker nested to the recursion limit is
    // thousands of brackets).
    for (std::uint64_t w = 0; pos + 8 <= s.size(); pos += 8) {
      std::memcpy(&w, s.data() + pos, 8);
      if ((w & 0x8080808080808080ULL) != 0) break;
    }
    if (pos == s.size()) break;
    if (static_cast<unsigned char>(s[pos]) < 0x80) {
      ++pos;
      continue;
    }
    if (!decode_wtf8(s, pos, cp, allow_surrogates)) return pos;
  }
  return std::string_view::npos;
}

std::string wtf8_from_os(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size());
  std::size_t pos = 0;
  char32_t cp = 0;
  while (pos < bytes.size()) {
    const std::size_t at = pos;
    if (decode_wtf8(bytes, pos, cp, false)) out.append(bytes.data() + at, pos - at);
    else append_wtf8(out, 0xDC00 + static_cast<unsigned char>(bytes[pos++]));
  }
  return out;
}

std::string os_from_wtf8(std::string_view wtf8) {
  std::string out;
  out.reserve(wtf8.size());
  std::size_t pos = 0;
  char32_t cp = 0;
  while (pos < wtf8.size()) {
    const std::size_t at = pos;
    if (!decode_wtf8(wtf8, pos, cp, true)) {
      out.push_back(wtf8[pos++]);  // (not WTF-8: kept as it is)
    } else if (cp >= 0xDC80 && cp <= 0xDCFF) {
      out.push_back(static_cast<char>(cp - 0xDC00));
    } else if (is_surrogate(cp)) {
      append_wtf8(out, 0xFFFD);
    } else {
      out.append(wtf8.data() + at, pos - at);
    }
  }
  return out;
}

}  // namespace w4a8::json
