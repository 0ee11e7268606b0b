// Internal: UTF-8 well-formedness as Rust's str::from_utf8 defines it, and its Utf8Error text.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace w4a8::st::detail {

// Rust's Utf8Error: valid_up_to, and error_len (0 = None: the input ends inside a sequence that
// was valid so far; else 1..3 bytes of maximal invalid prefix).
struct Utf8Error {
  std::size_t valid_up_to = 0;
  std::size_t error_len = 0;
};

// post: nullopt iff s is shortest-form UTF-8 with no surrogates and nothing above U+10FFFF.
std::optional<Utf8Error> check_utf8(std::span<const std::uint8_t> s);

// Rust's Display of a Utf8Error: "invalid utf-8 sequence of N bytes from index I" or
// "incomplete utf-8 byte sequence from index I".
std::string utf8_error_text(const Utf8Error& e);

inline bool valid_utf8(std::span<const std::uint8_t> s) { return !check_utf8(s); }
inline bool valid_utf8(std::string_view s) {
  return valid_utf8({reinterpret_cast<const std::uint8_t*>(s.data()), s.size()});
}

}  // namespace w4a8::st::detail
