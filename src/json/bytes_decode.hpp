// The first step of json.loads(bytes): json.detect_encoding, then bytes.decode(enc, 'surrogatepass').
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

namespace w4a8::json {

enum class TextEncoding { Utf8, Utf8Sig, Utf16, Utf16Le, Utf16Be, Utf32, Utf32Le, Utf32Be };

// json.detect_encoding: BOM (UTF-32 before UTF-16 before UTF-8), else the zero-byte pattern of the
// first 4 (or exactly 2) bytes, else UTF-8.
TextEncoding detect_encoding(std::span<const std::uint8_t> bytes);

// Decodes to WTF-8 as Python's codec with errors='surrogatepass' does: 'utf-8-sig' drops one BOM,
// 'utf-16'/'utf-32' consume their BOM; UTF-8 accepts ED A0..BF xx as lone surrogates; UTF-16 joins
// valid pairs and passes lone surrogates; UTF-32 passes surrogates unjoined.
// @return true, or false (UnicodeDecodeError) with err_offset at the failing byte.
bool decode_json_bytes(std::span<const std::uint8_t> bytes, std::string& out, std::size_t& err_offset);

}  // namespace w4a8::json
