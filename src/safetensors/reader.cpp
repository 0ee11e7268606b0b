#include "safetensors/reader.hpp"

#include <algorithm>
#include <string_view>

#include "core/checked.hpp"
#include "safetensors/header_json.hpp"
#include "safetensors/utf8.hpp"

namespace w4a8::st {
namespace {

std::uint64_t read_le64(std::span<const std::uint8_t> b) {
  std::uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | b[std::size_t(i)];
  return n;
}

// Metadata::validate: tensors in data_offsets order must tile [0, end) exactly.
// The crate's order among equal offsets follows a randomly seeded HashMap; ties are broken by name
// here so the verdict is deterministic.
Result<std::uint64_t> validate_offsets(const std::vector<TensorInfo>& tensors) {
  std::vector<const TensorInfo*> order;
  order.reserve(tensors.size());
  for (const auto& t : tensors) order.push_back(&t);
  std::sort(order.begin(), order.end(), [](const TensorInfo* a, const TensorInfo* b) {
    if (a->begin != b->begin) return a->begin < b->begin;
    if (a->end != b->end) return a->end < b->end;
    return a->name < b->name;
  });
  std::uint64_t start = 0;
  for (const TensorInfo* t : order) {
    if (t->begin != start || t->end < t->begin)
      return make_error(ErrorKind::StInvalidOffset, {t->name});  // Display: raw
    start = t->end;
    std::optional<std::uint64_t> elements = 1;
    for (std::uint64_t d : t->shape) {
      elements = checked_mul(*elements, d);
      if (!elements) return make_error(ErrorKind::StValidationOverflow);
    }
    const auto bits = checked_mul(*elements, dtype_bits(t->dtype));
    if (!bits) return make_error(ErrorKind::StValidationOverflow);
    if (*bits % 8 != 0) return make_error(ErrorKind::StMisalignedSlice);
    if (t->end - t->begin != *bits / 8) return make_error(ErrorKind::StTensorInvalidInfo);
  }
  return start;
}

}  // namespace

Result<Header> parse_prefix(std::span<const std::uint8_t> prefix, std::uint64_t file_size) {
  if (file_size < 8) return make_error(ErrorKind::StHeaderTooSmall);
  if (prefix.size() < 8 || prefix.size() > file_size)
    return make_error(ErrorKind::UsageError, {"parse_prefix: prefix does not match the file size"});
  Header h;
  h.header_len = read_le64(prefix.first(8));
  if (h.header_len > kMaxHeaderSize) return make_error(ErrorKind::StHeaderTooLarge);
  const std::uint64_t stop = 8 + h.header_len;  // cannot wrap: header_len <= 1e8
  if (stop > file_size) return make_error(ErrorKind::StInvalidHeaderLength);
  if (prefix.size() < stop)
    return make_error(ErrorKind::UsageError, {"parse_prefix: prefix ends inside the header"});

  const auto text = prefix.subspan(8, static_cast<std::size_t>(h.header_len));
  if (auto bad = detail::check_utf8(text)) return make_error(ErrorKind::StInvalidHeader, {detail::utf8_error_text(*bad)});
  const std::string_view json_text(reinterpret_cast<const char*>(text.data()), text.size());
  W4A8_TRY(detail::deserialize_header(json_text, h));

  auto end = validate_offsets(h.tensors);
  if (!end.ok()) return std::move(end).error();
  // The crate adds in usize (wrapping in release builds); a wrapped sum can never equal the file
  // size, so overflow is the same verdict.
  const auto total = checked_add(*end, stop);
  if (!total || *total != file_size) return make_error(ErrorKind::StMetadataIncompleteBuffer);
  return h;
}

Result<Header> parse(std::span<const std::uint8_t> bytes) { return parse_prefix(bytes, bytes.size()); }

const TensorInfo* Header::find(std::string_view name) const {
  auto it = std::lower_bound(tensors.begin(), tensors.end(), name,
                             [](const TensorInfo& t, std::string_view n) { return t.name < n; });
  return it != tensors.end() && it->name == name ? &*it : nullptr;
}

const std::string* Header::meta(std::string_view key) const {
  for (const auto& [k, v] : metadata)
    if (k == key) return &v;
  return nullptr;
}

}  // namespace w4a8::st
