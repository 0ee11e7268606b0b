// Marker (one object shared by layers, copied on write) and DerivedKeys against the plain model they
// replace: one json::Value per layer, changed with Value::set_bool.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "builder.hpp"
#include "json/dump.hpp"
#include "json/parse.hpp"
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

}  // namespace
}  // namespace w4a8::validate::testing
