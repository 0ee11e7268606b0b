// libFuzzer's floor for tools/fuzz/bench.sh: a target that does nothing, built the same way.
#include <cstddef>
#include <cstdint>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t*, std::size_t) { return 0; }
