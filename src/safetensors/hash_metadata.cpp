#include "safetensors/hash_metadata.hpp"

#include <algorithm>
#include <bit>
#include <cstring>
#include <cstdint>
#include <numeric>
#include <string>
#include <vector>

#include "json/parse.hpp"
#include "json/serde_reader.hpp"
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
constexpr std::size_t kMaxMergedRuns = 64;   // more ascending runs than this: radix-style sort

// Sorts entries by (name, index) without comparing whole names: most-significant-digit refinement
// on 8-byte big-endian chunks (names share long prefixes such as "model.diffusion_model."), with
// an explicit work list, so the cost is linear in the bytes that tell names apart.
struct NameKey {
  std::uint64_t key = 0;  // name bytes [depth, depth + 8), zero-padded
  std::uint32_t index = 0;
};

std::uint64_t chunk_at(std::string_view s, std::size_t depth) {
  std::uint64_t k = 0;
  if (depth + 8 <= s.size()) {
    std::memcpy(&k, s.data() + depth, 8);
    return std::endian::native == std::endian::little ? __builtin_bswap64(k) : k;
  }
  for (std::size_t i = 0; i < 8; ++i) k = k << 8 | (depth + i < s.size() ? static_cast<unsigned char>(s[depth + i]) : 0u);
  return k;
}

void sort_by_name(std::vector<NameKey>& order, const std::vector<TensorInfo>& v) {
  auto name = [&](const NameKey& e) -> std::string_view { return v[e.index].name; };
  // The crate's writer emits names sorted within each dtype group: a few ascending runs, merged
  // with sequential reads. (order holds the identity here.)
  std::vector<std::size_t> runs = {0};
  for (std::size_t i = 1; i < v.size() && runs.size() <= kMaxMergedRuns; ++i)
    if (!(v[i - 1].name < v[i].name)) runs.push_back(i);
  if (runs.size() <= kMaxMergedRuns) {
    runs.push_back(v.size());
    auto less = [&](const NameKey& x, const NameKey& y) {
      const int c = name(x).compare(name(y));
      return c != 0 ? c < 0 : x.index < y.index;
    };
    while (runs.size() > 2) {
      std::vector<std::size_t> merged = {0};
      for (std::size_t r = 0; r + 2 < runs.size(); r += 2) {
        std::inplace_merge(order.begin() + std::ptrdiff_t(runs[r]), order.begin() + std::ptrdiff_t(runs[r + 1]),
                           order.begin() + std::ptrdiff_t(runs[r + 2]), less);
        merged.push_back(runs[r + 2]);
      }
      if (runs.size() % 2 == 0) merged.push_back(runs.back());  // an odd run out waits a round
      runs = std::move(merged);
    }
    return;
  }
  struct Range {
    std::size_t begin, end, depth;  // entries whose names agree on bytes [0, depth)
  };
  // Start past the prefix every name shares.
  std::size_t lcp = order.empty() ? 0 : v[0].name.size();
  for (std::size_t i = 1; i < v.size() && lcp > 0; ++i) {
    const std::string_view a = v[0].name, b = v[i].name;
    std::size_t k = 0;
    const std::size_t m = std::min({lcp, a.size(), b.size()});
    while (k < m && a[k] == b[k]) ++k;
    lcp = k;
  }
  std::vector<Range> work = {{0, order.size(), lcp}};
  while (!work.empty()) {
    const Range r = work.back();
    work.pop_back();
    const auto b = order.begin() + std::ptrdiff_t(r.begin), e = order.begin() + std::ptrdiff_t(r.end);
    for (auto p = b; p != e; ++p) p->key = chunk_at(name(*p), r.depth);
    std::sort(b, e, [](const NameKey& x, const NameKey& y) { return x.key < y.key; });
    for (auto run = b; run != e;) {
      auto q = run + 1;
      while (q != e && q->key == run->key) ++q;
      if (q - run > 1) {
        // Equal chunks: a name that ends within them is a prefix of the others (the padding
        // equals their NUL bytes), so it sorts first, shorter first, then by index.
        const std::size_t end_depth = r.depth + 8;
        auto longer = std::partition(run, q, [&](const NameKey& x) { return name(x).size() <= end_depth; });
        std::sort(run, longer, [&](const NameKey& x, const NameKey& y) {
          const std::size_t lx = name(x).size(), ly = name(y).size();
          return lx != ly ? lx < ly : x.index < y.index;
        });
        if (q - longer > 1)
          work.push_back({std::size_t(longer - order.begin()), std::size_t(q - order.begin()), end_depth});
      }
      run = q;
    }
  }
}

