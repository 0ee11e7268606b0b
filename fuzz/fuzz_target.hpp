// Shared glue for the fuzz targets: a property failure is a crash, with the description on stderr,
// so libFuzzer keeps the input and the replay binary fails its ctest.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace w4a8::fuzz {

inline void require(const std::string& failure) {
  if (failure.empty()) return;
  std::fprintf(stderr, "property failed:\n%s\n", failure.c_str());
  std::fflush(stderr);
  std::abort();
}

}  // namespace w4a8::fuzz
