// safetensors container reader: enforces every rule of the reference Rust crate (docs/container.md,
// "What the crate enforces") with one typed error per rule. Reads the header without touching tensor
// data; memory is bounded by the header size, never by claimed tensor sizes.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "core/result.hpp"
#include "safetensors/dtype.hpp"
#include "safetensors/name.hpp"
#include "safetensors/shape.hpp"

namespace w4a8::st {

inline constexpr std::uint64_t kMaxHeaderSize = 100'000'000;  // crate's MAX_HEADER_SIZE

// The header length n a container declares in its first 8 bytes (a little-endian u64; any value,
// checked or not). pre: prefix.size() >= 8.
constexpr std::uint64_t declared_header_len(std::span<const std::uint8_t> prefix) {
  std::uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | prefix[static_cast<std::size_t>(i)];
  return n;
}

struct TensorInfo {
  Name name;                        // UTF-8 tensor key (its bytes live in the Header's storage)
  Dtype dtype{};
  Shape shape;
  std::uint64_t begin = 0, end = 0; // data_offsets, relative to the byte after the header
};

struct Header {
  std::uint64_t header_len = 0;     // n, the JSON length
  bool has_metadata = false;        // "__metadata__" present and not null (Python: metadata() is not None)
  std::vector<std::pair<std::string, std::string>> metadata;  // in JSON order (a repeated key keeps
                                                              // its first place and its last value)
  std::vector<TensorInfo> tensors;  // sorted by name (code point order), as Python's keys()
  // The bytes tensors[i].name shares with tensors[i - 1].name at its start (0 for i = 0), where
  // parsing found it on the way (the usual writers' orders); empty otherwise. Whoever edits
  // `tensors` must clear it.
  std::vector<std::uint32_t> name_lcp;
  std::shared_ptr<const void> storage;  // the bytes the tensor names view (shared by copies)
  std::uint64_t data_start() const { return 8 + header_len; }
  const TensorInfo* find(std::string_view name) const;  // binary search
  const std::string* meta(std::string_view key) const;
};

// Copies every tensor name into one buffer that h.storage then owns (alone): for a Header built by
// hand, whose names view strings that may not outlive it.
void own_names(Header& h);

// Parses and validates a whole container held in memory (file_size == bytes.size()).
// @return Header, or ErrorKind::StHeaderTooSmall, StHeaderTooLarge, StInvalidHeaderLength,
//         StInvalidHeader, StInvalidHeaderDeserialization, StInvalidOffset, StValidationOverflow,
//         StMisalignedSlice, StTensorInvalidInfo, StMetadataIncompleteBuffer.
Result<Header> parse(std::span<const std::uint8_t> bytes);

// Same checks when only the first 8 + n bytes are at hand and the file's total size is known.
Result<Header> parse_prefix(std::span<const std::uint8_t> prefix, std::uint64_t file_size);

// Hands the whole pages inside `region` back to the kernel (madvise MADV_DONTNEED): for spans of a
// File's mapping only (private, read-only, file-backed), whose pages then fault back in from the file
// if read again; on any other memory it would discard data. Cuts resident memory after a pass over
// bytes that will not be needed soon.
void release_pages(std::span<const std::uint8_t> region);

// Called with a file's declared header length once the file is mapped, before its header is parsed,
// capped at the bytes the file holds after the length field (parse() checks the length itself). Lets
// a caller prepare for what a large header allocates.
using BeforeParse = std::function<void(std::uint64_t declared_header_len)>;

// The path of the live File mapping that holds `addr`, or nullptr. Async-signal-safe (lock-free
// loads, no allocation): for a SIGBUS handler to name the file another process truncated under a
// mapping (the io module's cleanup reports it). Lookups made while a mapping is being released may
// miss it.
const char* mapped_file_at(const void* addr) noexcept;

// A file opened read-only and memory-mapped; tensor bytes are views into the mapping.
class File {
 public:
  // @return File, or IoOpenFailed/IoReadFailed, or any parse() error.
  static Result<File> open(const std::string& path, const BeforeParse& before_parse = {});
  const Header& header() const { return header_; }
  const std::string& path() const { return path_; }
  // Bytes of a tensor of this file's header (bounds were validated by parse()).
  std::span<const std::uint8_t> data(const TensorInfo& t) const;
  std::span<const std::uint8_t> bytes() const;

 private:
  std::string path_;
  Header header_;
  std::shared_ptr<const void> mapping_;  // munmap on last release
  std::uint64_t size_ = 0;
};

}  // namespace w4a8::st
