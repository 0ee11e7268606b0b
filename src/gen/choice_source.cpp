#include "gen/choice_source.hpp"

namespace w4a8::gen {
namespace {

// Bytes needed to cover n - 1 (0 for n <= 1: a forced choice consumes nothing).
unsigned width(std::uint64_t n) {
  unsigned w = 0;
  for (std::uint64_t m = n - 1; m != 0; m >>= 8) ++w;
  return w;
}

}  // namespace

std::uint64_t ByteChoiceSource::below(std::uint64_t n) {
  if (n <= 1) return 0;
  if (n <= 256) {  // one byte (most choices): the general path below, without its loop
    if (pos_ >= bytes_.size()) return 0;
    const unsigned v = bytes_[pos_++];
    return v < n ? v : v % static_cast<unsigned>(n);
  }
  const unsigned w = width(n);
  std::uint64_t v = 0;
  for (unsigned i = 0; i < w; ++i) {
    if (pos_ >= bytes_.size()) break;
    v |= std::uint64_t{bytes_[pos_++]} << (8 * i);
  }
  // (A 32-bit division when both fit: the same remainder, several times cheaper than a 64-bit one.)
  if (n <= UINT32_MAX) return static_cast<std::uint32_t>(v) % static_cast<std::uint32_t>(n);
  return v % n;
}

std::uint64_t SeededChoiceSource::below(std::uint64_t n) {
  if (n <= 1) return 0;
  return std::uniform_int_distribution<std::uint64_t>(0, n - 1)(rng_);
}

std::uint64_t RecordingChoiceSource::below(std::uint64_t n) {
  const std::uint64_t v = inner_.below(n);
  note(n, v);
  return v;
}

void RecordingChoiceSource::note(std::uint64_t n, std::uint64_t v) {
  if (n > 1)
    for (unsigned i = 0, w = width(n); i < w; ++i) bytes_.push_back(static_cast<std::uint8_t>(v >> (8 * i)));
}

}  // namespace w4a8::gen
