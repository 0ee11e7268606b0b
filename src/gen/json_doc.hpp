// JSON documents built in two forms at once: the text a checkpoint stores and what Python's
// json.loads makes of it. The oracle reads the second form, so it never parses the first.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

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
};

JsonDoc jnull();
JsonDoc jbool(bool b);
// An integer literal given as canonical decimal text ("-12", "100000000000000000000").
JsonDoc jint(std::string decimal);
JsonDoc jint(long long v);
// A float literal: `text` is the JSON spelling ("16.0", "NaN", "1e400"), `v` the double Python reads.
JsonDoc jfloat(std::string text, double v);
JsonDoc jstr(std::string utf8);
JsonDoc jarr(std::vector<JsonDoc> items);
// Members in text order; a repeated key keeps its first position and takes the last value.
JsonDoc jobj(std::vector<std::pair<std::string, JsonDoc>> members);
// Text that json.loads rejects with the given outcome (not Ok).
JsonDoc jraw_invalid(std::string text, JsonDoc::Outcome outcome = JsonDoc::Outcome::Invalid);
// A JSON string literal of a UTF-8 string, escaping only what JSON requires (plus DEL), so the
// non-ASCII characters reach the parser as raw UTF-8.
std::string json_literal(std::string_view utf8);

// How a tensor marker's text is turned into bytes (Python's json.detect_encoding reads all of them).
enum class Encoding : std::uint8_t { Utf8, Utf8Bom, Utf16Le, Utf16Be, Utf16Bom, Utf32Le, Utf32Be, Utf32Bom, kCount };
std::string_view encoding_name(Encoding e);
// post: for valid UTF-8 text of >= 2 characters, Python's json.loads(bytes) decodes the same text.
std::vector<std::uint8_t> encode(std::string_view utf8, Encoding e);

}  // namespace w4a8::gen
