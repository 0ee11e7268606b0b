#include "py/unicode_tables.hpp"

#include <algorithm>
#include <span>

#include "py/repr.hpp"

namespace w4a8::py {

namespace {

struct CodePointRange {
  char32_t lo, hi;
};
struct DecimalRun {
  char32_t lo, hi;
  int value_lo;
};

#include "py/printable_table.inc"

// First range with hi >= cp (ranges are sorted and disjoint).
template <class R>
const R* find_range(std::span<const R> ranges, char32_t cp) {
  auto it = std::lower_bound(ranges.begin(), ranges.end(), cp, [](const R& r, char32_t c) { return r.hi < c; });
  return it != ranges.end() && it->lo <= cp ? &*it : nullptr;
}

}  // namespace

bool is_printable(char32_t cp) {
  return find_range(std::span<const CodePointRange>(kNonPrintable), cp) == nullptr;
}

bool is_space(char32_t cp) {
  if (cp < 0x80) return cp == ' ' || (cp >= '\t' && cp <= '\r') || (cp >= 0x1C && cp <= 0x1F);
  return find_range(std::span<const CodePointRange>(kNonAsciiSpace), cp) != nullptr;
}

int decimal_value(char32_t cp) {
  if (cp >= '0' && cp <= '9') return static_cast<int>(cp - '0');
  if (cp < 0x80) return -1;
  const DecimalRun* run = find_range(std::span<const DecimalRun>(kNonAsciiDecimal), cp);
  return run != nullptr ? run->value_lo + static_cast<int>(cp - run->lo) : -1;
}

}  // namespace w4a8::py
