// Streaming safetensors output: the header is computed from names, dtypes and shapes alone, so a
// shard can be written tensor by tensor (quantized layers are produced while the file is written)
// without holding the whole file in memory. Layout as st::serialize: tensors back to back in the
// given order, header padded with spaces to a multiple of 8.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "core/result.hpp"
#include "safetensors/dtype.hpp"

namespace w4a8::io {

struct OutTensor {
  std::string name;
  st::Dtype dtype{};
  std::vector<std::uint64_t> shape;
};

// Bytes a tensor of this dtype and shape holds; nullopt on overflow or a sub-byte remainder.
std::optional<std::uint64_t> tensor_bytes(st::Dtype dtype, std::span<const std::uint64_t> shape);

// The 8-byte little-endian header length followed by the header JSON.
// @return the bytes, or UsageError (duplicate or invalid name, bad shape, header over the crate's limit).
Result<std::string> safetensors_prefix(std::span<const OutTensor> tensors,
                                       const std::vector<std::pair<std::string, std::string>>* metadata);

}  // namespace w4a8::io
