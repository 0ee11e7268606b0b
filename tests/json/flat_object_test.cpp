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

#include "json/flat_cursor.hpp"
#include "json/flat_layers.hpp"
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
  switch (rng() % 4) {
    case 0: s.insert(at, kBytes[rng() % std::size(kBytes)]); break;
    case 1: s.erase(at, 1 + rng() % 3); break;
    case 2: s.replace(at, 1, kBytes[rng() % std::size(kBytes)]); break;
    default: s.insert(at, s.substr(at, rng() % 8)); break;
  }
  return s;
}

std::span<const std::uint8_t> as_bytes(std::string_view s) {
  return {reinterpret_cast<const std::uint8_t*>(s.data()), s.size()};
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
  static const char* const kRootKeys[] = {"format_version", "layers", "x", "layers", ""};
  // The first five are flat; then nested ones the fast path also reads (it checks them and reads no
  // further); the last it declines (an escape: the document is then the general parser's).
  static const char* const kRootValues[] = {"\"1.0\"", "1", "null", "{}", "{\"a\": 1}", "[]", "1.5",
                                            "[1, [2, {\"k\": null, \"k\": -0.5e-3}], []]", "{\"a\": {\"b\": [true]}}",
                                            "\"\\n\""};
  static const char* const kUsual[] = {"{\"format\": \"asym_w4a8_int8\", \"group_size\": 64}", "{}",
                                       "{\"format\":\"int8_tensorwise\"}"};
  static const char* const kLayerKeys[] = {"blocks.0.attn.q", "blocks.0.attn.k", "blocks.1.mlp", "a", "", "z.9"};
  static const char* const kWs[] = {"", " ", "\n", "\t "};
  auto ws = [&] { return std::string(kWs[rng() % std::size(kWs)]); };
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
      s += rng() % 4 != 0 ? usual : random_marker(rng);
    }
    s += "}";
  }
  return s + "}" + ws();
}

TEST(JsonFlatLayers, AgreesWithTheGeneralParser) {
  const std::size_t count = case_count();
  std::mt19937_64 rng(0x1A7E);
  std::size_t answered = 0, declined = 0, layers_seen = 0, flat_markers = 0;
  for (std::size_t i = 0; i < count; ++i) {
    std::string text = random_metadata(rng);
    text = edited(rng, std::move(text), rng() % 2 ? 0 : 1 + rng() % 2);  // half of them untouched
    const auto flat = read_flat_layers(text);
    declined += !flat;
    if (!flat) continue;
    ++answered;
    const ParseResult general = detail::loads_general(text);
    ASSERT_TRUE(general.ok() && general->is_object()) << "fast path accepted what the parser rejects: " << text;
    const Value* layers = general->get("layers");
    ASSERT_TRUE(layers != nullptr && layers->is_object()) << text;
    ASSERT_EQ(layers->members.size(), flat->size()) << text;
    bool increasing = true;
    std::string_view previous;  // the layer before's marker, as collect() passes it
    for (std::size_t k = 0; k < flat->size(); ++k) {
      const FlatLayer& l = (*flat)[k];
      ASSERT_LT(std::size_t{l.key_at()}, text.size());
      EXPECT_EQ(l.repeats(), k > 0 && (*flat)[k - 1].marker(text) == l.marker(text)) << text;
      EXPECT_EQ(l.key(text), layers->members[k].first) << text;
      const ParseResult marker = loads_bytes(as_bytes(l.marker(text)));  // (as the validator parses it)
      ASSERT_TRUE(marker.ok() && marker->is_object()) << l.marker(text);
      ASSERT_TRUE(same(*marker, layers->members[k].second)) << text;
      flat_markers += loads_flat_object(l.marker(text)).has_value();
      EXPECT_EQ(l.read(text, previous).marker, l.marker(text)) << text;  // a repeat found without a scan is the same text
      EXPECT_EQ(l.read(text, previous).key, l.key(text)) << text;
      previous = l.marker(text);
      increasing = increasing && (k == 0 || layers->members[k - 1].first < layers->members[k].first);
    }
    EXPECT_EQ(flat->increasing(), increasing) << text;
    layers_seen += flat->size();
  }
  std::printf("flat layers fast path: %zu answered (%zu layers, %zu of them flat markers), %zu declined\n", answered,
              layers_seen, flat_markers, declined);
  EXPECT_GT(answered, count / 10);
  EXPECT_GT(declined, count / 10);
  EXPECT_GT(layers_seen, answered);
  EXPECT_GT(flat_markers, layers_seen / 4);               // both kinds of marker are reached
  EXPECT_GT(layers_seen - flat_markers, layers_seen / 20);
}

