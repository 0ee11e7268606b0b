// st::Name keeps its last bytes in place for ends_with (name.hpp): every answer must be
// std::string_view's, whatever the lengths (shorter and longer than the kept bytes, equal, empty),
// NUL and high bytes included.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "safetensors/name.hpp"

namespace w4a8::st {
namespace {

TEST(StName, EndsWithMatchesStringViewOnEveryShortPair) {
  // Every string up to 5 bytes over a 3-letter alphabet against every other: all length pairs
  // around the 4 kept bytes, suffixes that agree only in their kept part or only before it.
  const std::string alphabet = {'a', '\0', '\xe9'};
  std::vector<std::string> all = {""};
  for (std::size_t len = 1, from = 0; len <= 5; ++len) {
    const std::size_t to = all.size();
    for (std::size_t i = from; i < to; ++i)
      for (char c : alphabet) all.push_back(all[i] + c);
    from = to;
  }
  std::size_t checked = 0, matched = 0;
  for (const std::string& n : all) {
    const Name name(n);
    for (const std::string& s : all) {
      const bool want = std::string_view(n).ends_with(s);
      ASSERT_EQ(name.ends_with(s), want) << "name of " << n.size() << " bytes, suffix of " << s.size();
      ++checked;
      matched += want;
    }
  }
  EXPECT_EQ(checked, all.size() * all.size());
  EXPECT_GT(matched, all.size());  // (not only the empty suffix)
}

TEST(StName, EndsWithOnLayerNames) {
  std::mt19937_64 rng(7);
  const std::vector<std::string> suffixes = {".weight", ".comfy_quant", ".weight_s_rel", ".weight_s_channel",
                                             ".bias", "t", "ht", "ight", "eight", ".weight_scale", ".weight_scale_2",
                                             "_scale_2", "s_channel", "_s_channel"};
  for (int round = 0; round < 20000; ++round) {
    std::string n = "model.diffusion_model.blocks." + std::to_string(rng() % 40) + suffixes[rng() % suffixes.size()];
    if (rng() % 4 == 0) n.back() = static_cast<char>('a' + rng() % 26);  // a near miss in the kept bytes
    if (rng() % 4 == 0) n[n.size() - 1 - rng() % 12] ^= 1;                // ... or before them
    const Name name(n);
    for (const std::string& s : suffixes) ASSERT_EQ(name.ends_with(s), std::string_view(n).ends_with(s)) << n << " " << s;
  }
}

TEST(StName, ConstantEvaluated) {
  constexpr Name n{std::string_view("layer.weight")};
  static_assert(n.ends_with(".weight") && n.ends_with("") && !n.ends_with(".weigh") && !n.ends_with("x.layer.weight"));
  constexpr Name s{std::string_view("ab")};
  static_assert(s.ends_with("b") && s.ends_with("ab") && !s.ends_with("a") && !s.ends_with("cab"));
  SUCCEED();
}

}  // namespace
}  // namespace w4a8::st
