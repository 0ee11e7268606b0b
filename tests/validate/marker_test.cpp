// Marker (one object shared by layers, copied on write) and DerivedKeys against the plain model they
// replace: one json::Value per layer, changed with Value::set_bool.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "builder.hpp"
#include "json/dump.hpp"
#include "json/parse.hpp"
#include "validate/comfy_formats.hpp"
#include "validate/marker.hpp"

namespace w4a8::validate::testing {
namespace {

json::Value parsed(std::string_view text) {
  json::ParseResult r = json::loads_str(text);
  EXPECT_TRUE(r.ok()) << text;
  return r.ok() ? std::move(r).value() : json::Value{};
}

// Distinct objects among the layers' markers.
std::size_t distinct_objects(const std::vector<Layer>& layers) {
  std::size_t n = 0;
  for (std::size_t i = 0; i < layers.size(); ++i) {
    bool seen = false;
    for (std::size_t j = 0; j < i && !seen; ++j) seen = layers[j].marker.same_object(layers[i].marker);
    n += !seen;
  }
  return n;
}

TEST(Marker, EditCopiesASharedObjectAndNoOther) {
  Marker a(parsed(R"({"format": "x", "n": 1})"));
  const json::Value* before = &a.value();
  a.edit().set("n", json::Value::from_int(2));  // the only holder: changed in place
  EXPECT_EQ(&a.value(), before);
  Marker b = a;
  EXPECT_TRUE(b.shared());
  b.edit(2).set("n", json::Value::from_int(3));
  EXPECT_FALSE(a.same_object(b));
  EXPECT_EQ(json::dump(a), R"({"format": "x", "n": 2})");
  EXPECT_EQ(json::dump(b), R"({"format": "x", "n": 3})");
  EXPECT_FALSE(a.shared());
  EXPECT_TRUE(Marker().is_null());
  EXPECT_EQ(Marker().get("format"), nullptr);
}

TEST(Marker, TakeMovesFromTheLastHolderAndCopiesFromAShared) {
  Marker a(parsed(R"({"k": [1, 2]})"));
  Marker b = a;
  json::Value from_shared = b.take();
  EXPECT_TRUE(b.is_null());
  EXPECT_EQ(json::dump(from_shared), R"({"k": [1, 2]})");
  EXPECT_EQ(json::dump(a), R"({"k": [1, 2]})");  // untouched: it was copied
  json::Value last = a.take();
  EXPECT_EQ(json::dump(last), R"({"k": [1, 2]})");
  EXPECT_TRUE(a.is_null());
}

// Random layers over a few shared objects, random derived keys: every layer always equals its own
// json::Value changed by Value::set_bool, and no write shows through to another layer.
TEST(DerivedKeys, EveryLayerEqualsItsOwnObjectChangedBySetBool) {
  const char* bases[] = {R"({"format": "asym_w4a8_int8", "group_size": 16})", R"({"format": "int8_tensorwise"})",
                         R"({"_has_codebook": 1, "format": "asym_w4a8_int8"})", R"({})"};
  const char* keys[] = {"_has_codebook", "_has_correction", "_is_rowwise"};
  std::mt19937_64 rng(0x5EED);
  for (int round = 0; round < 200; ++round) {
    const std::size_t n = 1 + rng() % 12;
    std::vector<Marker> shared_bases;
    for (const char* b : bases) shared_bases.emplace_back(parsed(b));
    std::vector<Marker> layers;
    std::vector<json::Value> model;
    for (std::size_t i = 0; i < n; ++i) {
      const std::size_t b = rng() % 4;
      layers.push_back(shared_bases[b]);
      model.push_back(parsed(bases[b]));
    }
    if (rng() % 2 == 0) shared_bases.clear();  // the layers alone hold them, or not
    DerivedKeys derived;
    for (int step = 0; step < 40; ++step) {
      const std::size_t i = rng() % n;
      const char* key = keys[rng() % 3];
      const bool b = rng() % 3 != 0;
      derived.set_bool(layers[i], key, b);
      model[i].set_bool(key, b);
      for (std::size_t j = 0; j < n; ++j)
        ASSERT_EQ(json::dump(layers[j]), json::dump(model[j])) << "round " << round << " step " << step << " layer " << j;
    }
  }
}

TEST(DerivedKeys, LayersGivenTheSameKeysKeepSharingOneObject) {
  Marker base(parsed(R"({"format": "asym_w4a8_int8", "group_size": 16})"));
  std::vector<Layer> layers(100, Layer{st::Name("p"), base});
  DerivedKeys derived;
  for (std::size_t i = 0; i < layers.size(); ++i) {
    derived.set_bool(layers[i].marker, "_has_codebook", i == 7);
    derived.set_bool(layers[i].marker, "_has_correction", false);
  }
  // Every layer but 7 shares one result; layer 7 has its own, and the base is unchanged.
  EXPECT_EQ(distinct_objects(layers), 2u);
  EXPECT_EQ(json::dump(layers[0].marker),
            R"({"format": "asym_w4a8_int8", "group_size": 16, "_has_codebook": false, "_has_correction": false})");
  EXPECT_EQ(json::dump(layers[7].marker),
            R"({"format": "asym_w4a8_int8", "group_size": 16, "_has_codebook": true, "_has_correction": false})");
  EXPECT_EQ(json::dump(base), R"({"format": "asym_w4a8_int8", "group_size": 16})");
}

// Through the validator: byte-identical markers end up as one object (the point of Marker: 5,000
// layers of a model hold a handful of objects, not 5,000 trees).
TEST(DerivedKeys, ValidatedLayersWithEqualMarkerBytesShareOneObject) {
  const std::string same = R"({"format": "asym_w4a8_int8", "group_size": 16})";
  Ckpt c;
  for (int i = 0; i < 50; ++i) c.w4a8("l" + std::to_string(100 + i), 4, 128, 16, same);
  auto r = run(c);
  ASSERT_TRUE(r.ok()) << verdict(r);
  ASSERT_EQ(r->layers.size(), 50u);
  EXPECT_EQ(distinct_objects(r->layers), 1u);
  c.tensor("l120.weight_correction", st::Dtype::F32, {16, 4});  // (groups, rows): one layer differs
  auto r2 = run(c);
  ASSERT_TRUE(r2.ok()) << verdict(r2);
  EXPECT_EQ(distinct_objects(r2->layers), 2u);
  EXPECT_TRUE(r2->layers[20].marker.get("_has_correction")->boolean);
  EXPECT_FALSE(r2->layers[21].marker.get("_has_correction")->boolean);
  EXPECT_FALSE(r2->layers[19].marker.get("_has_correction")->boolean);
}

// ---- Markers kept as text (format-less flat metadata markers) -----------------------------------

// Hand-picked: which texts may stay text (a flat object, no backslash, no "format" anywhere).
TEST(MarkerText, OnlyFlatFormatlessTextsWithoutEscapesAreKept) {
  for (std::string_view t : {R"({})", R"({"a": 1, "b": "x y"})", R"({"a":"[{"})", R"({"a":"}"})",
                             R"({"Format": "asym_w4a8_int8"})", R"({"formats": 1})", "{\"u\": \"\xC3\xA9\"}"})
    EXPECT_TRUE(Marker::text_form_allowed(t)) << t;
  for (std::string_view t : {R"({"format": "x"})", R"({"a": "format"})", R"({"a": [1]})", R"({"a": {}})",
                             R"({"\u0066ormat": 1})", R"({"a": "\""})", R"({"a": "\n"})"})
    EXPECT_FALSE(Marker::text_form_allowed(t)) << t;
}

// A text marker's object is json.loads' object of its text, wherever the text ends in its buffer
// (the first '}' outside a string), by every way of reading it.
TEST(MarkerText, ReadsAsTheParsedText) {
  for (std::string_view t : {R"({})", R"({"a": 1})", R"({"s": "}", "f": 1.0e5, "k": 1, "k": 2})",
                             R"({"b": "[{}]", "t": true, "z": null, "n": -0.0})"}) {
    const std::string buffer = std::string(t) + R"(, "next": {"x": "}"}})";  // as in a document
    const json::Value want = parsed(t);
    const std::string want_text = json::dump(want);

    const Marker m = Marker::text_form(buffer.data());
    ASSERT_TRUE(m.is_text());
    EXPECT_FALSE(m.is_null());
    EXPECT_EQ(comfy_format_of(m), nullptr);
    EXPECT_EQ(m.visit([](const json::Value& v) { return json::dump(v); }), want_text) << t;
    EXPECT_TRUE(m.is_text()) << "visit() keeps no object";
    const Marker copy = m;  // NOLINT(performance-unnecessary-copy-initialization): a copy views the same text
    EXPECT_TRUE(copy.same_object(m));
    EXPECT_EQ(json::dump(m.value()), want_text) << t;
    EXPECT_FALSE(m.is_text()) << "value() keeps the object";
    EXPECT_TRUE(copy.is_text());

    Marker e = Marker::text_form(buffer.data());
    e.edit(2).set_bool("_x", true);
    json::Value changed = want;
    changed.set_bool("_x", true);
    EXPECT_EQ(json::dump(e.value()), json::dump(changed));

    Marker t2 = Marker::text_form(buffer.data());
    EXPECT_EQ(json::dump(t2.take()), want_text);
    EXPECT_TRUE(t2.is_null());
  }
}

// A remembered fact about a text marker holds for the Markers viewing that text, and for no other
// (equal bytes elsewhere are another text), nor for an object.
TEST(MarkerText, FactsAreRememberedByText) {
  const std::string a = R"({"a": 1})", b = R"({"a": 1})";
  const Marker ma = Marker::text_form(a.data()), mb = Marker::text_form(b.data());
  const Marker ma2 = ma;  // NOLINT(performance-unnecessary-copy-initialization): the copy is what is tested
  const Marker object(parsed(a));
  LastMarkerFact<int> fact;
  EXPECT_FALSE(fact.for_(ma));
  fact.remember(ma, 7);
  EXPECT_TRUE(fact.for_(ma));
  EXPECT_TRUE(fact.for_(ma2));
  EXPECT_FALSE(fact.for_(mb));
  EXPECT_FALSE(fact.for_(object));
  fact.remember(object, 8);
  EXPECT_TRUE(fact.for_(object));
  EXPECT_FALSE(fact.for_(ma));
}

}  // namespace
}  // namespace w4a8::validate::testing
