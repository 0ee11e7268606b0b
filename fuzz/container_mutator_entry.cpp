// libFuzzer hooks for fuzz_container (linked into the libFuzzer binary only): the structural
// mutator of container_mutator.hpp, with libFuzzer's own mutator as its raw fallback.
#include "fuzz/container_mutator.hpp"

extern "C" std::size_t LLVMFuzzerMutate(std::uint8_t* data, std::size_t size, std::size_t max_size);

extern "C" std::size_t LLVMFuzzerCustomMutator(std::uint8_t* data, std::size_t size, std::size_t max_size, unsigned int seed) {
  return w4a8::fuzz::mutate_container(data, size, max_size, seed, LLVMFuzzerMutate);
}

extern "C" std::size_t LLVMFuzzerCustomCrossOver(const std::uint8_t* a, std::size_t na, const std::uint8_t* b, std::size_t nb,
                                                 std::uint8_t* out, std::size_t max_out, unsigned int seed) {
  const std::size_t n = w4a8::fuzz::cross_over_containers(a, na, b, nb, out, max_out, seed);
  if (n != 0) return n;
  // Not both containers: keep A (libFuzzer then mutates it further).
  const std::size_t keep = na < max_out ? na : max_out;
  for (std::size_t i = 0; i < keep; ++i) out[i] = a[i];
  return keep;
}
