// LLVMFuzzerTestOneInput for one target, named at compile time (-DW4A8_FUZZ_TARGET="container"):
// one binary per line of fuzz/targets.txt, for libFuzzer, AFL++ and the replay main alike.
#include "fuzz/fuzz_target.hpp"

#ifndef W4A8_FUZZ_TARGET
#error "define W4A8_FUZZ_TARGET to a name from fuzz/targets.txt"
#endif

namespace {
const w4a8::fuzz::Target& target() {
  static const w4a8::fuzz::Target* t = [] {
    const auto* found = w4a8::fuzz::find_target(W4A8_FUZZ_TARGET);
    if (found == nullptr) {
      std::fprintf(stderr, "unknown fuzz target %s\n", W4A8_FUZZ_TARGET);
      std::abort();
    }
    return found;
  }();
  return *t;
}
}  // namespace

// For the replay main: this binary's target.
const w4a8::fuzz::Target& w4a8_fuzz_this_target() { return target(); }

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return w4a8::fuzz::run(target(), data, size);
}
