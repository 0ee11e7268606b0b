// safetensors writer: produces files the Rust crate accepts (header padded with spaces to a multiple
// of 8, tensors laid out in the given order), plus a raw mode for crafting malformed files.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "core/result.hpp"
#include "safetensors/dtype.hpp"

namespace w4a8::st {

struct TensorSpec {
  std::string name;
  Dtype dtype{};
  std::vector<std::uint64_t> shape;
  std::vector<std::uint8_t> bytes;  // must hold exactly the shape's byte count
};

struct WriteOptions {
  std::optional<std::vector<std::pair<std::string, std::string>>> metadata;  // "__metadata__"
  bool pad_to_8 = true;
};

// @return the file bytes, or UsageError when a spec is inconsistent (byte count, duplicate name).
Result<std::vector<std::uint8_t>> serialize(std::span<const TensorSpec> tensors, const WriteOptions& opt = {});
// Raw container: 8-byte little-endian length of header_json, the header text, then data, unchecked.
std::vector<std::uint8_t> serialize_raw(std::string_view header_json, std::span<const std::uint8_t> data);
// @return Ok, or IoWriteFailed.
Status write_file(const std::string& path, std::span<const std::uint8_t> bytes);

// JSON string literal (quotes included) for a UTF-8 name, escaped so both serde_json and Python read
// it back unchanged.
std::string json_quote(std::string_view utf8);

}  // namespace w4a8::st