class HashMetadataReader {
 public:
  HashMetadataReader(std::string_view text, Header& out, std::vector<std::uint32_t>* doc_order)
      : r_(text), out_(out), doc_order_(doc_order) {}

  Status run() {
    if (!root()) {
      std::string msg = r_.message();
      const json::TextPosition p = json::serde_position(r_.text(), r_.index());
      msg += " at line " + std::to_string(p.line) + " column " + std::to_string(p.column);
      return make_error(ErrorKind::StInvalidHeaderDeserialization, {msg});
    }
    sort_tensors();
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
        continue;
      }
      TensorInfo t;
      if (mapping()) t.name.assign(key);  // key may live in the reader's scratch
      if (!r_.colon() || !tensor(t)) return false;
      if (!mapping()) continue;
      if (out_.tensors.size() == kSampleTensors) reserve_estimate();
      out_.tensors.push_back(std::move(t));
    }
    if (!mapping()) return r_.fail_here(deferred_);
    r_.skip_ws();
    if (!r_.eof()) return r_.fail_peek(json::serde_msg::kTrailingChars);
    return true;
  }

  // After the first tensors, reserve for the rest at their average size (one growth, not ~20), but
  // never more than one entry per kMinTensorBytes of the text left, whatever the first ones were.
  void reserve_estimate() {
    const std::size_t per_tensor = std::max<std::size_t>(r_.pos() / kSampleTensors, kMinTensorBytes);
    out_.tensors.reserve(kSampleTensors + (r_.text().size() - r_.pos()) / per_tensor + 1);
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

  bool shape(std::vector<std::uint64_t>& out) {
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

  // ---- HashMap semantics on the flat tables ----
  // Name order (code point order = byte order); a repeated name keeps its last occurrence.
  void sort_tensors() {
    auto& v = out_.tensors;
    const std::size_t n = v.size();
    if (doc_order_) doc_order_->clear();
    bool sorted = true;
    for (std::size_t i = 1; i < n && sorted; ++i) sorted = v[i - 1].name < v[i].name;
    if (sorted) {
      if (doc_order_) {
        doc_order_->resize(n);
        std::iota(doc_order_->begin(), doc_order_->end(), 0u);
      }
      return;
    }
    std::vector<NameKey> order(n);  // n <= header bytes / 2 < 2^32
    for (std::size_t i = 0; i < n; ++i) order[i].index = static_cast<std::uint32_t>(i);
    sort_by_name(order, v);
    std::vector<std::uint32_t> source;  // document index of each name position
    if (doc_order_) {
      source.resize(n);
      for (std::size_t k = 0; k < n; ++k) source[k] = order[k].index;
    }
    // Apply the permutation in place, cycle by cycle (done slots get index == their own slot).
    for (std::uint32_t k = 0; k < n; ++k) {
      if (order[k].index == k) continue;
      TensorInfo held = std::move(v[k]);
      std::uint32_t j = k;
      while (true) {
        const std::uint32_t src = order[j].index;
        order[j].index = j;
        if (src == k) {
          v[j] = std::move(held);
          break;
        }
        v[j] = std::move(v[src]);
        j = src;
      }
    }
    std::size_t w = 0;
    for (std::size_t i = 0; i < n; ++i) {
      if (i + 1 < n && v[i].name == v[i + 1].name) continue;  // a later duplicate wins
      if (w != i) {
        v[w] = std::move(v[i]);
        if (doc_order_) source[w] = source[i];
      }
      ++w;
    }
    v.erase(v.begin() + std::ptrdiff_t(w), v.end());
    if (doc_order_) {
      constexpr std::uint32_t kDropped = UINT32_MAX;
      std::vector<std::uint32_t> at_doc(n, kDropped);
      for (std::size_t k = 0; k < w; ++k) at_doc[source[k]] = static_cast<std::uint32_t>(k);
      doc_order_->reserve(w);
      for (std::uint32_t p : at_doc)
        if (p != kDropped) doc_order_->push_back(p);
    }
  }

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

  SerdeReader r_;
  Header& out_;
  std::vector<std::uint32_t>* doc_order_;
  std::string deferred_;  // the first tensor mapping failure
};

}  // namespace

Status deserialize_header(std::string_view text, Header& out, std::vector<std::uint32_t>* doc_order) {
  return HashMetadataReader(text, out, doc_order).run();
}

}  // namespace w4a8::st::detail
