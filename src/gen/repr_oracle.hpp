// The oracle's own repr() of the strings the generator writes (layer names, tensor names, int()
// literals), from Python's rules written down by hand: the quote choice, the short escapes, and
// str.isprintable() (false for Unicode categories Cc, Cf, Cs, Co, Cn, Zl, Zp and Zs other than ' ')
// for each code point the generator uses, by the Python version that first prints it raw. It never
// calls src/py, so a repr() bug there cannot hide from the oracle. oracle.cpp reaches it as `py::`.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "py/version.hpp"

namespace w4a8::gen::oracle_py {

using Version = py::Version;
inline constexpr Version kDefaultVersion = py::kDefaultVersion;

// repr(str) of WTF-8 text made of the generator's alphabet. A code point outside it shows as
// "\N{?}" (so a property fails visibly rather than guessing).
std::string repr_str(std::string_view wtf8, Version v = kDefaultVersion);
std::string repr_str_list(std::span<const std::string> items, Version v = kDefaultVersion);
std::string repr_shape(std::span<const std::uint64_t> shape);

// Whether repr_str knows whether Python v prints cp raw (ASCII, or a code point of the table).
bool knows(char32_t cp);
// str.isprintable() of one known code point under Python v.
bool printable(char32_t cp, Version v);
// The non-ASCII code points of the table (for tests that compare it with another source).
std::vector<char32_t> table_code_points();

}  // namespace w4a8::gen::oracle_py
