// serde's de::Error texts as serde_json prints them for the crate's HashMetadata (position added
// by the caller), and serde's Display of Unexpected for the values a header can hold.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "json/serde_reader.hpp"

namespace w4a8::st::detail {

// What serde expected, as its Expected Display reads at each place of HashMetadata.
namespace expect {
inline constexpr std::string_view kHashMetadata = "struct HashMetadata";
inline constexpr std::string_view kMap = "a map";                 // __metadata__
inline constexpr std::string_view kString = "a string";           // __metadata__ values
inline constexpr std::string_view kTensorInfo = "struct TensorInfo";
inline constexpr std::string_view kTensorInfoSeq = "struct TensorInfo with 3 elements";
inline constexpr std::string_view kDtype = "string or map";       // an externally tagged enum
inline constexpr std::string_view kDtypeMap = "map with a single key";
inline constexpr std::string_view kUnit = "unit";                 // {"F32": <this>}
inline constexpr std::string_view kShape = "a sequence";
inline constexpr std::string_view kUsize = "usize";
inline constexpr std::string_view kOffsets = "a tuple of size 2";
}  // namespace expect

// serde's Unexpected for containers.
inline constexpr std::string_view kUnexpectedSeq = "sequence";
inline constexpr std::string_view kUnexpectedMap = "map";

// serde's Display of Unexpected for a scalar: "null", "boolean `true`", "integer `5`",
// "floating point `1.5`", "string \"x\"" (Rust `{:?}` of the text).
std::string unexpected(const json::SerdeScalar& v);

std::string invalid_type(std::string_view unexpected, std::string_view expected);
std::string invalid_value(std::string_view unexpected, std::string_view expected);
// "invalid length N, expected ..."
std::string invalid_length(std::size_t n, std::string_view expected);
// serde's ExpectedInSeq: a sequence longer than the visitor took ("3 elements in sequence").
std::string invalid_length_in_seq(std::size_t n, std::size_t taken);
std::string duplicate_field(std::string_view field);
std::string missing_field(std::string_view field);
// An unknown Dtype variant, with the crate's variant list in declaration order.
std::string unknown_dtype_variant(std::string_view name);

}  // namespace w4a8::st::detail
