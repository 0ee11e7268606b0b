// repr()/isprintable() against CPython, per supported Python version: every code point's
// predicates and thousands of random strings against each real interpreter found here
// (W4A8_PYTHON_3_10 .. W4A8_PYTHON_3_14, python3.X on PATH, ~/.pyenv/versions/3.X*); for a version
// with no interpreter, the predicates against PyPI unicodedata2 of its Unicode version with CPython's
// rules (W4A8_UNICODEDATA2_<x_y_z>, a venv made by tools/unicode/gen_unicode_tables.py, or
// W4A8_PYTHON when it has that unicodedata2), an
// independent path from the generated tables. A version with neither is skipped, visibly.
#include "py/repr.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "support/python.hpp"
#include "json/wtf8.hpp"
#include "py/unicode_tables.hpp"

namespace w4a8::py {
namespace {

using testing::ask_oracle;
using testing::command_output;
using testing::from_hex_arg;
using testing::hex_arg;

const std::string kOracle = testing::source_path("tests/py/py_oracle.py");

std::vector<Version> all_versions() {
  std::vector<Version> v;
  for (std::size_t i = 0; i < static_cast<std::size_t>(Version::kCount); ++i) v.push_back(static_cast<Version>(i));
  return v;
}

std::string env_key(std::string_view dotted) {
  std::string k(dotted);
  for (char& c : k)
    if (c == '.') c = '_';
  return k;
}

// A real CPython of this version, or "" (tests/support: python_of_version).
std::string interpreter_for(Version v) { return testing::python_of_version(version_name(v)); }

// A Python with PyPI unicodedata2 of this version's Unicode data, or "".
std::string unicodedata2_for(Version v) {
  const std::string ucd(unicode_version(v));
  std::vector<std::string> cands;
  if (const char* e = std::getenv(("W4A8_UNICODEDATA2_" + env_key(ucd)).c_str())) cands.push_back(e);
  cands.push_back(std::string(std::getenv("HOME") ? std::getenv("HOME") : "/root") + "/.cache/w4a8check/unicode/venv-" + ucd + "/bin/python");
  cands.push_back(testing::default_python());  // when CI installs unicodedata2==<ucd> next to the other oracles
  for (const auto& c : cands)
    if (command_output("'" + c + "' -c \"import unicodedata2; print(unicodedata2.unidata_version)\"") == ucd) return c;
  return {};
}

bool bit(const std::string& bitmap, char32_t cp) { return (static_cast<unsigned char>(bitmap[cp >> 3]) >> (cp & 7)) & 1; }

class PerVersion : public ::testing::TestWithParam<Version> {};

std::string version_label(const ::testing::TestParamInfo<Version>& info) {
  return "Py" + env_key(version_name(info.param));
}

TEST_P(PerVersion, EveryCodePointMatchesPython) {
  const Version v = GetParam();
  std::string python = interpreter_for(v), op = "props", source;
  if (!python.empty()) {
    source = "CPython " + std::string(version_name(v)) + " (" + python + ")";
  } else if (python = unicodedata2_for(v); !python.empty()) {
    op = "props_ucd";
    source = "unicodedata2 " + std::string(unicode_version(v)) + " with CPython's rules (" + python + ")";
  } else {
    GTEST_SKIP() << "no Python " << version_name(v) << " and no unicodedata2 " << unicode_version(v)
                 << " venv here (run tools/unicode/gen_unicode_tables.py)";
  }
  std::printf("Python %s tables against %s\n", std::string(version_name(v)).c_str(), source.c_str());
  const auto answers = ask_oracle(kOracle, {op}, python);
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
    if (is_printable(cp, v) != bit(printable, cp) || is_space(cp, v) != bit(space, cp) || decimal_value(cp, v) != decimal[cp])
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

// Code points whose printability differs between the supported versions (assigned in Unicode
// 14.0 .. 16.0): where a wrong table would show.
const std::vector<char32_t>& version_sensitive() {
  static const std::vector<char32_t> cps = [] {
    std::vector<char32_t> out;
    for (char32_t cp = 0x80; cp < 0x110000; ++cp) {
      const bool first = is_printable(cp, Version::Py310);
      for (Version v : all_versions())
        if (is_printable(cp, v) != first) {
          out.push_back(cp);
          break;
        }
    }
    return out;
  }();
  return cps;
}

TEST_P(PerVersion, RandomStringsMatchPython) {
  const Version v = GetParam();
  const std::string python = interpreter_for(v);
  if (python.empty()) GTEST_SKIP() << "no Python " << version_name(v) << " here (its tables are checked by EveryCodePointMatchesPython)";
  ASSERT_GT(version_sensitive().size(), 1000u);
  std::mt19937_64 rng(7);
  std::vector<std::string> texts = {"", "'", "\"", "'\"", "a'b", "a\"b", "\\", "it's", "\xed\xa0\x80",
                                    "\xed\xa0\xbd\xed\xb8\x80", "\xf0\x9f\x98\x80", "caf\xc3\xa9"};
  for (int i = 0; i < 4000; ++i) {
    std::string t = random_text(rng, 12);
    if (i % 4 == 0) json::append_wtf8(t, version_sensitive()[rng() % version_sensitive().size()]);
    texts.push_back(t);
  }
  // Long plain runs first (the 16-byte scan), then anything.
  for (int i = 0; i < 500; ++i) texts.push_back(std::string(rng() % 48, 'n') + random_text(rng, 12));
  std::vector<std::string> requests;
  requests.reserve(texts.size());
  for (const auto& t : texts) requests.push_back("repr " + hex_arg(t));
  const auto answers = ask_oracle(kOracle, requests, python);
  int mismatches = 0;
  for (std::size_t i = 0; i < texts.size() && i < answers.size(); ++i) {
    const std::string expected = from_hex_arg(answers[i]);
    if (repr_str(texts[i], v) != expected && ++mismatches <= 10)
      ADD_FAILURE() << hex_arg(texts[i]) << ": python " << expected << " ours " << repr_str(texts[i], v);
    std::string appended = "x";  // the appending form keeps what the buffer held
    append_repr_str(appended, texts[i], v);
    if (appended != "x" + expected && ++mismatches <= 10)
      ADD_FAILURE() << hex_arg(texts[i]) << ": python x" << expected << " appended " << appended;
  }
  EXPECT_EQ(mismatches, 0);
}

INSTANTIATE_TEST_SUITE_P(Python, PerVersion, ::testing::ValuesIn(all_versions()), version_label);

TEST(PyVersion, NamesAndDefault) {
  EXPECT_EQ(version_name(Version::Py310), "3.10");
  EXPECT_EQ(version_name(Version::Py314), "3.14");
  EXPECT_EQ(unicode_version(Version::Py313), "15.1.0");
  EXPECT_EQ(version_from_name("3.12"), Version::Py312);
  EXPECT_FALSE(version_from_name("3.9").has_value());
  EXPECT_FALSE(version_from_name("3.1").has_value());
  EXPECT_EQ(kDefaultVersion, Version::Py311);
  // A code point assigned in Unicode 15.0 (U+1F6DC WIRELESS): escaped by 3.10/3.11, kept by 3.12+.
  EXPECT_EQ(repr_str("\xf0\x9f\x9b\x9c", Version::Py311), "'\\U0001f6dc'");
  EXPECT_EQ(repr_str("\xf0\x9f\x9b\x9c", Version::Py312), "'\xf0\x9f\x9b\x9c'");
}

TEST(ReprShapeAndList, RandomMatchPython) {
  std::mt19937_64 rng(11);
  std::vector<std::string> requests;
  std::vector<std::string> ours;
  for (int i = 0; i < 500; ++i) {
    // Up to 40 dimensions now and then: longer than the formatting buffer of append_repr_shape.
    std::vector<std::uint64_t> shape(std::uniform_int_distribution<std::size_t>(0, i % 10 == 0 ? 40 : 5)(rng));
    std::string req = "shape";
    for (auto& d : shape) {
      const int kind = std::uniform_int_distribution<int>(0, 7)(rng);
      d = kind == 0 ? rng() : kind == 1 ? UINT64_MAX : rng() % 100;
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

// Names in one-line reports: raw when repr() would only quote them, repr() otherwise.
TEST(ShownName, RawUnlessReprEscapes) {
  EXPECT_EQ(shown_name("blk.0.attn"), "blk.0.attn");
  EXPECT_EQ(shown_name("it's"), "it's");
  EXPECT_EQ(shown_name("caf\xc3\xa9"), "caf\xc3\xa9");  // printable non-ASCII stays
  EXPECT_EQ(shown_name(""), "");
  EXPECT_EQ(shown_name("a\nb"), "'a\\nb'");
  EXPECT_EQ(shown_name("a\xe2\x80\xae" "b"), "'a\\u202eb'");  // RIGHT-TO-LEFT OVERRIDE
  EXPECT_EQ(shown_name("it's \"x\""), "'it\\'s \"x\"'");
}

}  // namespace
}  // namespace w4a8::py
