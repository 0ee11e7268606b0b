// Differential tests of loads_str / loads_bytes against CPython's json.loads (the oracle), plus
// hand-derived cases for the contracts in parse.hpp.
#include "json/parse.hpp"

#include <gtest/gtest.h>

#include <cstdio>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "doc_gen.hpp"
#include "json/dump.hpp"
#include "json/flat_layers.hpp"
#include "support/python.hpp"

namespace w4a8::json {
namespace {

using testing::ask_oracle;
using testing::DocGen;
using testing::hex_arg;

std::span<const std::uint8_t> as_bytes(const std::string& s) {
  return {reinterpret_cast<const std::uint8_t*>(s.data()), s.size()};
}

// Our verdict in the oracle's answer format.
std::string verdict(const ParseResult& r) {
  if (r.ok()) return "ok " + dump(*r);
  switch (r.error().failure) {
    case ParseFailure::None: return "None with no value?";
    case ParseFailure::Syntax: return "JSONDecodeError";
    case ParseFailure::Unicode: return "UnicodeDecodeError";
    case ParseFailure::IntTooLong: return "IntTooLong " + std::to_string(r.error().digits);
    case ParseFailure::TooDeep: return std::string("RecursionError ") + (r.error().in_array ? "array" : "object");
  }
  return "?";
}

struct Case {
  bool bytes_mode;
  std::string input;
};

const std::string kOracle = testing::source_path("tests/json/json_oracle.py");

// Which outcome classes a batch reached (a bit each), to prove the generators cover them all.
enum Outcome : unsigned { kOk = 1, kSyntax = 2, kUnicode = 4, kIntTooLong = 8, kTooDeep = 16 };
unsigned outcome_bit(const std::string& answer) {
  if (answer.rfind("ok ", 0) == 0) return kOk;
  if (answer == "JSONDecodeError") return kSyntax;
  if (answer == "UnicodeDecodeError") return kUnicode;
  if (answer.rfind("IntTooLong", 0) == 0) return kIntTooLong;
  if (answer.rfind("RecursionError", 0) == 0) return kTooDeep;
  return 0;
}

// Asks the oracle about every case and compares; returns the number of mismatches.
int run_cases(const std::vector<Case>& cases, unsigned* outcomes = nullptr) {
  std::vector<std::string> requests;
  requests.reserve(cases.size());
  for (const auto& c : cases) requests.push_back((c.bytes_mode ? "loads_bytes " : "loads_str ") + hex_arg(c.input));
  const auto answers = ask_oracle(kOracle, requests);
  int mismatches = 0;
  std::size_t ok_count = 0;
  for (std::size_t i = 0; i < cases.size() && i < answers.size(); ++i) {
    const auto& c = cases[i];
    const std::string ours = verdict(c.bytes_mode ? loads_bytes(as_bytes(c.input)) : loads_str(c.input));
    if (outcomes != nullptr) *outcomes |= outcome_bit(answers[i]);
    ok_count += outcome_bit(answers[i]) == kOk;
    if (ours != answers[i]) {
      if (++mismatches <= 20)
        ADD_FAILURE() << (c.bytes_mode ? "bytes " : "str ") << hex_arg(c.input) << "\n  python: "
                      << answers[i].substr(0, 300) << "\n  ours:   " << ours.substr(0, 300);
    }
  }
  std::printf("[ info     ] %zu cases, %zu parse ok\n", cases.size(), ok_count);
  return mismatches;
}

std::vector<std::string> edge_documents() {
  std::vector<std::string> docs = {
      "", " ", "null", " null ", "\t\n\r null\r\n\t", "\fnull", "\vnull", "null\f", "nul", "nulll",
      "true", "false", "True", "NaN", "-NaN", "Infinity", "-Infinity", "+Infinity", "infinity",
      "[NaN, Infinity, -Infinity]", "{\"a\": NaN}", "0", "-0", "-0.0", "0.0", "01", "-", "--1", "1.",
      ".1", "1e", "1e+", "1e5", "1E+5", "1e-5", "1.5e", "1e400", "-1e400", "1e-400", "-1e-400",
      "[1e400, -1e-400]", "1.7976931348623157e308", "1.7976931348623159e308", "2.4703282292062328e-324",
      "2.4703282292062327e-324", "4.9406564584124654e-324", "9007199254740993", "-9007199254740993",
      "18446744073709551616", "[-0, 0, -0.0]", "0e0", "0e-99999999999999999999", "1e99999999999999999999",
      "\"\"", "\"a\"", "\"\\u0000\"", "\"\\ud83d\\ude00\"", "\"\\ud83d\"", "\"\\ude00\"",
      "\"\\ude00\\ud83d\"", "\"\\ud83d\\ud83d\\ude00\"", "\"\\ud83d\\u0041\"", "\"\\ud83d\\\"",
      "\"\\ud83d\\uDE0\"", "\"\\u\"", "\"\\u123\"", "\"\\u12345\"", "\"\\x41\"", "\"\\'\"", "\"\\/\"",
      "\"a\nb\"", "\"a\tb\"", "\"\x7f\"", "\"\x1f\"", std::string("\"\0\"", 3), "\"\xed\xa0\x80\"",
      "\"\xed\xa0\xbd\xed\xb8\x80\"", "\"\\ud83d\xed\xb8\x80\"", "\"\xef\xbb\xbf\"", "\xef\xbb\xbf{}",
      "\xef\xbb\xbf\xef\xbb\xbf{}", "{}", "[]", "{ }", "[ ]", "[,]", "[1,]", "[1,,2]", "{\"a\":1,}",
      "{,}", "{\"a\" 1}", "{\"a\":}", "{a:1}", "{'a':1}", "{\"a\":1 \"b\":2}", "{1:1}",
      "{\"a\":1,\"a\":2}", "{\"a\":1,\"b\":2,\"a\":3}", "{\"a\":{\"x\":1},\"a\":[2]}",
      "{\"\\u0061\":1,\"a\":2}", "[1] ", "[1] x", "[1]]", "{}}", std::string("{}\0", 3),
      std::string("1\0", 2), "1 2", "\"a\" \"b\"", "[\"a\"\"b\"]", "[1 2]", "[\n]", "[1\n,\n2]",
      "\"\\\"", "\"abc", "[", "{", "[1", "{\"a\"", "{\"a\":", "{\"a\":1", "\xc2\xa0[]", "[]\xc2\xa0",
      "[\"\xe2\x80\xa8\"]", "\"\\u2028\\u2029\"", "\xd9\xa1", "1_000", "0x10", "[01]", "[-]", "[-1e]",
      "{\"a\":-Infinity}", "{\"a\":-Infinityx}", "[Infinityy]", "[NaN1]", "[truefalse]", "[true false]"};
  // 4300 / 4301 digits: Python's int limit; floats have none.
  docs.push_back(std::string(4300, '7'));
  docs.push_back(std::string(4301, '7'));
  docs.push_back("-" + std::string(4301, '7'));
  docs.push_back("[1, " + std::string(4301, '7') + ", x]");
  docs.push_back("[x, " + std::string(4301, '7') + "]");
  docs.push_back("1" + std::string(4300, '0'));
  docs.push_back("1" + std::string(5000, '0') + ".0");
  docs.push_back("0." + std::string(5000, '0') + "1");
  docs.push_back(std::string(4301, '9') + "e-4000");
  docs.push_back("{\"k\": " + std::string(4301, '1') + "}");
  // Deep nesting well inside and well past Python's limit, both container kinds.
  for (int depth : {1, 100, 500, 900}) {
    docs.push_back(std::string(depth, '[') + std::string(depth, ']'));
    std::string obj;
    for (int i = 0; i < depth; ++i) obj += "{\"a\":";
    docs.push_back(obj + "1" + std::string(depth, '}'));
  }
  for (int depth : {1100, 3000, 20000}) {
    docs.push_back(std::string(depth, '['));
    docs.push_back(std::string(depth, '[') + std::string(depth, ']'));
    std::string obj;
    for (int i = 0; i < depth; ++i) obj += "{\"a\":";
    docs.push_back(obj);
    docs.push_back("[" + obj);
    docs.push_back("{\"a\":" + std::string(depth, '['));
  }
  docs.push_back(std::string(50, '[') + "x");
  docs.push_back("[" + std::string(4301, '1') + ", " + std::string(2000, '[') + "]");
  return docs;
}

TEST(ParseOracle, EdgeDocumentsAsStr) {
  std::vector<Case> cases;
  for (const auto& d : edge_documents()) cases.push_back({false, d});
  unsigned outcomes = 0;
  EXPECT_EQ(run_cases(cases, &outcomes), 0) << cases.size() << " cases";
  EXPECT_EQ(outcomes, unsigned{kOk | kSyntax | kIntTooLong | kTooDeep});
}

TEST(ParseOracle, EdgeDocumentsInEveryEncoding) {
  DocGen gen(1);
  std::vector<Case> cases;
  for (const auto& d : edge_documents())
    for (std::size_t enc = 0; enc < 9; ++enc)
      if (d.size() < 3000 || enc % 3 == 0) cases.push_back({true, gen.encode(d, enc)});
  EXPECT_EQ(run_cases(cases), 0) << cases.size() << " cases";
}

// Encoding detection and decoding: every BOM, every zero-byte pattern, lone/paired surrogates,
// odd lengths, out-of-range UTF-32, invalid UTF-8.
TEST(ParseOracle, ByteLevelEncodings) {
  std::vector<std::string> raw = {
      "", "1", "12", "123", std::string("\0", 1), std::string("\0\0", 2), std::string("1\0", 2),
      std::string("\0" "1", 2), std::string("1\0\0", 3), std::string("\0\0\0", 3),
      "\xff\xfe", "\xfe\xff", std::string("\xff\xfe\x00\x00", 4), std::string("\x00\x00\xfe\xff", 4), "\xef\xbb\xbf",
      "\xef\xbb", std::string("\xef\xbb\xbf\xef\xbb\xbf") + "1", "\xed\xa0\x80", "\"\xed\xa0\x80\"", "\"\xed\xa0\"",
      "\"\xed\xa0\x41\"", "\"\xc0\x80\"", "\"\xe0\x80\x80\"", "\"\xf4\x90\x80\x80\"", "\"\xf5\x80\x80\x80\"",
      "\"\x80\"", "\"\xc3\"", "\"\xff\"", "\"\xf0\x9f\x98\"", "[\"\xed\xbf\xbf\"]",
      std::string("\"\0\0\xd8\"\0", 6), std::string("\"\0\0\xdc\"\0", 6), std::string("\"\0\0\xd8\0\xdc\"\0", 8),
      std::string("\"\0\0\xd8\0\xd8\"\0", 8), std::string("\"\0\0\xdc\0\xd8\"\0", 8), std::string("\"\0\0\xd8", 4),
      std::string("\"\0\0\xd8\"", 5), std::string("\0\"\xd8\0\0\"", 6), std::string("\0\"\xdc\0\0\"", 6),
      std::string("\xff\xfe\"\0\0\xd8\"\0", 8), std::string("\xfe\xff\0\"\xd8\0\0\"", 8),
      std::string("\xff\xfe\"\0\0\xd8\"", 7), std::string("1\0\0\0", 4), std::string("1\0\0\0 \0\0", 7),
      std::string("\0\0\0" "1", 4), std::string("\"\0\0\0\0\xd8\0\0\"\0\0\0", 12),
      std::string("\"\0\0\0\0\xdc\0\0\"\0\0\0", 12), std::string("\"\0\0\0\x3d\xd8\0\0\0\xde\0\0\"\0\0\0", 16),
      std::string("\"\0\0\0\0\0\x11\0\"\0\0\0", 12), std::string("\"\0\0\0\xff\xff\xff\xff\"\0\0\0", 12),
      std::string("\xff\xfe\0\0\"\0\0\0\0\xd8\0\0\"\0\0\0", 16),
      std::string("\0\0\xfe\xff\0\0\0\"\0\0\xd8\0\0\0\0\"", 16), std::string("\0\0\xfe\xff\0\0\0" "1", 8),
      std::string("\0\0\xfe\xff\0\0\0" "1\0", 9), std::string("\xff\xfe" "1\0", 4), std::string("\xff\xfe" "1", 3),
      std::string("\xff\xfe\0\0", 4), std::string("\xff\xfe\xff\xfe" "1\0", 6), std::string("1\0" "2", 3),
      std::string("[\0" "1\0]\0", 6), std::string("\0[\0" "1\0]", 6), std::string("[\0\0\0]\0\0\0", 8),
      std::string("\0\0\0[\0\0\0]", 8), std::string(" \0\0\0" "1\0\0\0", 8), std::string(" \0 \0" "1\0", 6)};
  std::vector<Case> cases;
  cases.reserve(std::size(raw));
  for (const auto& r : raw) cases.push_back({true, r});
  unsigned outcomes = 0;
  EXPECT_EQ(run_cases(cases, &outcomes), 0) << cases.size() << " cases";
  EXPECT_EQ(outcomes, unsigned{kOk | kSyntax | kUnicode});
}

// Random documents, valid and broken, as str and in random encodings, plus random byte mutations.
TEST(ParseOracle, RandomDocuments) {
  DocGen gen(20261129);
  std::vector<Case> cases;
  for (int i = 0; i < 2500; ++i) {
    std::string doc = gen.document(gen.chance(10) ? 8 : 4);
    if (gen.chance(20)) doc = gen.mutate(doc);
    cases.push_back({false, doc});
    std::string bytes = gen.encode(doc, gen.below(9));
    if (gen.chance(15)) bytes = gen.mutate(bytes);
    cases.push_back({true, bytes});
  }
  unsigned outcomes = 0;
  EXPECT_EQ(run_cases(cases, &outcomes), 0) << cases.size() << " cases";
  EXPECT_EQ(outcomes, unsigned{kOk | kSyntax | kUnicode | kIntTooLong});
}

// Hand-derived facts from parse.hpp's contract (no oracle needed).
TEST(ParseContract, DepthBoundaryIsPythonMaxDepth) {
  const std::string ok = std::string(kPythonMaxDepth, '[') + std::string(kPythonMaxDepth, ']');
  EXPECT_TRUE(loads_str(ok).ok());
  const std::string deep = std::string(kPythonMaxDepth + 1, '[') + std::string(kPythonMaxDepth + 1, ']');
  const auto r = loads_str(deep);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().failure, ParseFailure::TooDeep);
  EXPECT_TRUE(r.error().in_array);
}

// LoadsOptions::max_depth (py::interpreter_facts: 1497 for Python 3.12, 9998 for 3.13, measured
// with those interpreters; tests/py/interpreter_facts_test.cpp): every reader of the Python dialect
// takes it, arrays and objects alike, and says which container crossed the line.
TEST(ParseContract, DepthBoundaryFollowsLoadsOptions) {
  const auto nest = [](bool array, int n) {
    if (array) return std::string(static_cast<std::size_t>(n), '[') + std::string(static_cast<std::size_t>(n), ']');
    std::string s;
    for (int i = 1; i < n; ++i) s += "{\"a\":";
    return s + "{}" + std::string(static_cast<std::size_t>(n - 1), '}');
  };
  const auto as_bytes = [](const std::string& s) { return std::span(reinterpret_cast<const std::uint8_t*>(s.data()), s.size()); };
  for (const int limit : {kPythonMaxDepth, 1497, 9998, kMaxDepth}) {
    const LoadsOptions opt{limit};
    for (const bool array : {true, false}) {
      const std::string what = std::to_string(limit) + (array ? " array" : " object");
      const std::string ok = nest(array, limit), deep = nest(array, limit + 1);
      EXPECT_TRUE(loads_str(ok, opt).ok()) << what;
      EXPECT_TRUE(loads_bytes(as_bytes(ok), 0, opt).ok()) << what;
      EXPECT_TRUE(detail::loads_general(ok, opt).ok()) << what;
      for (const auto& r : {loads_str(deep, opt), loads_bytes(as_bytes(deep), 0, opt), detail::loads_general(deep, opt)}) {
        ASSERT_FALSE(r.ok()) << what;
        EXPECT_EQ(r.error().failure, ParseFailure::TooDeep) << what;
        EXPECT_EQ(r.error().in_array, array) << what;
      }
      // The metadata reader: a layer's marker nested so (the root and "layers" around it).
      const std::string doc_ok = "{\"layers\": {\"m\": {\"x\": " + nest(array, limit - 3) + "}}}";
      const std::string doc_deep = "{\"layers\": {\"m\": {\"x\": " + nest(array, limit - 2) + "}}}";
      const FlatRead a = read_flat_layers(doc_ok, opt);
      EXPECT_EQ(a.shape, MetadataShape::Layers) << what;
      EXPECT_EQ(a.layers.size(), 1u) << what;
      if (a.layers.size() == 1) {
        EXPECT_EQ(a.layers.marker(a.layers[0], doc_ok), doc_ok.substr(17, doc_ok.size() - 19)) << what;
      }
      const FlatRead b = read_flat_layers(doc_deep, opt);
      EXPECT_EQ(b.shape, MetadataShape::Invalid) << what;
      EXPECT_EQ(b.error.failure, ParseFailure::TooDeep) << what;
      EXPECT_EQ(b.error.in_array, array) << what;
      EXPECT_FALSE(loads_str(doc_deep, opt).ok()) << what;
      EXPECT_TRUE(loads_str(doc_ok, opt).ok()) << what;
      // Elsewhere in the document (skipped, not kept).
      const std::string other = "{\"layers\": {}, \"x\": " + nest(array, limit) + "}";
      EXPECT_EQ(read_flat_layers(other, opt).shape, MetadataShape::Invalid) << what;
      if (limit < kMaxDepth) {  // (kMaxDepth bounds every limit)
        EXPECT_EQ(read_flat_layers(other, LoadsOptions{limit + 1}).shape, MetadataShape::Layers) << what;
      }
    }
  }
  // The default is the 3.10/3.11 model.
  EXPECT_EQ(LoadsOptions{}.max_depth, kPythonMaxDepth);
}

// json's NaN/Infinity/-Infinity are parse_constant calls, one level more than the containers
// around them: inside max_depth containers they are TooDeep with `calling` (Python: "while calling
// a Python object"; measured on 3.10-3.13: 1496 arrays around NaN under 3.12, 1497 around 1), a
// number or an overflowing literal is not; the metadata reader agrees.
TEST(ParseContract, AConstantAtTheDepthLimitIsTooDeepAsACall) {
  const LoadsOptions opt{4};
  const auto in = [](int n, const char* leaf) {
    return std::string(static_cast<std::size_t>(n), '[') + leaf + std::string(static_cast<std::size_t>(n), ']');
  };
  for (const char* constant : {"NaN", "Infinity", "-Infinity"}) {
    EXPECT_TRUE(loads_str(in(3, constant), opt).ok()) << constant;
    const auto r = loads_str(in(4, constant), opt);
    ASSERT_FALSE(r.ok()) << constant;
    EXPECT_EQ(r.error().failure, ParseFailure::TooDeep);
    EXPECT_TRUE(r.error().calling) << constant;
    // In _quantization_metadata: the root and "layers" are two of the containers.
    const FlatRead f = read_flat_layers("{\"layers\": {\"m\": [" + in(0, constant) + "]}}", LoadsOptions{3});
    EXPECT_EQ(f.shape, MetadataShape::Invalid) << constant;
    EXPECT_TRUE(f.error.calling) << constant;
    EXPECT_EQ(read_flat_layers("{\"layers\": {\"m\": [" + in(0, constant) + "]}}", LoadsOptions{4}).shape,
              MetadataShape::Layers)
        << constant;
  }
  for (const char* number : {"1", "1e999", "1.5", "\"s\"", "null"}) {
    EXPECT_TRUE(loads_str(in(4, number), opt).ok()) << number;
    EXPECT_FALSE(loads_str(in(5, number), opt).ok()) << number;
  }
}

TEST(ParseContract, PythonDuplicateKeysKeepFirstPositionLastValue) {
  const auto r = loads_str("{\"a\":1,\"b\":2,\"a\":3}");
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r->members.size(), 2u);
  EXPECT_EQ(r->members[0].first, "a");
  EXPECT_EQ(r->members[0].second.text, "3");
  EXPECT_EQ(r->members[1].first, "b");
}

