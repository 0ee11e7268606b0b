// Raw safetensors container bytes: no crash or leak; accepted => offsets in bounds, parse_prefix
// agrees, writer round trip (gen::check_container_bytes).
#include "fuzz/fuzz_target.hpp"
#include "gen/properties.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  w4a8::fuzz::require(w4a8::gen::check_container_bytes({data, size}));
  return 0;
}
