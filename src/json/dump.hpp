// json.dumps(v) with Python's defaults: ", " and ": " separators, ensure_ascii escapes, NaN /
// Infinity / -Infinity, floats as repr(float), ints as their exact text.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "json/number.hpp"  // py_float_repr, also part of this interface
#include "json/value.hpp"

namespace w4a8::json {

// How a non-finite float is written. Python's json.dumps writes the bare tokens NaN, Infinity and
// -Infinity, which json.loads (and so sglang) reads back but JSON itself does not have: a strict
// parser (JavaScript, Go, serde_json) rejects the whole document. Output meant for other programs
// writes them as JSON strings instead ("NaN", "Infinity", "-Infinity"): nothing else in a marker
// changes, and the spelling still says what the value was.
enum class NonFinite : std::uint8_t { PythonToken, String };

// post: for any value loads_* returned, dump(v) == Python's json.dumps(json.loads(same input))
// (with NonFinite::String, except that non-finite floats are quoted).
std::string dump(const Value& v, NonFinite nf = NonFinite::PythonToken);
// dump(v) appended to out (no temporary string: reports print thousands of values).
void dump_append(std::string& out, const Value& v, NonFinite nf = NonFinite::PythonToken);

// The JSON string literal json.dumps gives a str (WTF-8 in): '"' + escapes + '"', where \" \\ \b \f
// \n \r \t are short, other code points outside ' '..'~' become \u00XX / \udXXX lowercase, astral
// ones a surrogate pair. A byte that is not part of WTF-8 (never produced by loads_*; a file name
// that is not UTF-8) becomes \udc80..\udcff, the lone surrogate Python's surrogateescape gives it.
std::string dump_string(std::string_view wtf8);
// dump_string(wtf8) appended to out.
void dump_string_append(std::string& out, std::string_view wtf8);
// The literal json.dumps gives the str Python holds for bytes from the system (a file name, an
// argument; os.fsdecode) or a message built around them: UTF-8 is read strictly, so every byte of
// an encoded surrogate (ED A0..BF xx, which WTF-8 reads as one lone surrogate) is not UTF-8 and
// becomes \udc80..\udcff on its own, as surrogateescape decodes it (os.fsencode of the result gives
// the bytes back). Otherwise as dump_string.
std::string dump_os_string(std::string_view bytes);
void dump_os_string_append(std::string& out, std::string_view bytes);
// dump_os_string(bytes)'s contents (no quotes) from bytes[pos] on, as many whole escapes as fit in
// buf[0, cap) (cap >= 12); advances pos. @return bytes written. Allocates nothing: for signal handlers.
std::size_t dump_os_string_piece(std::string_view bytes, std::size_t& pos, char* buf, std::size_t cap);

}  // namespace w4a8::json
