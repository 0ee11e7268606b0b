#include "safetensors/hash_metadata.hpp"

#include <algorithm>
#include <bit>
#include <cstring>
#include <cstdint>
#include <numeric>
#include <string>
#include <vector>

#include "json/parse.hpp"
#include "json/scan.hpp"
#include "json/serde_reader.hpp"
#include "safetensors/name_order.hpp"
#include "safetensors/serde_errors.hpp"

namespace w4a8::st::detail {
namespace {

using json::SerdeReader;
using json::SerdeScalar;

enum Field { kDtype, kShape, kOffsets, kFieldCount, kOther = kFieldCount };
constexpr std::string_view kFieldNames[kFieldCount] = {"dtype", "shape", "data_offsets"};

Field field_of(std::string_view key) {
  if (key.size() == 5) return key == "dtype" ? kDtype : key == "shape" ? kShape : kOther;
  return key == "data_offsets" ? kOffsets : kOther;
}

// Containers around a value at each level of HashMetadata (serde_json's recursion limit counts them).
constexpr int kInRoot = 1;    // a member value of the root object
constexpr int kInTensor = 2;  // a field of a tensor
constexpr int kInField = 3;   // an element of shape / data_offsets, a member of a dtype object

constexpr std::size_t kSampleTensors = 64;   // tensors read before reserving for the rest
constexpr std::size_t kMinTensorBytes = 48;  // bound of that reservation: <= 1.7 x the text

// A cursor over the text for the fast path below.
struct FastCursor {
  const char* p;
  const char* end;

  static bool is_digit(char c) { return static_cast<unsigned char>(c - '0') < 10; }
  [[gnu::always_inline]] void ws() {
    while (p < end && static_cast<unsigned char>(*p) <= ' ' && (*p == ' ' || *p == '\n' || *p == '\t' || *p == '\r')) ++p;
  }
  // The literal w (a constant, so the compare is a few loads); no whitespace skipped.
  template <std::size_t N>
  [[gnu::always_inline]] bool exact(const char (&w)[N]) {
    constexpr std::size_t n = N - 1;
    if (static_cast<std::size_t>(end - p) < n || std::memcmp(p, w, n) != 0) return false;
    p += n;
    return true;
  }
  // Whitespace, then a token. Whitespace is skipped only where the token is not found at once, so
  // the compact text writers emit costs one compare a token.
  template <std::size_t N>
  [[gnu::always_inline]] bool tok(const char (&w)[N]) {
    if (exact(w)) return true;
    ws();
    return exact(w);
  }
  // Whitespace, then 1 to 19 digits (so < 2^64) without a leading zero.
  [[gnu::always_inline]] bool number(std::uint64_t& v) {
    if (digits(v)) return true;
    const char* const at = p;
    ws();
    return p != at && digits(v);
  }
  // 1 to 19 digits without a leading zero (p is unchanged when there is no digit).
  [[gnu::always_inline]] bool digits(std::uint64_t& v) {
    std::size_t n = 0;
    if (end - p >= 16 && (n = json::scan::digit_run16(p)) < 16) [[likely]] {
      if (n == 0 || (n > 1 && *p == '0')) return false;
      v = json::scan::digits_value(p, n);
      p += n;
      return true;
    }
    return slow_number(v);
  }
  // Near the end of the text, or 16 digits and maybe more.
  bool slow_number(std::uint64_t& v) {
    const char* const b = p;
    const char* const stop = end - p > 19 ? p + 19 : end;
    std::uint64_t x = 0;
    for (; p < stop && is_digit(*p); ++p) x = x * 10 + static_cast<unsigned>(*p - '0');
    if (p == b || (*b == '0' && p - b > 1) || (p < end && is_digit(*p))) return false;
    v = x;
    return true;
  }
};

// The form writers emit, {"dtype":"F32","shape":[2,3],"data_offsets":[0,24]}, with or without
// whitespace between tokens, read in one go: the end of the value, with t's dtype, shape and
// offsets set. nullptr for anything else (another field order, escapes, an unknown dtype, signs,
// fractions, exponents, leading zeros, 20-digit numbers, the text ending): the general path then
// reads the value from the start, so every message still comes from it.
// Each run of tokens is tried as the compact text first (one compare), then token by token.
[[gnu::always_inline]] inline const char* fast_tensor_form(const char* p, const char* end, TensorInfo& t) {
  FastCursor c{p, end};
  if (!c.exact("{\"dtype\":\"") && !(c.tok("{") && c.tok("\"dtype\"") && c.tok(":") && c.tok("\""))) return nullptr;
  const char* const name = c.p;  // no whitespace skipped inside the string
  // Up to the closing quote; dtype_from_name matches only whole names, so escapes never pass.
  const char* const stop = end - name > 12 ? name + 12 : end;
  while (c.p < stop && *c.p != '"') ++c.p;
  const auto d = dtype_from_name({name, static_cast<std::size_t>(c.p - name)});
  if (!d) return nullptr;
  if (!c.exact("\",\"shape\":[") && !(c.exact("\"") && c.tok(",") && c.tok("\"shape\"") && c.tok(":") && c.tok("[")))
    return nullptr;
  t.shape.clear();
  if (!c.tok("]")) {
    while (true) {
      std::uint64_t v = 0;
      if (!c.number(v)) return nullptr;
      t.shape.push_back(v);
      if (c.tok("]")) break;
      if (!c.tok(",")) return nullptr;
    }
  }
  if (!c.exact(",\"data_offsets\":[") &&
      !(c.tok(",") && c.tok("\"data_offsets\"") && c.tok(":") && c.tok("[")))
    return nullptr;
  if (!c.number(t.begin) || !c.tok(",") || !c.number(t.end) || !c.tok("]") || !c.tok("}")) return nullptr;
  t.dtype = *d;
  return c.p;
}

class HashMetadataReader {
 public:
  HashMetadataReader(std::string_view text, Header& out, NameOrder* order) : r_(text), out_(out), order_(order) {}

