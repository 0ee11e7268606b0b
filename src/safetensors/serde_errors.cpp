#include "safetensors/serde_errors.hpp"

#include "json/number.hpp"
#include "safetensors/dtype.hpp"
#include "safetensors/rust_debug.hpp"

namespace w4a8::st::detail {

std::string unexpected(const json::SerdeScalar& v) {
  using Kind = json::SerdeScalar::Kind;
  switch (v.kind) {
    case Kind::Null: return "null";
    case Kind::Bool: return v.boolean ? "boolean `true`" : "boolean `false`";
    case Kind::U64:
    case Kind::I64: return "integer `" + std::string(v.text) + "`";
    case Kind::F64: {
      double d = 0.0;
      json::serde_float_from_literal(v.text, d);  // in range: the reader checked it
      return "floating point `" + serde_float_text(d) + "`";
    }
    case Kind::String: return "string " + rust_debug_quote(v.text);
  }
  return {};
}

std::string invalid_type(std::string_view unexpected, std::string_view expected) {
  return "invalid type: " + std::string(unexpected) + ", expected " + std::string(expected);
}

std::string invalid_value(std::string_view unexpected, std::string_view expected) {
  return "invalid value: " + std::string(unexpected) + ", expected " + std::string(expected);
}

std::string invalid_length(std::size_t n, std::string_view expected) {
  return "invalid length " + std::to_string(n) + ", expected " + std::string(expected);
}

std::string invalid_length_in_seq(std::size_t n, std::size_t taken) {
  return invalid_length(n, std::to_string(taken) + (taken == 1 ? " element in sequence" : " elements in sequence"));
}

std::string duplicate_field(std::string_view field) { return "duplicate field `" + std::string(field) + "`"; }

std::string missing_field(std::string_view field) { return "missing field `" + std::string(field) + "`"; }

std::string unknown_dtype_variant(std::string_view name) {
  std::string out = "unknown variant `" + std::string(name) + "`, expected one of ";
  for (std::size_t i = 0; i < static_cast<std::size_t>(Dtype::kCount); ++i) {
    if (i > 0) out += ", ";
    out += '`';
    out += dtype_name(static_cast<Dtype>(i));
    out += '`';
  }
  return out;
}

}  // namespace w4a8::st::detail
