// A counting global operator new/delete for the memory and allocation tests. It replaces the
// allocator of the whole binary, so it is compiled into a test executable by listing
// support/counting_new.cpp among its sources, never into a library. Each block carries its size in
// a 16-byte prefix, so frees are subtracted: live, peak and total bytes, and allocations.
#pragma once

#include <cstddef>

namespace w4a8::testing::heap {

struct Usage {
  std::size_t peak = 0;   // the most bytes live at once since start()
  std::size_t total = 0;  // bytes requested
  long count = 0;         // operator new calls
};

// Zeroes the counters and counts from now on (blocks allocated before are freed uncounted).
void start();
// Stops counting; what was counted since start().
Usage stop();

}  // namespace w4a8::testing::heap
