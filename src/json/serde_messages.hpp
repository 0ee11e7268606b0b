// serde_json's syntax error texts (its ErrorCode Display), spelled once for both serde-dialect
// readers: the DOM parser (json::parse_serde) and the pull reader (json::SerdeReader).
#pragma once

#include <string_view>

namespace w4a8::json::serde_msg {

inline constexpr std::string_view kEofList = "EOF while parsing a list";
inline constexpr std::string_view kEofObject = "EOF while parsing an object";
inline constexpr std::string_view kEofString = "EOF while parsing a string";
inline constexpr std::string_view kEofValue = "EOF while parsing a value";
inline constexpr std::string_view kExpectedColon = "expected `:`";
inline constexpr std::string_view kExpectedCommaList = "expected `,` or `]`";
inline constexpr std::string_view kExpectedCommaObject = "expected `,` or `}`";
inline constexpr std::string_view kExpectedIdent = "expected ident";
inline constexpr std::string_view kExpectedValue = "expected value";
inline constexpr std::string_view kInvalidEscape = "invalid escape";
inline constexpr std::string_view kInvalidNumber = "invalid number";
inline constexpr std::string_view kOutOfRange = "number out of range";
inline constexpr std::string_view kEndOfHexEscape = "unexpected end of hex escape";
inline constexpr std::string_view kLoneSurrogate = "lone leading surrogate in hex escape";
inline constexpr std::string_view kControlChar = "control character (\\u0000-\\u001F) found while parsing a string";
inline constexpr std::string_view kKeyNotString = "key must be a string";
inline constexpr std::string_view kTrailingComma = "trailing comma";
inline constexpr std::string_view kTrailingChars = "trailing characters";
inline constexpr std::string_view kRecursion = "recursion limit exceeded";

}  // namespace w4a8::json::serde_msg
