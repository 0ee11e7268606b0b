// Laws of dump() (RapidCheck): what dump prints, loads_str reads back to an equal value that
// prints the same (dump . loads_str . dump == dump), for any value tree.
#include "json/dump.hpp"

#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "json/parse.hpp"
#include "json/wtf8.hpp"

namespace w4a8::json {
namespace {

rc::Gen<std::string> gen_wtf8() {
  return rc::gen::map(rc::gen::container<std::vector<char32_t>>(rc::gen::oneOf(
                          rc::gen::inRange<char32_t>(0, 0x80), rc::gen::inRange<char32_t>(0x80, 0x800),
                          rc::gen::inRange<char32_t>(0xD800, 0xE000), rc::gen::inRange<char32_t>(0x800, 0x10000),
                          rc::gen::inRange<char32_t>(0x10000, 0x110000))),
                      [](const std::vector<char32_t>& cps) {
                        std::string s;
                        for (char32_t c : cps) append_wtf8(s, c);
                        return s;
                      });
}

rc::Gen<Value> gen_scalar() {
  return rc::gen::oneOf(
      rc::gen::just(Value::null()), rc::gen::map(rc::gen::arbitrary<bool>(), Value::from_bool),
      rc::gen::map(rc::gen::arbitrary<long long>(), Value::from_int),
      rc::gen::map(rc::gen::arbitrary<double>(), Value::from_float),
      rc::gen::map(rc::gen::element(NAN, INFINITY, -INFINITY, -0.0, 1e16, 1e-5), Value::from_float),
      rc::gen::map(gen_wtf8(), Value::from_string));
}

rc::Gen<Value> gen_value(int depth) {
  if (depth == 0) return gen_scalar();
  return rc::gen::oneOf(
      gen_scalar(),
      rc::gen::map(rc::gen::container<std::vector<Value>>(rc::gen::resize(4, gen_value(depth - 1))),
                   [](std::vector<Value> items) {
                     Value v = Value::array();
                     for (Value& item : items) v.items.push_back(std::move(item));
                     return v;
                   }),
      rc::gen::map(rc::gen::container<std::vector<std::pair<std::string, Value>>>(
                       rc::gen::resize(4, rc::gen::pair(gen_wtf8(), gen_value(depth - 1)))),
                   [](std::vector<std::pair<std::string, Value>> members) {  // NOLINT(performance-unnecessary-value-param): moved from
                     Value v = Value::object();
                     for (auto& [k, m] : members) v.set(std::move(k), std::move(m));
                     return v;
                   }));
}

// A lone high surrogate followed by a lone low one prints like the astral character they pair to,
// and reads back as it (so in Python: json.loads(json.dumps('\ud83d\ude00')) == '\U0001f600').
bool has_split_pair(const std::string& s) {
  for (std::size_t i = 0; i + 5 < s.size(); ++i)
    if (s.compare(i, 1, "\xED") == 0 && (static_cast<unsigned char>(s[i + 1]) & 0xF0) == 0xA0 &&
        s.compare(i + 3, 1, "\xED") == 0 && (static_cast<unsigned char>(s[i + 4]) & 0xF0) == 0xB0)
      return true;
  return false;
}
bool has_split_pair(const Value& v) {
  if (v.kind == Kind::String) return has_split_pair(v.text);
  for (const auto& item : v.items)
    if (has_split_pair(item)) return true;
  for (const auto& [k, m] : v.members)
    if (has_split_pair(k) || has_split_pair(m)) return true;
  return false;
}

// Law 1: dump output is JSON that Python-dialect loading reads back to an equal value.
// Law 2: dumping that value again prints the same text.
RC_GTEST_PROP(DumpLaws, RoundTripsThroughLoads, ()) {
  const Value v = *gen_value(3);
  const std::string text = dump(v);
  const auto back = loads_str(text);
  RC_ASSERT(back.ok());
  RC_ASSERT(dump(*back) == text);
  const bool top_nan = v.kind == Kind::Float && std::isnan(v.number);  // nan != nan at top level
  if (!has_split_pair(v)) RC_ASSERT(py_equal(v, *back) != top_nan);
}

// Law 3: dump output is pure ASCII (ensure_ascii).
RC_GTEST_PROP(DumpLaws, IsAscii, ()) {
  const std::string text = dump(*gen_value(2));
  for (unsigned char c : text) RC_ASSERT(c < 0x80);
}

// v with each non-finite float replaced by the string of Python's token for it.
Value quote_non_finite(const Value& v) {
  if (v.kind == Kind::Float && !std::isfinite(v.number))
    return Value::from_string(std::isnan(v.number) ? "NaN" : v.number < 0 ? "-Infinity" : "Infinity");
  Value out = v;
  for (Value& item : out.items) item = quote_non_finite(item);
  for (auto& member : out.members) member.second = quote_non_finite(member.second);
  return out;
}
bool has_surrogate(const std::string& s) {
  for (std::size_t i = 0; i + 1 < s.size(); ++i)
    if (s.compare(i, 1, "\xED") == 0 && (static_cast<unsigned char>(s[i + 1]) & 0xE0) == 0xA0) return true;
  return false;
}
bool has_surrogate(const Value& v) {
  if (v.kind == Kind::String) return has_surrogate(v.text);
  for (const auto& item : v.items)
    if (has_surrogate(item)) return true;
  for (const auto& [k, m] : v.members)
    if (has_surrogate(k) || has_surrogate(m)) return true;
  return false;
}

// Law 4: with NonFinite::String the text is standard JSON (serde_json's grammar, which has no NaN or
// Infinity; it also refuses lone surrogates, which json.dumps escapes, so those values are left out
// of that check), and it reads back as the value with each non-finite float as its token's string.
RC_GTEST_PROP(DumpLaws, QuotedNonFiniteIsStandardJson, ()) {
  const Value v = *gen_value(3);
  const std::string text = dump(v, NonFinite::String);
  if (!has_surrogate(v)) RC_ASSERT(parse_serde(text).ok());
  const auto back = loads_str(text);
  RC_ASSERT(back.ok());
  if (!has_split_pair(v)) RC_ASSERT(py_equal(quote_non_finite(v), *back));
}

TEST(Dump, NonFiniteSpellings) {
  Value v = Value::array();
  for (double d : {double(NAN), double(INFINITY), -double(INFINITY), 1.5}) v.items.push_back(Value::from_float(d));
  EXPECT_EQ(dump(v), "[NaN, Infinity, -Infinity, 1.5]");  // Python: json.dumps([nan, inf, -inf, 1.5])
  EXPECT_EQ(dump(v, NonFinite::String), R"(["NaN", "Infinity", "-Infinity", 1.5])");
}

// Bytes that are not UTF-8 (a file name in a message): what json.dumps writes for the str Python
// holds, decoded with surrogateescape. Expected values from Python 3.11:
// json.dumps(b.decode("utf-8", "surrogateescape")) for each b.
TEST(DumpString, BytesThatAreNotUtf8AreSurrogateEscaped) {
  EXPECT_EQ(dump_string("a\xff.safetensors"), R"("a\udcff.safetensors")");
  EXPECT_EQ(dump_string("\xe2(\xa1"), R"("\udce2(\udca1")");            // a lead byte, then ASCII
  EXPECT_EQ(dump_string("\xf0\x9f\x98" "A"), R"("\udcf0\udc9f\udc98A")");  // a 4-byte sequence cut short
  EXPECT_EQ(dump_string("\xc3\xa9\x80"), R"("\u00e9\udc80")");              // a stray continuation byte
}

// System text (a file name, a message around one): UTF-8 read strictly, so an encoded surrogate is
// three undecodable bytes, where a str from json.loads (WTF-8) holds one lone surrogate there.
// Expected values from Python 3.11: json.dumps(b.decode("utf-8", "surrogateescape")).
TEST(DumpOsString, EncodedSurrogatesAreThreeBytesNotOneCodePoint) {
  EXPECT_EQ(dump_os_string("\xed\xa0\x80"), R"("\udced\udca0\udc80")");
  EXPECT_EQ(dump_string("\xed\xa0\x80"), R"("\ud800")");  // (the same bytes from json.loads: '\ud800')
  EXPECT_EQ(dump_os_string("a\xed\xb3\xbf.s"), R"("a\udced\udcb3\udcbf.s")");
  EXPECT_EQ(dump_os_string("\xc3\xa9\xff"), R"("\u00e9\udcff")");
  EXPECT_EQ(dump_os_string("\xf0\x9f\x98\x80"), R"("\ud83d\ude00")");  // an astral character: a pair, as before
  std::string out = "x";
  dump_os_string_append(out, "\xed\xa0\x80");
  EXPECT_EQ(out, R"(x"\udced\udca0\udc80")");
  char buf[16];
  std::size_t pos = 0;  // piece by piece: whole escapes only
  std::string pieces;
  while (pos < 3) pieces.append(buf, dump_os_string_piece("\xed\xa0\x80", pos, buf, 12));
  EXPECT_EQ(pieces, R"(\udced\udca0\udc80)");
}

// A Value holding system text (an audit's suite path, a job's output path) dumps as dump_os_string
// does, inside a document; the same bytes as a header's string stay one code point.
TEST(DumpOsString, AValueFromSystemTextDumpsAsPythonHoldsIt) {
  for (const std::string_view b : {"\xed\xa0\x80", "a\xed\xb3\xbf.s", "\xc3\xa9\xff", "\xf0\x9f\x98\x80", "/t/\xe2(\xa1", "plain"})
    EXPECT_EQ(dump(Value::from_os_string(b)), dump_os_string(b)) << b;
  EXPECT_EQ(dump(Value::from_os_string("\xed\xa0\x80")), R"("\udced\udca0\udc80")");
  EXPECT_EQ(wtf8_from_os("\xff"), "\xed\xb3\xbf");  // U+DCFF, as WTF-8
  EXPECT_EQ(wtf8_from_os("\xc3\xa9"), "\xc3\xa9");  // valid UTF-8 unchanged
}

// A str from json.loads reported beside system text (an audit command's name and messages): the
// escapes of bytes become those bytes, so the report writes them back as the same escapes; another
// lone surrogate, which no byte string decodes to, becomes U+FFFD (it was written as three).
TEST(DumpOsString, JsonTextReportedAsSystemText) {
  EXPECT_EQ(os_from_wtf8("x\xed\xb3\xbf"), "x\xff");       // \udcff: the byte FF
  EXPECT_EQ(os_from_wtf8("x\xed\xa0\x80"), "x\xef\xbf\xbd");  // \ud800: U+FFFD
  EXPECT_EQ(os_from_wtf8("caf\xc3\xa9"), "caf\xc3\xa9");
  EXPECT_EQ(dump(Value::from_os_string(os_from_wtf8("x\xed\xb3\xbf"))), R"("x\udcff")");
  EXPECT_EQ(dump(Value::from_os_string(os_from_wtf8("nope \xed\xa0\x80"))), R"("nope \ufffd")");
}

}  // namespace
}  // namespace w4a8::json
