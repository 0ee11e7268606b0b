// Choice sources: bounds, determinism, and the recording -> bytes -> replay law.
#include <gtest/gtest.h>

#include "gen/choice_source.hpp"
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

}  // namespace
}  // namespace w4a8::gen
