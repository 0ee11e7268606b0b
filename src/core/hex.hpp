// Lowercase hexadecimal text: the one digit table for every hex the project writes (Python's
// \x/\u/\U escapes, JSON's \u escapes, byte dumps in messages, oracle arguments, replay bytes).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace w4a8::hex {

inline constexpr std::string_view kDigits = "0123456789abcdef";

// The digit of v's low nibble.
constexpr char digit(std::uint32_t v) { return kDigits[v & 0xF]; }

// Appends v's low `digits` nibbles, most significant first (zero-padded, no prefix).
inline void append(std::string& out, std::uint32_t v, int digits) {
  for (int shift = 4 * (digits - 1); shift >= 0; shift -= 4) out.push_back(digit(v >> shift));
}

// Two digits per byte, in order.
inline void append_bytes(std::string& out, std::string_view bytes) {
  out.reserve(out.size() + 2 * bytes.size());
  for (const unsigned char b : bytes) append(out, b, 2);
}
inline std::string bytes(std::string_view b) {
  std::string out;
  append_bytes(out, b);
  return out;
}
inline std::string bytes(std::span<const std::uint8_t> b) {
  return bytes(std::string_view(reinterpret_cast<const char*>(b.data()), b.size()));
}

// "\u" + 4 digits: one UTF-16 code unit as a JSON/Python escape.
inline void append_u_escape(std::string& out, std::uint32_t unit) {
  out += "\\u";
  append(out, unit, 4);
}

// The value of one digit, either case; -1 for anything else.
constexpr int value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// The four digits of a JSON \u escape at s[at, at + 4): false when s ends first or one is not a digit.
constexpr bool read_u16(std::string_view s, std::size_t at, char32_t& out) {
  if (at > s.size() || s.size() - at < 4) return false;
  out = 0;
  for (std::size_t i = 0; i < 4; ++i) {
    const int h = value(s[at + i]);
    if (h < 0) return false;
    out = out << 4 | static_cast<char32_t>(h);
  }
  return true;
}

// Inverse of bytes() for lowercase or uppercase digits; a trailing odd digit or a non-digit yields
// what decoded before it.
inline std::string decode(std::string_view h) {
  constexpr auto nibble = value;
  std::string out;
  out.reserve(h.size() / 2);
  for (std::size_t i = 0; i + 1 < h.size(); i += 2) {
    const int hi = nibble(h[i]), lo = nibble(h[i + 1]);
    if (hi < 0 || lo < 0) break;
    out.push_back(static_cast<char>(hi << 4 | lo));
  }
  return out;
}

}  // namespace w4a8::hex
