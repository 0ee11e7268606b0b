// The flat fast paths (json/flat_object.hpp, json/flat_layers.hpp) against the general parser on the
// same text: whenever a fast path answers, its answer is the general parser's, member for member
// (kind, text, boolean, order); and it declines everything outside its shape. Inputs: generated
// markers and _quantization_metadata documents, then byte edits of them (JSON-significant bytes,
// deletions, duplications), so both sides of every boundary of the shape are reached.
#include <gtest/gtest.h>

#include <cstdlib>
#include <random>
#include <span>
#include <string>

#include "json/flat_layers.hpp"
#include "json/flat_object.hpp"
#include "json/parse.hpp"
#include "gen/fuzz_bodies.hpp"

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
  switch (rng() % 4) {
    case 0: s.insert(at, kBytes[rng() % std::size(kBytes)]); break;
    case 1: s.erase(at, 1 + rng() % 3); break;
    case 2: s.replace(at, 1, kBytes[rng() % std::size(kBytes)]); break;
    default: s.insert(at, s.substr(at, rng() % 8)); break;
  }
  return s;
}


// Generated texts per differential test (W4A8_FLAT_CASES overrides).
std::size_t case_count() {
  const char* env = std::getenv("W4A8_FLAT_CASES");
  return env && *env ? std::strtoull(env, nullptr, 10) : 200000;
}

// `text` after `edits` random edits.
std::string edited(std::mt19937_64& rng, std::string text, std::size_t edits) {
  for (; edits > 0; --edits) text = edit(rng, std::move(text));
  return text;
}

