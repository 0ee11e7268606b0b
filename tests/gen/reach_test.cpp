// The generator reaches every outcome (style.md 10, libFuzzer's FoundMask tests): with a seeded
// source, every defect class is injected, and the validator produces every error kind the defect
// table names, plus acceptance in both modes; every sglang profile is predicted, and each defect that
// fires under some merge rules only is seen both firing and not firing.
#include <gtest/gtest.h>

#include <algorithm>
#include <bitset>

#include "gen/choice_source.hpp"
#include "gen/oracle.hpp"
#include "gen/properties.hpp"
#include "json/parse.hpp"
#include "py/version.hpp"

namespace w4a8::gen {
namespace {

TEST(GenReach, EveryDefectAndEveryKind) {
  std::bitset<kDefectCount> injected;
  std::bitset<kErrorKindCount> want_kinds, got_kinds;
  for (std::size_t d = 0; d < kDefectCount; ++d) want_kinds.set(static_cast<std::size_t>(defect_kind(static_cast<Defect>(d))));
  bool accepted[2] = {false, false};
  std::bitset<upstream::kSglangCount> profiles;
  std::bitset<kDefectCount> fired, quiet;  // single-defect scenarios: the defect's kind, or acceptance
  SeededChoiceSource src(20261129);
  const GenConfig one = config_variant(ConfigVariant::OneDefect);
  auto done = [&] {
    for (std::size_t d = 0; d < kDefectCount; ++d)
      if (defect_info(static_cast<Defect>(d)).fires != DefectFires::Any && !(fired[d] && quiet[d])) return false;
    return injected.all() && (got_kinds & want_kinds) == want_kinds && accepted[0] && accepted[1] && profiles.all();
  };
  for (int i = 0; i < 8000 && !done(); ++i) {
    const Scenario s = generate(src, i % 5 ? one : config_variant(ConfigVariant::Valid));
    for (Defect d : s.defects) injected.set(static_cast<std::size_t>(d));
    profiles.set(static_cast<std::size_t>(s.options.sglang));
    const auto r = run_validator(s);
    if (r.ok()) accepted[s.options.strict] = true;
    else got_kinds.set(static_cast<std::size_t>(r.error().kind));
    if (s.defects.size() == 1) {
      const auto d = static_cast<std::size_t>(s.defects[0]);
      if (!r.ok() && r.error().kind == defect_kind(s.defects[0])) fired.set(d);
      if (r.ok()) quiet.set(d);
    }
  }
  for (std::size_t d = 0; d < kDefectCount; ++d)
    EXPECT_TRUE(injected[d]) << "never injected: " << defect_name(static_cast<Defect>(d));
  for (std::size_t k = 0; k < kErrorKindCount; ++k)
    if (want_kinds[k]) {
      EXPECT_TRUE(got_kinds[k]) << "never produced: " << kErrorTable[k].code;
    }
  for (std::size_t d = 0; d < kDefectCount; ++d)
    if (defect_info(static_cast<Defect>(d)).fires != DefectFires::Any) {
      EXPECT_TRUE(fired[d]) << defect_name(static_cast<Defect>(d)) << " never fired";
      EXPECT_TRUE(quiet[d]) << defect_name(static_cast<Defect>(d)) << " never seen accepted under the other merge rule";
    }
  for (std::size_t v = 0; v < upstream::kSglangCount; ++v)
    EXPECT_TRUE(profiles[v]) << "sglang " << upstream::kSglangProfiles[v].version << " never predicted";
  EXPECT_TRUE(accepted[0]) << "no checkpoint accepted without --strict";
  EXPECT_TRUE(accepted[1]) << "no checkpoint accepted with --strict";
}

// Every defect maps to a kind, and the oracle predicts that kind whenever the defect is alone and
// fires under the scenario's sglang release (and acceptance where it does not fire).
TEST(GenReach, OracleAgreesWithDefectTable) {
  SeededChoiceSource src(7);
  for (int i = 0; i < 3000; ++i) {
    const Scenario s = generate(src, config_variant(ConfigVariant::OneDefect));
    if (s.defects.size() != 1) continue;
    const Expectation e = expect(s);
    if (s.defects[0] == Defect::MarkerTooDeep && !too_deep_for_python(s)) continue;  // a later Python reads it
    if (!fires_under(s.defects[0], s.options.sglang)) {
      ASSERT_TRUE(e.ok) << defect_name(s.defects[0]) << ": " << e.error.message << "\n" << describe(s);
      continue;
    }
    ASSERT_FALSE(e.ok) << defect_name(s.defects[0]) << "\n" << describe(s);
    ASSERT_TRUE(defect_kind_matches(s, s.defects[0], e.error.kind)) << defect_name(s.defects[0]) << ": " << e.error.message << "\n" << describe(s);
  }
}

// GenConfig::digit_tails reaches every DigitTail, and the validator (not only the oracle) then
// raises each error int() can: the digit limit where the interpreter checks it before the junk
// (3.10/3.11, or a space or NUL after the digits), the invalid literal where it reads to the end
// first (3.12+) or an underscore ends the digits.
TEST(GenReach, DigitTailsReachBothIntErrors) {
  SeededChoiceSource src(11);
  std::bitset<4> tails;                // DigitTail values seen in a one-defect scenario
  std::bitset<2> by_version_limit;     // ByVersion: [0] limit under 3.10/3.11, [1] invalid under 3.12+
  std::bitset<2> fixed;                // [0] LimitFirst gave the limit under 3.12+, [1] InvalidFirst the literal under 3.11-
  int runs = 0;
  for (; runs < 200000 && !(tails.count() == 3 && by_version_limit.all() && fixed.all()); ++runs) {
    const Scenario s = generate(src, config_variant(ConfigVariant::OneDefect));
    if (s.defects.size() != 1 || s.defects[0] != Defect::GroupSizeTooManyDigits) continue;
    const auto m = std::find_if(s.markers.begin(), s.markers.end(), [](const MarkerDesc& d) { return d.group_size.tail != DigitTail::None; });
    if (m == s.markers.end()) continue;
    const Result<validate::Report> got = run_validator(s);
    if (got.ok()) continue;  // another layer's rule fired first, or the defect did not fire
    const ErrorKind k = got.error().kind;
    const bool old_python = s.options.python == py::Version::Py310 || s.options.python == py::Version::Py311;
    tails.set(static_cast<std::size_t>(m->group_size.tail));
    switch (m->group_size.tail) {
      case DigitTail::ByVersion:
        if (old_python && k == ErrorKind::PyIntMaxStrDigits) by_version_limit.set(0);
        if (!old_python && k == ErrorKind::PyIntInvalidLiteral) by_version_limit.set(1);
        break;
      case DigitTail::LimitFirst: fixed[0] = fixed[0] || (!old_python && k == ErrorKind::PyIntMaxStrDigits); break;
      case DigitTail::InvalidFirst: fixed[1] = fixed[1] || (old_python && k == ErrorKind::PyIntInvalidLiteral); break;
      default: break;
    }
  }
  EXPECT_EQ(tails.count(), 3u) << "DigitTail kinds seen: " << tails;
  EXPECT_TRUE(by_version_limit.all()) << by_version_limit;
  EXPECT_TRUE(fixed.all()) << fixed;
  RecordProperty("scenarios", runs);
}

// Documents nested past 3.11's limit meet the later interpreters' (GenConfig::vary_python), and the
// validator reads them by each one's own limit: one or two levels past 990 inside a marker
// (MarkerTooDeep's boundary form) is read from 3.12 on; its long form, 10,000 levels or more, is a
// RecursionError even under 3.13.
TEST(GenReach, DeepMarkersMeetEachInterpretersLimit) {
  SeededChoiceSource src(13);
  bool long_chain_313 = false, boundary_read = false, boundary_deep = false;
  int runs = 0;
  for (; runs < 200000 && !(long_chain_313 && boundary_read && boundary_deep); ++runs) {
    const Scenario s = generate(src, config_variant(ConfigVariant::OneDefect));
    if (s.defects.size() != 1 || s.defects[0] != Defect::MarkerTooDeep) continue;
    bool long_chain = false;
    int depth = 0;
    for (const auto& m : s.markers) {
      long_chain = long_chain || m.doc.outcome == JsonDoc::Outcome::TooDeep;  // the long form has no value
      depth = std::max(depth, m.doc.depth);
    }
    const Result<validate::Report> got = run_validator(s);
    const bool recursion = !got.ok() && got.error().kind == ErrorKind::PyRecursion;
    const py::Version v = s.options.python;
    const bool old_python = v == py::Version::Py310 || v == py::Version::Py311;
    if (long_chain) {
      long_chain_313 = long_chain_313 || (v == py::Version::Py313 && recursion);
    } else if (depth > json::kPythonMaxDepth) {
      boundary_deep = boundary_deep || (old_python && recursion);
      boundary_read = boundary_read || (!old_python && !recursion);
    }
  }
  EXPECT_TRUE(long_chain_313) << "no 10,000+ chain rejected as too deep under 3.13";
  EXPECT_TRUE(boundary_deep) << "no chain past 990 rejected under 3.10/3.11";
  EXPECT_TRUE(boundary_read) << "no chain past 990 read under 3.12+";
  RecordProperty("scenarios", runs);
}

// Scenarios under 3.12 and 3.13 carry chains at those interpreters' own limits (1,497 and 9,998
// levels where read; valid scenarios) and one level past them (with several defects): the
// validator accepts the first and raises RecursionError for the second.
TEST(GenReach, ChainsAtLaterInterpretersLimits) {
  SeededChoiceSource src(17);
  std::bitset<4> seen;  // [2 * (3.13) + (past)]
  int runs = 0;
  for (; runs < 100000 && !seen.all(); ++runs) {
    const bool valid = runs % 2 == 0;
    const Scenario s = generate(src, config_variant(valid ? ConfigVariant::Valid : ConfigVariant::Several));
    const py::Version v = s.options.python;
    if (v != py::Version::Py312 && v != py::Version::Py313) continue;
    const int limit = json_max_depth(v);
    for (const auto& m : s.markers) {
      const int read = m.doc.depth + (m.place == Place::Metadata ? 2 : 0);
      if (read != limit + (valid ? 0 : 1)) continue;
      const Result<validate::Report> got = run_validator(s);
      if (valid ? got.ok() : !got.ok() && got.error().kind == ErrorKind::PyRecursion) seen.set(2 * (v == py::Version::Py313) + !valid);
    }
  }
  EXPECT_TRUE(seen.all()) << "reached [3.12 at, 3.12 past, 3.13 at, 3.13 past]: " << seen;
  RecordProperty("scenarios", runs);
}

// The defect table's columns are consistent: families match kinds and the strict flag, only Merge
// defects depend on the merge rule, and every Layout/Fires value is used.
TEST(GenReach, DefectTableColumns) {
  std::bitset<3> layouts, fires;
  for (const DefectInfo& d : kDefectTable) {
    layouts.set(static_cast<std::size_t>(d.layout));
    fires.set(static_cast<std::size_t>(d.fires));
    const std::string_view code = error_info(d.kind).code;
    if (d.family == DefectFamily::Container) {
      EXPECT_TRUE(code.starts_with("safetensors.")) << d.name;
    }
    if (d.family == DefectFamily::Strict) {
      EXPECT_TRUE(code.starts_with("strict.")) << d.name;
    }
    if (d.family == DefectFamily::Merge) {
      EXPECT_EQ(d.kind, ErrorKind::SgConflictingMarkers) << d.name;
    }
    if (d.fires != DefectFires::Any) {
      EXPECT_EQ(d.family, DefectFamily::Merge) << d.name;
    }
    if (d.family == DefectFamily::Container) {
      EXPECT_EQ(d.layout, DefectLayout::Sensitive) << d.name;
    }
  }
  EXPECT_TRUE(layouts.all());
  EXPECT_TRUE(fires.all());
}

}  // namespace
}  // namespace w4a8::gen
