// The generator reaches every outcome (style.md 10, libFuzzer's FoundMask tests): with a seeded
// source, every defect class is injected, and the validator produces every error kind the defect
// table names, plus acceptance in both modes.
#include <gtest/gtest.h>

#include <bitset>

#include "gen/choice_source.hpp"
#include "gen/properties.hpp"

namespace w4a8::gen {
namespace {

TEST(GenReach, EveryDefectAndEveryKind) {
  std::bitset<kDefectCount> injected;
  std::bitset<kErrorKindCount> want_kinds, got_kinds;
  for (std::size_t d = 0; d < kDefectCount; ++d) want_kinds.set(static_cast<std::size_t>(defect_kind(static_cast<Defect>(d))));
  bool accepted[2] = {false, false};
  SeededChoiceSource src(20261129);
  const GenConfig one = config_variant(ConfigVariant::OneDefect);
  for (int i = 0; i < 6000 && !(injected.all() && (got_kinds & want_kinds) == want_kinds && accepted[0] && accepted[1]); ++i) {
    const Scenario s = generate(src, i % 5 ? one : config_variant(ConfigVariant::Valid));
    for (Defect d : s.defects) injected.set(static_cast<std::size_t>(d));
    const auto r = run_validator(s);
    if (r.ok()) accepted[s.options.strict] = true;
    else got_kinds.set(static_cast<std::size_t>(r.error().kind));
  }
  for (std::size_t d = 0; d < kDefectCount; ++d)
    EXPECT_TRUE(injected[d]) << "never injected: " << defect_name(static_cast<Defect>(d));
  for (std::size_t k = 0; k < kErrorKindCount; ++k)
    if (want_kinds[k]) {
      EXPECT_TRUE(got_kinds[k]) << "never produced: " << kErrorTable[k].code;
    }
  EXPECT_TRUE(accepted[0]) << "no checkpoint accepted without --strict";
  EXPECT_TRUE(accepted[1]) << "no checkpoint accepted with --strict";
}

// Every defect maps to a kind, and the oracle predicts that kind whenever the defect is alone.
TEST(GenReach, OracleAgreesWithDefectTable) {
  SeededChoiceSource src(7);
  for (int i = 0; i < 3000; ++i) {
    const Scenario s = generate(src, config_variant(ConfigVariant::OneDefect));
    if (s.defects.size() != 1) continue;
    const Expectation e = expect(s);
    ASSERT_FALSE(e.ok) << defect_name(s.defects[0]) << "\n" << describe(s);
    ASSERT_EQ(e.error.kind, defect_kind(s.defects[0])) << defect_name(s.defects[0]) << ": " << e.error.message << "\n" << describe(s);
  }
}

}  // namespace
}  // namespace w4a8::gen
