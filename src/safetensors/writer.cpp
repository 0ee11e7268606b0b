#include "safetensors/writer.hpp"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <set>

#include <fcntl.h>
#include <unistd.h>

#include "core/checked.hpp"
#include "core/hex.hpp"
#include "safetensors/reader.hpp"
#include "safetensors/utf8.hpp"

namespace w4a8::st {
namespace {

Error usage(std::string text) { return make_error(ErrorKind::UsageError, {text}); }

using detail::valid_utf8;

void append_u64(std::string& out, std::uint64_t v) { out += std::to_string(v); }

}  // namespace

std::string json_quote(std::string_view utf8) {
  std::string out;
  out.reserve(utf8.size() + 2);
  out.push_back('"');
  for (char ch : utf8) {
    const auto c = static_cast<unsigned char>(ch);
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c < 0x20) {
          hex::append_u_escape(out, c);
        } else {
          out.push_back(ch);
        }
    }
  }
  out.push_back('"');
  return out;
}

Result<std::vector<std::uint8_t>> serialize(std::span<const TensorSpec> tensors, const WriteOptions& opt) {
  std::string header = "{";
  bool first = true;
  if (opt.metadata) {
    header += "\"__metadata__\":{";
    std::set<std::string_view> keys;
    for (const auto& [k, v] : *opt.metadata) {
      if (!valid_utf8(k) || !valid_utf8(v)) return usage("metadata is not valid UTF-8");
      if (!keys.insert(k).second) return usage("duplicate metadata key " + json_quote(k));
      if (keys.size() > 1) header += ',';
      header += json_quote(k);
      header += ':';
      header += json_quote(v);
    }
    header += '}';
    first = false;
  }
  std::set<std::string_view> names;
  std::uint64_t offset = 0;
  for (const TensorSpec& t : tensors) {
    if (t.name == "__metadata__") return usage("a tensor cannot be named __metadata__");
    if (!valid_utf8(t.name)) return usage("tensor name is not valid UTF-8");
    if (!names.insert(t.name).second) return usage("duplicate tensor name " + json_quote(t.name));
    if (static_cast<std::size_t>(t.dtype) >= static_cast<std::size_t>(Dtype::kCount))
      return usage("invalid dtype for " + json_quote(t.name));
    std::optional<std::uint64_t> n = 1;
    for (std::uint64_t d : t.shape)
      if (n) n = checked_mul(*n, d);
    if (n) n = checked_mul(*n, dtype_bits(t.dtype));
    if (!n || *n % 8 != 0 || *n / 8 != t.bytes.size())
      return usage("byte count does not match shape and dtype for " + json_quote(t.name));
    if (!first) header += ',';
    first = false;
    header += json_quote(t.name);
    header += ":{\"dtype\":\"";
    header += dtype_name(t.dtype);
    header += "\",\"shape\":[";
    for (std::size_t i = 0; i < t.shape.size(); ++i) {
      if (i) header += ',';
      append_u64(header, t.shape[i]);
    }
    header += "],\"data_offsets\":[";
    append_u64(header, offset);
    header += ',';
    offset += t.bytes.size();
    append_u64(header, offset);
    header += "]}";
  }
  header += '}';
  if (opt.pad_to_8) header.resize((header.size() + 7) / 8 * 8, ' ');
  if (header.size() > kMaxHeaderSize) return usage("header exceeds 100000000 bytes");

  std::vector<std::uint8_t> out;
  out.reserve(8 + header.size() + offset);
  const std::uint64_t n = header.size();
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<std::uint8_t>(n >> (8 * i)));
  out.insert(out.end(), header.begin(), header.end());
  for (const TensorSpec& t : tensors) out.insert(out.end(), t.bytes.begin(), t.bytes.end());
  return out;
}

std::vector<std::uint8_t> serialize_raw(std::string_view header_json, std::span<const std::uint8_t> data) {
  std::vector<std::uint8_t> out;
  out.reserve(8 + header_json.size() + data.size());
  const std::uint64_t n = header_json.size();
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<std::uint8_t>(n >> (8 * i)));
  out.insert(out.end(), header_json.begin(), header_json.end());
  out.insert(out.end(), data.begin(), data.end());
  return out;
}

Status write_file(const std::string& path, std::span<const std::uint8_t> bytes) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return make_error(ErrorKind::IoWriteFailed, {path, std::strerror(errno)});
  std::size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t w = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      const int err = w < 0 ? errno : EIO;
      ::close(fd);
      return make_error(ErrorKind::IoWriteFailed, {path, std::strerror(err)});
    }
    done += static_cast<std::size_t>(w);
  }
  if (::close(fd) != 0) return make_error(ErrorKind::IoWriteFailed, {path, std::strerror(errno)});
  return Ok{};
}

}  // namespace w4a8::st
