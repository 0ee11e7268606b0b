#include "io/fatal_report.hpp"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>

#include <unistd.h>

#include "json/dump.hpp"

namespace w4a8::io {

void write_now(int fd, const char* s) noexcept {
  for (std::size_t n = std::strlen(s); n > 0;) {
    const ssize_t w = ::write(fd, s, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return;
    s += w;
    n -= std::size_t(w);
  }
}

void FatalReport::render(ErrorKind kind, std::initializer_list<std::string_view> args) {
  const Error e = make_error(kind, args);
  const std::size_t at = e.message.find(kHole);
  const std::string before = e.message.substr(0, at);
  const std::string after = at == std::string::npos ? "" : e.message.substr(at + kHole.size());
  const std::string code(e.code());
  std::snprintf(text_head_, sizeof text_head_, "w4a8check: %s", before.c_str());
  std::snprintf(text_tail_, sizeof text_tail_, "%s\n  [%s]\n", after.c_str(), code.c_str());
  // The message's two parts as JSON string contents: dump_os_string's literal without its quotes
  // (the message is built around a path).
  const auto inner = [](const std::string& s) {
    const std::string lit = json::dump_os_string(s);
    return lit.substr(1, lit.size() - 2);
  };
  const std::string jhead = R"({"ok": false, "error": {"type": )" + json::dump_string(e.type()) + R"(, "message": ")" +
                            inner(before);
  const std::string jtail = inner(after) + R"(", "code": )" + json::dump_string(code) + "}}\n";
  std::snprintf(json_head_, sizeof json_head_, "%s", jhead.c_str());
  std::snprintf(json_tail_, sizeof json_tail_, "%s", jtail.c_str());
}

void FatalReport::write_text(int fd, const char* fill) const noexcept {
  write_now(fd, text_head_);
  write_now(fd, fill);
  write_now(fd, text_tail_);
}

void FatalReport::write_json(int fd, const char* fill) const noexcept {
  write_now(fd, json_head_);
  const std::string_view s(fill);
  char piece[256];  // dump_os_string_piece needs room for 12 bytes (a surrogate pair) to advance
  for (std::size_t pos = 0; pos < s.size();) {
    piece[json::dump_os_string_piece(s, pos, piece, sizeof piece - 1)] = '\0';
    write_now(fd, piece);
  }
  write_now(fd, json_tail_);
}

}  // namespace w4a8::io
