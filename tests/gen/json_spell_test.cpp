// The spellings of gen/json_spell.hpp against independent readers: the C library's strtod in the
// "C" locale for floats (correctly rounded by glibc), the generator's hand-written string decoder
// (raw_json.hpp) for strings, Python's Decimal for exact expansions (constants below), and our
// json::loads_str for whole documents (a second implementation; the Python differential test
// holds both against the real json.loads).
#include <gtest/gtest.h>

#include <bit>
#include <cfloat>
#include <clocale>
#include <cmath>
#include <cstdlib>
#include <locale.h>

#include "gen/choice_source.hpp"
#include "gen/json_spell.hpp"
#include "gen/marker_fields.hpp"
#include "gen/properties.hpp"
#include "gen/raw_json.hpp"
#include "json/parse.hpp"

namespace w4a8::gen {
namespace {

// Python: str(decimal.Decimal(x)) for each double.
TEST(JsonSpell, ExactDecimalMatchesPythonDecimal) {
  auto text = [](double d) {
    const ExactDecimal x = exact_decimal(d);
    return (x.negative ? "-" : "") + x.digits + "e" + std::to_string(x.exp10);
  };
  EXPECT_EQ(text(0.1), "1000000000000000055511151231257827021181583404541015625e-55");
  EXPECT_EQ(text(3.99), "39900000000000002131628207280300557613372802734375e-49");
  EXPECT_EQ(text(-2.5), "-25e-1");
  EXPECT_EQ(text(1e23), "99999999999999991611392e0");
  EXPECT_EQ(text(16.0), "16e0");
  EXPECT_EQ(text(-0.0), "-0e0");
  EXPECT_EQ(text(DBL_MAX),
            "179769313486231570814527423731704356798070567525844996598917476803157260780028538760589558632766878171540458953"
            "514382464234321326889464182768467546703537516986049910576551282076245490090389328944075868508455133942304583"
            "236903222948165808559332123348274797826204144723168738177180919299881250404026184124858368e0");
  const ExactDecimal tiny = exact_decimal(5e-324);
  EXPECT_EQ(tiny.digits.substr(0, 40), "4940656458412465441765687928682213723650");
  EXPECT_EQ(tiny.digits.size(), 751u);
  EXPECT_EQ(tiny.digits.back(), '5');
  EXPECT_EQ(tiny.exp10 + static_cast<int>(tiny.digits.size()), -323);  // 4.94...e-324
}

// JSON's number grammar, and a float by its form (a fraction or an exponent).
bool json_float_literal(const std::string& s) {
  std::size_t i = s[0] == '-';
  if (i >= s.size()) return false;
  if (s[i] == '0') ++i;
  else if (s[i] >= '1' && s[i] <= '9') while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) ++i;
  else return false;
  bool is_float = false;
  if (i < s.size() && s[i] == '.') {
    const std::size_t d = ++i;
    while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) ++i;
    if (i == d) return false;
    is_float = true;
  }
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    ++i;
    if (i < s.size() && (s[i] == '+' || s[i] == '-')) ++i;
    const std::size_t d = i;
    while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) ++i;
    if (i == d) return false;
    is_float = true;
  }
  return is_float && i == s.size();
}

TEST(JsonSpell, EveryFloatSpellingReadsBackExactly) {
  locale_t c = newlocale(LC_ALL_MASK, "C", static_cast<locale_t>(0));
  ASSERT_NE(c, static_cast<locale_t>(0));
  SeededChoiceSource src(7);
  std::vector<double> values = {0.0, -0.0, 0.1, 1.5, 16.0, 3.99, 5e-324, -5e-324, DBL_MIN, DBL_MAX, -DBL_MAX, 1e23, 1e16,
                                9007199254740992.0, std::nextafter(4.0, 0.0), 123456.789, 1e-7};
  for (int i = 0; i < 300; ++i) {  // random finite bit patterns, subnormals included
    const auto bits = (src.below(std::uint64_t{1} << 32) << 32) | src.below(std::uint64_t{1} << 32);
    const double d = std::bit_cast<double>(bits);
    if (std::isfinite(d)) values.push_back(d);
  }
  std::size_t long_exponents = 0, tails = 0;
  for (double d : values)
    for (int k = 0; k < 40; ++k) {
      const std::string lit = spell_float(d, src);
      ASSERT_TRUE(json_float_literal(lit)) << lit;
      const double back = strtod_l(lit.c_str(), nullptr, c);
      ASSERT_EQ(std::bit_cast<std::uint64_t>(back), std::bit_cast<std::uint64_t>(d)) << lit << " for " << d;
      const auto e = lit.find_first_of("eE");
      if (e != std::string::npos && lit.size() - e - 1 - (lit[e + 1] == '+' || lit[e + 1] == '-') >= 4) ++long_exponents;
      if (lit.size() > 40) ++tails;
    }
  EXPECT_GT(long_exponents, 500u);
  EXPECT_GT(tails, 500u);
  for (double d : {HUGE_VAL, -HUGE_VAL})
    for (int k = 0; k < 50; ++k) {
      const std::string lit = spell_float(d, src);
      if (lit == "Infinity" || lit == "-Infinity") continue;
      ASSERT_TRUE(json_float_literal(lit)) << lit;
      ASSERT_EQ(strtod_l(lit.c_str(), nullptr, c), d) << lit;
    }
  EXPECT_EQ(spell_float(std::nan(""), src), "NaN");
  freelocale(c);
}

