// The vector scanners of json/scan.hpp against byte-by-byte definitions, at every alignment and
// length around the 16-byte steps, with each special byte at each position.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <string_view>

#include "json/scan.hpp"

namespace w4a8::json {
namespace {

const char* slow_string_stop(const char* p, const char* end) {
  for (; p < end; ++p)
    if (*p == '"' || *p == '\\' || static_cast<unsigned char>(*p) < 0x20) return p;
  return end;
}

TEST(JsonScan, StringStopFindsTheFirstSpecialByte) {
  const std::string specials = std::string("\"\\\x00\x01\x1f", 5);
  const std::string plain = "abcxyz \x7f\x80\xc3\xa9\xff\x20!#";  // no special byte (0x20 and up, not '"' or '\\')
  std::mt19937 rng(7);
  for (std::size_t len = 0; len <= 70; ++len) {
    for (std::size_t at = 0; at <= len; ++at) {
      std::string s(len + 3, 'x');
      for (char& c : s) c = plain[rng() % plain.size()];
      if (at < len) s[1 + at] = specials[rng() % specials.size()];
      const char* b = s.data() + 1;  // unaligned on purpose
      EXPECT_EQ(scan::string_stop(b, b + len), slow_string_stop(b, b + len)) << len << " " << at;
    }
  }
}

// Every byte value at every position of every length around the 16-byte steps, over plain text.
// fast(b, b + len) against the byte-by-byte definition `stops`, for every byte value at every
// position of every length up to 40 (the vector loop, its tail, and both together).
template <typename Fast, typename Stops>
void expect_same_stop(Fast fast, Stops stops_at) {
  std::size_t stops = 0;
  for (std::size_t len = 0; len <= 40; ++len)
    for (std::size_t at = 0; at <= len; ++at)
      for (int byte = 0; byte < 256; ++byte) {
        constexpr std::string_view kPlain = "model.blocks_9-X ~";  // printable, no quote or backslash
        std::string s(len + 1, 'a');
        for (std::size_t i = 0; i < s.size(); ++i) s[i] = kPlain[i % kPlain.size()];
        if (at < len) s[1 + at] = static_cast<char>(byte);
        const char* b = s.data() + 1;  // unaligned on purpose
        const char* want = b;
        while (want < b + len && !stops_at(static_cast<unsigned char>(*want))) ++want;
        stops += want != b + len;
        ASSERT_EQ(fast(b, b + len), want) << len << " " << at << " " << byte;
      }
  EXPECT_GT(stops, 0u);
}

TEST(JsonScan, ReprStopFindsTheFirstByteReprChanges) {
  expect_same_stop(scan::repr_stop, [](unsigned char c) {
    return c < 0x20 || c >= 0x7F || c == '\'' || c == '"' || c == '\\';
  });
}

// json.dumps (ensure_ascii) copies printable ASCII but '"' and '\\'; a '\'' is copied.
TEST(JsonScan, DumpStopFindsTheFirstByteDumpsEscapes) {
  expect_same_stop(scan::dump_stop, [](unsigned char c) { return c < 0x20 || c >= 0x7F || c == '"' || c == '\\'; });
}

TEST(JsonScan, NonAsciiFindsTheFirstHighByte) {
  for (std::size_t len = 0; len <= 150; ++len)
    for (std::size_t at = 0; at <= len; ++at) {
      std::string s(len + 1, 'a');
      if (at < len) s[1 + at] = char(0x80 | (at & 0x7f));
      const auto* b = reinterpret_cast<const unsigned char*>(s.data()) + 1;
      EXPECT_EQ(scan::non_ascii(b, b + len) - b, std::ptrdiff_t(at)) << len;
    }
}

// Both mismatch paths against the byte-by-byte definition: every length to 40 (both loops, both
// overlapping tails, the byte loop), every start, one differing byte at every place or none, and
// bytes that differ in one bit only (the lowest and the highest).
TEST(JsonScan, MismatchFindsTheFirstDifferingByte) {
  std::size_t found = 0;
  for (std::size_t m = 0; m <= 40; ++m)
    for (std::size_t from = 0; from <= m; ++from)
      for (std::size_t at = from; at <= m; ++at)
        for (const int flip : {0x01, 0x80, 0x5A}) {
          std::string a(m + 1, 'a'), b;
          for (std::size_t i = 0; i < a.size(); ++i) a[i] = static_cast<char>("model.diffusion_model.x"[i % 23]);
          b = a;
          if (at < m) b[1 + at] = static_cast<char>(b[1 + at] ^ flip);
          const char* x = a.data() + 1;  // unaligned on purpose
          const char* y = b.data() + 1;
          std::size_t want = from;
          while (want < m && x[want] == y[want]) ++want;
          ASSERT_EQ(want, at);
          found += want < m;
          ASSERT_EQ(scan::mismatch(x, y, from, m), want) << m << " " << from << " " << at;
          ASSERT_EQ(scan::mismatch_words(x, y, from, m), want) << m << " " << from << " " << at;
        }
  EXPECT_GT(found, 10000u);
}

TEST(JsonScan, DigitRunAndValue) {
  std::mt19937_64 rng(11);
  const std::string after(",]} .eE-+/:\x80\xff\x00", 14);  // the NUL included
  for (int round = 0; round < 20000; ++round) {
    const std::size_t n = 1 + rng() % 16;
    std::string s;
    for (std::size_t i = 0; i < n; ++i) s += char('0' + rng() % 10);
    s += after[rng() % after.size()];
    while (s.size() < 17) s += char(rng() % 256);
    EXPECT_EQ(scan::digit_run16(s.data()), std::min<std::size_t>(n, 16)) << s;
    std::uint64_t want = 0;
    for (std::size_t i = 0; i < n; ++i) want = want * 10 + std::uint64_t(s[i] - '0');
    EXPECT_EQ(scan::digits_value(s.data(), n), want) << s.substr(0, n);
  }
  EXPECT_EQ(scan::digits_value("9999999999999999", 16), 9999999999999999ull);
  EXPECT_EQ(scan::digits_value("0000000000000001", 16), 1ull);
  EXPECT_EQ(scan::digits_value("18446744073709551615", 16), 1844674407370955ull);
  EXPECT_EQ(scan::digit_run16("01234567890123456"), 16u);
  EXPECT_EQ(scan::digit_run16("x1234567890123456"), 0u);
}

}  // namespace
}  // namespace w4a8::json
