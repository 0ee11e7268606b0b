#include "safetensors/rust_debug.hpp"

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <cstdlib>

namespace w4a8::st::detail {

std::string serde_float_text(double d) {
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof buf, d, std::chars_format::scientific);
  std::string_view sci(buf, std::size_t(res.ptr - buf));  // "-1.2345e+23", shortest digits
  std::string out;
  if (sci.starts_with('-')) {
    out = "-";
    sci.remove_prefix(1);
  }
  const std::size_t e = sci.find('e');
  std::string digits(sci.substr(0, e));
  if (digits.size() > 1) digits.erase(1, 1);  // drop the '.'
  int exp10 = 0;
  std::from_chars(sci.data() + e + (sci[e + 1] == '+' ? 2 : 1), sci.data() + sci.size(), exp10);
  const int n = int(digits.size());
  const int kk = exp10 + 1;  // value = 0.digits * 10^kk
  if (n <= kk && kk <= 16) {
    out += digits + std::string(std::size_t(kk - n), '0') + ".0";
  } else if (0 < kk && kk <= 16) {
    out += digits.substr(0, std::size_t(kk)) + "." + digits.substr(std::size_t(kk));
  } else if (-5 < kk && kk <= 0) {
    out += "0." + std::string(std::size_t(-kk), '0') + digits;
  } else {
    out += digits.substr(0, 1);
    if (n > 1) out += "." + digits.substr(1);
    out += (kk - 1 < 0 ? "e-" : "e+") + std::to_string(std::abs(kk - 1));
  }
  return out;
}

namespace {

struct CodeRange {
  char32_t first, last;
};
constexpr CodeRange kRustEscaped[] = {
#include "safetensors/rust_escape_table.inc"
};

}  // namespace

bool rust_escapes(char32_t cp) {
  const auto* it = std::upper_bound(std::begin(kRustEscaped), std::end(kRustEscaped), cp,
                                    [](char32_t c, const CodeRange& r) { return c < r.first; });
  return it != std::begin(kRustEscaped) && cp <= (it - 1)->last;
}

std::string rust_debug_quote(std::string_view s) {
  std::string out = "\"";
  std::size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    switch (c) {
      case '"': out += "\\\""; ++i; continue;
      case '\\': out += "\\\\"; ++i; continue;
      case '\n': out += "\\n"; ++i; continue;
      case '\r': out += "\\r"; ++i; continue;
      case '\t': out += "\\t"; ++i; continue;
      case '\0': out += "\\0"; ++i; continue;
      default: break;
    }
    // Decode one UTF-8 sequence (the header passed check_utf8; a stray byte stands for itself).
    std::size_t len = c < 0x80 ? 1 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4;
    if (i + len > s.size()) len = 1;
    char32_t cp = len == 1 ? c : c & (0x7F >> len);
    for (std::size_t k = 1; k < len; ++k) cp = cp << 6 | (static_cast<unsigned char>(s[i + k]) & 0x3F);
    if (cp < 0x20 || cp == 0x7F || (cp >= 0x80 && rust_escapes(cp))) {
      char buf[16];
      std::snprintf(buf, sizeof buf, "\\u{%x}", static_cast<unsigned>(cp));
      out += buf;
    } else {
      out.append(s.substr(i, len));
    }
    i += len;
  }
  out += '"';
  return out;
}

}  // namespace w4a8::st::detail
