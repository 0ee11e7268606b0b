// Number text against CPython: repr(float), float(literal), int(float), and json.dumps's output.
#include "json/number.hpp"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "json/dump.hpp"
#include "support/python.hpp"

namespace w4a8::json {
namespace {

using testing::ask_oracle;
using testing::hex_arg;

const std::string kOracle = testing::source_path("tests/json/json_oracle.py");

std::string le_bytes(double d) {
  std::string b(8, '\0');
  std::memcpy(b.data(), &d, 8);  // the oracle unpacks '<d' (this host is little-endian)
  static_assert(std::endian::native == std::endian::little);
  return b;
}

// Doubles that stress shortest-repr and the fixed/exponent switch: random bit patterns, powers of
// ten and their neighbours, integers near 2^53, subnormals.
std::vector<double> interesting_doubles() {
  std::vector<double> v = {0.0, -0.0, 1.0, -1.0, 0.1, 0.2, 0.3, 1e16, 1e15, 9999999999999998.0, 1e17, 1e-4, 1e-5,
                           0.00011, 123456789012345678.0, 5e-324, -5e-324, 2.2250738585072014e-308,
                           1.7976931348623157e308, 9007199254740992.0, 9007199254740993.0, 0.5, 1.5, 2.5, 100.0,
                           1e22, 1e23, 4.35, 0.1 + 0.2, 1.0 / 3.0};
  std::mt19937_64 rng(3);
  for (int e = -330; e <= 310; ++e) {
    const double p = std::pow(10.0, e);
    v.push_back(p);
    v.push_back(std::nextafter(p, 0.0));
    v.push_back(std::nextafter(p, INFINITY));
  }
  for (int i = 0; i < 3000; ++i) {
    double d = std::bit_cast<double>(rng());
    if (std::isfinite(d)) v.push_back(d);
    v.push_back(static_cast<double>(static_cast<std::int64_t>(rng() >> (rng() % 64))));
    v.push_back(std::ldexp(static_cast<double>(rng() >> 11), -static_cast<int>(rng() % 60)));
  }
  return v;
}

TEST(PyFloatRepr, MatchesPythonRepr) {
  const auto values = interesting_doubles();
  std::vector<std::string> requests;
  for (double d : values) requests.push_back("repr_float " + hex_arg(le_bytes(d)));
  const auto answers = ask_oracle(kOracle, requests);
  int mismatches = 0;
  for (std::size_t i = 0; i < values.size() && i < answers.size(); ++i)
    if (py_float_repr(values[i]) != answers[i] && ++mismatches <= 10)
      ADD_FAILURE() << "python " << answers[i] << " ours " << py_float_repr(values[i]);
  EXPECT_EQ(mismatches, 0) << values.size() << " values";
  EXPECT_EQ(py_float_repr(INFINITY), "inf");
  EXPECT_EQ(py_float_repr(-INFINITY), "-inf");
  EXPECT_EQ(py_float_repr(NAN), "nan");
}

// post of py_float_repr: reading it back gives the same double.
TEST(PyFloatRepr, RoundTrips) {
  for (double d : interesting_doubles()) {
    const double back = float_from_literal(py_float_repr(d));
    EXPECT_TRUE(back == d && std::signbit(back) == std::signbit(d)) << py_float_repr(d);
  }
}

TEST(FloatFromLiteral, MatchesPythonFloat) {
  std::vector<std::string> lits = {"0", "-0", "0.0", "-0.0", "1e400", "-1e400", "1e-400", "-1e-400",
                                   "2.4703282292062328e-324", "2.4703282292062327e-324", "1.7976931348623158e308",
                                   "1.7976931348623159e308", "0e99999999999999999999", "1e-99999999999999999999",
                                   "1" + std::string(400, '0'), "0." + std::string(400, '0') + "1",
                                   "9007199254740993", "123456789012345678901234567890e-30"};
  std::mt19937_64 rng(4);
  for (int i = 0; i < 2000; ++i) {
    std::string lit = (rng() % 2) ? "-" : "";
    const std::size_t digits = 1 + rng() % (rng() % 8 == 0 ? 40 : 18);
    lit += static_cast<char>('1' + rng() % 9);
    for (std::size_t k = 1; k < digits; ++k) lit += static_cast<char>('0' + rng() % 10);
    if (rng() % 2) lit.insert(1 + rng() % lit.size(), ".");
    if (lit.back() == '.' || lit[lit.size() > 1 ? 1 : 0] == '.') lit += "5";
    if (rng() % 2) lit += "e" + std::to_string(static_cast<int>(rng() % 700) - 350);
    lits.push_back(lit);
  }
  std::vector<std::string> requests;
  for (const auto& l : lits) requests.push_back("float " + hex_arg(l));
  const auto answers = ask_oracle(kOracle, requests);
  int mismatches = 0;
  for (std::size_t i = 0; i < lits.size() && i < answers.size(); ++i)
    if (py_float_repr(float_from_literal(lits[i])) != answers[i] && ++mismatches <= 10)
      ADD_FAILURE() << lits[i] << ": python " << answers[i] << " ours " << py_float_repr(float_from_literal(lits[i]));
  EXPECT_EQ(mismatches, 0);
}

TEST(ExactIntegerText, MatchesPythonInt) {
  std::vector<double> values;
  for (double d : interesting_doubles())
    if (std::isfinite(d)) values.push_back(std::trunc(d));
  std::vector<std::string> requests;
  for (double d : values) requests.push_back("exact_int " + hex_arg(le_bytes(d)));
  const auto answers = ask_oracle(kOracle, requests);
  int mismatches = 0;
  for (std::size_t i = 0; i < values.size() && i < answers.size(); ++i)
    if (exact_integer_text(values[i]) != answers[i] && ++mismatches <= 10)
      ADD_FAILURE() << "python " << answers[i] << " ours " << exact_integer_text(values[i]);
  EXPECT_EQ(mismatches, 0);
}

TEST(DumpString, HandCases) {
  EXPECT_EQ(dump_string(""), "\"\"");
  EXPECT_EQ(dump_string("a\"b\\c/"), "\"a\\\"b\\\\c/\"");
  EXPECT_EQ(dump_string("\x7f\x01\t"), "\"\\u007f\\u0001\\t\"");
  EXPECT_EQ(dump_string("\xf0\x9f\x98\x80"), "\"\\ud83d\\ude00\"");
  EXPECT_EQ(dump_string("\xed\xa0\x80"), "\"\\ud800\"");
}

}  // namespace
}  // namespace w4a8::json
