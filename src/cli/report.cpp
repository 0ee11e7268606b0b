#include "cli/report.hpp"

#include <charconv>
#include <cmath>
#include <ostream>

#include "core/hex.hpp"
#include "json/dump.hpp"
#include "json/number.hpp"

namespace w4a8::cli {

int exit_status(const Error& e) { return error_info(e.kind).exit == ExitClass::Reject ? 1 : 2; }

void JsonWriter::separate() {
  if (after_key_) {
    after_key_ = false;
    return;
  }
  if (!first_.empty()) {
    if (!first_.back()) buf_ += ", ";
    first_.back() = false;
  }
}

void BlockOut::flush() {
  if (buf_.empty()) return;
  os_.write(buf_.data(), static_cast<std::streamsize>(buf_.size()));
  buf_.clear();
}

void JsonWriter::wrote() {
  if (first_.empty()) return out_.flush();
  out_.flush_if_full();
}

JsonWriter& JsonWriter::begin_object() {
  separate();
  buf_ += '{';
  first_.push_back(true);
  return *this;
}

JsonWriter& JsonWriter::end_object() {
  buf_ += '}';
  first_.pop_back();
  wrote();
  return *this;
}

JsonWriter& JsonWriter::begin_array() {
  separate();
  buf_ += '[';
  first_.push_back(true);
  return *this;
}

JsonWriter& JsonWriter::end_array() {
  buf_ += ']';
  first_.pop_back();
  wrote();
  return *this;
}

JsonWriter& JsonWriter::null() {
  separate();
  buf_ += "null";
  wrote();
  return *this;
}

JsonWriter& JsonWriter::key(std::string_view k) {
  separate();
  json::dump_string_append(buf_, k);
  buf_ += ": ";
  after_key_ = true;
  return *this;
}

JsonWriter& JsonWriter::string(std::string_view v) {
  separate();
  json::dump_string_append(buf_, v);
  wrote();
  return *this;
}

JsonWriter& JsonWriter::os_string(std::string_view v) {
  separate();
  json::dump_os_string_append(buf_, v);
  wrote();
  return *this;
}

JsonWriter& JsonWriter::boolean(bool v) {
  separate();
  buf_ += v ? "true" : "false";
  wrote();
  return *this;
}

JsonWriter& JsonWriter::number(std::uint64_t v) {
  separate();
  char digits[24];
  const auto end = std::to_chars(digits, digits + sizeof digits, v).ptr;
  buf_.append(digits, end);
  wrote();
  return *this;
}

JsonWriter& JsonWriter::number(double v) {
  separate();
  json::dump_append(buf_, json::Value::from_float(v), json::NonFinite::String);  // (one spelling of NaN/inf)
  wrote();
  return *this;
}

JsonWriter& JsonWriter::value(const json::Value& v) { return value(v, json::NonFinite::String); }

JsonWriter& JsonWriter::value(const json::Value& v, json::NonFinite nf) {
  separate();
  json::dump_append(buf_, v, nf);
  wrote();
  return *this;
}

JsonWriter& JsonWriter::dumped(std::string_view text) {
  separate();
  buf_ += text;
  wrote();
  return *this;
}

std::string Predicts::text() const {
  std::string t;
  auto add = [&t](std::string_view name, std::string_view v) {
    if (!v.empty()) t.append(t.empty() ? "" : ", ").append(name).append(" ").append(v);
  };
  add("sglang", sglang);
  add("Python", python);
  add("comfy-kitchen", comfy_kitchen);
  return t;
}

void Predicts::write(JsonWriter& w) const {
  w.begin_object();
  if (!sglang.empty()) w.key("sglang").string(sglang);
  if (!python.empty()) w.key("python").string(python);
  if (!comfy_kitchen.empty()) w.key("comfy_kitchen").string(comfy_kitchen);
  w.end_object();
}

JsonWriter& JsonWriter::notes(const std::vector<std::string>& n) {
  if (n.empty()) return *this;
  key("notes").begin_array();
  for (const std::string& t : n) os_string(t);
  return end_array();
}

std::string one_line_text(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (const char c : text) {
    const auto b = static_cast<unsigned char>(c);
    if (b >= 0x20 && b != 0x7F) {
      out.push_back(c);
    } else if (c == '\n' || c == '\r' || c == '\t') {
      out += c == '\n' ? "\\n" : c == '\r' ? "\\r" : "\\t";
    } else {
      out += "\\x";
      out.push_back(hex::digit(b >> 4));
      out.push_back(hex::digit(b & 0xF));
    }
  }
  return out;
}

void Reporter::fail(const Error& e, const FailStyle& style) {
  exit_ = exit_status(e);
  if (style.input_file && exit_ == 1) exit_ = 2;
  if (style.format == Format::Json) {
    JsonWriter w(out_);
    w.begin_object().key("ok").boolean(false);
    if (!style.upstream.empty()) {
      w.key("upstream");
      style.upstream.write(w);
    }
    if (style.strict) w.key("strict").boolean(*style.strict);
    w.notes(notes_);  // a JSON-only gate sees what the notes on stderr say (a shadowing model.safetensors, ...)
    w.key("error").begin_object();
    w.key("type").string(e.type()).key("message").os_string(e.message).key("code").string(e.code());
    if (!style.where.empty()) w.key("file").os_string(style.where);
    w.end_object().end_object();
    out_ << "\n";
    return;
  }
  // One line (--quiet) stays one: a line break or other control byte in a file name is written as
  // an escape there (\n, \x1b), elsewhere as it is. Backslashes stay as they are, so the message is
  // upstream's byte for byte otherwise (a name holding a backslash and an 'n' reads the same).
  const auto line = [&style](std::string_view text) { return style.one_line ? one_line_text(text) : std::string(text); };
  const std::string where = style.where.empty() ? "" : line(style.where) + ": ";
  const std::string message = line(e.message);
  if (exit_ == 1) {
    out_ << "REJECTED: " << where << e.type() << ": " << message << (style.one_line ? "  [" : "\n  [") << e.code() << "]";
    // A --strict check or --min-layers is ours, not a prediction of an sglang error: said so beside
    // the releases.
    if (!style.upstream.empty()) {
      out_ << " (";
      switch (rule_owner(e.code())) {
        case RuleOwner::Strict: out_ << "a --strict check, not an sglang error; "; break;
        case RuleOwner::Ours: out_ << "--min-layers, not an sglang error; "; break;
        case RuleOwner::Upstream: break;
      }
      out_ << style.upstream.text() << ")";
    }
    out_ << "\n";
  } else {
    err_ << "w4a8check: " << where << message << (style.one_line ? "  [" : "\n  [") << e.code() << "]\n";
  }
}

void Reporter::warn(std::string_view text) { err_ << "w4a8check: warning: " << text << "\n"; }
void Reporter::note(std::string_view text) {
  err_ << "w4a8check: note: " << text << "\n";
  notes_.emplace_back(text);
}

}  // namespace w4a8::cli
