// Rust's formatting of the values serde's messages print: `{:?}` of a str and serde's Display of
// an f64 (Unexpected::Float).
#pragma once

#include <string>
#include <string_view>

namespace w4a8::st::detail {

// Rust's `{:?}` of a str: quoted; \" \\ \n \r \t \0 escaped, other control, non-printable and
// grapheme-extending code points as \u{hex} (rust_escape_table.inc, for the Unicode version of the
// rustc that built the pinned `safetensors` wheel).
std::string rust_debug_quote(std::string_view utf8);

// True when Rust's `{:?}` of a str prints cp as \u{...} (cp >= 0x80; ASCII is handled by the caller).
bool rust_escapes(char32_t cp);

// serde's Display of an f64 in an Unexpected::Float (shortest round-trip digits; positional for
// decimal exponents -5 < k <= 16, else "1e16"/"1e-7" style; ".0" added to integral values).
std::string serde_float_text(double d);

}  // namespace w4a8::st::detail
