// The CPython version whose behaviour py:: reproduces. repr() escapes what str.isprintable()
// rejects and int() accepts Unicode digits and spaces, both from the interpreter's own Unicode
// data, so upstream's messages depend on the Python that runs it:
//   3.10 -> Unicode 13.0.0, 3.11 -> 14.0.0, 3.12 -> 15.0.0, 3.13 -> 15.1.0, 3.14 -> 16.0.0.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace w4a8::py {

enum class Version : std::uint8_t { Py310, Py311, Py312, Py313, Py314, kCount };

// sglang 0.5.23 requires Python >= 3.11 and ships wheels for 3.11, 3.12 and 3.13; the default is
// the oldest of them (also the interpreter this project's upstream oracles run under).
inline constexpr Version kDefaultVersion = Version::Py311;

std::string_view version_name(Version v);     // "3.11"
std::string_view unicode_version(Version v);  // "14.0.0"
// "3.11" -> Py311; nullopt for anything else.
std::optional<Version> version_from_name(std::string_view name);

}  // namespace w4a8::py
