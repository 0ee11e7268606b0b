// CPython's per-code-point predicates that repr() and int() depend on, for each supported Python
// (py/version.hpp), from the generated unicode_data.inc (tools/unicode/gen_unicode_tables.py).
#pragma once

#include "py/version.hpp"

namespace w4a8::py {

// str.isprintable() for one code point (repr() escapes the others).
bool is_printable(char32_t cp, Version v = kDefaultVersion);
// str.isspace() (Unicode whitespace: bidi WS/B/S or category Zs), for any code point.
bool is_space(char32_t cp, Version v = kDefaultVersion);
// unicodedata.decimal(c) for str.isdecimal() code points (ASCII included), else -1.
int decimal_value(char32_t cp, Version v = kDefaultVersion);

}  // namespace w4a8::py
