// Marker JSON bytes (any encoding): json.loads-compatible reader, dump/loads round trip, and the
// validator's verdict on them as a .comfy_quant tensor (gen::check_marker_bytes).
#include "fuzz/fuzz_target.hpp"
#include "gen/properties.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  w4a8::fuzz::require(w4a8::gen::check_marker_bytes({data, size}));
  return 0;
}
