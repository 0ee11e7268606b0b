// The one reporter of the CLI: how an outcome is rendered (text or JSON) and which exit status it
// gives. Exit statuses come from the error table (error_info(kind).exit): 0 success/accepted,
// 1 Reject (the input was checked and refused), 2 Usage (usage, I/O, environment).
#pragma once

#include <cstdint>
#include <iosfwd>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.hpp"

namespace w4a8::json {
struct Value;
enum class NonFinite : std::uint8_t;  // json/dump.hpp
}  // namespace w4a8::json

namespace w4a8::cli {

enum class Format : std::uint8_t { Text, Json };

// 1 for ExitClass::Reject, 2 for ExitClass::Usage.
int exit_status(const Error& e);

// Text gathered in one string and handed to a stream in 64 KiB blocks: one stream call per piece
// cost more than making the pieces (reports of tens of thousands of layers). The rest is written by
// flush() or at destruction.
class BlockOut {
 public:
  explicit BlockOut(std::ostream& os) : os_(os) {}
  ~BlockOut() { flush(); }
  BlockOut(const BlockOut&) = delete;
  BlockOut& operator=(const BlockOut&) = delete;
  std::string& text() { return buf_; }  // append here, then call flush_if_full()
  void flush_if_full() {
    if (buf_.size() >= kBlock) flush();
  }
  void flush();

 private:
  static constexpr std::size_t kBlock = std::size_t{1} << 16;
  std::ostream& os_;
  std::string buf_;
};

// Streams JSON text with Python json.dumps' separators (", ", ": "), so output of any size is
// written as it is produced (no document tree is built): in BlockOut's blocks, and the rest as soon
// as the outermost value closes (the caller may then write to the stream itself).
// `text` on one line: control bytes (C0, DEL) as escapes, \n \r \t or \xNN (Python's repr spelling of
// them; a backslash is kept, so this is for reading, not a reversible encoding).
std::string one_line_text(std::string_view text);

class JsonWriter {
 public:
  explicit JsonWriter(std::ostream& os) : out_(os), buf_(out_.text()) {}
  JsonWriter& begin_object();
  JsonWriter& end_object();
  JsonWriter& begin_array();
  JsonWriter& end_array();
  JsonWriter& null();
  JsonWriter& key(std::string_view k);  // an object member's key (WTF-8)
  JsonWriter& string(std::string_view v);  // a str as json.loads gave it (WTF-8: names, marker values)
  // Text from the system (a path, an argument) or a message or note built around such text: Python
  // holds it as os.fsdecode gives it (json::dump_os_string).
  JsonWriter& os_string(std::string_view v);
  JsonWriter& boolean(bool v);
  JsonWriter& number(std::uint64_t v);
  JsonWriter& number(double v);  // repr(v); a non-finite v as the string "NaN", "Infinity", "-Infinity"
  // json.dumps(v). Non-finite floats are quoted by default, so that what the CLI prints is JSON any
  // parser reads; a document for Python's json.loads (a checkpoint's metadata) keeps the bare tokens.
  JsonWriter& value(const json::Value& v);  // (non-finite floats quoted)
  JsonWriter& value(const json::Value& v, json::NonFinite nf);
  // A value as json::dump gave it earlier (the report prints one marker object for many layers).
  JsonWriter& dumped(std::string_view text);
  // The member "notes": [...] of a run's notes (Reporter::notes()); nothing when there are none.
  JsonWriter& notes(const std::vector<std::string>& n);

 private:
  void separate();
  void wrote();  // after each value: a full block, or the finished document, goes to the stream
  BlockOut out_;
  std::string& buf_;  // out_'s text
  std::vector<bool> first_;  // per open container: no member written yet
  bool after_key_ = false;
};

// The upstream releases a verdict predicts; empty members are not named.
struct Predicts {
  std::string_view sglang;         // "0.5.23"
  std::string_view python;         // "3.11": the Python sglang runs under (repr()/int() Unicode data)
  std::string_view comfy_kitchen;  // "0.2.40", or "0.2.37 (profile 0.2.40)"
  bool empty() const { return sglang.empty() && python.empty() && comfy_kitchen.empty(); }
  // "sglang 0.5.23, Python 3.11" / "comfy-kitchen 0.2.40"
  std::string text() const;
  // JSON: {"sglang": ..., "python": ..., "comfy_kitchen": ...} (the non-empty members).
  void write(JsonWriter& w) const;
};

struct FailStyle {
  Format format = Format::Text;
  std::string_view where;  // the file or option the error concerns when the message does not say
  Predicts upstream;       // named by a Reject verdict (text: after the code; JSON: "upstream")
  bool one_line = false;   // --quiet: the verdict on one line
  // The error is about a file the command only reads (compare's operands, to-f32's input): a broken
  // container there is bad input, not a verdict, so it exits 2 like any I/O error.
  bool input_file = false;
  // validate: whether --strict was on (JSON: "strict", as the OK object has it).
  std::optional<bool> strict;
};

class Reporter {
 public:
  Reporter(std::ostream& out, std::ostream& err) : out_(out), err_(err) {}
  std::ostream& out() { return out_; }
  std::ostream& err() { return err_; }

  // Renders e and sets the exit status from the error table.
  // Text: Reject -> stdout "REJECTED: [WHERE: ]TYPE: MESSAGE" + "  [CODE]" (+ " (PREDICTS)" when
  // style.upstream names any release); Usage -> stderr "w4a8check: [WHERE: ]MESSAGE" + "  [CODE]".
  // JSON (stdout): {"ok": false, ["upstream": {...},] ["strict": B,] ["notes": [...],] "error": {"type",
  // "message", "code"[, "file"]}}.
  void fail(const Error& e, const FailStyle& style = {});
  void warn(std::string_view text);  // stderr "w4a8check: warning: TEXT"
  void note(std::string_view text);  // stderr "w4a8check: note: TEXT"; kept for JSON reports (notes())
  const std::vector<std::string>& notes() const { return notes_; }
  void succeed() { exit_ = 0; }
  // A check's outcome that is not an Error (compare, audit check): 0 passed, 1 failed.
  void verdict(bool passed) { exit_ = passed ? 0 : 1; }
  // audit check where every case was skipped or unsupported: neither a pass nor a failure.
  static constexpr int kNothingRan = 3;
  void nothing_ran() { exit_ = kNothingRan; }
  int exit_code() const { return exit_; }

 private:
  std::ostream& out_;
  std::ostream& err_;
  int exit_ = 0;
  std::vector<std::string> notes_;
};

}  // namespace w4a8::cli
