// W4A8_PROP: a RapidCheck property run as a GoogleTest with its own case count (ctest runs them all;
// W4A8_PROP_SCALE=<float> scales every count, RC_PARAMS seeds and reproduces as usual). The body
// gets a ChoiceSource whose choices RapidCheck records and shrinks; on failure the message holds
// RapidCheck's seed/reproduce line, the shrunk scenario, and the same case as fuzzer bytes (hex) to
// keep as a regression input in corpus/validator_struct/.
#pragma once

#include <gtest/gtest.h>
#include <rapidcheck.h>

#include <cstdlib>
#include <sstream>
#include <string>

#include "core/hex.hpp"
#include "gen/choice_source.hpp"
#include "gen/properties.hpp"
#include "gen/rc_choice_source.hpp"

namespace w4a8::props {

inline int scaled(int count) {
  const char* s = std::getenv("W4A8_PROP_SCALE");
  const double f = s ? std::atof(s) : 1.0;
  return f > 0 ? std::max(1, static_cast<int>(count * f)) : count;
}

inline void run(const std::string& id, int count, void (*body)()) {
  using namespace rc::detail;
  TestMetadata md;
  md.id = id;
  md.description = id;
  TestParams params = configuration().testParams;
  params.maxSuccess = scaled(count);
  const TestResult result = configuration().reproduce.count(id) ? checkProperty(toProperty(body), md)
                                                                 : checkProperty(toProperty(body), md, params);
  std::ostringstream ss;
  printResultMessage(result, ss);
  if (!result.is<SuccessResult>()) FAIL() << ss.str() << "\n(seed " << params.seed << ")";
  ::testing::Test::RecordProperty("cases", params.maxSuccess);
}

// Generates a scenario for a property body and reports a failure with everything needed to replay it.
struct Case {
  gen::RcChoiceSource rc;
  gen::RecordingChoiceSource rec{rc};
  gen::Scenario scenario;

  explicit Case(gen::ConfigVariant v) {
    rec.note(static_cast<std::uint64_t>(gen::ConfigVariant::kCount), static_cast<std::uint64_t>(v));
    scenario = gen::generate(rec, gen::config_variant(v));
  }
  void require(const std::string& failure) {
    if (failure.empty()) return;
    RC_FAIL(failure + "\n" + gen::describe(scenario) + "  fuzzer bytes (validator_struct): " + hex::bytes(rec.bytes()));
  }
};

}  // namespace w4a8::props

#define W4A8_PROP(Suite, Name, Count)                                                   \
  static void w4a8_prop_##Suite##_##Name();                                             \
  TEST(Suite, Name) { ::w4a8::props::run(#Suite "/" #Name, Count, &w4a8_prop_##Suite##_##Name); } \
  static void w4a8_prop_##Suite##_##Name()