  Status run() {
    if (!root()) {
      std::string msg = r_.message();
      const json::TextPosition p = json::serde_position(r_.text(), r_.index());
      msg += " at line " + std::to_string(p.line) + " column " + std::to_string(p.column);
      return make_error(ErrorKind::StInvalidHeaderDeserialization, {msg});
    }
    own_escaped_names();
    merge_metadata();
    return Ok{};
  }

 private:
  bool root() {
    r_.skip_ws();
    if (r_.eof()) return r_.fail_peek(json::serde_msg::kEofValue);
    if (!r_.at('{')) return invalid_type_here(expect::kHashMetadata);
    r_.enter(0);
    bool first = true, seen_metadata = false;
    std::string_view key;
    while (true) {
      const int k = r_.next_key(first, key);
      if (k < 0) return false;
      if (k == 0) break;
      if (key == "__metadata__") {
        if (seen_metadata) {
          r_.skip_ws();  // serde_json stands past the whitespace when the derived visitor fails
          return r_.fail_here(duplicate_field("__metadata__"));
        }
        seen_metadata = true;
        if (!r_.colon() || !metadata()) return false;
        r_.drop_scratch();  // (the values are copied into out_.metadata)
        continue;
      }
      if (out_.tensors.empty()) first_tensor_at_ = r_.pos();
      TensorInfo t;
      if (mapping()) set_name(t, key);
      if (!r_.colon()) return false;
      if (!(mapping() && fast_tensor(t)) && !tensor(t)) return false;
      if (!mapping()) continue;
      if (out_.tensors.size() == kSampleTensors) reserve_estimate();
      // The name is in cache now: its place in name order is worked out here (an escaped name's
      // bytes move before the end, so its table is sorted from the final names instead).
      if (order_ != nullptr) {
        if (escaped_at_.empty()) order_->add(t.name);
        else order_ = nullptr;
      }
      out_.tensors.push_back(std::move(t));
    }
    if (!mapping()) return r_.fail_here(deferred_);
    r_.skip_ws();
    if (!r_.eof()) return r_.fail_peek(json::serde_msg::kTrailingChars);
    return true;
  }

