// The flat-object fast path (json/flat_object.hpp) against the general parser on the same text:
// whenever the fast path answers, the value is the general parser's, member for member (kind,
// text, boolean, order); and it declines everything outside its shape. Inputs: generated markers,
// then byte edits of them (JSON-significant bytes, deletions, duplications), so both sides of every
// boundary of the shape are reached.
#include <gtest/gtest.h>

#include <cstdlib>
#include <random>
#include <string>

#include "json/flat_object.hpp"
#include "json/parse.hpp"

namespace w4a8::json {
namespace {

// Structural identity (stricter than py_equal: 1 and true differ, member order counts).
bool same(const Value& a, const Value& b) {
  if (a.kind != b.kind || a.boolean != b.boolean || a.text != b.text || a.items.size() != b.items.size() ||
      a.members.size() != b.members.size())
    return false;
  if (a.kind == Kind::Float && !(a.number == b.number || (a.number != a.number && b.number != b.number))) return false;
  for (std::size_t i = 0; i < a.items.size(); ++i)
    if (!same(a.items[i], b.items[i])) return false;
  for (std::size_t i = 0; i < a.members.size(); ++i)
    if (a.members[i].first != b.members[i].first || !same(a.members[i].second, b.members[i].second)) return false;
  return true;
}

std::string random_marker(std::mt19937_64& rng) {
  static const char* const kKeys[] = {"format", "group_size", "convrot", "convrot_groupsize", "bits", "x", "", "a b"};
  static const char* const kValues[] = {"\"asym_w4a8_int8\"", "64", "16", "-3", "0", "-0", "true", "false", "null",
                                        "\"\"", "12345678901234567890123", "\"float8_e4m3fn\"", "1.5", "1e3", "[1]",
                                        "{}", "NaN", "\"\\u00e9\"", "\"caf\xc3\xa9\""};
  static const char* const kWs[] = {"", " ", "  ", "\n", "\t", "\r\n"};
  auto ws = [&] { return std::string(kWs[rng() % std::size(kWs)]); };
  std::string s = ws() + "{" + ws();
  const std::size_t n = rng() % 6;
  for (std::size_t i = 0; i < n; ++i) {
    if (i) s += "," + ws();
    s += std::string("\"") + kKeys[rng() % std::size(kKeys)] + "\"" + ws() + ":" + ws() + kValues[rng() % std::size(kValues)] + ws();
  }
  return s + "}" + ws();
}

std::string edit(std::mt19937_64& rng, std::string s) {
  static const std::string_view kBytes[] = {"\"", "{", "}", "[", "]", ",", ":", "\\", "0", "-", "1", ".", "e", " ",
                                            "\n", "t", "n", "\x01", "\x7f", "\xc3\xa9", "\x00"};
  const std::size_t at = rng() % (s.size() + 1);
  switch (rng() % 3) {
    case 0: s.insert(at, kBytes[rng() % std::size(kBytes)]); break;
    case 1: s.erase(at, 1 + rng() % 3); break;
    default: s.insert(at, s.substr(at, rng() % 8)); break;
  }
  return s;
}

TEST(JsonFlatObject, AgreesWithTheGeneralParser) {
  const char* env = std::getenv("W4A8_FLAT_CASES");
  const std::size_t count = env && *env ? std::strtoull(env, nullptr, 10) : 200000;
  std::mt19937_64 rng(0xF1A7);
  std::size_t answered = 0, declined = 0;
  for (std::size_t i = 0; i < count; ++i) {
    std::string text = random_marker(rng);
    for (std::size_t k = rng() % 3; k > 0; --k) text = edit(rng, text);
    const auto flat = loads_flat_object(text);
    if (!flat) {
      ++declined;
      continue;
    }
    ++answered;
    const ParseResult general = detail::loads_general(text);
    ASSERT_TRUE(general.ok()) << "fast path accepted what the parser rejects: " << text;
    ASSERT_TRUE(same(*flat, *general)) << text;
    // The public entry points answer the same (loads_bytes reads the same bytes as UTF-8).
    const auto b = loads_bytes({reinterpret_cast<const std::uint8_t*>(text.data()), text.size()});
    ASSERT_TRUE(b.ok() && same(*b, *general)) << text;
  }
  std::printf("flat object fast path: %zu answered, %zu declined\n", answered, declined);
  EXPECT_GT(answered, count / 10);
  EXPECT_GT(declined, count / 10);
}

TEST(JsonFlatObject, HandPickedBoundaries) {
  const std::string accepted[] = {"{}", " { } ", "{\"a\":1}", "{\"a\": -0}", "{\"a\":\"\"}", "{\"\":null}",
                                  "{\"format\": \"asym_w4a8_int8\", \"group_size\": 64, \"convrot\": true}"};
  for (const auto& t : accepted) {
    const auto flat = loads_flat_object(t);
    ASSERT_TRUE(flat.has_value()) << t;
    EXPECT_TRUE(same(*flat, *detail::loads_general(t))) << t;
  }
  EXPECT_EQ(loads_flat_object("{\"a\": -0}")->members[0].second.text, "0");
  const std::string declined[] = {"", "[]", "{", "{\"a\":1,}", "{\"a\":1,\"a\":2}", "{\"a\":01}", "{\"a\":1.0}",
                                  "{\"a\":1e2}", "{\"a\":NaN}", "{\"a\":-Infinity}", "{\"a\":[1]}", "{\"a\":{}}",
                                  "{\"a\\u0062\":1}", "{\"\xc3\xa9\":1}", "{\"a\":\"\x01\"}", "{\"a\":1} x",
                                  std::string("{\"a\":1}\0", 8), "{\"a\":-}", "{\"a\":tru}", "\xef\xbb\xbf{}"};
  for (const auto& t : declined) EXPECT_FALSE(loads_flat_object(t).has_value()) << t;
  std::string many = "{";
  for (std::size_t i = 0; i <= kFlatMembers; ++i) many += (i ? ",\"k" : "\"k") + std::to_string(i) + "\":1";
  EXPECT_FALSE(loads_flat_object(many + "}").has_value());  // more members than the fast path holds
  EXPECT_TRUE(loads_str(many + "}").ok());
}

TEST(JsonFlatObject, SpareRoomIsRoomOnly) {
  const std::string t = "{\"format\": \"asym_w4a8_int8\", \"group_size\": 64}";
  const auto plain = loads_flat_object(t);
  const auto roomy = loads_flat_object(t, 2);
  ASSERT_TRUE(plain && roomy);
  EXPECT_TRUE(same(*plain, *roomy));
  EXPECT_GE(roomy->members.capacity(), 4u);
  const auto b = loads_bytes({reinterpret_cast<const std::uint8_t*>(t.data()), t.size()}, 2);
  ASSERT_TRUE(b.ok());
  EXPECT_GE(b->members.capacity(), 4u);
}

}  // namespace
}  // namespace w4a8::json
