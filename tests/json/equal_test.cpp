// py_equal against Python's == on json-loaded values: int/float/bool mixing, exactness past 2**53,
// NaN at the top level and inside containers, key order, nesting.
#include "json/value.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "json/parse.hpp"
#include "support/python.hpp"

namespace w4a8::json {
namespace {

using testing::ask_oracle;
using testing::hex_arg;

const std::string kOracle = testing::source_path("tests/json/json_oracle.py");

class PairGen {
 public:
  explicit PairGen(std::uint64_t seed) : rng_(seed) {}

  // A scalar drawn from values that are pairwise equal across types in Python.
  std::string scalar() {
    static constexpr const char* kScalars[] = {
        "0", "-0", "0.0", "-0.0", "false", "1", "1.0", "true", "2", "2.0", "16", "16.0", "1.6e1",
        "9007199254740992", "9007199254740993", "9007199254740992.0", "9007199254740993.0", "1e16",
        "10000000000000000", "10000000000000001", "1e400", "Infinity", "-Infinity", "-1e400", "NaN",
        "null", "\"\"", "\"a\"", "\"A\"", "\"\\u0061\"", "\"\\ud800\"", "\"\\ud83d\\ude00\"", "\"1\"",
        "0.5", "5e-1", "123456789012345678901234567890", "1.2345678901234568e+29",
        "123456789012345677877719597056", "[]", "{}"};
    return kScalars[rng_() % std::size(kScalars)];
  }

  std::string value(int depth) {
    const auto k = rng_() % (depth > 0 ? 5 : 3);
    if (k < 3) return scalar();
    std::string out;
    const auto n = rng_() % 4;
    if (k == 3) {
      out = "[";
      for (std::size_t i = 0; i < n; ++i) out += (i ? "," : "") + value(depth - 1);
      return out + "]";
    }
    out = "{";
    for (std::size_t i = 0; i < n; ++i) out += (i ? ",\"" : "\"") + std::string(1, char('a' + rng_() % 3)) + "\":" + value(depth - 1);
    return out + "}";
  }

  // b: a copy of a with keys shuffled or one leaf swapped for an (often equal) other scalar.
  std::pair<std::string, std::string> pair() {
    const std::string a = value(3);
    if (rng_() % 4 == 0) return {a, value(3)};
    const auto parsed = loads_str(a);
    Value v = *parsed;
    tweak(v);
    return {a, dump_simple(v)};
  }

 private:
  void tweak(Value& v) {
    if (v.kind == Kind::Object && !v.members.empty() && rng_() % 2) {
      std::shuffle(v.members.begin(), v.members.end(), rng_);
      return;
    }
    if (v.kind == Kind::Array && !v.items.empty()) return tweak(v.items[rng_() % v.items.size()]);
    if (v.kind == Kind::Object && !v.members.empty()) return tweak(v.members[rng_() % v.members.size()].second);
    v = *loads_str(scalar());
  }

  // A re-serialisation that needs nothing from the code under test beyond the value tree.
  static std::string dump_simple(const Value& v) {
    switch (v.kind) {
      case Kind::Null: return "null";
      case Kind::Bool: return v.boolean ? "true" : "false";
      case Kind::Int: return v.text;
      case Kind::Float: {
        if (v.number != v.number) return "NaN";
        if (std::isinf(v.number)) return v.number > 0 ? "Infinity" : "-Infinity";
        char buf[40];
        std::snprintf(buf, sizeof buf, "%.17e", v.number);
        return buf;
      }
      case Kind::String: {
        std::string out = "\"";
        for (unsigned char c : v.text) {
          if (c == '"' || c == '\\') out += '\\';
          out += static_cast<char>(c);
        }
        return out + "\"";
      }
      case Kind::Array: {
        std::string out = "[";
        for (std::size_t i = 0; i < v.items.size(); ++i) out += (i ? "," : "") + dump_simple(v.items[i]);
        return out + "]";
      }
      case Kind::Object: {
        std::string out = "{";
        for (std::size_t i = 0; i < v.members.size(); ++i)
          out += (i ? "," : "") + dump_simple(Value::from_string(v.members[i].first)) + ":" + dump_simple(v.members[i].second);
        return out + "}";
      }
    }
    return "null";
  }

