#include "safetensors/reader.hpp"

#include <algorithm>
#include <cstring>
#include <string_view>

#include "core/checked.hpp"
#include "safetensors/hash_metadata.hpp"
#include "safetensors/name_order.hpp"
#include "safetensors/utf8.hpp"

namespace w4a8::st {
namespace {

// One tensor's own checks (Metadata::validate, after the contiguity check): element count and bit
// count in range, whole bytes, and a byte count equal to its offsets' span.
Status check_size(const TensorInfo& t) {
  std::optional<std::uint64_t> elements = 1;
  for (std::uint64_t d : t.shape) {
    elements = checked_mul(*elements, d);
    if (!elements) return make_error(ErrorKind::StValidationOverflow);
  }
  const auto bits = checked_mul(*elements, dtype_bits(t.dtype));
  if (!bits) return make_error(ErrorKind::StValidationOverflow);
  if (*bits % 8 != 0) return make_error(ErrorKind::StMisalignedSlice);
  if (t.end - t.begin != *bits / 8) return make_error(ErrorKind::StTensorInvalidInfo);
  return Ok{};
}

// Metadata::validate: tensors in data_offsets order must tile [0, end) exactly.
// The crate's order among equal offsets follows a randomly seeded HashMap; ties are broken by name
// here (tensors are in name order, so by index) so the verdict is deterministic.
Result<std::uint64_t> validate_offsets(const std::vector<TensorInfo>& tensors) {
  struct Span {
    std::uint64_t begin, end;
    std::size_t index;
    bool operator<(const Span& o) const {
      return begin != o.begin ? begin < o.begin : end != o.end ? end < o.end : index < o.index;
    }
  };
  std::vector<Span> order(tensors.size());
  for (std::size_t i = 0; i < tensors.size(); ++i) order[i] = {tensors[i].begin, tensors[i].end, i};
  if (!std::is_sorted(order.begin(), order.end())) std::sort(order.begin(), order.end());
  std::uint64_t start = 0;
  for (const Span& s : order) {
    const TensorInfo& t = tensors[s.index];
    if (t.begin != start || t.end < t.begin)
      return make_error(ErrorKind::StInvalidOffset, {t.name});  // Display: raw
    start = t.end;
    W4A8_TRY(check_size(t));
  }
  return start;
}

// validate_offsets' success, read in document order before the tensors are sorted (writers emit
// tensors in offset order, so this is one sequential pass): tensors that tile [0, end) one after
// the other are in data_offsets order already (ties are empty tensors, whose order changes no
// check), so when every check passes here and no tensor is dropped as a repeat, validate_offsets
// would pass with the same end. nullopt when anything fails: validate_offsets then finds the error.
std::optional<std::uint64_t> offsets_in_document_order(const std::vector<TensorInfo>& tensors) {
  std::uint64_t start = 0;
  for (const TensorInfo& t : tensors) {
    if (t.begin != start || t.end < t.begin || !check_size(t).ok()) return std::nullopt;
    start = t.end;
  }
  return start;
}

// Keeps both the text's owner and the deserializer's own storage (escaped names) alive.
struct KeepBoth {
  std::shared_ptr<const void> a, b;
};

}  // namespace

void own_names(Header& h) {
  std::size_t total = 0;
  for (const TensorInfo& t : h.tensors) total += t.name.size();
  std::shared_ptr<char[]> pool(new char[total ? total : 1]);  // (not zeroed: every byte is copied in)
  char* p = pool.get();
  for (TensorInfo& t : h.tensors) {
    if (!t.name.empty()) std::memcpy(p, t.name.data(), t.name.size());
    t.name = Name(std::string_view(p, t.name.size()));
    p += t.name.size();
  }
  h.storage = std::move(pool);
}

namespace detail {

Result<Header> parse_prefix_viewing(std::span<const std::uint8_t> prefix, std::uint64_t file_size,
                                    std::shared_ptr<const void> owner) {
  if (file_size < 8) return make_error(ErrorKind::StHeaderTooSmall);
  if (prefix.size() < 8 || prefix.size() > file_size)
    return make_error(ErrorKind::UsageError, {"parse_prefix: prefix does not match the file size"});
  Header h;
  h.header_len = declared_header_len(prefix);
  if (h.header_len > kMaxHeaderSize) return make_error(ErrorKind::StHeaderTooLarge);
  const std::uint64_t stop = 8 + h.header_len;  // cannot wrap: header_len <= 1e8
  if (stop > file_size) return make_error(ErrorKind::StInvalidHeaderLength);
  if (prefix.size() < stop)
    return make_error(ErrorKind::UsageError, {"parse_prefix: prefix ends inside the header"});

  const auto text = prefix.subspan(8, static_cast<std::size_t>(h.header_len));
  if (auto bad = detail::check_utf8(text)) return make_error(ErrorKind::StInvalidHeader, {detail::utf8_error_text(*bad)});
  const std::string_view json_text(reinterpret_cast<const char*>(text.data()), text.size());
  detail::NameOrder order;
  W4A8_TRY(detail::read_header(json_text, h, &order));
  const std::optional<std::uint64_t> tiled = offsets_in_document_order(h.tensors);
  const bool dropped = order.sort(h.tensors, detail::kGatherFrom, &h.name_lcp);
  Result<std::uint64_t> end = tiled && !dropped ? Result<std::uint64_t>(*tiled) : validate_offsets(h.tensors);
  if (!end.ok()) return std::move(end).error();
  // The crate adds in usize (wrapping in release builds); a wrapped sum can never equal the file
  // size, so overflow is the same verdict.
  const auto total = checked_add(*end, stop);
  if (!total || *total != file_size) return make_error(ErrorKind::StMetadataIncompleteBuffer);
  if (!owner) own_names(h);
  else if (h.storage) h.storage = std::make_shared<const KeepBoth>(KeepBoth{std::move(owner), std::move(h.storage)});
  else h.storage = std::move(owner);
  return h;
}

}  // namespace detail

Result<Header> parse_prefix(std::span<const std::uint8_t> prefix, std::uint64_t file_size) {
  return detail::parse_prefix_viewing(prefix, file_size, nullptr);
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
