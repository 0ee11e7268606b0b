#include "safetensors/utf8.hpp"

#include "json/scan.hpp"

namespace w4a8::st::detail {

std::optional<Utf8Error> check_utf8(std::span<const std::uint8_t> s) {
  std::size_t i = 0;
  const std::size_t n = s.size();
  while (i < n) {
    // ASCII runs (most of a header) skipped a vector at a time.
    i = static_cast<std::size_t>(json::scan::non_ascii(s.data() + i, s.data() + n) - s.data());
    if (i >= n) break;
    const std::uint8_t c = s[i];
    if (c < 0x80) { ++i; continue; }
    std::size_t len = 0;
    std::uint8_t lo = 0x80, hi = 0xBF;  // allowed range of the second byte
    if (c >= 0xC2 && c <= 0xDF) len = 2;
    else if (c == 0xE0) len = 3, lo = 0xA0;
    else if (c == 0xED) len = 3, hi = 0x9F;
    else if (c >= 0xE1 && c <= 0xEF) len = 3;
    else if (c == 0xF0) len = 4, lo = 0x90;
    else if (c >= 0xF1 && c <= 0xF3) len = 4;
    else if (c == 0xF4) len = 4, hi = 0x8F;
    else return Utf8Error{i, 1};
    // Byte k of the sequence: missing -> incomplete (error_len None); out of range -> k bytes invalid.
    for (std::size_t k = 1; k < len; ++k) {
      if (i + k >= n) return Utf8Error{i, 0};
      const std::uint8_t b = s[i + k];
      const std::uint8_t kl = k == 1 ? lo : 0x80, kh = k == 1 ? hi : 0xBF;
      if (b < kl || b > kh) return Utf8Error{i, k};
    }
    i += len;
  }
  return std::nullopt;
}

std::string utf8_error_text(const Utf8Error& e) {
  if (e.error_len == 0) return "incomplete utf-8 byte sequence from index " + std::to_string(e.valid_up_to);
  return "invalid utf-8 sequence of " + std::to_string(e.error_len) + " bytes from index " +
         std::to_string(e.valid_up_to);
}

}  // namespace w4a8::st::detail
