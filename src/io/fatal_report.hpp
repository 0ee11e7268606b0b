// An error report prepared for a signal handler or an exit hook, which may neither allocate nor
// format: kind's message rendered beforehand from the error table, in the CLI reporter's two forms
// (text: "w4a8check: MESSAGE\n  [CODE]\n"; JSON: {"ok": false, "error": {"type", "message", "code"}}),
// with one argument left as a hole (kHole) that the handler fills with a C string. Used by the
// read-fault handler (the hole: the truncated file's path) and the kernel-plugin call guard (the
// hole: what the plugin did).
#pragma once

#include <initializer_list>
#include <string_view>

#include "core/result.hpp"

namespace w4a8::io {

class FatalReport {
 public:
  static constexpr std::string_view kHole = "\x01";
  // make_error(kind, args) with exactly one argument equal to kHole.
  void render(ErrorKind kind, std::initializer_list<std::string_view> args);
  // Async-signal-safe. The text form; fill as it is.
  void write_text(int fd, const char* fill) const noexcept;
  // Async-signal-safe. The JSON form; fill escaped as the CLI's JSON reporter escapes it
  // (json::dump_string: a byte that is not UTF-8 becomes \udcXX, as Python's surrogateescape).
  void write_json(int fd, const char* fill) const noexcept;

 private:
  char text_head_[1024] = {}, text_tail_[256] = {};
  char json_head_[1280] = {}, json_tail_[320] = {};
};

// Writes all of s to fd (retrying short writes and EINTR; gives up on an error). Async-signal-safe.
void write_now(int fd, const char* s) noexcept;

}  // namespace w4a8::io
