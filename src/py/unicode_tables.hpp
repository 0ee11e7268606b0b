// CPython 3.11's per-code-point predicates that repr() and int() depend on (Unicode 14.0.0),
// from the generated printable_table.inc.
#pragma once

namespace w4a8::py {

// str.isspace() (Unicode whitespace: bidi WS/B/S or category Zs), for any code point.
bool is_space(char32_t cp);
// unicodedata.decimal(c) for str.isdecimal() code points (ASCII included), else -1.
int decimal_value(char32_t cp);

}  // namespace w4a8::py