TEST(JsonFlatObject, AgreesWithTheGeneralParser) {
  const std::size_t count = case_count();
  std::mt19937_64 rng(0xF1A7);
  std::size_t answered = 0, declined = 0;
  for (std::size_t i = 0; i < count; ++i) {
    std::string text = random_marker(rng);
    text = edited(rng, std::move(text), rng() % 3);
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

// A _quantization_metadata document: a few root members, "layers" among them (mostly), holding markers
// (mostly byte-identical, some repeated keys, keys in and out of order).
std::string random_metadata(std::mt19937_64& rng) {
  static const char* const kRootKeys[] = {"format_version", "layers", "x", "layers", "", "la\\u0079ers", "\\u00e9"};
  // The first five are flat; then nested ones, an escape, Python's NaN, which the reader checks and
  // reads no further; a "layers" that is not an object (unless a later one replaces it); then an int
  // over Python's digit limit, a long float, and nesting past Python's depth limit.
  static const std::string kLongInt = std::string(kPythonMaxIntDigits + 1, '9'),  // json.loads' ValueError
      kLongFloat = std::string(kPythonMaxIntDigits + 1, '9') + ".5",                // not one
      kDeep = std::string(kPythonMaxDepth, '[') + std::string(kPythonMaxDepth, ']');  // RecursionError (under the root)
  static const char* const kRootValues[] = {"\"1.0\"", "1", "null", "{}", "{\"a\": 1}", "[]", "1.5",
                                            "[1, [2, {\"k\": null, \"k\": -0.5e-3}], []]", "{\"a\": {\"b\": [true]}}",
                                            "\"\\n\"", "-Infinity", "[NaN]", "1", kLongInt.c_str(), kLongFloat.c_str(),
                                            kDeep.c_str()};
  static const char* const kUsual[] = {"{\"format\": \"asym_w4a8_int8\", \"group_size\": 64}", "{}",
                                       "{\"format\":\"int8_tensorwise\"}"};
  // Plain, UTF-8 and escaped keys (a few spell the same key two ways: "a" and "\u0061").
  static const char* const kLayerKeys[] = {"blocks.0.attn.q", "blocks.0.attn.k", "blocks.1.mlp", "a", "", "z.9",
                                           "\\u0061", "caf\xc3\xa9.", "t\\tab.", "\\ud83d\\ude00", "\\ud800"};
  static const char* const kWs[] = {"", " ", "\n", "\t "};
  auto ws = [&] { return std::string(kWs[rng() % std::size(kWs)]); };
  if (rng() % 50 == 0) return ws() + kRootValues[rng() % std::size(kRootValues)] + ws();  // not an object
  std::string s = ws() + "{";
  const std::size_t n = rng() % 4;
  for (std::size_t i = 0; i < n || (i == n && rng() % 4 != 0); ++i) {
    if (i) s += ",";
    const bool layers = i == n;  // the last member is "layers", unless the document has none
    s += ws() + "\"" + (layers ? "layers" : kRootKeys[rng() % std::size(kRootKeys)]) + "\"" + ws() + ":" + ws();
    if (!layers) {
      s += kRootValues[rng() % 4 != 0 ? rng() % 5 : rng() % std::size(kRootValues)];
      continue;
    }
    s += "{";
    const std::size_t m = rng() % 6;
    const std::string usual = rng() % 2 ? random_marker(rng) : kUsual[rng() % std::size(kUsual)];
    for (std::size_t k = 0; k < m; ++k) {
      if (k) s += "," + ws();
      s += "\"" + std::string(kLayerKeys[rng() % std::size(kLayerKeys)]) + std::to_string(rng() % 40) + "\":" + ws();
      s += rng() % 40 == 0 ? std::string(kRootValues[rng() % 13]) : rng() % 4 != 0 ? usual : random_marker(rng);  // (some not objects)
    }
    s += "}";
  }
  return s + "}" + ws();
}

TEST(JsonFlatLayers, AgreesWithTheGeneralParser) {
  const std::size_t count = case_count();
  std::mt19937_64 rng(0x1A7E);
  std::size_t shapes[5] = {}, layers_seen = 0, flat_markers = 0, indirect = 0, repeats_seen = 0, increasing_seen = 0,
              failures[5] = {};
  for (std::size_t i = 0; i < count; ++i) {
    std::string text = random_metadata(rng);
    text = edited(rng, std::move(text), rng() % 2 ? 0 : 1 + rng() % 2);  // half of them untouched
    // The whole contract against json.loads (loads_str): shape, failure, layers, markers.
    const std::string problem = gen::check_metadata_text(text);
    ASSERT_EQ(problem, "") << text;
    const FlatRead flat = read_flat_layers(text);
    ++shapes[static_cast<int>(flat.shape)];
    if (flat.shape == MetadataShape::Invalid) ++failures[static_cast<int>(flat.error.failure)];
    if (flat.shape != MetadataShape::Layers) continue;
    const FlatLayers& layers = flat.layers;
    std::string_view previous;  // the layer before's marker, as collect() passes it
    for (std::size_t k = 0; k < layers.size(); ++k) {
      const FlatLayer& l = layers[k];
      ASSERT_TRUE(l.indirect() || std::size_t{l.at()} < text.size());
      indirect += l.indirect();
      const std::string_view marker = layers.marker(l, text);
      // A repeat bit is a promise (the marker's bytes are the layer before's); it may be withheld.
      EXPECT_TRUE(!l.repeats() || (k > 0 && layers.marker(layers[k - 1], text) == marker)) << text;
      repeats_seen += l.repeats();
      flat_markers += loads_flat_object(marker).has_value();
      EXPECT_EQ(layers.read(l, text, previous).marker, marker) << text;  // a repeat found without a scan is the same text
      EXPECT_EQ(layers.read(l, text, previous).key, layers.key(l, text)) << text;
      previous = marker;
    }
    if (layers.increasing()) {  // (false is the safe answer; repeated keys give it)
      for (std::size_t k = 1; k < layers.size(); ++k) EXPECT_LT(layers.key(layers[k - 1], text), layers.key(layers[k], text)) << text;
    }
    increasing_seen += layers.increasing();
    layers_seen += layers.size();
  }
  const auto n = [&](MetadataShape m) { return shapes[static_cast<int>(m)]; };
  const auto f = [&](ParseFailure x) { return failures[static_cast<int>(x)]; };
  std::printf("flat layers read: %zu with layers (%zu layers: %zu flat markers, %zu indirect, %zu repeat bits; %zu "
              "increasing), %zu not an object, %zu without layers, %zu invalid (%zu syntax, %zu int too long, %zu too "
              "deep, %zu not UTF-8), %zu declined\n",
              n(MetadataShape::Layers), layers_seen, flat_markers, indirect, repeats_seen, increasing_seen,
              n(MetadataShape::NotObject), n(MetadataShape::NoLayers), n(MetadataShape::Invalid),
              f(ParseFailure::Syntax), f(ParseFailure::IntTooLong), f(ParseFailure::TooDeep), f(ParseFailure::Unicode),
              n(MetadataShape::Declined));
  // Every outcome is reached, most of them often.
  EXPECT_GT(n(MetadataShape::Layers), count / 5);
  EXPECT_GT(n(MetadataShape::Invalid), count / 10);
  EXPECT_GT(n(MetadataShape::NoLayers), count / 50);
  EXPECT_GT(n(MetadataShape::NotObject), 0u);
  EXPECT_GT(n(MetadataShape::Declined), 0u);  // (an edit that splits a UTF-8 sequence)
  EXPECT_GT(f(ParseFailure::IntTooLong), 0u);
  EXPECT_GT(f(ParseFailure::TooDeep), 0u);
  EXPECT_GT(f(ParseFailure::Unicode), 0u);
  EXPECT_GT(flat_markers, layers_seen / 4);  // flat markers and others
  EXPECT_GT(layers_seen - flat_markers, layers_seen / 20);
  EXPECT_GT(indirect, layers_seen / 50);  // escaped and repeated keys
  EXPECT_GT(repeats_seen, layers_seen / 10);
  EXPECT_GT(increasing_seen, n(MetadataShape::Layers) / 20);
}

TEST(JsonFlatLayers, HandPickedBoundaries) {
  // The layers ("key=marker;" each), or what else the text is; and the reader's contract holds.
  const auto keys = [](std::string_view t) -> std::string {
    EXPECT_EQ(gen::check_metadata_text(t), "") << t;
    const FlatRead r = read_flat_layers(t);
    switch (r.shape) {
      case MetadataShape::Declined: return "declined";
      case MetadataShape::NotObject: return "not-object";
      case MetadataShape::NoLayers: return "no-layers";
      case MetadataShape::Invalid:
        return r.error.failure == ParseFailure::IntTooLong ? "invalid:int " + std::to_string(r.error.digits)
               : r.error.failure == ParseFailure::TooDeep  ? std::string(r.error.in_array ? "invalid:deep array" : "invalid:deep object")
               : r.error.failure == ParseFailure::Unicode  ? std::string("invalid:unicode")
                                                           : std::string("invalid");
      case MetadataShape::Layers: break;
    }
    std::string out;
    for (const FlatLayer& l : r.layers) out += std::string(r.layers.key(l, t)) + "=" + std::string(r.layers.marker(l, t)) + ";";
    return out;
  };
  EXPECT_EQ(keys(R"({"layers":{}})"), "");
  EXPECT_EQ(keys(R"( {"format_version": "1.0", "layers": {"b": {"format": "x"}, "a" : { } } } )"),
            R"(b={"format": "x"};a={ };)");
  EXPECT_EQ(keys(R"({"layers":{"a":{}},"v":{"k":-0},"w":true})"), "a={};");
  // Markers and other members that are not flat: checked and passed over (the validator parses each
  // distinct marker text with the general parser).
  EXPECT_EQ(keys(R"({"layers":{"a":{"k":[1, {"j": []}]},"b":{"k":{},"k":2.5E+3}},"x":[[], {}, -0.0e-0]})"),
            R"(a={"k":[1, {"j": []}]};b={"k":{},"k":2.5E+3};)");
  EXPECT_EQ(keys(R"({"x":1,"layers":{"a":{}},"x":[2],"y":{"layers":[]}})"), "a={};");  // "x" twice: unread
  EXPECT_EQ(keys(R"({"layers":{"a":{"k":NaN,"j":[Infinity,-Infinity]}},"x":-Infinity})"),
            R"(a={"k":NaN,"j":[Infinity,-Infinity]};)");
  // Markers that are not objects stay (upstream's error when the validator reaches them).
  EXPECT_EQ(keys(R"({"layers":{"a":1,"b":[],"c":null,"d":"x"}})"), R"(a=1;b=[];c=null;d="x";)");
  // Strings: escapes and UTF-8 in values; keys in UTF-8 (DEL included) and with escapes (decoded).
  const std::string utf8_key = "caf\xc3\xa9\x7f", emoji = "\xf0\x9f\x98\x80";
  const std::string odd_marker = R"({"k":"\"\\\/\b\f\n\r\t\ud800\uDFFF)" + emoji + R"("})";
  EXPECT_EQ(keys(R"({"layers":{")" + utf8_key + R"(":)" + odd_marker + R"(,"x":{"\u00e9":"\u00E9"}}})"),
            utf8_key + "=" + odd_marker + R"(;x={"\u00e9":"\u00E9"};)");
  EXPECT_EQ(keys(R"({"la\u0079ers":{"a\u0062":{"k":1},"\ud83d\ude00\ud800\n":{}}})"),
            "ab={\"k\":1};" + emoji + "\xed\xa0\x80\n={};");  // (a lone surrogate: WTF-8, as Python keeps it)
  // Repeated keys, as a dict: the first place, the last value (and the last "layers").
  EXPECT_EQ(keys(R"({"layers":{"a":{"v":1},"b":{},"a":{"v":2},"\u0061":{"v":3},"c":{}}})"), R"(a={"v":3};b={};c={};)");
  EXPECT_EQ(keys(R"({"layers":{"a":{},"a":1}})"), "a=1;");
  const std::string long_key(70000, 'k');  // (over the repeat check's 2-byte lengths: found again)
  EXPECT_EQ(keys(R"({"layers":{"b":{},")" + long_key + R"(":{"v":1},"c":{},")" + long_key + R"(":{"v":2}}})"),
            "b={};" + long_key + R"(={"v":2};c={};)");
  EXPECT_EQ(keys(R"({"layers":{"a":1,"a":{}}})"), "a={};");
  EXPECT_EQ(keys(R"({"layers":{"a":{}},"layers":{}})"), "");
  EXPECT_EQ(keys(R"({"layers":{"a":{}},"x":1,"layers":{"b":{}}})"), "b={};");
  EXPECT_EQ(keys(R"({"layers":1,"layers":{"b":{}}})"), "b={};");
  EXPECT_EQ(keys(R"({"layers":{"b":{}},"layers":[]})"), "no-layers");
  // Nesting up to Python's limit as modelled (kPythonMaxDepth containers in all), and one past it.
  const auto nested = [](std::size_t arrays, std::string_view inner = "") {  // under the root, "layers", a marker
    return R"({"layers":{"a":{"k":)" + std::string(arrays, '[') + std::string(inner) + std::string(arrays, ']') + "}}}";
  };
  const std::size_t deepest = kPythonMaxDepth - 3;
  EXPECT_NE(keys(nested(deepest)), "declined");
  EXPECT_EQ(keys(nested(deepest + 1)), "invalid:deep array");
  EXPECT_EQ(keys(nested(deepest, "{}")), "invalid:deep object");
  EXPECT_EQ(keys(std::string(kPythonMaxDepth, '[') + std::string(kPythonMaxDepth, ']')), "not-object");
  EXPECT_EQ(keys(std::string(kPythonMaxDepth + 1, '[') + std::string(kPythonMaxDepth + 1, ']')), "invalid:deep array");
  // Ints up to Python's digit limit; floats of any length; the limit checked before what follows.
  const std::string digits(kPythonMaxIntDigits, '7');
  EXPECT_EQ(keys(R"({"layers":{"a":{"k":-)" + digits + "}}}"), R"(a={"k":-)" + digits + "};");
  EXPECT_EQ(keys(R"({"layers":{"a":{"k":)" + digits + "7}}}"), "invalid:int 4301");
  EXPECT_EQ(keys(R"({"layers":{"a":{"k":)" + digits + "7e}}}"), "invalid:int 4301");  // ("1e" is the int 1, then "e")
  EXPECT_EQ(keys(R"({"layers":{"a":{"k":)" + digits + "7.}}}"), "invalid:int 4301");
  EXPECT_EQ(keys(R"({"layers":{"a":{"k":)" + digits + "7x}}}"), "invalid:int 4301");
  EXPECT_NE(keys(R"({"layers":{"a":{"k":)" + digits + digits + ".5e-9}}}"), "invalid");
  EXPECT_EQ(keys(R"({"layers":{"a":{"k":)" + digits + digits + "E+}}}"), "invalid:int 8600");
  const std::pair<std::string, std::string> others[] = {
      {"", "invalid"}, {" ", "invalid"}, {"{}", "no-layers"}, {"[]", "not-object"}, {"1", "not-object"},
      {"\"layers\"", "not-object"}, {"[1,]", "invalid"}, {R"({"x":1})", "no-layers"},
      {R"({"layers":[]})", "no-layers"}, {R"({"layers":1})", "no-layers"},
      {"{\"layers\":{\"\xc3\":{}}}", "declined"}, {"{\"layers\":{\"\xed\xa0\x80\":{}}}", "declined"},  // not UTF-8
      {"{\"layers\":{\"a\":{}},\"x\":\"\xff\"}", "declined"}, {"{\"layers\":{\"a\":{\"k\":\"\xc0\xaf\"}}}", "declined"},
      {"{\"layers\":{}}\xff", "invalid:unicode"}, {"{\"layers\":{} x \xff", "invalid:unicode"},  // (as loads_str: UTF-8 first)
      {R"({"layers":{"a":{}},"x":)" + std::string(4301, '7') + "\xff}", "invalid:unicode"},
      {R"({"layers":{"a":{}},"x":"\x"})", "invalid"}, {R"({"layers":{"a":{}},"x":"\u12"})", "invalid"},  // bad escapes
      {R"({"layers":{"a":{}},"x":"\"})", "invalid"}, {R"({"layers":{"a":{}},"x":"\u12g4"})", "invalid"},
      {R"({"layers":{"\q":{}}})", "invalid"}, {"{\"layers\":{\"a\":{}},\"x\":\"\t\"}", "invalid"},  // a control byte
      {R"({"layers":{"a":{}},"x":"a)", "invalid"}, {R"({"layers":{"a":{}},"x":01})", "invalid"},
      {R"({"layers":{"a":{}},"x":1.})", "invalid"}, {R"({"layers":{"a":{}},"x":.5})", "invalid"},
      {R"({"layers":{"a":{}},"x":1e})", "invalid"}, {R"({"layers":{"a":{}},"x":1e+})", "invalid"},
      {R"({"layers":{"a":{}},"x":-})", "invalid"}, {R"({"layers":{"a":{}},"x":+1})", "invalid"},
      {R"({"layers":{"a":{}},"x":[1,]})", "invalid"}, {R"({"layers":{"a":{}},"x":{"k":1,}})", "invalid"},
      {R"({"layers":{"a":{}},"x":[1 2]})", "invalid"}, {R"({"layers":{"a":{}},"x":{"k"}})", "invalid"},
      {R"({"layers":{"a":{}},"x":[})", "invalid"}, {R"({"layers":{"a":{}},"x":tru})", "invalid"},
      {R"({"layers":{"a":{}},"x":nan})", "invalid"}, {R"({"layers":{"a":{}},"x":-NaN})", "invalid"},
      {"{\"layers\":{\"a\":{\"k\":[\"\x01\"]}}}", "invalid"}, {R"({"layers":{"a":{}}} x)", "invalid"},
      {R"({"layers":{"a":{},}})", "invalid"}, {R"({"layers":{"a":{}})", "invalid"},
      {"\xef\xbb\xbf{\"layers\":{}}", "invalid"}, {R"({1:{}})", "invalid"}, {R"({"layers" {}})", "invalid"}};
  for (const auto& [t, want] : others) EXPECT_EQ(keys(t), want) << t;
  // Out of order but unique: the repeat check hashes, its table left for the caller.
  std::string many = R"({"layers":{)";
  for (int i = 999; i >= 0; --i) many += (i == 999 ? "\"k" : ",\"k") + std::to_string(i) + "\":{}";
  FlatRead out_of_order = read_flat_layers(many + "}}");
  ASSERT_EQ(out_of_order.shape, MetadataShape::Layers);
  EXPECT_EQ(out_of_order.layers.size(), 1000u);
  EXPECT_FALSE(out_of_order.layers.increasing());
  EXPECT_FALSE(out_of_order.layers.take_key_slots().empty());
  EXPECT_TRUE(read_flat_layers(R"({"layers":{"a":{},"b":{}}})").layers.increasing());
  const std::string with_repeat = many + R"(,"k500":{"v":1}}})";
  FlatRead repeated = read_flat_layers(with_repeat);
  ASSERT_EQ(repeated.shape, MetadataShape::Layers);
  EXPECT_EQ(repeated.layers.size(), 1000u);
  EXPECT_TRUE(repeated.layers.take_key_slots().empty());  // (its positions changed: no table)
  EXPECT_EQ(repeated.layers.marker(repeated.layers[499], with_repeat), R"({"v":1})");
  // Any number of root members (a marker's limit, kFlatMembers, is the flat object's, not this reader's).
  std::string wide = R"({"layers":{"a":{}})";
  for (std::size_t i = 1; i < 4 * kFlatMembers; ++i) wide += ",\"r" + std::to_string(i) + "\":1";
  EXPECT_EQ(keys(wide + "}"), "a={};");
  std::string wide_marker = R"({"layers":{"a":{"k0":0)";
  for (std::size_t i = 1; i <= kFlatMembers; ++i) wide_marker += ",\"k" + std::to_string(i) + "\":1";
  EXPECT_FALSE(loads_flat_object(wide_marker.substr(wide_marker.find("{\"k0")) + "}").has_value());
  EXPECT_EQ(read_flat_layers(wide_marker + "}}}").layers.size(), 1u);
}

