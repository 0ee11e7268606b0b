#include "io/safetensors_out.hpp"

#include <algorithm>

#include "core/checked.hpp"
#include "safetensors/reader.hpp"
#include "safetensors/writer.hpp"

namespace w4a8::io {

std::optional<std::uint64_t> tensor_bytes(st::Dtype dtype, std::span<const std::uint64_t> shape) {
  std::optional<std::uint64_t> n = 1;
  for (std::uint64_t d : shape)
    if (n) n = checked_mul(*n, d);
  if (n) n = checked_mul(*n, st::dtype_bits(dtype));
  if (!n || *n % 8 != 0) return std::nullopt;
  return *n / 8;
}

Result<std::string> safetensors_prefix(std::span<const OutTensor> tensors,
                                       const std::vector<std::pair<std::string, std::string>>* metadata) {
  std::vector<std::string_view> names;
  names.reserve(tensors.size());
  for (const OutTensor& t : tensors) names.push_back(t.name);
  std::sort(names.begin(), names.end());
  if (auto d = std::adjacent_find(names.begin(), names.end()); d != names.end())
    return make_error(ErrorKind::UsageError, {"duplicate output tensor " + std::string(*d)});
  std::string h = "        {";  // 8 bytes for the length, filled in below
  bool first = true;
  if (metadata) {
    h += "\"__metadata__\":{";
    for (std::size_t i = 0; i < metadata->size(); ++i) {
      if (i) h += ',';
      h += st::json_quote((*metadata)[i].first);
      h += ':';
      h += st::json_quote((*metadata)[i].second);
    }
    h += '}';
    first = false;
  }
  std::uint64_t offset = 0;
  for (const OutTensor& t : tensors) {
    if (t.name == "__metadata__") return make_error(ErrorKind::UsageError, {"a tensor cannot be named __metadata__"});
    const auto bytes = tensor_bytes(t.dtype, t.shape);
    if (!bytes) return make_error(ErrorKind::UsageError, {"impossible shape for tensor " + t.name});
    if (!first) h += ',';
    first = false;
    h += st::json_quote(t.name);
    h += ":{\"dtype\":\"";
    h += st::dtype_name(t.dtype);
    h += "\",\"shape\":[";
    for (std::size_t i = 0; i < t.shape.size(); ++i) {
      if (i) h += ',';
      h += std::to_string(t.shape[i]);
    }
    h += "],\"data_offsets\":[";
    h += std::to_string(offset);
    h += ',';
    offset += *bytes;
    h += std::to_string(offset);
    h += "]}";
  }
  h += '}';
  h.resize(8 + (h.size() - 8 + 7) / 8 * 8, ' ');
  const std::uint64_t n = h.size() - 8;
  if (n > st::kMaxHeaderSize) return make_error(ErrorKind::UsageError, {"output header exceeds 100000000 bytes"});
  for (int i = 0; i < 8; ++i) h[std::size_t(i)] = char(std::uint8_t(n >> (8 * i)));
  return h;
}

}  // namespace w4a8::io
