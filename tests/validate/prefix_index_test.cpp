// PrefixIndex (src/validate/prefix_index.hpp) against std::map on the same operations, used as
// record_marker uses it (a new key's layer is appended at once): keys in order (the layers are the
// sorted table), then out of order (the switch to hashing, growth past the reserved room), repeats,
// and lookups of present and absent keys in both modes.
#include <gtest/gtest.h>

#include <algorithm>
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

// appended_distinct(): distinct keys appended without try_emplace (a flat metadata read), in order
// or not, or with their table built beforehand, then the same operations as above against the map:
// the index catches up on first use.
TEST(PrefixIndex, AppendedDistinctKeysAreFoundLater) {
  std::mt19937_64 rng(0x5EED);
  for (int round = 0; round < 200; ++round) {
    const std::size_t n = rng() % 300, more = rng() % 100;
    std::vector<std::string> pool;
    pool.reserve(n + more);
    for (std::size_t i = 0; i < n; ++i) pool.push_back("m." + std::to_string(i * 7919 % 100003));  // distinct
    const bool sorted = round % 2 == 0;
    if (sorted) std::sort(pool.begin(), pool.end());
    for (std::size_t i = 0; i < more; ++i) pool.push_back("m." + std::to_string(rng() % 100003));  // maybe repeats
    std::vector<Layer> layers;
    layers.reserve(n + rng() % 50);
    PrefixIndex index(layers);
    std::map<std::string, std::size_t> model;
    for (std::size_t i = 0; i < n; ++i) {
      layers.push_back(Layer{st::Name(pool[i]), Marker{}});
      model.emplace(pool[i], i);
    }
    if (!sorted && round % 4 == 1) {  // with the table of their positions built beforehand, as the flat read does
      KeySlots table;
      table.rebuild(n, n, [&](std::uint32_t i) { return std::string_view(pool[i]); });
      index.appended_distinct(std::move(table));
    } else {
      index.appended_distinct(sorted);
    }
    if (round % 3 == 0 && n > 0) {
      ASSERT_EQ(index.find(pool[n / 2]), std::optional<std::size_t>(n / 2));
    }
    for (std::size_t i = n; i < n + more; ++i) {  // then markers recorded one by one, as tensors are
      const auto [pos, inserted] = index.try_emplace(pool[i]);
      const auto [it, model_inserted] = model.try_emplace(pool[i], layers.size());
      ASSERT_EQ(inserted, model_inserted) << pool[i];
      ASSERT_EQ(pos, it->second) << pool[i];
      if (inserted) layers.push_back(Layer{st::Name(pool[i]), Marker{}});
    }
    for (const auto& [key, pos] : model) ASSERT_EQ(index.find(key), std::optional<std::size_t>(pos)) << key;
    ASSERT_FALSE(index.contains("m.x"));
  }
}

}  // namespace
}  // namespace w4a8::validate::detail
