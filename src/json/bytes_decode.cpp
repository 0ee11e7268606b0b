#include "json/bytes_decode.hpp"

#include <string_view>

#include "json/wtf8.hpp"

namespace w4a8::json {

namespace {

bool starts_with(std::span<const std::uint8_t> b, std::initializer_list<std::uint8_t> prefix) {
  if (b.size() < prefix.size()) return false;
  std::size_t i = 0;
  for (auto p : prefix)
    if (b[i++] != p) return false;
  return true;
}

bool decode_utf8(std::span<const std::uint8_t> b, std::size_t base, std::string& out, std::size_t& err) {
  const std::string_view s(reinterpret_cast<const char*>(b.data()), b.size());
  const std::size_t bad = find_invalid_wtf8(s, /*allow_surrogates=*/true);
  if (bad != std::string_view::npos) {
    err = base + bad;
    return false;
  }
  out.assign(s);
  return true;
}

// Code units of width 2; a high unit followed by a low one joins, any other surrogate passes alone.
bool decode_utf16(std::span<const std::uint8_t> b, bool big_endian, std::size_t base, std::string& out,
                  std::size_t& err) {
  if (b.size() % 2 != 0) {  // the odd byte is "truncated data" that surrogatepass cannot absorb
    err = base + b.size() - 1;
    return false;
  }
  out.resize(b.size() / 2 * 3);  // a unit takes at most 3 bytes, a pair of them 4
  char* p = out.data();
  auto unit = [&](std::size_t i) -> char32_t {
    return big_endian ? char32_t(b[i] << 8 | b[i + 1]) : char32_t(b[i + 1] << 8 | b[i]);
  };
  for (std::size_t i = 0; i < b.size(); i += 2) {
    char32_t cp = unit(i);
    if (is_high_surrogate(cp) && i + 2 < b.size() && is_low_surrogate(unit(i + 2))) {
      cp = 0x10000 + ((cp - 0xD800) << 10) + (unit(i + 2) - 0xDC00);
      i += 2;
    }
    p = put_wtf8(p, cp);
  }
  out.resize(static_cast<std::size_t>(p - out.data()));
  return true;
}

bool decode_utf32(std::span<const std::uint8_t> b, bool big_endian, std::size_t base, std::string& out,
                  std::size_t& err) {
  if (b.size() % 4 != 0) {
    err = base + b.size() - b.size() % 4;
    return false;
  }
  out.resize(b.size());  // a code point takes at most 4 bytes
  char* p = out.data();
  for (std::size_t i = 0; i < b.size(); i += 4) {
    const std::uint32_t cp = big_endian
        ? std::uint32_t(b[i]) << 24 | std::uint32_t(b[i + 1]) << 16 | std::uint32_t(b[i + 2]) << 8 | b[i + 3]
        : std::uint32_t(b[i + 3]) << 24 | std::uint32_t(b[i + 2]) << 16 | std::uint32_t(b[i + 1]) << 8 | b[i];
    if (cp > kMaxCodePoint) {
      err = base + i;
      out.clear();
      return false;
    }
    p = put_wtf8(p, cp);
  }
  out.resize(static_cast<std::size_t>(p - out.data()));
  return true;
}

}  // namespace

TextEncoding detect_encoding(std::span<const std::uint8_t> b) {
  if (starts_with(b, {0x00, 0x00, 0xFE, 0xFF}) || starts_with(b, {0xFF, 0xFE, 0x00, 0x00}))
    return TextEncoding::Utf32;
  if (starts_with(b, {0xFE, 0xFF}) || starts_with(b, {0xFF, 0xFE})) return TextEncoding::Utf16;
  if (starts_with(b, {0xEF, 0xBB, 0xBF})) return TextEncoding::Utf8Sig;
  if (b.size() >= 4) {
    if (b[0] == 0) return b[1] ? TextEncoding::Utf16Be : TextEncoding::Utf32Be;
    if (b[1] == 0) return (b[2] || b[3]) ? TextEncoding::Utf16Le : TextEncoding::Utf32Le;
  } else if (b.size() == 2) {
    if (b[0] == 0) return TextEncoding::Utf16Be;
    if (b[1] == 0) return TextEncoding::Utf16Le;
  }
  return TextEncoding::Utf8;
}

bool decode_json_bytes(std::span<const std::uint8_t> b, std::string& out, std::size_t& err) {
  out.clear();
  err = 0;
  switch (detect_encoding(b)) {
    case TextEncoding::Utf8: return decode_utf8(b, 0, out, err);
    case TextEncoding::Utf8Sig: return decode_utf8(b.subspan(3), 3, out, err);
    case TextEncoding::Utf16: return decode_utf16(b.subspan(2), b[0] == 0xFE, 2, out, err);
    case TextEncoding::Utf16Le: return decode_utf16(b, false, 0, out, err);
    case TextEncoding::Utf16Be: return decode_utf16(b, true, 0, out, err);
    case TextEncoding::Utf32: return decode_utf32(b.subspan(4), b[0] == 0x00, 4, out, err);
    case TextEncoding::Utf32Le: return decode_utf32(b, false, 0, out, err);
    case TextEncoding::Utf32Be: return decode_utf32(b, true, 0, out, err);
  }
  return false;
}

}  // namespace w4a8::json
