// Python's repr()/str() of the values upstream messages print.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "py/unicode_tables.hpp"
#include "py/version.hpp"

namespace w4a8::py {

// repr(str) for WTF-8 text: quote choice, \\ \t \n \r escapes, \xhh/\uhhhh/\Uhhhhhhhh for code points
// str.isprintable() rejects in Python v (its Unicode version), printable non-ASCII kept.
std::string repr_str(std::string_view wtf8, Version v = kDefaultVersion);
// repr_str(wtf8, v) appended to out.
void append_repr_str(std::string& out, std::string_view wtf8, Version v = kDefaultVersion);
// A name for a one-line report: as it is when repr() would only quote it, else repr(name) (a newline,
// a control or bidi character must not reach a terminal raw). WTF-8 text, as repr_str.
std::string shown_name(std::string_view wtf8, Version v = kDefaultVersion);
// repr(tuple of ints): "()", "(3,)", "(3, 4)" (the same in every version).
std::string repr_shape(std::span<const std::uint64_t> shape);
// repr_shape(shape) appended to out.
void append_repr_shape(std::string& out, std::span<const std::uint64_t> shape);
// repr(list of str): "['a', 'b']".
std::string repr_str_list(std::span<const std::string> items, Version v = kDefaultVersion);

}  // namespace w4a8::py
