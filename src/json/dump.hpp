// json.dumps(v) with Python's defaults: ", " and ": " separators, ensure_ascii escapes, NaN /
// Infinity / -Infinity, floats as repr(float), ints as their exact text.
#pragma once

#include <string>
#include <string_view>

#include "json/number.hpp"  // py_float_repr, also part of this interface
#include "json/value.hpp"

namespace w4a8::json {

// post: for any value loads_* returned, dump(v) == Python's json.dumps(json.loads(same input)).
std::string dump(const Value& v);
// dump(v) appended to out (no temporary string: reports print thousands of values).
void dump_append(std::string& out, const Value& v);

// The JSON string literal json.dumps gives a str (WTF-8 in): '"' + escapes + '"', where \" \\ \b \f
// \n \r \t are short, other code points outside ' '..'~' become \u00XX / \udXXX lowercase, astral
// ones a surrogate pair. Bytes that are not WTF-8 become \ufffd (never produced by loads_*).
std::string dump_string(std::string_view wtf8);
// dump_string(wtf8) appended to out.
void dump_string_append(std::string& out, std::string_view wtf8);

}  // namespace w4a8::json
