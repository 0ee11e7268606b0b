// State::meta (checkpoint_meta.get(prefix + suffix)) against a brute-force scan of the same sorted
// table: names drawn from a tiny alphabet of '.'-separated parts, so prefixes nest ("a", "a.b",
// "a.b.c"), ranges touch, and layers with more tensors than the linear scan holds occur; queries
// come in name order (the fast step from one layer to the next) and in random order, by prefix and
// by layer index, mixed.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "validate/state.hpp"

namespace w4a8::validate::detail {
namespace {

std::string random_name(std::mt19937_64& rng) {
  static const char* const parts[] = {"a", "b", "ab", "a-", "a/", "weight", "comfy_quant", "x"};
  std::string s = parts[rng() % 8];
  for (std::size_t n = rng() % 4; n > 0; --n) s += std::string(".") + parts[rng() % 8];
  return s;
}

const TensorMeta* brute(const std::vector<st::TensorInfo>& ts, const std::string& full) {
  for (const auto& t : ts)
    if (t.name == full) return &t;
  return nullptr;
}

TEST(MetaLookup, AgreesWithBruteForce) {
  std::mt19937_64 rng(0x3E7A);
  const Options opt;
  for (int round = 0; round < 300; ++round) {
    std::set<std::string> names;
    const std::size_t count = 1 + rng() % (round % 3 == 0 ? 200 : 30);
    while (names.size() < count) names.insert(random_name(rng));
    // Many tensors under one prefix now and then: a range past the linear scan.
    if (round % 5 == 0)
      for (int i = 0; i < 40; ++i) names.insert("a.b.t" + std::to_string(i));
    const std::vector<std::string> stored(names.begin(), names.end());  // sorted, as collect() leaves it
    std::vector<st::TensorInfo> infos(stored.size());
    for (std::size_t i = 0; i < stored.size(); ++i) infos[i].name = st::Name(stored[i]);
    State s(opt);
    for (const auto& t : infos) s.report.tensors.push_back(&t);

    // Prefixes: every name's proper '.'-prefixes and a few that match nothing.
    std::vector<std::string> prefixes = {"", "zz", "a.", "b"};
    for (const auto& n : stored)
      for (std::size_t d = n.find('.'); d != std::string::npos; d = n.find('.', d + 1)) prefixes.push_back(n.substr(0, d));
    std::sort(prefixes.begin(), prefixes.end());
    prefixes.erase(std::unique(prefixes.begin(), prefixes.end()), prefixes.end());
    const std::string suffixes[] = {".weight", ".comfy_quant", ".b", ".b.weight", ".t7", "weight", "", ".", "/x"};
    // Every prefix is also a layer, for the lookups keyed by layer index (meta(layer, suffix)); the
    // two kinds are mixed, so a range set by one is reused (or must not be) by the other.
    for (const auto& p : prefixes) s.report.layers.push_back(Layer{st::Name(p), {}});  // prefixes outlives s
    std::vector<std::size_t> order(prefixes.size());
    for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
    auto check = [&](std::size_t layer) {
      const std::string& p = prefixes[layer];
      for (const auto& suf : suffixes) {
        const bool by_index = rng() % 2 == 0;
        const TensorMeta* got = by_index ? s.meta(layer, suf) : s.meta(p, suf);
        ASSERT_EQ(got, brute(infos, p + suf)) << "prefix '" << p << "' suffix '" << suf << "' by "
                                              << (by_index ? "layer index" : "prefix");
      }
    };
    for (std::size_t i : order) check(i);  // name order
    std::shuffle(order.begin(), order.end(), rng);
    for (std::size_t i : order) check(i);  // any order
    // Single lookups hopping between a few layers: layer A by index, B by prefix, A by index again
    // (A's range was replaced meanwhile, so its index must no longer name the kept range).
    std::size_t recent[2] = {0, 0};
    for (int step = 0; step < 400; ++step) {
      const std::size_t pick = rng() % 4;
      const std::size_t layer = pick < 2 ? recent[pick] : rng() % prefixes.size();
      const std::string& suf = suffixes[rng() % std::size(suffixes)];
      const bool by_index = rng() % 2 == 0;
      const TensorMeta* got = by_index ? s.meta(layer, suf) : s.meta(prefixes[layer], suf);
      ASSERT_EQ(got, brute(infos, prefixes[layer] + suf)) << "step " << step << " prefix '" << prefixes[layer]
                                                           << "' suffix '" << suf << "'";
      if (layer != recent[0]) recent[1] = std::exchange(recent[0], layer);
    }
  }
}

}  // namespace
}  // namespace w4a8::validate::detail
