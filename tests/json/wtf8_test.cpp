// find_invalid_wtf8 (which skips ASCII eight bytes at a time) against the plain definition: decode
// code point by code point with decode_wtf8 and report the first byte that does not start one.
// Random strings put invalid, truncated and surrogate sequences at every offset of ASCII runs.
#include <gtest/gtest.h>

#include <random>
#include <string>

#include "json/wtf8.hpp"

namespace w4a8::json {
namespace {

std::size_t first_invalid_by_definition(std::string_view s, bool allow_surrogates) {
  std::size_t pos = 0;
  char32_t cp = 0;
  while (pos < s.size())
    if (!decode_wtf8(s, pos, cp, allow_surrogates)) return pos;
  return std::string_view::npos;
}

TEST(Wtf8, FindInvalidAgreesWithDecodingEachCodePoint) {
  static const char* const pieces[] = {"\xC3\xA9", "\xED\xA0\x80", "\xF0\x9F\x98\x80", "\x80", "\xC0\xAF",
                                       "\xE2\x82", "\xF5\x80\x80\x80", "\xFF", "\xED\xBF\xBF"};
  std::mt19937_64 rng(0x3F8);
  std::size_t invalid = 0;
  for (int i = 0; i < 20000; ++i) {
    std::string s;
    for (std::size_t n = rng() % 6; n > 0; --n) {
      s.append(rng() % 24, 'a');  // ASCII runs of every length around the 8-byte step
      if (rng() % 2) s += pieces[rng() % 9];
    }
    for (bool surrogates : {false, true}) {
      const std::size_t want = first_invalid_by_definition(s, surrogates);
      ASSERT_EQ(find_invalid_wtf8(s, surrogates), want) << "size " << s.size() << " surrogates " << surrogates;
      invalid += want != std::string_view::npos;
    }
  }
  EXPECT_GT(invalid, 5000u);  // both outcomes are exercised
}

}  // namespace
}  // namespace w4a8::json
