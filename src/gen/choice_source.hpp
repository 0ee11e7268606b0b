// Bounded choices that drive the scenario generator. One generator, several sources: RapidCheck
// (rc_choice_source.hpp, so shrinking works), fuzzer bytes (libFuzzer, corpus replay) and a seeded
// PRNG (differentials, mutation checks). Every source treats 0 as the simplest choice, so an
// exhausted byte stream or a fully shrunk RapidCheck case yields the smallest scenario.
#pragma once

#include <cstddef>
#include <cstdint>
#include <random>
#include <span>
#include <vector>

namespace w4a8::gen {

class ChoiceSource {
 public:
  virtual ~ChoiceSource() = default;
  // post: result < n (n >= 1); sources shrink toward 0.
  virtual std::uint64_t below(std::uint64_t n) = 0;

  // post: lo <= result <= hi.
  std::uint64_t range(std::uint64_t lo, std::uint64_t hi) {
    if (hi - lo == UINT64_MAX) return (below(std::uint64_t{1} << 32) << 32) | below(std::uint64_t{1} << 32);
    return lo + below(hi - lo + 1);
  }
  bool flip() { return below(2) == 1; }
  // True with probability about num/den (false is the simpler answer).
  bool chance(std::uint64_t num, std::uint64_t den) { return below(den) < num; }
  // A count in [1, max] (1 <= max <= 16), each value half as likely as the one before (1: 1/2, 2: 1/4,
  // ...): one choice of 2**max - 1 values; 0 gives 1.
  std::uint64_t halving(std::uint64_t max) {
    std::uint64_t v = below((std::uint64_t{1} << max) - 1), n = 1;
    for (std::uint64_t span = std::uint64_t{1} << (max - 1); v >= span && span > 1; span >>= 1, ++n) v -= span;
    return n;
  }
  template <class T>
  const T& pick(std::span<const T> items) { return items[below(items.size())]; }
  template <class T>
  const T& pick(const std::vector<T>& items) { return items[below(items.size())]; }
};

// Reads choices from fuzzer bytes: each choice consumes the fewest little-endian bytes that cover n
// values; when the bytes run out every choice is 0 (the input's tail never changes its head).
class ByteChoiceSource final : public ChoiceSource {
 public:
  explicit ByteChoiceSource(std::span<const std::uint8_t> bytes) : bytes_(bytes) {}
  std::uint64_t below(std::uint64_t n) override;
  std::size_t consumed() const { return pos_; }

 private:
  std::span<const std::uint8_t> bytes_;
  std::size_t pos_ = 0;
};

// Seeded PRNG choices (mt19937_64: the same seed gives the same scenario on every platform).
class SeededChoiceSource final : public ChoiceSource {
 public:
  explicit SeededChoiceSource(std::uint64_t seed) : rng_(seed) {}
  std::uint64_t below(std::uint64_t n) override;

 private:
  std::mt19937_64 rng_;
};

// Records every choice another source made, so a scenario can be replayed as fuzzer bytes
// (encode_choices() output fed to ByteChoiceSource reproduces the same choices).
class RecordingChoiceSource final : public ChoiceSource {
 public:
  explicit RecordingChoiceSource(ChoiceSource& inner) : inner_(inner) {}
  std::uint64_t below(std::uint64_t n) override;
  // Records a choice made elsewhere (e.g. a fixed configuration) as if inner had made it.
  void note(std::uint64_t n, std::uint64_t v);
  // post: ByteChoiceSource(bytes()) makes the same choices for the same sequence of n.
  const std::vector<std::uint8_t>& bytes() const { return bytes_; }

 private:
  ChoiceSource& inner_;
  std::vector<std::uint8_t> bytes_;
};

}  // namespace w4a8::gen
