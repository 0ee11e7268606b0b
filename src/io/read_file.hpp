// Small whole-file reads (index files) with the same guarantees as checkpoint opening: never
// blocks on a FIFO or device, refuses non-regular files, bounds the size before allocating.
#pragma once

#include <cstdint>
#include <string>

#include "core/result.hpp"

namespace w4a8::io {

inline constexpr std::uint64_t kMaxIndexBytes = 1ull << 30;  // an index of ~10M tensors

// @return the file's bytes, or IoOpenFailed, IoNotRegularFile, IoReadFailed (also when larger than max_bytes).
Result<std::string> read_small_file(const std::string& path, std::uint64_t max_bytes = kMaxIndexBytes);

// "a FIFO", "a character device", ... for the IoNotRegularFile message.
const char* file_type_name(unsigned mode);

}  // namespace w4a8::io
