// The fuzz targets as data: name -> property body and input description (fuzz/targets.cpp), so the
// libFuzzer/AFL++ entry, the corpus replay and the decode tool share one definition. A property
// failure is a crash with the description on stderr, so libFuzzer keeps the input and the replay
// binary fails its ctest.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <span>
#include <string>
#include <string_view>

namespace w4a8::fuzz {

struct Target {
  std::string_view name;
  std::string (*check)(std::span<const std::uint8_t>);     // "" when the properties hold
  std::string (*describe)(std::span<const std::uint8_t>);  // what the input means, for people
  std::size_t max_input;  // longer inputs are skipped (0: no limit)
  bool pinned;            // regress-* inputs are choice bytes whose decoding is pinned (.pins)
};

// nullptr for an unknown name.
const Target* find_target(std::string_view name);

inline void require(const std::string& failure) {
  if (failure.empty()) return;
  std::fprintf(stderr, "property failed:\n%s\n", failure.c_str());
  std::fflush(stderr);
  std::abort();
}

inline int run(const Target& t, const std::uint8_t* data, std::size_t size) {
  if (t.max_input != 0 && size > t.max_input) return 0;
  require(t.check({data, size}));
  return 0;
}

}  // namespace w4a8::fuzz