  // A name without escapes views the text; one with escapes lives in the reader's scratch until the
  // next string, so its decoded bytes are kept aside (own_escaped_names points the name at them).
  void set_name(TensorInfo& t, std::string_view key) {
    const std::string_view text = r_.text();
    if (key.data() >= text.data() && key.data() <= text.data() + text.size()) {
      t.name = Name(key);
      return;
    }
    escaped_at_.push_back({out_.tensors.size(), escaped_.size(), key.size()});
    escaped_.append(key);
  }
  void own_escaped_names() {
    if (escaped_at_.empty()) return;
    auto pool = std::make_shared<const std::string>(std::move(escaped_));
    for (const Escaped& e : escaped_at_) out_.tensors[e.index].name = Name(std::string_view(*pool).substr(e.offset, e.size));
    out_.storage = std::move(pool);
  }

  // After the first tensors, reserve for the rest at their average size (one growth, not ~20), but
  // never more than one entry per kMinTensorBytes of the text left, whatever the first ones were.
  void reserve_estimate() {
    // Measured from the first tensor: a __metadata__ before it (where the crate writes it) can be
    // most of the text, and counting it made the estimate a tiny fraction of the table, which then
    // grew by doubling, twice over (the name order's entries grow with it).
    const std::size_t per_tensor = std::max<std::size_t>((r_.pos() - first_tensor_at_) / kSampleTensors, kMinTensorBytes);
    out_.tensors.reserve(kSampleTensors + (r_.text().size() - r_.pos()) / per_tensor + 1);
    if (order_ != nullptr) order_->reserve(out_.tensors.capacity());
  }

  // serde_json's peek_invalid_type: containers are not consumed; a scalar is read first (its own
  // syntax errors win), and the error points past it.
  bool invalid_type_here(std::string_view expected) {
    if (r_.at('[')) return r_.fail_here(invalid_type(kUnexpectedSeq, expected));
    if (r_.at('{')) return r_.fail_here(invalid_type(kUnexpectedMap, expected));
    SerdeScalar v;
    if (!r_.read_scalar(v)) return false;
    return r_.fail_here(invalid_type(unexpected(v), expected));
  }

  // Option<HashMap<String, String>>, streamed: every error is immediate.
  bool metadata() {
    if (r_.at('n')) {
      SerdeScalar v;
      return r_.read_scalar(v);  // "null" (None) or an ident error
    }
    if (r_.eof()) return r_.fail_peek(json::serde_msg::kEofValue);
    if (!r_.at('{')) return invalid_type_here(expect::kMap);
    r_.enter(kInRoot);
    out_.has_metadata = true;
    bool first = true;
    std::string_view key, value;
    while (true) {
      const int k = r_.next_key(first, key);
      if (k < 0) return false;
      if (k == 0) return true;
      std::string name(key);
      if (!r_.colon()) return false;
      if (r_.eof()) return r_.fail_peek(json::serde_msg::kEofValue);
      if (!r_.at('"')) return invalid_type_here(expect::kString);
      if (!r_.read_string(value)) return false;
      out_.metadata.emplace_back(std::move(name), std::string(value));
    }
  }

  // ---- tensors: read in full (syntax is immediate), mapped as serde maps the buffered Content,
  //      the first mapping failure kept for after the root's closing brace. ----
  bool mapping() const { return deferred_.empty(); }
  void defer(std::string msg) {
    if (deferred_.empty()) deferred_ = std::move(msg);
  }
  // A value that cannot map to `expected`: consume it, keep the failure.
  bool mismatch(std::string_view expected, int depth) {
    if (r_.at('[') || r_.at('{')) {
      const std::string_view what = r_.at('[') ? kUnexpectedSeq : kUnexpectedMap;
      if (!r_.skip_value(depth)) return false;
      defer(invalid_type(what, expected));
      return true;
    }
    SerdeScalar v;
    if (!r_.read_scalar(v)) return false;
    defer(invalid_type(unexpected(v), expected));
    return true;
  }

