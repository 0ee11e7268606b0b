// Test helpers: containers built by hand (independent of the writer under test).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace w4a8::st::test {

// 8-byte little-endian n, then the header text, then data.
inline std::vector<std::uint8_t> container_n(std::uint64_t n, std::string_view header, std::string_view data = {}) {
  std::vector<std::uint8_t> out;
  out.reserve(8 + header.size() + data.size());
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<std::uint8_t>(n >> (8 * i)));
  out.insert(out.end(), header.begin(), header.end());
  out.insert(out.end(), data.begin(), data.end());
  return out;
}
inline std::vector<std::uint8_t> container(std::string_view header, std::string_view data = {}) {
  return container_n(header.size(), header, data);
}

}  // namespace w4a8::st::test