// Past one block of the flat read (FlatLayers::kBlock layers): three full blocks and part of a fourth,
// in an order that is not increasing (so the repeat check runs over every block), each layer read
// where the general parser puts it, by index and by iteration.
TEST(JsonFlatLayers, LayersPastOneBlockKeepTheirPlaces) {
  constexpr std::size_t kLayers = 3 * FlatLayers::kBlock + 5;
  std::string text = R"({"format_version": "1.0", "layers": {)";
  for (std::size_t i = 0; i < kLayers; ++i) {
    const std::size_t k = (i * 7919) % kLayers;  // a permutation: keys unique, order scrambled
    text.append(i ? ", \"" : "\"").append("L").append(std::to_string(k)).append("\": ");
    text.append(i % 3 == 0 ? R"({"format": "asym_w4a8_int8"})" : R"({"group_size": )" + std::to_string(i) + "}");
  }
  text += "}}";
  const FlatRead read = read_flat_layers(text);
  ASSERT_EQ(read.shape, MetadataShape::Layers);
  const FlatLayers* flat = &read.layers;
  ASSERT_EQ(flat->size(), kLayers);
  const ParseResult general = detail::loads_general(text);
  ASSERT_TRUE(general.ok());
  const Value& layers = *general->get("layers");
  ASSERT_EQ(layers.members.size(), kLayers);
  std::size_t k = 0;
  for (const FlatLayer& l : *flat) {
    ASSERT_LT(k, kLayers);
    EXPECT_EQ(flat->key(l, text), layers.members[k].first) << k;
    EXPECT_EQ(flat->marker((*flat)[k], text), flat->marker(l, text)) << k;
    const auto marker = loads_flat_object(flat->marker(l, text));
    ASSERT_TRUE(marker.has_value()) << k;
    EXPECT_TRUE(same(*marker, layers.members[k].second)) << k;
    ++k;
  }
  EXPECT_EQ(k, kLayers);
  EXPECT_EQ(flat->key(flat->back(), text), layers.members.back().first);
  // A key repeated across blocks (layer L0's, last): merged as a dict merges it, every layer in its
  // place, L0's the last marker.
  const std::string first_key = "\"L0\"";
  ASSERT_NE(text.find(first_key), std::string::npos);
  const std::string repeated = text.substr(0, text.size() - 2) + ", " + first_key + ": {\"v\": 1}}}";
  const FlatRead merged_read = read_flat_layers(repeated);
  ASSERT_EQ(merged_read.shape, MetadataShape::Layers);
  const FlatLayers* merged = &merged_read.layers;
  ASSERT_EQ(merged->size(), kLayers);
  const ParseResult merged_general = detail::loads_general(repeated);
  ASSERT_TRUE(merged_general.ok());
  const Value& merged_layers = *merged_general->get("layers");
  std::size_t moved = 0;
  for (std::size_t i = 0; i < kLayers; ++i) {
    const FlatLayer& l = (*merged)[i];
    ASSERT_EQ(merged->key(l, repeated), merged_layers.members[i].first) << i;
    const ParseResult m = loads_str(merged->marker(l, repeated));
    ASSERT_TRUE(m.ok() && same(*m, merged_layers.members[i].second)) << i;
    moved += merged->key(l, repeated) == "L0" && merged->marker(l, repeated) == "{\"v\": 1}";
  }
  EXPECT_EQ(moved, 1u);
}

}  // namespace
}  // namespace w4a8::json
