#include "py/unicode_tables.hpp"

#include <algorithm>
#include <span>

namespace w4a8::py {

namespace {

struct CodePointRange {
  char32_t lo, hi;
};
struct DecimalRun {
  char32_t lo, hi;
  int value_lo;
};
struct VersionTables {
  std::string_view python, unicode;
  std::span<const CodePointRange> non_printable, non_ascii_space;
  std::span<const DecimalRun> non_ascii_decimal;
};

#include "py/unicode_data.inc"

static_assert(std::size(kVersionTables) == static_cast<std::size_t>(Version::kCount),
              "unicode_data.inc must have one entry per py::Version, in order");

const VersionTables& tables(Version v) {
  const auto i = static_cast<std::size_t>(v);
  return kVersionTables[i < std::size(kVersionTables) ? i : static_cast<std::size_t>(kDefaultVersion)];
}

// First range with hi >= cp (ranges are sorted and disjoint).
template <class R>
const R* find_range(std::span<const R> ranges, char32_t cp) {
  auto it = std::lower_bound(ranges.begin(), ranges.end(), cp, [](const R& r, char32_t c) { return r.hi < c; });
  return it != ranges.end() && it->lo <= cp ? &*it : nullptr;
}

}  // namespace

std::string_view version_name(Version v) { return tables(v).python; }
std::string_view unicode_version(Version v) { return tables(v).unicode; }

std::optional<Version> version_from_name(std::string_view name) {
  for (std::size_t i = 0; i < std::size(kVersionTables); ++i)
    if (kVersionTables[i].python == name) return static_cast<Version>(i);
  return std::nullopt;
}

bool is_printable(char32_t cp, Version v) { return find_range(tables(v).non_printable, cp) == nullptr; }

bool is_space(char32_t cp, Version v) {
  if (cp < 0x80) return cp == ' ' || (cp >= '\t' && cp <= '\r') || (cp >= 0x1C && cp <= 0x1F);
  return find_range(tables(v).non_ascii_space, cp) != nullptr;
}

int decimal_value(char32_t cp, Version v) {
  if (cp >= '0' && cp <= '9') return static_cast<int>(cp - '0');
  if (cp < 0x80) return -1;
  const DecimalRun* run = find_range(tables(v).non_ascii_decimal, cp);
  return run != nullptr ? run->value_lo + static_cast<int>(cp - run->lo) : -1;
}

}  // namespace w4a8::py