TEST(JsonFlatLayers, HandPickedBoundaries) {
  const auto keys = [](std::string_view t) {
    std::string out;
    const auto layers = read_flat_layers(t);
    for (const FlatLayer& l : *layers) out += std::string(l.key(t)) + "=" + std::string(l.marker(t)) + ";";
    return out;
  };
  EXPECT_EQ(keys("{\"layers\":{}}"), "");
  EXPECT_EQ(keys(" {\"format_version\": \"1.0\", \"layers\": {\"b\": {\"format\": \"x\"}, \"a\" : { } } } "),
            "b={\"format\": \"x\"};a={ };");
  EXPECT_EQ(keys("{\"layers\":{\"a\":{}},\"v\":{\"k\":-0},\"w\":true}"), "a={};");
  // Markers and other members that are not flat: checked and passed over (the validator parses each
  // distinct marker text with the general parser).
  EXPECT_EQ(keys("{\"layers\":{\"a\":{\"k\":[1, {\"j\": []}]},\"b\":{\"k\":{},\"k\":2.5E+3}},\"x\":[[], {}, -0.0e-0]}"),
            "a={\"k\":[1, {\"j\": []}]};b={\"k\":{},\"k\":2.5E+3};");
  EXPECT_EQ(keys("{\"x\":1,\"layers\":{\"a\":{}},\"x\":[2],\"y\":{\"layers\":[]}}"), "a={};");  // "x" twice: unread
  // Strings: escapes and UTF-8 in values; keys in UTF-8 (DEL included), spelled without escapes.
  const std::string utf8_key = "caf\xc3\xa9\x7f", emoji = "\xf0\x9f\x98\x80";
  const std::string odd_marker = R"({"k":"\"\\\/\b\f\n\r\t\ud800\uDFFF)" + emoji + R"("})";
  EXPECT_EQ(keys(R"({"layers":{")" + utf8_key + R"(":)" + odd_marker + R"(,"x":{"\u00e9":"\u00E9"}}})"),
            utf8_key + "=" + odd_marker + R"(;x={"\u00e9":"\u00E9"};)");
  // Nesting up to the reader's depth, and one past it.
  const auto marker_of_depth = [](std::size_t depth) {  // arrays `depth` deep inside the marker
    return "{\"k\":" + std::string(depth, '[') + std::string(depth, ']') + "}";
  };
  const auto nested = [&](std::size_t depth) { return "{\"layers\":{\"a\":" + marker_of_depth(depth) + "}}"; };
  EXPECT_EQ(keys(nested(flat::kSkipDepth - 1)), "a=" + marker_of_depth(flat::kSkipDepth - 1) + ";");
  EXPECT_FALSE(read_flat_layers(nested(flat::kSkipDepth)).has_value());
  EXPECT_TRUE(loads_str(nested(flat::kSkipDepth)).ok());
  const std::string declined[] = {
      "", "{}", "[]", "{\"x\":1}",                                  // no "layers": its error is the parser's
      "{\"layers\":[]}", "{\"layers\":1}", "{\"layers\":{\"a\":1}}",  // not an object / a marker not one
      "{\"layers\":{\"a\":[]}}", "{\"layers\":{\"a\":null}}",
      "{\"layers\":{\"a\":{}},\"layers\":{}}",                     // a repeated "layers"
      "{\"layers\":{\"a\":{}},\"x\":1,\"layers\":{\"a\":{}}}",
      "{\"layers\":{\"a\":{},\"a\":{}}}",                           // a repeated layer key, in order
      "{\"layers\":{\"b\":{},\"a\":{},\"b\":{}}}",                 // and out of order
      R"({"layers":{"a\u0062":{}}})", R"({"la\u0079ers":{"a":{}}})",  // a key spelled with an escape
      "{\"layers\":{\"\xc3\":{}}}", "{\"layers\":{\"\xed\xa0\x80\":{}}}",    // a key not UTF-8 (a surrogate)
      R"({"layers":{"a":{}},"x":"\x"})", R"({"layers":{"a":{}},"x":"\u12"})",  // bad escapes
      R"({"layers":{"a":{}},"x":"\"})", R"({"layers":{"a":{}},"x":"\u12g4"})",
      "{\"layers\":{\"a\":{}},\"x\":\"\xff\"}", "{\"layers\":{\"a\":{\"k\":\"\xc0\xaf\"}}}",  // not UTF-8
      "{\"layers\":{\"a\":{}},\"x\":\"\t\"}", R"({"layers":{"a":{}},"x":"a)",  // a control byte; no end
      "{\"layers\":{\"a\":{}},\"x\":NaN}", "{\"layers\":{\"a\":{}},\"x\":-Infinity}",  // Python's extras: the parser's
      "{\"layers\":{\"a\":{}},\"x\":01}", "{\"layers\":{\"a\":{}},\"x\":1.}", "{\"layers\":{\"a\":{}},\"x\":.5}",
      "{\"layers\":{\"a\":{}},\"x\":1e}", "{\"layers\":{\"a\":{}},\"x\":1e+}", "{\"layers\":{\"a\":{}},\"x\":-}",
      "{\"layers\":{\"a\":{}},\"x\":+1}", "{\"layers\":{\"a\":{}},\"x\":[1,]}", "{\"layers\":{\"a\":{}},\"x\":{\"k\":1,}}",
      "{\"layers\":{\"a\":{}},\"x\":[1 2]}", "{\"layers\":{\"a\":{}},\"x\":{\"k\"}}", "{\"layers\":{\"a\":{}},\"x\":[}",
      "{\"layers\":{\"a\":{}},\"x\":tru}", "{\"layers\":{\"a\":{\"k\":[\"\x01\"]}}}",
      "{\"layers\":{\"a\":{}}} x", "{\"layers\":{\"a\":{},}}", "{\"layers\":{\"a\":{}}", "\xef\xbb\xbf{\"layers\":{}}"};
  for (const auto& t : declined) EXPECT_FALSE(read_flat_layers(t).has_value()) << t;
  // Numbers: up to kFlatIntDigits characters (ints that long are far below Python's 4300-digit limit).
  const std::string digits(kFlatIntDigits, '7');
  EXPECT_TRUE(read_flat_layers("{\"layers\":{\"a\":{\"k\":" + digits + "}}}").has_value());
  EXPECT_FALSE(read_flat_layers("{\"layers\":{\"a\":{\"k\":" + digits + "7}}}").has_value());
  EXPECT_FALSE(read_flat_layers("{\"layers\":{\"a\":{\"k\":-" + digits + "}}}").has_value());
  EXPECT_TRUE(read_flat_layers("{\"layers\":{\"a\":{\"k\":" + digits.substr(5) + ".5e-9}}}").has_value());  // 64 characters
  // Out of order but unique: answered (the repeat check hashes); many root members: declined.
  std::string many = "{\"layers\":{";
  for (int i = 999; i >= 0; --i) many += (i == 999 ? "\"k" : ",\"k") + std::to_string(i) + "\":{}";
  ASSERT_TRUE(read_flat_layers(many + "}}").has_value());
  EXPECT_EQ(read_flat_layers(many + "}}")->size(), 1000u);
  EXPECT_FALSE(read_flat_layers(many + "}}")->increasing());
  EXPECT_TRUE(read_flat_layers("{\"layers\":{\"a\":{},\"b\":{}}}")->increasing());
  EXPECT_FALSE(read_flat_layers(many + ",\"k500\":{}}}").has_value());
  // Any number of root members (a marker's limit, kFlatMembers, is the flat object's, not this reader's).
  std::string wide = "{\"layers\":{\"a\":{}}";
  for (std::size_t i = 1; i < 4 * kFlatMembers; ++i) wide += ",\"r" + std::to_string(i) + "\":1";
  EXPECT_EQ(keys(wide + "}"), "a={};");
  std::string wide_marker = "{\"layers\":{\"a\":{\"k0\":0";
  for (std::size_t i = 1; i <= kFlatMembers; ++i) wide_marker += ",\"k" + std::to_string(i) + "\":1";
  EXPECT_FALSE(loads_flat_object(wide_marker.substr(wide_marker.find("{\"k0")) + "}").has_value());
  EXPECT_EQ(read_flat_layers(wide_marker + "}}}")->size(), 1u);
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
  const auto flat = read_flat_layers(text);
  ASSERT_TRUE(flat.has_value());
  ASSERT_EQ(flat->size(), kLayers);
  const ParseResult general = detail::loads_general(text);
  ASSERT_TRUE(general.ok());
  const Value& layers = *general->get("layers");
  ASSERT_EQ(layers.members.size(), kLayers);
  std::size_t k = 0;
  for (const FlatLayer& l : *flat) {
    ASSERT_LT(k, kLayers);
    EXPECT_EQ(l.key(text), layers.members[k].first) << k;
    EXPECT_EQ((*flat)[k].marker(text), l.marker(text)) << k;
    const auto marker = loads_flat_object(l.marker(text));
    ASSERT_TRUE(marker.has_value()) << k;
    EXPECT_TRUE(same(*marker, layers.members[k].second)) << k;
    ++k;
  }
  EXPECT_EQ(k, kLayers);
  EXPECT_EQ(flat->back().key(text), layers.members.back().first);
  // A key repeated across blocks (the first layer's, last): the general parser's to merge.
  const std::string first_key = "\"L0\"";
  ASSERT_NE(text.find(first_key), std::string::npos);
  std::string repeated = text.substr(0, text.size() - 2) + ", " + first_key + ": {}}}";
  EXPECT_FALSE(read_flat_layers(repeated).has_value());
}

}  // namespace
}  // namespace w4a8::json
