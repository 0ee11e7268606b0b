// Python's repr()/str() of the values upstream messages print.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace w4a8::py {

// repr(str) for WTF-8 text: quote choice, \\ \t \n \r escapes, \xhh/\uhhhh/\Uhhhhhhhh for code points
// str.isprintable() rejects (Unicode 14/15 tables as CPython 3.11), printable non-ASCII kept.
std::string repr_str(std::string_view wtf8);
// repr(tuple of ints): "()", "(3,)", "(3, 4)".
std::string repr_shape(std::span<const std::uint64_t> shape);
// repr(list of str): "['a', 'b']".
std::string repr_str_list(std::span<const std::string> items);
// Python's str.isprintable() for one code point.
bool is_printable(char32_t cp);

}  // namespace w4a8::py
