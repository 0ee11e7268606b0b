// Number text <-> double exactly as Python prints and reads it.
#pragma once

#include <string>
#include <string_view>

namespace w4a8::json {

// float(s) for a JSON number literal (ASCII, JSON grammar): correctly rounded; overflow -> +-inf,
// underflow -> +-0.0, as Python's float() and json.loads do.
double float_from_literal(std::string_view literal);

// serde_json 1.x (default features, no float_roundtrip) reading a JSON number literal as f64:
// u64 significand (later digits dropped, integer ones counted into the exponent), then one
// multiply or divide by a correctly rounded power of ten, so results may differ from
// float_from_literal in the last bit and overflow earlier ("1.7976931348623158e308").
// @return false where serde_json reports "number out of range"; else out = its value.
bool serde_float_from_literal(std::string_view literal, double& out);

// Exact decimal text of an integral double ("-0.0" -> "0", 1e300 -> all 301 digits).
// pre: std::isfinite(d) && std::trunc(d) == d.
std::string exact_integer_text(double d);

// repr(float) in CPython: shortest round-trip digits; fixed notation for 1e-4 <= |x| < 1e16 with
// ".0" on integral values, else "1e+16" / "1.5e-07"; "inf", "-inf", "nan".
// post: float_from_literal(py_float_repr(d)) == d for finite d.
std::string py_float_repr(double d);

}  // namespace w4a8::json
