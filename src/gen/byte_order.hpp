// String ordering and equality for the generator, oracle and fuzz bodies without memcmp: libFuzzer intercepts
// every memcmp in the process (uninstrumented code too) and records each unequal one for its
// mutators, which costs far more than the comparison and tells it nothing about the code under test.
#pragma once

#include <cstddef>
#include <string_view>

namespace w4a8::gen {

// a < b by bytes (unsigned), as std::string's operator< orders UTF-8 (code point order).
inline bool bytes_less(std::string_view a, std::string_view b) {
  const std::size_t n = a.size() < b.size() ? a.size() : b.size();
  for (std::size_t i = 0; i < n; ++i)
    if (a[i] != b[i]) return static_cast<unsigned char>(a[i]) < static_cast<unsigned char>(b[i]);
  return a.size() < b.size();
}

// a == b, byte by byte.
inline bool bytes_equal(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (a[i] != b[i]) return false;
  return true;
}

// s ends with suffix (compared byte by byte).
inline bool bytes_ends_with(std::string_view s, std::string_view suffix) {
  if (s.size() < suffix.size()) return false;
  for (std::size_t i = 0, o = s.size() - suffix.size(); i < suffix.size(); ++i)
    if (s[o + i] != suffix[i]) return false;
  return true;
}

struct BytesLess {
  using is_transparent = void;
  bool operator()(std::string_view a, std::string_view b) const { return bytes_less(a, b); }
};

// Equality for hashed containers of strings (std::equal_to<std::string> compares with memcmp).
struct BytesEqual {
  bool operator()(std::string_view a, std::string_view b) const { return bytes_equal(a, b); }
};

}  // namespace w4a8::gen
