// libFuzzer hooks for fuzz_container (linked into the libFuzzer binary only): the structural
// mutator of container_mutator.hpp, with libFuzzer's own mutator as its raw fallback.
#include "fuzz/container_mutator.hpp"

extern "C" std::size_t LLVMFuzzerMutate(std::uint8_t* data, std::size_t size, std::size_t max_size);

extern "C" std::size_t LLVMFuzzerCustomMutator(std::uint8_t* data, std::size_t size, std::size_t max_size, unsigned int seed) {
  return w4a8::fuzz::mutate_container(data, size, max_size, seed, LLVMFuzzerMutate);
}

// libFuzzer lists this crossover beside the custom mutator and picks one of the two at random for
// every mutation; a crossover parses both headers, about as costly as running the target. So it
// crosses over 1 call in 4 and otherwise returns 0, which makes libFuzzer pick again (mostly the
// cheaper tree mutator): about 1 mutation in 5 is a crossover. 0 also when A or B is no container
// (a copy of A would only run A again).
extern "C" std::size_t LLVMFuzzerCustomCrossOver(const std::uint8_t* a, std::size_t na, const std::uint8_t* b, std::size_t nb,
                                                 std::uint8_t* out, std::size_t max_out, unsigned int seed) {
  if (seed % 4 != 0) return 0;
  return w4a8::fuzz::cross_over_containers(a, na, b, nb, out, max_out, seed / 4);
}
