#include "gen/repr_oracle.hpp"

#include <algorithm>

#include "core/hex.hpp"

namespace w4a8::gen::oracle_py {
namespace {

constexpr int kNever = 99;

// Non-ASCII code points the generator writes, each with the first Python (py::Version index) whose
// Unicode data makes it printable, or kNever. Hand-derived from the Unicode general categories and
// the version each character was assigned in (3.10: Unicode 13.0, 3.11: 14.0, 3.12: 15.0, 3.13:
// 15.1, 3.14: 16.0).
struct Range {
  char32_t first, last;
  int since;
};
constexpr int P310 = 0, P311 = 1, P312 = 2, P313 = 3, P314 = 4;
constexpr Range kTable[] = {
    {0x0080, 0x009F, kNever},    // C1 controls (Cc), U+0085 NEL among them
    {0x00A0, 0x00A0, kNever},    // NO-BREAK SPACE (Zs)
    {0x00AD, 0x00AD, kNever},    // SOFT HYPHEN (Cf)
    {0x00B2, 0x00B2, P310},      // SUPERSCRIPT TWO (No)
    {0x00E9, 0x00E9, P310},      // e acute (Ll)
    {0x0378, 0x0378, kNever},    // unassigned in the Greek block (Cn)
    {0x0660, 0x0669, P310},      // Arabic-Indic digits (Nd)
    {0x0870, 0x0870, P311},      // ARABIC LETTER ALEF WITH ATTACHED FATHA (Lo, Unicode 14.0)
    {0x0966, 0x096F, P310},      // Devanagari digits (Nd)
    {0x200B, 0x200B, kNever},    // ZERO WIDTH SPACE (Cf)
    {0x200E, 0x200E, kNever},    // LEFT-TO-RIGHT MARK (Cf)
    {0x2028, 0x2029, kNever},    // LINE / PARAGRAPH SEPARATOR (Zl, Zp)
    {0x2160, 0x2160, P310},      // ROMAN NUMERAL ONE (Nl)
    {0x2FFC, 0x2FFC, P313},      // IDEOGRAPHIC DESCRIPTION CHARACTER SURROUND FROM RIGHT (So, 15.1)
    {0x3000, 0x3000, kNever},    // IDEOGRAPHIC SPACE (Zs)
    {0x5C42, 0x5C42, P310},      // CJK ideograph (Lo)
    {0xD800, 0xDFFF, kNever},    // surrogates (Cs)
    {0xE000, 0xE000, kNever},    // private use (Co)
    {0xF8FF, 0xF8FF, kNever},    // private use (Co)
    {0xFEFF, 0xFEFF, kNever},    // ZERO WIDTH NO-BREAK SPACE (Cf)
    {0xFF10, 0xFF19, P310},      // fullwidth digits (Nd)
    {0xFFFE, 0xFFFE, kNever},    // noncharacter (Cn)
    {0x1D400, 0x1D400, P310},    // MATHEMATICAL BOLD CAPITAL A (Lu)
    {0x1F600, 0x1F600, P310},    // GRINNING FACE (So)
    {0x1F6DC, 0x1F6DC, P312},    // WIRELESS (So, Unicode 15.0)
    {0x1FAE9, 0x1FAE9, P314},    // FACE WITH BAGS UNDER EYES (So, Unicode 16.0)
    {0xE0001, 0xE0001, kNever},  // LANGUAGE TAG (Cf)
    {0xF0000, 0xF0000, kNever},  // plane 15 private use (Co)
    {0x10FFFD, 0x10FFFD, kNever},  // plane 16 private use (Co)
};

const Range* lookup(char32_t cp) {
  for (const Range& r : kTable)
    if (cp >= r.first && cp <= r.last) return &r;
  return nullptr;
}

void hex(std::string& out, char32_t v, int digits) { w4a8::hex::append(out, static_cast<std::uint32_t>(v), digits); }

}  // namespace

bool knows(char32_t cp) { return cp < 0x80 || lookup(cp) != nullptr; }

bool printable(char32_t cp, Version v) {
  if (cp < 0x80) return cp >= 0x20 && cp < 0x7F;
  const Range* r = lookup(cp);
  return r && static_cast<int>(v) >= r->since;
}

std::vector<char32_t> table_code_points() {
  std::vector<char32_t> out;
  for (const Range& r : kTable)
    for (char32_t c = r.first; c <= r.last; ++c) out.push_back(c);
  return out;
}

std::string repr_str(std::string_view s, Version v) {
  const bool single = s.find('\'') != std::string_view::npos, dbl = s.find('"') != std::string_view::npos;
  const char quote = single && !dbl ? '"' : '\'';
  std::string out(1, quote);
  for (std::size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    const int len = c < 0x80 ? 1 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4;
    char32_t cp = len == 1 ? c : len == 2 ? (c & 0x1F) : len == 3 ? (c & 0x0F) : (c & 0x07);
    for (int k = 1; k < len && i + k < s.size(); ++k) cp = (cp << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3F);
    const std::string_view raw = s.substr(i, static_cast<std::size_t>(len));
    i += static_cast<std::size_t>(len);
    if (cp == static_cast<char32_t>(quote) || cp == '\\') { out += '\\'; out += static_cast<char>(cp); }
    else if (cp == '\t') out += "\\t";
    else if (cp == '\n') out += "\\n";
    else if (cp == '\r') out += "\\r";
    else if (!knows(cp)) out += "\\N{?}";
    else if (printable(cp, v)) out += raw;
    else if (cp <= 0xFF) { out += "\\x"; hex(out, cp, 2); }
    else if (cp <= 0xFFFF) { out += "\\u"; hex(out, cp, 4); }
    else { out += "\\U"; hex(out, cp, 8); }
  }
  return out + quote;
}

std::string repr_str_list(std::span<const std::string> items, Version v) {
  std::string out = "[";
  for (std::size_t i = 0; i < items.size(); ++i) out += (i ? ", " : "") + repr_str(items[i], v);
  return out + "]";
}

std::string repr_shape(std::span<const std::uint64_t> shape) {
  std::string out = "(";
  for (std::size_t i = 0; i < shape.size(); ++i) out += (i ? ", " : "") + std::to_string(shape[i]);
  return out + (shape.size() == 1 ? ",)" : ")");
}

}  // namespace w4a8::gen::oracle_py
