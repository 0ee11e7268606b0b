// Choice sources: bounds, determinism, and the recording -> bytes -> replay law.
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "gen/choice_source.hpp"
#include "gen/fuzz_bodies.hpp"
#include "gen/properties.hpp"

namespace w4a8::gen {
namespace {

TEST(ChoiceSource, BytesStayInRangeAndExhaustToZero) {
  const std::uint8_t data[] = {0xFF, 0xFF, 0x07, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08};
  ByteChoiceSource s(data);
  EXPECT_EQ(s.below(10), 255u % 10);
  EXPECT_EQ(s.below(1), 0u);  // forced choices consume nothing
  EXPECT_EQ(s.below(300), (0xFF | (0x07 << 8)) % 300);
  EXPECT_LT(s.below(UINT64_MAX), UINT64_MAX);
  EXPECT_EQ(s.below(1000), 0u);  // exhausted
  EXPECT_EQ(s.range(5, 9), 5u);
}

// below(n) reads the fewest little-endian bytes that cover n - 1 (zeros once the input is used up)
// and takes the remainder: recorded inputs decode to the same choices whatever path computes it.
TEST(ChoiceSource, BytesDecodeAsLittleEndianRemainder) {
  std::mt19937_64 rng(7);
  for (int round = 0; round < 2000; ++round) {
    std::vector<std::uint8_t> data(rng() % 24);
    for (auto& b : data) b = static_cast<std::uint8_t>(rng());
    ByteChoiceSource s(data);
    std::size_t pos = 0;
    for (int k = 0; k < 12; ++k) {
      const unsigned bits = 1 + static_cast<unsigned>(rng() % 64);
      std::uint64_t n = bits == 64 ? rng() : rng() & ((std::uint64_t{1} << bits) - 1);
      if (rng() % 4 == 0) n = 2 + rng() % 255;  // the one-byte choices most generators make
      std::uint64_t want = 0;
      if (n > 1) {
        unsigned width = 0;
        for (std::uint64_t m = n - 1; m != 0; m >>= 8) ++width;
        std::uint64_t v = 0;
        for (unsigned i = 0; i < width && pos < data.size(); ++i) v |= std::uint64_t{data[pos++]} << (8 * i);
        want = v % n;
      }
      ASSERT_EQ(s.below(n), want) << "round " << round << " n " << n;
      ASSERT_EQ(s.consumed(), pos);
    }
  }
}

TEST(ChoiceSource, SeededIsDeterministic) {
  SeededChoiceSource a(42), b(42);
  for (int i = 0; i < 1000; ++i) ASSERT_EQ(a.below(1 + i), b.below(1 + i));
}

// post of RecordingChoiceSource: replaying its bytes makes the same choices, hence the same scenario.
TEST(ChoiceSource, RecordedChoicesReplayAsFuzzerBytes) {
  for (std::uint64_t seed = 1; seed <= 200; ++seed) {
    SeededChoiceSource inner(seed);
    RecordingChoiceSource rec(inner);
    const Scenario a = generate(rec);
    ByteChoiceSource replay(rec.bytes());
    const Scenario b = generate(replay);
    ASSERT_EQ(describe(a), describe(b)) << "seed " << seed;
    ASSERT_EQ(replay.consumed(), rec.bytes().size());
  }
}

// Choices of 0 (a fuzz input used up, a fully shrunk case) build small scenarios: no marker nested
// to the recursion limit (a ~1,000-level chain costs more than the rest of an input together).
// Seeded sources still nest, about one scenario in 16 where a marker qualifies.
TEST(ChoiceSource, ExhaustedChoicesDoNotNestToTheRecursionLimit) {
  const std::vector<std::uint8_t> zeros(4096, 0);
  for (auto v : {ConfigVariant::Valid, ConfigVariant::OneDefect, ConfigVariant::Several, ConfigVariant::Any}) {
    const GenConfig cfg = config_variant(v);
    for (std::span<const std::uint8_t> bytes : {std::span<const std::uint8_t>(), std::span<const std::uint8_t>(zeros)}) {
      ByteChoiceSource src(bytes);
      const Scenario s = generate(src, cfg);
      for (const auto& m : s.markers) EXPECT_LT(m.doc.depth, 10) << describe(s);
    }
  }
  SeededChoiceSource src(16);
  int nested = 0;
  for (int i = 0; i < 400; ++i) {
    const Scenario s = generate(src, config_variant(ConfigVariant::Valid));
    for (const auto& m : s.markers) nested += m.doc.depth > 900;
  }
  EXPECT_GT(nested, 4);
  EXPECT_LT(nested, 60);
}

// halving(6): one byte, 63 values; by hand, 32 of them give 1, 16 give 2, 8, 4, 2 and 1 give 3 to 6
// (values 0-31, 32-47, 48-55, 56-59, 60-61, 62), and 0 (an exhausted stream) gives 1.
TEST(ChoiceSource, HalvingCountsHalveFromOne) {
  std::vector<int> seen(8, 0);
  for (unsigned b = 0; b < 63; ++b) {
    const std::uint8_t byte[] = {static_cast<std::uint8_t>(b)};
    ByteChoiceSource s(byte);
    const std::uint64_t n = s.halving(6);
    ASSERT_GE(n, 1u);
    ASSERT_LE(n, 6u);
    ++seen[n];
    EXPECT_EQ(s.consumed(), 1u);
  }
  EXPECT_EQ(seen, (std::vector<int>{0, 32, 16, 8, 4, 2, 1, 0}));
  const std::uint8_t last[] = {62}, first_two[] = {32}, first_three[] = {48};
  EXPECT_EQ(ByteChoiceSource(last).halving(6), 6u);
  EXPECT_EQ(ByteChoiceSource(first_two).halving(6), 2u);
  EXPECT_EQ(ByteChoiceSource(first_three).halving(6), 3u);
  EXPECT_EQ(ByteChoiceSource({}).halving(6), 1u);
  ByteChoiceSource one(last);
  EXPECT_EQ(one.halving(1), 1u);  // a forced choice: nothing read
  EXPECT_EQ(one.consumed(), 0u);
}

// The fuzz target's configuration draws layer counts by halving; the properties' stays uniform.
TEST(ChoiceSource, FuzzCasesHaveFewerLayersThanProperties) {
  SeededChoiceSource a(5), b(5);
  std::vector<int> fuzz(8, 0), props(8, 0);
  for (int i = 0; i < 600; ++i) {
    ++fuzz[std::min<std::size_t>(generate(a, case_config(ConfigVariant::Valid)).layers.size(), 7)];
    ++props[std::min<std::size_t>(generate(b, config_variant(ConfigVariant::Valid)).layers.size(), 7)];
  }
  // 1/2 against 1/6 single-layer scenarios (binomial, n = 600: expected 300 and 100, the bounds
  // 4.9 and 6.6 standard deviations away; the seeds are fixed, so the counts are too).
  EXPECT_GT(fuzz[1], 240);
  EXPECT_LT(props[1], 160);
  EXPECT_GT(fuzz[6] + props[6], 0);
}

}  // namespace
}  // namespace w4a8::gen
