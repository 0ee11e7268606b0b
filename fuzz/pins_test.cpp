// Pinned decodings: the committed pins hold, and every kind of drift is reported loudly.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "fuzz/pins.hpp"

namespace {

using namespace w4a8::fuzz;

const std::filesystem::path kCorpus = std::filesystem::path(W4A8_SOURCE_ROOT) / "corpus";

std::map<std::string, std::string> pins_of(const std::string& text) {
  const auto p = std::filesystem::temp_directory_path() / "w4a8-pins-test.pins";
  std::ofstream(p) << text;
  auto pins = read_pins(p);
  std::filesystem::remove(p);
  return pins.value();
}

TEST(Pins, CommittedPinsHold) {
  const Target* t = find_target("validator_struct");
  ASSERT_NE(t, nullptr);
  const auto inputs = collect_inputs({kCorpus / "validator_struct"});
  const auto pins = read_pins(kCorpus / "validator_struct.pins");
  ASSERT_TRUE(pins.has_value());
  EXPECT_FALSE(pins->empty());
  EXPECT_EQ(check_pins(*t, inputs, *pins, "p"), "");
}

TEST(Pins, FormatReadsBack) {
  const Target* t = find_target("validator_struct");
  const auto inputs = collect_inputs({kCorpus / "validator_struct"});
  const auto pins = pins_of(format_pins(*t, inputs));
  EXPECT_EQ(check_pins(*t, inputs, pins, "p"), "");
}

TEST(Pins, DriftIsLoud) {
  const Target* t = find_target("validator_struct");
  const auto inputs = collect_inputs({kCorpus / "validator_struct"});
  auto pins = pins_of(format_pins(*t, inputs));
  ASSERT_FALSE(pins.empty());
  const std::string first = pins.begin()->first;

  auto changed = pins;
  changed[first] += "  a line the generator no longer prints\n";
  const std::string r1 = check_pins(*t, inputs, changed, "p");
  EXPECT_NE(r1.find("PIN MISMATCH: " + first), std::string::npos) << r1;
  EXPECT_NE(r1.find("fuzz_decode pin validator_struct"), std::string::npos) << r1;  // the re-pin command

  auto missing = pins;
  missing.erase(first);
  const std::string r2 = check_pins(*t, inputs, missing, "p");
  EXPECT_NE(r2.find("PIN MISSING: " + first), std::string::npos);
  // A new input is not a changed generator (the message said it was): it only needs its pin.
  EXPECT_EQ(r2.find("generator now reads"), std::string::npos) << r2;
  EXPECT_NE(r2.find("A new regression input needs its pin"), std::string::npos) << r2;
  EXPECT_NE(r1.find("generator now reads"), std::string::npos) << r1;

  auto extra = pins;
  extra["regress-gone"] = "  x\n";
  EXPECT_NE(check_pins(*t, inputs, extra, "p").find("PIN WITHOUT INPUT: regress-gone"), std::string::npos);
}

}  // namespace
