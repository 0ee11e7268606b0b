// io::FatalReport: the pre-rendered report a signal handler writes. Its JSON form escapes the hole's
// text as the CLI's JSON reporter does, so a path that is not UTF-8 still gives one valid JSON
// document (its bytes passed raw before). Expected texts are written out by hand from json.dumps'
// rules (\udcXX for a stray byte, \u00e9, a surrogate pair for an astral code point).
#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include <unistd.h>

#include "io/fatal_report.hpp"

namespace w4a8::io {
namespace {

std::string captured(const FatalReport& r, const char* fill, bool json) {
  std::FILE* f = std::tmpfile();
  if (f == nullptr) return "<no tmpfile>";
  if (json)
    r.write_json(::fileno(f), fill);
  else
    r.write_text(::fileno(f), fill);
  std::rewind(f);
  std::string out;
  char buf[512];
  for (std::size_t n; (n = std::fread(buf, 1, sizeof buf, f)) > 0;) out.append(buf, n);
  std::fclose(f);
  return out;
}

TEST(FatalReport, TheHoleIsEscapedAsTheJsonReporterDoes) {
  FatalReport r;
  r.render(ErrorKind::IoReadFailed, {FatalReport::kHole, "it \"shrank\""});
  const char* path = "d\xff/\"x\"\n\xc3\xa9\xf0\x9f\x98\x80\x01";
  EXPECT_EQ(captured(r, path, true),
            R"({"ok": false, "error": {"type": "OSError", "message": "cannot read d\udcff/\"x\"\n\u00e9\ud83d\ude00\u0001: it \"shrank\"", "code": "io.read_failed"}})"
            "\n");
  // The text form writes the bytes as they are (stderr is for people; the message says which file).
  EXPECT_EQ(captured(r, path, false), std::string("w4a8check: cannot read ") + path + ": it \"shrank\"\n  [io.read_failed]\n");
  // Longer than one piece of the writer's buffer: every byte arrives, escapes whole.
  const std::string long_path(700, '\xff');
  std::string want;
  for (int i = 0; i < 700; ++i) want += "\\udcff";
  const std::string got = captured(r, long_path.c_str(), true);
  EXPECT_NE(got.find("cannot read " + want + ": it"), std::string::npos) << got.substr(0, 200);
}

}  // namespace
}  // namespace w4a8::io
