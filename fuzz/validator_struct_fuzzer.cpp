// Structure-aware: fuzzer bytes are the generator's choices (gen::ByteChoiceSource), decoded into a
// scenario whose verdict must equal the oracle's, plus round trip, sharding, marker placement and
// the strict contract (gen::check_scenario_bytes; the same bodies the RapidCheck properties run).
#include "fuzz/fuzz_target.hpp"
#include "gen/properties.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size > 4096) return 0;  // choices beyond this add nothing but time
  w4a8::fuzz::require(w4a8::gen::check_scenario_bytes({data, size}));
  return 0;
}
