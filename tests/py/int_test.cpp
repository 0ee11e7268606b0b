// int() against CPython on strings (Unicode digits and spaces, signs, underscores, the 4300-digit
// limit, the 200-character repr cut) and on every kind of json-loaded value.
#include "py/int.hpp"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "support/python.hpp"
#include "json/parse.hpp"
#include "json/wtf8.hpp"

namespace w4a8::py {
namespace {

using testing::ask_oracle;
using testing::from_hex_arg;
using testing::hex_arg;

const std::string kOracle = testing::source_path("tests/py/py_oracle.py");

// Our answer in the oracle's format.
std::string outcome(const Result<BigInt>& r) {
  if (r.ok()) return "ok " + r.value().text;
  return std::string(r.error().type()) + " " + r.error().message;
}

class IntStringGen {
 public:
  explicit IntStringGen(std::uint64_t seed) : rng_(seed) {}

  std::string next() {
    std::string s;
    if (chance(30)) s += piece(kSpaces);
    if (chance(40)) s += piece(kSigns);
    const std::size_t groups = chance(3) ? 0 : 1 + below(4);
    for (std::size_t g = 0; g < groups; ++g) {
      if (g > 0 || chance(3)) s += chance(90) ? "_" : piece(kSeparators);
      const std::size_t n = chance(2) ? 1000 + below(1200) : 1 + below(6);
      for (std::size_t i = 0; i < n; ++i) s += chance(85) ? std::string(1, char('0' + below(10))) : piece(kDigits);
    }
    if (chance(5)) s += "_";
    if (chance(30)) s += piece(kSpaces);
    if (chance(8)) {
      std::size_t at = below(s.size() + 1);
      while (at < s.size() && (static_cast<unsigned char>(s[at]) & 0xC0) == 0x80) --at;  // code point boundary
      s.insert(at, piece(kJunk));
    }
    return s;
  }

 private:
  std::size_t below(std::size_t n) { return std::uniform_int_distribution<std::size_t>(0, n - 1)(rng_); }
  bool chance(int p) { return below(100) < static_cast<std::size_t>(p); }
  template <std::size_t N>
  std::string piece(const std::string_view (&arr)[N]) { return std::string(arr[below(N)]); }

