// PrefixIndex (src/validate/prefix_index.hpp) against std::map on the same operations, used as
// record_marker uses it (a new key's layer is appended at once): keys in order (the layers are the
// sorted table), then out of order (the switch to hashing, growth past the reserved room), repeats,
// and lookups of present and absent keys in both modes.
#include <gtest/gtest.h>

#include <map>
#include <random>
#include <string>
#include <vector>

#include "validate/prefix_index.hpp"

namespace w4a8::validate::detail {
namespace {

TEST(PrefixIndex, AgreesWithAMap) {
  std::mt19937_64 rng(0x9E3779B9);
  for (int round = 0; round < 300; ++round) {
    // Keys live in a pool that never moves (layers hold views).
    const std::size_t n = 1 + rng() % 400;
    std::vector<std::string> pool;
    pool.reserve(n);
    for (std::size_t i = 0; i < n; ++i) pool.push_back("blocks." + std::to_string(rng() % (2 * n)) + ".w");
    if (round % 3 == 0) std::sort(pool.begin(), pool.end());  // in order; repeats, if any, adjacent
    std::vector<Layer> layers;
    PrefixIndex index(layers);
    if (round % 2 == 0) index.reserve(rng() % (n + 1));
    std::map<std::string, std::size_t> model;
    for (std::size_t i = 0; i < n; ++i) {
      const auto [pos, inserted] = index.try_emplace(pool[i]);
      const auto [it, model_inserted] = model.try_emplace(pool[i], layers.size());
      ASSERT_EQ(inserted, model_inserted) << pool[i];
      ASSERT_EQ(pos, it->second) << pool[i];
      if (inserted) layers.push_back(Layer{st::Name(pool[i]), Marker{}});
      // A lookup between insertions: present, then absent.
      const std::string& probe = pool[rng() % (i + 1)];
      ASSERT_EQ(index.find(probe), std::optional<std::size_t>(model.at(probe)));
      ASSERT_FALSE(index.contains(probe + "x"));
    }
    for (const auto& [key, pos] : model) ASSERT_EQ(index.find(key), std::optional<std::size_t>(pos)) << key;
    ASSERT_FALSE(index.contains(""));
    ASSERT_FALSE(index.contains("blocks."));
  }
}

}  // namespace
}  // namespace w4a8::validate::detail