  std::mt19937_64 rng_;
};

TEST(PyEqual, RandomPairsMatchPython) {
  PairGen gen(17);
  std::vector<std::pair<std::string, std::string>> pairs = {
      {"NaN", "NaN"}, {"[NaN]", "[NaN]"}, {"{\"a\":NaN}", "{\"a\":NaN}"}, {"{\"a\":[NaN]}", "{\"a\":[NaN]}"},
      {"9007199254740993", "9007199254740992.0"}, {"1", "true"}, {"0", "false"}, {"-0.0", "0"},
      {"{\"a\":1,\"b\":2}", "{\"b\":2,\"a\":1}"}, {"{\"a\":1}", "{\"a\":1,\"b\":2}"}, {"[1,2]", "[2,1]"},
      {"\"\\ud83d\\ude00\"", "\"\xed\xa0\xbd\xed\xb8\x80\""}, {"1e400", "Infinity"}, {"[]", "{}"}, {"null", "0"}};
  pairs.reserve(pairs.size() + 3000);
  for (int i = 0; i < 3000; ++i) pairs.push_back(gen.pair());
  // Each pair asked twice: == (py_equal), then repr(a) == repr(b) (identical).
  std::vector<std::string> requests;
  requests.reserve(2 * pairs.size());
  for (const char* op : {"eq ", "same "})
    for (const auto& [a, b] : pairs) requests.push_back(op + hex_arg(a) + " " + hex_arg(b));
  const auto answers = ask_oracle(kOracle, requests);
  ASSERT_EQ(answers.size(), requests.size());
  int mismatches = 0, equal = 0, same = 0;
  for (std::size_t i = 0; i < pairs.size(); ++i) {
    const auto a = loads_str(pairs[i].first), b = loads_str(pairs[i].second);
    ASSERT_TRUE(a.ok() && b.ok()) << pairs[i].first << " / " << pairs[i].second;
    const std::string ours = py_equal(*a, *b) ? "1" : "0", ours_same = identical(*a, *b) ? "1" : "0";
    const std::string& theirs_same = answers[pairs.size() + i];
    equal += answers[i] == "1";
    same += theirs_same == "1";
    if (ours != answers[i] && ++mismatches <= 10)
      ADD_FAILURE() << pairs[i].first << " == " << pairs[i].second << ": python " << answers[i] << " ours " << ours;
    if (ours_same != theirs_same && ++mismatches <= 10)
      ADD_FAILURE() << "identical(" << pairs[i].first << ", " << pairs[i].second << "): python repr "
                    << theirs_same << " ours " << ours_same;
  }
  EXPECT_EQ(mismatches, 0);
  EXPECT_GT(equal, 300);
  EXPECT_LT(equal, static_cast<int>(pairs.size()) - 300);
  EXPECT_GT(same, 100);  // both answers occur often
  EXPECT_LT(same, equal);
}

TEST(PyEqual, LargeObjectsCompareByKey) {
  Value a = Value::object(), b = Value::object();
  for (int i = 0; i < 1000; ++i) a.set("k" + std::to_string(i), Value::from_int(i));
  for (int i = 999; i >= 0; --i) b.set("k" + std::to_string(i), Value::from_float(i));
  EXPECT_TRUE(py_equal(a, b));
  b.set("k500", Value::from_float(500.5));
  EXPECT_FALSE(py_equal(a, b));
}

// identical(): what the validator shares markers by. Stricter than ==: kinds, float bits and
// member order count.
TEST(Identical, KindsBitsAndOrderCount) {
  const auto v = [](const char* text) {
    auto r = loads_str(text);
    EXPECT_TRUE(r.ok()) << text;
    return std::move(r).value();
  };
  const auto same = [&](const char* a, const char* b) { return identical(v(a), v(b)); };
  EXPECT_TRUE(same("{}", "{ }"));
  EXPECT_TRUE(same(R"({"a": 1, "b": [1.5, null, "x"]})", R"({"a":1,"b":[15e-1,null,"\u0078"]})"));
  EXPECT_TRUE(same("NaN", "NaN"));
  EXPECT_TRUE(same("[NaN]", "[NaN]"));
  EXPECT_TRUE(same("1e400", "Infinity"));
  EXPECT_TRUE(same(R"({"a": {"b": {}}})", R"({"a": {"b": {}}})"));
  EXPECT_FALSE(same("1", "1.0"));    // == in Python, but repr differs
  EXPECT_FALSE(same("1", "true"));
  EXPECT_FALSE(same("0.0", "-0.0"));
  EXPECT_FALSE(same("null", "{}"));
  EXPECT_FALSE(same("[]", "{}"));
  EXPECT_FALSE(same(R"("1")", "1"));
  EXPECT_FALSE(same(R"({"a": 1, "b": 2})", R"({"b": 2, "a": 1})"));
  EXPECT_FALSE(same(R"({"a": 1})", R"({"a": 1, "b": 2})"));
  EXPECT_FALSE(same(R"({"a": 1})", R"({"b": 1})"));
  EXPECT_FALSE(same("[1, 2]", "[1]"));
  EXPECT_FALSE(same("[1, [2]]", "[1, [3]]"));
  EXPECT_FALSE(same(R"({"a": {"b": 1}})", R"({"a": {"b": 1.0}})"));
  EXPECT_FALSE(same(R"("\ud800")", R"("\ud801")"));
  EXPECT_FALSE(same("false", "true"));
}

}  // namespace
}  // namespace w4a8::json