  static constexpr std::string_view kSpaces[] = {" ", "\t", "\n", "\v", "\f", "\r", "\x1c", "\x1f", "\xc2\x85",
                                                 "\xc2\xa0", "\xe3\x80\x80", "\xe2\x80\xa8", "\xe2\x80\x8b",
                                                 "\xe1\x9a\x80", "  \t", "\xef\xbb\xbf"};
  static constexpr std::string_view kSigns[] = {"+", "-", "--", "+-", "-_", "\xe2\x88\x92"};
  static constexpr std::string_view kSeparators[] = {"__", " ", ",", ".", "'"};
  static constexpr std::string_view kDigits[] = {"\xd9\xa0", "\xd9\xa9", "\xef\xbc\x95", "\xf0\x9d\x9f\x8e",
                                                 "\xe0\xa5\xa7", "\xdf\x80", "\xc2\xb2", "\xe2\x91\xa0",
                                                 "\xe4\xb8\x80", "\xf0\x9e\xa5\x99", "\xe1\xa0\x91"};
  static constexpr std::string_view kJunk[] = {std::string_view("\0", 1), "x", "e5", ".0", "0x", "\xed\xa0\x80",
                                               "'", "\"", "\\", "\x7f", "\xc3\xa9", "j"};
  std::mt19937_64 rng_;
};

TEST(IntOfStr, RandomStringsMatchPython) {
  std::vector<std::string> texts = {"0", "-0", "+0", "007", "1_000", "_1", "1_", "1__0", "+_1", "", " ", std::string("\x1c") + "1",
                                    "\v1\f", std::string("\xc2\xa0") + "1\xe3\x80\x80", "\xd9\xa1\xd9\xa2", "1\xc2\xb2",
                                    std::string("1\0", 2), std::string(4300, '9'), std::string(4301, '9'),
                                    "-" + std::string(4301, '9'), std::string(4301, '0'), std::string(4301, '1') + "x",
                                    "x" + std::string(4301, '1'), std::string(4301, '1') + "__1",
                                    std::string(4301, '1') + "_", " " + std::string(4300, '1') + "_1 ",
                                    std::string(300, 'a'), std::string(199, 'a') + "\xc3\xa9\xc3\xa9",
                                    std::string(198, 'a') + "'", "9223372036854775808", "-9223372036854775809"};
  IntStringGen gen(99);
  for (int i = 0; i < 3000; ++i) texts.push_back(gen.next());
  std::vector<std::string> requests;
  requests.reserve(texts.size());
  for (const auto& t : texts) requests.push_back("int " + hex_arg(t));
  const auto answers = ask_oracle(kOracle, requests);
  int mismatches = 0, ok = 0;
  for (std::size_t i = 0; i < texts.size() && i < answers.size(); ++i) {
    const std::string expected = from_hex_arg(answers[i]);
    const std::string ours = outcome(to_int(json::Value::from_string(texts[i])));
    ok += expected.rfind("ok ", 0) == 0;
    if (ours != expected && ++mismatches <= 10)
      ADD_FAILURE() << hex_arg(texts[i]).substr(0, 200) << "\n  python: " << expected.substr(0, 300)
                    << "\n  ours:   " << ours.substr(0, 300);
  }
  EXPECT_EQ(mismatches, 0);
  EXPECT_GT(ok, 300) << "generator should produce valid literals too";
}

TEST(IntOfJson, EveryValueKindMatchesPython) {
  std::vector<std::string> docs = {"true", "false", "null", "[]", "{}", "[1]", "{\"a\":1}", "0", "-0", "12",
                                   "-12", "123456789012345678901234567890", "-0.0", "0.5", "-0.5", "1.9999",
                                   "-2.5", "1e16", "1e300", "-1e300", "1.7976931348623157e308", "5e-324",
                                   "9007199254740993.0", "NaN", "Infinity", "-Infinity", "1e400", "\"16\"",
                                   "\" 16 \"", "\"16.0\"", "\"\"", "\"\\u0661\\u0666\"", "\"\\ud800\"",
                                   "\"\\u0000\"", "\"1\\u00002\""};
  std::mt19937_64 rng(5);
  for (int i = 0; i < 1000; ++i) {
    double d = std::ldexp(std::uniform_real_distribution<double>(-1, 1)(rng),
                          std::uniform_int_distribution<int>(-30, 1030)(rng));
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.17g", d);
    std::string lit = buf;
    if (lit.find_first_of(".eEn") == std::string::npos) lit += ".0";
    if (lit.find("inf") != std::string::npos || lit.find("nan") != std::string::npos) continue;
    docs.push_back(lit);
    docs.push_back(std::to_string(static_cast<long long>(rng() >> std::uniform_int_distribution<int>(0, 63)(rng))));
  }
  std::vector<std::string> requests;
  requests.reserve(docs.size());
  for (const auto& d : docs) requests.push_back("int_json " + hex_arg(d));
  const auto answers = ask_oracle(kOracle, requests);
  int mismatches = 0;
  for (std::size_t i = 0; i < docs.size() && i < answers.size(); ++i) {
    const auto parsed = json::loads_str(docs[i]);
    ASSERT_TRUE(parsed.ok()) << docs[i];
    const std::string expected = from_hex_arg(answers[i]);
    const std::string ours = outcome(to_int(*parsed));
    if (ours != expected && ++mismatches <= 10)
      ADD_FAILURE() << docs[i] << "\n  python: " << expected << "\n  ours:   " << ours;
  }
  EXPECT_EQ(mismatches, 0);
}

TEST(BigInt, CompareAndNarrow) {
  long long v = 0;
  EXPECT_TRUE(BigInt{"-9223372036854775808"}.to_i64(v));
  EXPECT_EQ(v, INT64_MIN);
  EXPECT_FALSE(BigInt{"9223372036854775808"}.to_i64(v));
  EXPECT_GT(BigInt{"9223372036854775808"}.compare(INT64_MAX), 0);
  EXPECT_LT(BigInt{"-9223372036854775809"}.compare(INT64_MIN), 0);
  EXPECT_EQ(BigInt{"16"}.compare(16), 0);
  EXPECT_LT(BigInt{"3"}.compare(4), 0);
  EXPECT_TRUE(BigInt{"-3"}.negative());
  EXPECT_FALSE(BigInt{"0"}.negative());
}

// int(d.get(key, absent)): the default when the key is absent, else int() of the value (hand-derived:
// int(" 7 ") == 7, int(True) == 1, int(2.9) == 2, int(None) raises TypeError).
TEST(BigInt, ToIntOrUsesTheDefaultOnlyWhenAbsent) {
  EXPECT_EQ(to_int_or(nullptr, 16)->text, "16");
  EXPECT_EQ(to_int_or(nullptr, -3)->text, "-3");
  EXPECT_EQ(to_int_or(nullptr, INT64_MIN)->text, "-9223372036854775808");
  const json::Value str = json::Value::from_string(" 7 ");
  EXPECT_EQ(to_int_or(&str, 16)->text, "7");
  const json::Value yes = json::Value::from_bool(true);
  EXPECT_EQ(to_int_or(&yes, 16)->text, "1");
  const json::Value f = json::Value::from_float(2.9);
  EXPECT_EQ(to_int_or(&f, 16)->text, "2");
  const json::Value none = json::Value::null();
  ASSERT_FALSE(to_int_or(&none, 16).ok());
  EXPECT_EQ(to_int_or(&none, 16).error().kind, ErrorKind::PyIntBadType);
}

}  // namespace
}  // namespace w4a8::py
