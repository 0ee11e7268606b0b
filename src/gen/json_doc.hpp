// JSON documents built in two forms at once: the text a checkpoint stores and what Python's
// json.loads makes of it. The oracle reads the second form, so it never parses the first.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "json/parse.hpp"
#include "json/value.hpp"

namespace w4a8::gen {

struct JsonDoc {
  enum class Outcome : std::uint8_t {
    Ok,          // json.loads returns `value`
    Invalid,     // JSONDecodeError (or UnicodeDecodeError for undecodable bytes)
    IntTooLong,  // ValueError: an int literal of `digits` > 4300 digits
    TooDeep,     // RecursionError while decoding nested arrays
  };
  std::string text;  // UTF-8
  Outcome outcome = Outcome::Ok;
  json::Value value;  // Outcome::Ok
  std::size_t digits = 0;  // Outcome::IntTooLong
  int depth = 0;              // containers nested in the value (a scalar 0, [] 1, [[]] 2)
  bool deep_objects = false;  // its deepest nesting is a chain of objects (else arrays)
};

// Python's json: an int literal of more digits than this (sign excluded) is a ValueError.
inline constexpr std::size_t kMaxIntDigits = 4300;

JsonDoc jnull();
JsonDoc jbool(bool b);
// An integer literal given as canonical decimal text ("-12", "100000000000000000000"); over
// kMaxIntDigits digits its outcome is IntTooLong.
JsonDoc jint(std::string decimal);
JsonDoc jint(long long v);
// A float literal: `text` is the JSON spelling ("16.0", "NaN", "1e400"), `v` the double Python reads.
JsonDoc jfloat(std::string text, double v);
JsonDoc jstr(std::string utf8);
JsonDoc jarr(std::vector<JsonDoc> items);
// Members in text order; a repeated key keeps its first position and takes the last value.
JsonDoc jobj(std::vector<std::pair<std::string, JsonDoc>> members);
// `levels` containers (arrays, or objects {"n": ...}) around inner: depth inner.depth + levels.
JsonDoc jnest(JsonDoc inner, int levels, bool objects);
// Text that json.loads rejects with the given outcome (not Ok).
JsonDoc jraw_invalid(std::string text, JsonDoc::Outcome outcome = JsonDoc::Outcome::Invalid);
// json.loads' outcome for d read as a document nested inside `above` containers (0: d is the whole
// document; 2: a marker inside _quantization_metadata's "layers"): TooDeep when the nesting passes
// `max_depth` (the interpreter's limit; by default the default interpreter's, json::kPythonMaxDepth,
// the lowest of them), else d's own outcome.
JsonDoc::Outcome loads_outcome(const JsonDoc& d, int above, int max_depth = json::kPythonMaxDepth);
// A JSON string literal of a WTF-8 string, escaping only what JSON requires (plus DEL and lone
// surrogates), so the other non-ASCII characters reach the parser as raw UTF-8.
std::string json_literal(std::string_view utf8);

// How a tensor marker's text is turned into bytes (Python's json.detect_encoding reads all of them).
enum class Encoding : std::uint8_t { Utf8, Utf8Bom, Utf16Le, Utf16Be, Utf16Bom, Utf32Le, Utf32Be, Utf32Bom, kCount };
std::string_view encoding_name(Encoding e);
// post: for valid UTF-8 text of >= 2 characters, Python's json.loads(bytes) decodes the same text.
std::vector<std::uint8_t> encode(std::string_view utf8, Encoding e);

}  // namespace w4a8::gen
