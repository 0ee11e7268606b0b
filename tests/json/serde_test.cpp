// parse_serde against the safetensors crate itself (PyPI `safetensors`, serde_json inside): a value
// V is wrapped as the header {"x": V}; the crate buffers every value through serde before typing
// it, so "JSON accepted" is visible as a type error and "JSON rejected" as a serde syntax error.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "doc_gen.hpp"
#include "json/parse.hpp"
#include "support/python.hpp"

namespace w4a8::json {
namespace {

using testing::ask_oracle;
using testing::DocGen;
using testing::hex_arg;

const std::string kOracle = testing::source_path("tests/json/json_oracle.py");
const std::string kTensor = "{\"dtype\":\"F32\",\"shape\":[0],\"data_offsets\":[0,0]}";

std::string ours(const std::string& header) {
  const auto r = parse_serde(header);
  if (r.ok()) return "parsed";
  // The crate types the map before serde checks for trailing bytes, so {"x": V} with V not a
  // tensor reports a type error first: the JSON up to its end was accepted.
  if (r.error().detail == "extra data" && header.find(kTensor) == std::string::npos) return "parsed";
  return r.error().failure == ParseFailure::Unicode ? "unicode" : "error";
}

int run(const std::vector<std::string>& headers, int* parsed = nullptr) {
  std::vector<std::string> requests;
  requests.reserve(headers.size());
  for (const auto& h : headers) requests.push_back("serde " + hex_arg(h));
  const auto answers = ask_oracle(kOracle, requests);
  int mismatches = 0;
  for (std::size_t i = 0; i < headers.size() && i < answers.size(); ++i) {
    if (parsed != nullptr) *parsed += answers[i] == "parsed";
    if (ours(headers[i]) != answers[i] && ++mismatches <= 20)
      ADD_FAILURE() << hex_arg(headers[i]).substr(0, 400) << " = " << headers[i].substr(0, 200)
                    << "\n  crate: " << answers[i] << "  ours: " << ours(headers[i]);
  }
  return mismatches;
}

TEST(SerdeOracle, EdgeValues) {
  const std::vector<std::string> values = {
      "null", "true", "false", "NaN", "Infinity", "-Infinity", "0", "-0", "01", "-01", "1.", ".5", "1e", "1e+",
      "1.5e3", "1E-3", "-", "+1", "18446744073709551615", "18446744073709551616", "-9223372036854775808",
      "-9223372036854775809", "-18446744073709551616", "1" + std::string(308, '0'), "1" + std::string(309, '0'),
      "1e308", "1e309", "1.7976931348623157e308", "1.7976931348623158e308", "1.7976931348623159e308",
      "179769313486231570000e288", "0.1e310", "1e-400", "0e999999999999", "1e999999999999", "-1e999999999999",
      "0.0000000000000000000000000000001e330", "123456789012345678901234567890e280", "4.9e-324",
      "\"\"", "\"\\u0000\"", "\"\\ud83d\\ude00\"", "\"\\ud83d\"", "\"\\ude00\"", "\"\\ud83d\\u0041\"",
      "\"\\ud83d\\\"", "\"\\x\"", "\"\\u12\"", "\"\x01\"", "\"\x7f\"", "\"\xc3\xa9\"", "\"\xed\xa0\x80\"",
      "\"\xff\"", "[]", "[1,]", "[,]", "[1 2]", "{}", "{\"a\":1,}", "{\"a\":1,\"a\":2}", "{1:1}", "{\"a\"}",
      "[1e400]", "{\"a\":[-1e400]}", "[1,1e400,]", "[1,]1e400"};
  std::vector<std::string> headers;
  headers.reserve(values.size() + 2 * 16 + 3 * 12);
  for (const auto& v : values) headers.push_back("{\"x\":" + v + "}");
  // serde_json's recursion limit: the wrapper object is depth 1.
  for (int depth = 120; depth <= 135; ++depth) {
    headers.push_back("{\"x\":" + std::string(depth, '[') + std::string(depth, ']') + "}");
    std::string obj;
    for (int i = 0; i < depth; ++i) obj += "{\"a\":";
    headers.push_back("{\"x\":" + obj + "1" + std::string(depth, '}') + "}");
  }
  // Whitespace and trailing bytes around a valid header.
  for (const std::string& ws : std::vector<std::string>{"", " ", "\t", "\n", "\r", "\f", "\v", "\xc2\xa0", "\xef\xbb\xbf", std::string("\0", 1), "x", "{}"}) {
    headers.push_back(std::string(ws).append("{\"x\":").append(kTensor).append("}"));
    headers.push_back(std::string("{\"x\":").append(kTensor).append("}").append(ws));
    headers.push_back(std::string("{\"x\"").append(ws).append(":").append(kTensor).append("}"));
  }
  int parsed = 0;
  EXPECT_EQ(run(headers, &parsed), 0) << headers.size() << " headers";
  EXPECT_GT(parsed, 20);
}

TEST(SerdeOracle, RandomValues) {
  DocGen gen(31337);
  std::vector<std::string> headers;
  for (int i = 0; i < 2000; ++i) {
    std::string v = gen.document(gen.chance(10) ? 6 : 3);
    if (gen.chance(20)) v = gen.mutate(v);
    headers.push_back("{\"x\":" + v + "}");
  }
  int parsed = 0;
  EXPECT_EQ(run(headers, &parsed), 0) << headers.size() << " headers";
  EXPECT_GT(parsed, 300);
}

// serde_json's own f64 path decides "number out of range": mantissas of every length with
// exponents around the overflow edge, long integers, tiny values.
TEST(SerdeOracle, NumbersNearTheRangeEdge) {
  DocGen gen(4242);
  std::vector<std::string> headers;
  for (int i = 0; i < 1500; ++i) {
    std::string lit = gen.chance(30) ? "-" : "";
    const std::size_t n = 1 + gen.below(gen.chance(30) ? 40 : 21);
    lit += static_cast<char>('1' + gen.below(9));
    for (std::size_t k = 1; k < n; ++k) lit += static_cast<char>('0' + gen.below(10));
    if (gen.chance(50)) lit.insert(1 + gen.below(lit.size() - (lit[0] == '-' ? 1 : 0)) + (lit[0] == '-'), ".");
    if (lit.back() == '.') lit += '7';
    const std::size_t int_digits = lit.find('.') == std::string::npos ? n : lit.find('.') - (lit[0] == '-');
    if (gen.chance(80)) lit += "e" + std::to_string(static_cast<int>(308 - int_digits) + static_cast<int>(gen.below(5)) - 1);
    else if (gen.chance(50)) lit += "e-" + std::to_string(300 + gen.below(40));
    headers.push_back("{\"x\":" + lit + "}");
  }
  int parsed = 0;
  EXPECT_EQ(run(headers, &parsed), 0) << headers.size() << " headers";
  EXPECT_GT(parsed, 300);
  EXPECT_LT(parsed, 1200);
}

TEST(SerdeContract, KeepsDuplicateKeysAndLiteralText) {
  const auto r = parse_serde("{\"a\":-0,\"b\":1.50,\"a\":18446744073709551616}");
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r->members.size(), 3u);
  EXPECT_EQ(r->members[0].second.text, "-0");
  EXPECT_EQ(r->members[0].second.kind, Kind::Int);
  EXPECT_EQ(r->members[1].second.text, "1.50");
  EXPECT_EQ(r->members[1].second.kind, Kind::Float);
  EXPECT_EQ(r->members[2].first, "a");
  EXPECT_EQ(r->members[2].second.text, "18446744073709551616");
}

TEST(SerdeContract, DepthLimit) {
  EXPECT_TRUE(parse_serde(std::string(127, '[') + std::string(127, ']')).ok());
  const auto deep = parse_serde(std::string(128, '[') + std::string(128, ']'));
  ASSERT_FALSE(deep.ok());
  EXPECT_EQ(deep.error().failure, ParseFailure::TooDeep);
}

// Strings long enough that the decoding buffer is sized for the rest of the string at once
// (serde_reader.cpp: past 8 MiB, from the closing quote found ahead) instead of doubling: each is
// built from pieces whose decoded bytes are known, with runs of backslashes right before quotes,
// which the scan for the closing quote must count.
TEST(SerdeContract, LongEscapedStringsDecodeExactly) {
  struct Piece {
    const char* raw;
    const char* decoded;
  };
  const Piece pieces[] = {{"\\\"", "\""},         {"\\\\", "\\"},          {"\\\\\\\"", "\\\""},
                          {"\\\\\\\\", "\\\\"},  {"\\/", "/"},            {"\\n", "\n"},
                          {"\\u00e9", "\xC3\xA9"}, {"\\ud83d\\ude00", "\xF0\x9F\x98\x80"}, {"\xC3\xA9", "\xC3\xA9"}};
  std::mt19937 rng(7);
  for (const std::size_t target : {std::size_t{9} << 20, std::size_t{21} << 20}) {
    std::string raw, want;
    std::size_t boundary = 0;  // a place between pieces near the end
    while (raw.size() < target) {
      if (boundary == 0 && raw.size() + 1000 > target) boundary = raw.size();
      const std::size_t plain = rng() % 40;
      for (std::size_t k = 0; k < plain; ++k) {
        const char c = static_cast<char>('a' + rng() % 26);
        raw += c;
        want += c;
      }
      const Piece& p = pieces[rng() % std::size(pieces)];
      raw += p.raw;
      want += p.decoded;
    }
    raw += "\\\\";  // an escaped backslash right before the closing quote
    want += "\\";
    const auto r = parse_serde("{\"x\":\"" + raw + "\",\"y\":\"\\\"\"}");
    ASSERT_TRUE(r.ok()) << target;
    ASSERT_EQ(r->members.size(), 2u);
    EXPECT_TRUE(r->members[0].second.text == want) << target;  // (not printed: megabytes)
    EXPECT_EQ(r->members[1].second.text, "\"");

    // Unterminated, and a control byte far in: the same errors as a short string gives.
    const auto cut = parse_serde("{\"x\":\"" + raw);
    ASSERT_FALSE(cut.ok());
    EXPECT_EQ(cut.error().serde_message, parse_serde("{\"x\":\"a\\\"").error().serde_message);
    std::string bad = raw;
    bad.insert(boundary, 1, '\x01');
    const auto ctl = parse_serde("{\"x\":\"" + bad + "\"}");
    ASSERT_FALSE(ctl.ok());
    EXPECT_EQ(ctl.error().serde_message, parse_serde("{\"x\":\"a\\n\x01\"}").error().serde_message);
  }
}

}  // namespace
}  // namespace w4a8::json
