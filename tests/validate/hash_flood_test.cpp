// Keys built to share one std::hash value (tests/support/stdhash_collisions.hpp) as the layers of a
// _quantization_metadata document and as a marker's member names: with libstdc++'s std::hash every
// table insert probed past all earlier keys (40,000 layers: 3.5 s where ordinary keys take 0.01 s).
// Each shape must take about as long as the same shape with ordinary keys of the same length.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "builder.hpp"
#include "support/stdhash_collisions.hpp"

namespace w4a8::validate::testing {
namespace {

constexpr std::size_t kKeys = 40000;

const std::vector<std::string>& colliding() {
  static const std::vector<std::string> keys = [] {
    auto k = w4a8::testing::stdhash_colliding_keys(kKeys);
    std::sort(k.rbegin(), k.rend());  // decreasing: the readers hash instead of comparing with the key before
    return k;
  }();
  return keys;
}

// As many ordinary keys of the same length, also decreasing.
const std::vector<std::string>& ordinary() {
  static const std::vector<std::string> keys = [] {
    std::vector<std::string> k;
    for (std::size_t i = 0; i < kKeys; ++i) {
      std::string s = std::to_string(i * 2654435761u);
      k.push_back(s.append(16 - s.size(), 'x'));
    }
    std::sort(k.rbegin(), k.rend());
    return k;
  }();
  return keys;
}

double seconds(const std::function<void()>& f) {
  const auto t0 = std::chrono::steady_clock::now();
  f();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// Runs the checkpoint `make(keys)` builds for both key sets; expects acceptance with `layers` layers.
void expect_no_flood(const std::function<Ckpt(const std::vector<std::string>&)>& make, std::size_t layers) {
  const Bytes bad = make(colliding()).bytes(), good = make(ordinary()).bytes();
  std::optional<Result<Report>> r_bad, r_good;
  const double t_good = seconds([&] { r_good.emplace(run(std::vector<Bytes>{good})); });
  const double t_bad = seconds([&] { r_bad.emplace(run(std::vector<Bytes>{bad})); });
  ASSERT_TRUE(r_good->ok()) << r_good->error().message;
  ASSERT_TRUE(r_bad->ok()) << r_bad->error().message;
  EXPECT_EQ((*r_bad)->layers.size(), layers);
  EXPECT_LT(t_bad, 10 * t_good + 0.25) << "colliding keys " << t_bad << " s, ordinary keys " << t_good << " s";
}

std::string layers_doc(const std::vector<std::string>& keys, const std::string& extra_root) {
  std::string doc = "{\"layers\": {";
  for (std::size_t i = 0; i < keys.size(); ++i) doc += (i ? ", \"" : "\"") + keys[i] + "\": {}";
  return doc + "}" + extra_root + "}";
}

TEST(HashFlood, MetadataLayersReadFlat) {
  expect_no_flood([](const auto& keys) { return Ckpt().meta("_quantization_metadata", layers_doc(keys, "")); }, kKeys);
}

TEST(HashFlood, MetadataLayersParsedWhole) {  // a list at the root: the general parser builds the document
  expect_no_flood([](const auto& keys) { return Ckpt().meta("_quantization_metadata", layers_doc(keys, ", \"x\": [1]")); },
                  kKeys);
}

// One marker with every key as a member, recorded twice for one layer (in the metadata, then as a
// tensor): the second is merged into the first key by key (sglang 0.5.20+).
TEST(HashFlood, MembersOfOneMarker) {
  expect_no_flood(
      [](const auto& keys) {
        std::string m = "{";
        for (std::size_t i = 0; i < keys.size(); ++i) m += (i ? ", \"" : "\"") + keys[i] + "\": 0";
        m += "}";
        return Ckpt().meta("_quantization_metadata", "{\"layers\": {\"a\": " + m + "}}").marker("a", m);
      },
      1);
}

}  // namespace
}  // namespace w4a8::validate::testing