TEST(ParseContract, PythonDuplicateKeysInLargeObjects) {
  std::string doc = "{";
  for (int i = 0; i < 200; ++i) doc += "\"k" + std::to_string(i % 50) + "\":" + std::to_string(i) + ",";
  doc += "\"end\":0}";
  const auto r = loads_str(doc);
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r->members.size(), 51u);
  EXPECT_EQ(r->members[7].first, "k7");
  EXPECT_EQ(r->members[7].second.text, "157");
}

// Objects past the size where the parser indexes its keys, against a dict written here from
// Python's rules (a repeated key keeps its first position and takes the last value): keys that are
// prefixes of each other, differ in their last byte, are empty or long, repeated near and far.
TEST(ParseContract, PythonDuplicateKeysAgainstAMap) {
  std::mt19937_64 rng(20261205);
  const std::string kLong(40, 'q');
  for (int round = 0; round < 200; ++round) {
    const std::size_t members = 1 + rng() % (round < 100 ? 64 : 3000);
    const std::size_t distinct = 1 + rng() % (members + 1);
    std::vector<std::string> order;            // keys by first position
    std::map<std::string, std::string> value;  // key -> last value
    std::string doc = "{";
    for (std::size_t i = 0; i < members; ++i) {
      const std::size_t k = rng() % distinct;
      std::string key;
      switch (k % 4) {
        case 0: key = std::to_string(k); break;
        case 1: key = std::string(k % 7, 'a') + std::to_string(k); break;
        case 2: key = kLong + std::to_string(k); break;
        default: key = k == 3 ? "" : "a" + std::to_string(k / 2); break;
      }
      const std::string v = std::to_string(i);
      if (value.emplace(key, v).second) order.push_back(key);
      else value[key] = v;
      doc.append(i ? ",\"" : "\"").append(key).append("\":").append(v);
    }
    doc += "}";
    const auto r = loads_str(doc);
    ASSERT_TRUE(r.ok()) << doc;
    ASSERT_EQ(r->members.size(), order.size()) << "round " << round;
    for (std::size_t i = 0; i < order.size(); ++i) {
      ASSERT_EQ(r->members[i].first, order[i]) << "round " << round << ", member " << i;
      ASSERT_EQ(r->members[i].second.text, value[order[i]]) << "round " << round << ", key " << order[i];
    }
  }
}