  // The form writers emit, read in one go (fast_tensor_form); anything else is left to tensor().
  bool fast_tensor(TensorInfo& t) {
    const std::string_view text = r_.text();
    const char* const p = fast_tensor_form(text.data() + r_.pos(), text.data() + text.size(), t);
    if (p == nullptr) return false;
    r_.skip_to(static_cast<std::size_t>(p - text.data()));
    return true;
  }

  bool tensor(TensorInfo& t) {
    if (r_.at('{')) {
      if (!r_.enter(kInRoot)) return false;
      bool first = true, seen[kFieldCount] = {};
      std::string_view key;
      while (true) {
        const int k = r_.next_key(first, key);
        if (k < 0) return false;
        if (k == 0) break;
        const Field f = mapping() ? field_of(key) : kOther;
        if (!r_.colon()) return false;
        if (f != kOther && seen[f]) {
          defer(duplicate_field(kFieldNames[f]));
        } else if (f != kOther) {
          seen[f] = true;
          if (!field(f, t)) return false;
          continue;
        }
        if (!r_.skip_value(kInTensor)) return false;
      }
      for (int f = 0; f < kFieldCount && mapping(); ++f)
        if (!seen[f]) defer(missing_field(kFieldNames[f]));
      return true;
    }
    if (r_.at('[')) {
      if (!r_.enter(kInRoot)) return false;
      bool first = true;
      std::size_t n = 0;
      for (int e; (e = r_.next_element(first)) != 0; ++n) {
        if (e < 0) return false;
        if (mapping() && n < kFieldCount) {
          if (!field(Field(n), t)) return false;
        } else if (!r_.skip_value(kInTensor)) {
          return false;
        }
      }
      if (mapping() && n < kFieldCount) defer(invalid_length(n, expect::kTensorInfoSeq));
      if (mapping() && n > kFieldCount) defer(invalid_length_in_seq(n, kFieldCount));
      return true;
    }
    return mismatch(expect::kTensorInfo, kInRoot);
  }

  bool field(Field f, TensorInfo& t) {
    switch (f) {
      case kDtype: return dtype(t.dtype);
      case kShape: return shape(t.shape);
      case kOffsets: return offsets(t);
      case kOther: break;
    }
    return r_.skip_value(kInTensor);
  }

  bool dtype(Dtype& out) {
    std::string_view name;
    if (r_.at('"')) {
      if (!r_.read_string(name)) return false;
      if (auto d = dtype_from_name(name)) out = *d;
      else defer(unknown_dtype_variant(name));
      return true;
    }
    if (!r_.at('{')) return mismatch(expect::kDtype, kInTensor);
    // An externally tagged unit variant {"F32": null}: one member, a known name, a null value.
    if (!r_.enter(kInTensor)) return false;
    bool first = true;
    std::size_t members = 0;
    std::string variant, value_unexpected;  // value_unexpected empty: the value was null
    std::string_view key;
    for (int k; (k = r_.next_key(first, key)) != 0; ++members) {
      if (k < 0) return false;
      if (members == 0) variant.assign(key);
      if (!r_.colon()) return false;
      if (members > 0 || !mapping()) {
        if (!r_.skip_value(kInField)) return false;
      } else if (r_.at('[') || r_.at('{')) {
        value_unexpected = r_.at('[') ? kUnexpectedSeq : kUnexpectedMap;
        if (!r_.skip_value(kInField)) return false;
      } else {
        SerdeScalar v;
        if (!r_.read_scalar(v)) return false;
        if (v.kind != SerdeScalar::Kind::Null) value_unexpected = unexpected(v);
      }
    }
    if (!mapping()) return true;
    if (members != 1) {
      defer(invalid_value(kUnexpectedMap, expect::kDtypeMap));
    } else if (auto d = dtype_from_name(variant)) {
      if (value_unexpected.empty()) out = *d;
      else defer(invalid_type(value_unexpected, expect::kUnit));
    } else {
      defer(unknown_dtype_variant(variant));
    }
    return true;
  }