std::u32string wtf8_code_points(const std::string& text) {
  std::u32string out;
  for (std::size_t k = 0; k < text.size();) {
    const auto b = static_cast<unsigned char>(text[k]);
    const int len = b < 0x80 ? 1 : b < 0xE0 ? 2 : b < 0xF0 ? 3 : 4;
    char32_t cp = len == 1 ? b : len == 2 ? (b & 0x1F) : len == 3 ? (b & 0x0F) : (b & 0x07);
    for (int j = 1; j < len; ++j) cp = (cp << 6) | (static_cast<unsigned char>(text[k + j]) & 0x3F);
    out.push_back(cp);
    k += len;
  }
  return out;
}

// json_literal: the generator's plain spelling of a string (what markers hold before respelling)
// reads back as the same code points; only what JSON requires is escaped (plus DEL and lone
// surrogates, which must not reach a file raw), everything else stays as it was.
TEST(JsonSpell, LiteralDecodesToTheTextAndEscapesOnlyWhatItMust) {
  SeededChoiceSource src(5);
  for (int i = 0; i < 3000; ++i) {
    std::string text = any_text(src, 10);
    if (i % 3 == 0) text += std::string("\"\\\n\t\r\x01\x7f", 7).substr(src.below(7));  // the escaped ones
    const std::string lit = json_literal(text);
    const auto got = raw::decode_string(lit);
    ASSERT_TRUE(got) << lit;
    ASSERT_EQ(*got, wtf8_code_points(text)) << lit;
    for (std::size_t k = 0; k < lit.size(); ++k) {
      const auto ch = static_cast<unsigned char>(lit[k]);
      ASSERT_TRUE(ch >= 0x20 && ch != 0x7f) << "raw control byte in " << lit;
      ASSERT_FALSE(ch == 0xED && k + 1 < lit.size() && static_cast<unsigned char>(lit[k + 1]) >= 0xA0) << "raw surrogate in " << lit;
    }
    bool plain = true;
    for (unsigned char ch : text) plain = plain && ch >= 0x20 && ch != '"' && ch != '\\' && ch != 0x7f && ch != 0xED;
    if (plain) {
      ASSERT_EQ(lit, "\"" + text + "\"");
    }
  }
}

TEST(JsonSpell, StringSpellingsDecodeToTheSameCodePoints) {
  SeededChoiceSource src(11);
  std::size_t escaped_pairs = 0;
  for (int i = 0; i < 3000; ++i) {
    const std::string text = any_text(src, 8);
    const std::string lit = spell_string(text, src);
    const auto got = raw::decode_string(lit);
    ASSERT_TRUE(got) << lit;
    ASSERT_EQ(*got, wtf8_code_points(text)) << lit;
    for (unsigned char ch : lit) ASSERT_TRUE(ch >= 0x20) << "raw control byte in " << lit;
    escaped_pairs += lit.find("\\ud83d\\ude00") != std::string::npos || lit.find("\\uD83D\\uDE00") != std::string::npos;
  }
  EXPECT_GT(escaped_pairs, 10u);
}

TEST(JsonSpell, DocumentsParseToTheSameValue) {
  SeededChoiceSource src(3);
  std::size_t decoys = 0;
  for (int i = 0; i < 3000; ++i) {
    std::vector<std::pair<std::string, JsonDoc>> f{{"format", jstr("asym_w4a8_int8")}};
    extra_fields(f, src);
    const JsonDoc doc = jobj(std::move(f));
    ASSERT_EQ(doc.outcome, JsonDoc::Outcome::Ok);
    const std::string text = spell(doc.value, src);
    const auto got = json::loads_str(text);
    ASSERT_TRUE(got.ok()) << text;
    ASSERT_TRUE(same_json(*got, doc.value)) << text;
    decoys += text.find("decoy") != std::string::npos;
  }
  EXPECT_GT(decoys, 50u);
}

TEST(JsonSpell, ChoicesAtZeroAreCanonical) {
  const JsonDoc doc = jobj({{"format", jstr("asym_w4a8_int8")}, {"group_size", jint(16)}, {"w", jarr({jint(1), jnull()})}});
  EXPECT_EQ(spell_tape(doc.value, {}), doc.text);
}

}  // namespace
}  // namespace w4a8::gen