TEST(ParseContract, IntTextIsCanonical) {
  EXPECT_EQ(loads_str("-0")->text, "0");
  EXPECT_EQ(loads_str("-12")->text, "-12");
  EXPECT_EQ(loads_str("-0")->kind, Kind::Int);
  EXPECT_EQ(loads_str("-0.0")->kind, Kind::Float);
}

TEST(ParseContract, IntTooLongReportsDigits) {
  const auto r = loads_str("[-" + std::string(4301, '5') + "]");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().failure, ParseFailure::IntTooLong);
  EXPECT_EQ(r.error().digits, 4301u);
}

TEST(ParseContract, WideObjectsAndArraysStayLinear) {
  std::string doc = "{";
  for (int i = 0; i < 100000; ++i) doc += "\"" + std::to_string(i) + "\":[" + std::to_string(i) + "],";
  doc += "\"x\":0}";
  const auto r = loads_str(doc);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->members.size(), 100001u);
}

}  // namespace
}  // namespace w4a8::json

// serde_json's position: hand-derived cases, then a character walk (line += 1 and column = 0 at
// each newline before the index, column += 1 otherwise) over random texts of newlines and bytes.
TEST(SerdePosition, HandCasesAndACharacterWalk) {
  auto pos = [](std::string_view t, std::size_t i) {
    const auto p = w4a8::json::serde_position(t, i);
    return std::pair{p.line, p.column};
  };
  using P = std::pair<std::size_t, std::size_t>;
  EXPECT_EQ(pos("", 0), (P{1, 0}));
  EXPECT_EQ(pos(std::string_view{}, 0), (P{1, 0}));  // null data(): memchr is never called on it
  EXPECT_EQ(pos("ab\ncd", 2), (P{1, 2}));
  EXPECT_EQ(pos("ab\ncd", 3), (P{2, 0}));
  EXPECT_EQ(pos("ab\ncd", 4), (P{2, 1}));
  EXPECT_EQ(pos("\n\n", 2), (P{3, 0}));
  EXPECT_EQ(pos("\n\n", 1), (P{2, 0}));
  EXPECT_EQ(pos("ab\ncd", 99), (P{2, 2}));  // clamped to the end
  std::uint32_t state = 12345;
  for (int round = 0; round < 2000; ++round) {
    std::string t;
    const std::size_t n = (state = state * 1664525u + 1013904223u) >> 26;
    for (std::size_t k = 0; k < n; ++k) t += ((state = state * 1664525u + 1013904223u) >> 29) == 0 ? '\n' : 'x';
    for (std::size_t i = 0; i <= t.size(); ++i) {
      P walk{1, 0};
      for (std::size_t k = 0; k < i; ++k) walk = t[k] == '\n' ? P{walk.first + 1, 0} : P{walk.first, walk.second + 1};
      ASSERT_EQ(pos(t, i), walk) << "text of " << t.size() << " bytes, index " << i;
    }
  }
}