  // serde's usize from a buffered number: u64 fits; i64 is an invalid value; f64 an invalid type.
  bool usize(std::uint64_t& out) {
    if (r_.at('[') || r_.at('{')) return mismatch(expect::kUsize, kInField);
    SerdeScalar v;
    if (!r_.read_scalar(v)) return false;
    if (v.kind == SerdeScalar::Kind::U64) out = v.u64;
    else if (v.kind == SerdeScalar::Kind::I64) defer(invalid_value(unexpected(v), expect::kUsize));
    else defer(invalid_type(unexpected(v), expect::kUsize));
    return true;
  }

  bool shape(Shape& out) {
    if (!r_.at('[')) return mismatch(expect::kShape, kInTensor);
    if (!r_.enter(kInTensor)) return false;
    out.clear();
    bool first = true;
    for (int e; (e = r_.next_element(first)) != 0;) {
      if (e < 0) return false;
      if (!mapping()) {
        if (!r_.skip_value(kInField)) return false;
        continue;
      }
      if (out.empty()) out.reserve(4);
      std::uint64_t d = 0;
      if (!usize(d)) return false;
      out.push_back(d);
    }
    return true;
  }

  // (usize, usize): elements in order; a short sequence fails after them, a long one after the
  // visitor took two.
  bool offsets(TensorInfo& t) {
    if (!r_.at('[')) return mismatch(expect::kOffsets, kInTensor);
    if (!r_.enter(kInTensor)) return false;
    std::uint64_t* dst[2] = {&t.begin, &t.end};
    bool first = true;
    std::size_t n = 0;
    for (int e; (e = r_.next_element(first)) != 0; ++n) {
      if (e < 0) return false;
      if (mapping() && n < 2) {
        if (!usize(*dst[n])) return false;
      } else if (!r_.skip_value(kInField)) {
        return false;
      }
    }
    if (mapping() && n < 2) defer(invalid_length(n, expect::kOffsets));
    if (mapping() && n > 2) defer(invalid_length_in_seq(n, 2));
    return true;
  }

  // ---- HashMap semantics on the flat tables (tensors: name_order.cpp) ----
  // HashMap::insert per member: a repeated key keeps its first place (ours: JSON order) and takes
  // the last value.
  void merge_metadata() {
    auto& m = out_.metadata;
    if (m.size() < 2) return;
    std::vector<std::uint32_t> order(m.size());
    std::iota(order.begin(), order.end(), 0u);
    std::sort(order.begin(), order.end(), [&](std::uint32_t a, std::uint32_t b) {
      const int c = m[a].first.compare(m[b].first);
      return c != 0 ? c < 0 : a < b;
    });
    std::vector<bool> drop(m.size());
    bool any = false;
    for (std::size_t i = 0; i + 1 < order.size(); ++i) {
      if (m[order[i]].first != m[order[i + 1]].first) continue;
      // order[i] is an earlier occurrence: the last value moves to the first place of the run.
      m[order[i + 1]].second.swap(m[order[i]].second);
      std::swap(order[i], order[i + 1]);
      drop[order[i]] = true;
      any = true;
    }
    if (!any) return;
    std::size_t w = 0;
    for (std::size_t i = 0; i < m.size(); ++i)
      if (!drop[i]) {
        if (w != i) m[w] = std::move(m[i]);
        ++w;
      }
    m.erase(m.begin() + std::ptrdiff_t(w), m.end());
  }

  struct Escaped {
    std::size_t index, offset, size;  // out_.tensors[index].name is escaped_[offset, offset + size)
  };
  std::string escaped_;
  std::vector<Escaped> escaped_at_;
  SerdeReader r_;
  Header& out_;
  NameOrder* order_;      // fed each tensor's name (null: not asked, or given up at an escaped name)
  std::size_t first_tensor_at_ = 0;  // where the first tensor's value starts
  std::string deferred_;  // the first tensor mapping failure
};

}  // namespace

Status read_header(std::string_view text, Header& out, NameOrder* order) {
  return HashMetadataReader(text, out, order).run();
}

Status deserialize_header(std::string_view text, Header& out) {
  NameOrder order;
  W4A8_TRY(read_header(text, out, &order));
  order.sort(out.tensors, kGatherFrom, &out.name_lcp);
  return Ok{};
}

}  // namespace w4a8::st::detail
