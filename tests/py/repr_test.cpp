// repr()/isprintable() against CPython: every code point's predicates, and thousands of random
// strings, tuples and lists.
#include "py/repr.hpp"

#include <gtest/gtest.h>

#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "../json/oracle_client.hpp"
#include "json/wtf8.hpp"
#include "py/unicode_tables.hpp"

namespace w4a8::py {
namespace {

using testing::ask_oracle;
using testing::from_hex_arg;
using testing::hex_arg;

const std::string kOracle = testing::source_path("tests/py/py_oracle.py");

bool bit(const std::string& bitmap, char32_t cp) { return (static_cast<unsigned char>(bitmap[cp >> 3]) >> (cp & 7)) & 1; }

TEST(UnicodeTables, EveryCodePointMatchesPython) {
  const auto answers = ask_oracle(kOracle, {"props"});
  ASSERT_EQ(answers.size(), 1u);
  std::istringstream parts(from_hex_arg(answers[0]));
  std::string printable_hex, space_hex, decimals;
  parts >> printable_hex >> space_hex >> decimals;
  const std::string printable = from_hex_arg(printable_hex), space = from_hex_arg(space_hex);
  ASSERT_EQ(printable.size(), 0x110000u / 8);
  ASSERT_EQ(space.size(), 0x110000u / 8);
  std::vector<int> decimal(0x110000, -1);
  std::istringstream dec(decimals);
  std::string item;
  while (std::getline(dec, item, ',')) {
    const auto colon = item.find(':');
    decimal[std::stoul(item.substr(0, colon), nullptr, 16)] = std::stoi(item.substr(colon + 1));
  }
  int mismatches = 0;
  for (char32_t cp = 0; cp < 0x110000; ++cp) {
    if (is_printable(cp) != bit(printable, cp) || is_space(cp) != bit(space, cp) || decimal_value(cp) != decimal[cp])
      if (++mismatches <= 10) ADD_FAILURE() << "code point " << std::hex << static_cast<unsigned>(cp);
  }
  EXPECT_EQ(mismatches, 0);
}

// Random code points biased to what repr() treats specially.
char32_t interesting_code_point(std::mt19937_64& rng) {
  static constexpr char32_t kSpecial[] = {'\'', '"', '\\', '\t', '\n', '\r', 0, 0x1F, 0x7F, 0x80, 0x9F, 0xA0,
                                          0xAD, 0xFF, 0x100, 0x378, 0x85, 0x2028, 0x200B, 0xFEFF, 0xE000,
                                          0xFFFF, 0xD800, 0xDBFF, 0xDC00, 0xDFFF, 0x10000, 0xE0001, 0x10FFFF,
                                          0x1F600, 0x3000, 0x1D7CE, 0xF8FF, 0x110BD, 0x30000};
  std::uniform_int_distribution<int> kind(0, 5);
  switch (kind(rng)) {
    case 0: return kSpecial[std::uniform_int_distribution<std::size_t>(0, std::size(kSpecial) - 1)(rng)];
    case 1: return std::uniform_int_distribution<char32_t>(0, 0x7F)(rng);
    case 2: return std::uniform_int_distribution<char32_t>(0x80, 0x7FF)(rng);
    case 3: return std::uniform_int_distribution<char32_t>(0x800, 0xFFFF)(rng);
    case 4: return std::uniform_int_distribution<char32_t>(0xD800, 0xDFFF)(rng);
    default: return std::uniform_int_distribution<char32_t>(0x10000, 0x10FFFF)(rng);
  }
}

std::string random_text(std::mt19937_64& rng, std::size_t max_len) {
  std::string s;
  const std::size_t n = std::uniform_int_distribution<std::size_t>(0, max_len)(rng);
  for (std::size_t i = 0; i < n; ++i) json::append_wtf8(s, interesting_code_point(rng));
  return s;
}

TEST(ReprStr, RandomStringsMatchPython) {
  std::mt19937_64 rng(7);
  std::vector<std::string> texts = {"", "'", "\"", "'\"", "a'b", "a\"b", "\\", "it's", "\xed\xa0\x80",
                                    "\xed\xa0\xbd\xed\xb8\x80", "\xf0\x9f\x98\x80", "caf\xc3\xa9"};
  for (int i = 0; i < 4000; ++i) texts.push_back(random_text(rng, 12));
  std::vector<std::string> requests;
  for (const auto& t : texts) requests.push_back("repr " + hex_arg(t));
  const auto answers = ask_oracle(kOracle, requests);
  int mismatches = 0;
  for (std::size_t i = 0; i < texts.size() && i < answers.size(); ++i) {
    const std::string expected = from_hex_arg(answers[i]);
    if (repr_str(texts[i]) != expected && ++mismatches <= 10)
      ADD_FAILURE() << hex_arg(texts[i]) << ": python " << expected << " ours " << repr_str(texts[i]);
  }
  EXPECT_EQ(mismatches, 0);
}

TEST(ReprShapeAndList, RandomMatchPython) {
  std::mt19937_64 rng(11);
  std::vector<std::string> requests;
  std::vector<std::string> ours;
  for (int i = 0; i < 500; ++i) {
    std::vector<std::uint64_t> shape(std::uniform_int_distribution<std::size_t>(0, 5)(rng));
    std::string req = "shape";
    for (auto& d : shape) {
      d = std::uniform_int_distribution<int>(0, 3)(rng) == 0 ? rng() : rng() % 100;
      req += " " + std::to_string(d);
    }
    requests.push_back(req);
    ours.push_back(repr_shape(shape));
    std::vector<std::string> items(std::uniform_int_distribution<std::size_t>(0, 6)(rng));
    req = "repr_list";
    for (auto& s : items) {
      s = random_text(rng, 5);
      req += " " + hex_arg(s);
    }
    requests.push_back(req);
    ours.push_back(repr_str_list(items));
  }
  const auto answers = ask_oracle(kOracle, requests);
  int mismatches = 0;
  for (std::size_t i = 0; i < ours.size() && i < answers.size(); ++i)
    if (ours[i] != from_hex_arg(answers[i]) && ++mismatches <= 10)
      ADD_FAILURE() << requests[i] << ": python " << from_hex_arg(answers[i]) << " ours " << ours[i];
  EXPECT_EQ(mismatches, 0);
}

TEST(ReprShape, HandCases) {
  EXPECT_EQ(repr_shape(std::vector<std::uint64_t>{}), "()");
  EXPECT_EQ(repr_shape(std::vector<std::uint64_t>{3}), "(3,)");
  EXPECT_EQ(repr_shape(std::vector<std::uint64_t>{3, 4}), "(3, 4)");
  EXPECT_EQ(repr_str_list(std::vector<std::string>{"a", "b"}), "['a', 'b']");
  EXPECT_EQ(repr_str("it's"), "\"it's\"");
}

}  // namespace
}  // namespace w4a8::py
