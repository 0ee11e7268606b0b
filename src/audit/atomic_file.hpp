// Files the audit writes: always to a temp name in the target's directory, fsync'd, then renamed,
// so a reader never sees a partial file and an interrupted run leaves the old file intact.
// (Until src/io's atomic outputs land on main; the lead will consolidate.)
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "core/result.hpp"

namespace w4a8::audit {

// @return Ok, or IoWriteFailed.
Status write_file_atomic(const std::string& path, std::span<const std::uint8_t> bytes);
Status write_text_atomic(const std::string& path, std::string_view text);
// mkdir -p. @return Ok, or IoWriteFailed.
Status make_dirs(const std::string& path);
// Whole file as text (bounded: files over max_bytes are refused). @return text, or IoOpenFailed/IoReadFailed.
Result<std::string> read_text(const std::string& path, std::uint64_t max_bytes = std::uint64_t(1) << 30);
bool path_exists(const std::string& path);
// True when a and b name the same existing file (same device and inode).
bool same_file(const std::string& a, const std::string& b);
std::string join_path(const std::string& dir, const std::string& name);

}  // namespace w4a8::audit
