// JSON readers for untrusted bytes, in two dialects:
//  - Python: exactly what CPython's json.loads accepts and builds (str input, or bytes input with
//    json.detect_encoding + 'surrogatepass' decoding); NaN/Infinity/-Infinity, big ints kept exactly,
//    duplicate keys (last value, first position), lone surrogates, strict control-char rule, trailing
//    whitespace only.
//  - Serde: what serde_json (as used by the safetensors crate for the header) accepts: no NaN/Infinity,
//    no lone surrogates, numbers that must fit their target later (kept as text here).
// Nesting is bounded (kMaxDepth) so input can never exhaust the stack.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "json/value.hpp"

namespace w4a8::json {

inline constexpr int kMaxDepth = 10000;  // hard safety bound (Python itself stops near 1000; see below)

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
};

struct ParseResult {
  Value value;
  ParseError error;            // error.failure == None on success
  bool ok() const { return error.failure == ParseFailure::None; }
};

// json.loads(s) for a Python str given as UTF-8/WTF-8 text (a leading U+FEFF is an error).
ParseResult loads_str(std::string_view text);
// json.loads(b) for Python bytes: detect UTF-8(-sig)/UTF-16/UTF-32 and decode with surrogatepass.
ParseResult loads_bytes(std::span<const std::uint8_t> bytes);
// serde_json::from_str on text already checked to be UTF-8.
ParseResult parse_serde(std::string_view text);

// Python's json recursion limit as seen from sglang's call site is environment-dependent (about
// 1000 frames minus the caller's depth); this is the depth at which loads_* report TooDeep.
inline constexpr int kPythonMaxDepth = 990;

}  // namespace w4a8::json
