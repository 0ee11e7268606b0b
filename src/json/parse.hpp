// JSON readers for untrusted bytes, in two dialects:
//  - Python: exactly what CPython's json.loads accepts and builds (str input, or bytes input with
//    json.detect_encoding + 'surrogatepass' decoding); NaN/Infinity/-Infinity, big ints kept exactly,
//    duplicate keys (last value, first position), lone surrogates, strict control-char rule, trailing
//    whitespace only.
//  - Serde: what serde_json (as used by the safetensors crate for the header) accepts: no NaN/Infinity,
//    no lone surrogates, numbers that must fit their target later (kept as text here).
// Nesting is bounded (kMaxDepth) and parsing is iterative, so input can never exhaust the stack.
// Memory: about 100 bytes per JSON value on top of the text (a "[0,0,...]" costs ~50x its size).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "core/result.hpp"
#include "json/value.hpp"

namespace w4a8::json {

inline constexpr int kMaxDepth = 10000;  // hard safety bound (Python 3.13 stops at 9998; see kPythonMaxDepth)

enum class ParseFailure {
  None,
  Syntax,          // json.JSONDecodeError (Python) / serde_json syntax error
  Unicode,         // UnicodeDecodeError (Python bytes input) / invalid UTF-8
  IntTooLong,      // Python: int literal over 4300 digits -> plain ValueError (not JSONDecodeError)
  TooDeep,         // Python: RecursionError; Serde: recursion limit (128)
};

struct ParseError {
  ParseFailure failure = ParseFailure::None;
  std::size_t offset = 0;      // code unit offset where it failed (diagnostics only)
  std::string detail;          // human-readable detail (diagnostics only, not upstream-exact)
  std::size_t digits = 0;      // IntTooLong: digit count, as Python's message prints it
  bool in_array = false;       // TooDeep: "array" vs "object" in Python's message
  // TooDeep at a NaN/Infinity/-Infinity token inside max_depth containers: Python's scanner calls
  // parse_constant there, one level more ("maximum recursion depth exceeded while calling a Python
  // object"; measured on 3.10-3.13: such a token is accepted one container less deep than a number).
  bool calling = false;
  // Serde dialect only: serde_json's own Display text for the failure ("expected `:`") and the
  // position serde_json reports for it (1-based line, 0-based byte column; see serde_position).
  std::string serde_message;
  std::size_t line = 0;
  std::size_t column = 0;
};

// serde_json's Position of a byte index into its input: line = 1 + newlines before the line holding
// index, column = bytes from that line's start to index.
struct TextPosition {
  std::size_t line = 1;
  std::size_t column = 0;
};
TextPosition serde_position(std::string_view text, std::size_t index);

// The parsed value, or why it failed (error().failure != None).
using ParseResult = Expected<Value, ParseError>;

// Python's json recursion limit as seen from sglang's call site: loads_* accept this many nested
// containers, one more is TooDeep. It depends on the interpreter (py::interpreter_facts(v).json_max_depth
// is the one table: 990 for 3.10/3.11, 1497 for 3.12, 9998 for 3.13); this is the 3.10/3.11 value,
// LoadsOptions' default. There the limit is environment-dependent (about 1000 frames minus the
// caller's depth). Measured (CPython 3.11.7, recursion limit 1000): the C scanner's frames share the
// limit with Python frames, so the deepest accepted document is 1000 - 1 - (Python frames on the
// stack at json.loads, counting loads/decode/raw_decode): 995 from `python3 -c`, 993 from a function
// called at module level, one less per extra caller frame; 991 inside sglang's function run by
// tools/upstream/sglang_upstream.py. 990 means 6 frames above json.loads. (3.12 and 3.13 count C
// recursion apart from Python frames: their limit does not move with the caller's depth.)
inline constexpr int kPythonMaxDepth = 990;

// How the Python dialect reads: the interpreter's facts json.loads depends on.
struct LoadsOptions {
  // Nested containers accepted (1..kMaxDepth); one more is TooDeep.
  int max_depth = kPythonMaxDepth;
};

// Python dialect: Int text is canonical ("-0" -> "0"); Float has number set and text empty; objects
// merge duplicate keys as a dict does. A document nesting more than opt.max_depth containers is
// TooDeep (in_array tells which container crossed the line).
// json.loads(s) for a Python str given as UTF-8/WTF-8 text (a leading U+FEFF is an error).
ParseResult loads_str(std::string_view text, const LoadsOptions& opt = {});
// json.loads(b) for Python bytes: detect UTF-8(-sig)/UTF-16/UTF-32 and decode with surrogatepass.
// spare_members: a hint, room for that many more members in a top-level object the caller will add to.
ParseResult loads_bytes(std::span<const std::uint8_t> bytes, std::size_t spare_members = 0,
                        const LoadsOptions& opt = {});
namespace detail {
// The general Python-dialect parser alone, on text already decoded and checked (what loads_str
// runs when loads_flat_object declines): for tests of the fast path against it.
ParseResult loads_general(std::string_view text, const LoadsOptions& opt = {});
}  // namespace detail

// serde_json::from_str on text already checked to be UTF-8 (invalid UTF-8 -> Unicode).
// Differences from the Python dialect, so the safetensors reader can mimic the crate:
//  - Objects keep ALL members in document order, duplicate keys included (no merging).
//  - Int: text is the literal exactly as written ("-0" stays "-0": serde reads it as F64(-0.0);
//    beyond the u64/i64 range serde reads an F64 too); Float: text is the literal, number is
//    serde_json's own f64 for it (serde_float_from_literal, not always correctly rounded).
//  - A number serde_json's f64 conversion overflows ("1e400", a 400-digit int, even
//    "1.7976931348623158e308") is Syntax ("number out of range"): the safetensors crate buffers
//    every header value through serde's Content, which converts every number.
//  - Leading zeros, "1.", "1e", trailing commas, lone surrogate escapes: Syntax.
//  - Depth: the 128th nested container is TooDeep (serde_json's recursion limit of 128).
ParseResult parse_serde(std::string_view text);

// sys.get_int_max_str_digits()'s default (every modelled Python: 3.10.7 and later, 3.11+): an int literal of more digits is
// IntTooLong (a plain ValueError), whatever its value.
inline constexpr std::size_t kPythonMaxIntDigits = 4300;

}  // namespace w4a8::json
