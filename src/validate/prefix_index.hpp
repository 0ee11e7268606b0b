// Private to src/validate: raw_markers' keys (layer prefixes) -> their position in Report::layers.
// It holds no keys: a key is its layer's prefix, and a key's position is its insertion order
// (record_marker appends a layer for every new key). Keys often arrive in increasing order (one
// file's marker tensors come sorted), and then the layers themselves are the sorted table: recording
// a key costs one comparison and no memory. The first key out of order (markers in
// _quantization_metadata come in model order: blocks.9 before blocks.10) switches to an
// open-addressing hash table of positions, 8 to 16 bytes a layer.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

#include "core/key_slots.hpp"
#include "validate/inspect.hpp"

namespace w4a8::validate::detail {

class PrefixIndex {
  // A layer's key by position (for KeySlots).
  struct KeyAt {
    const std::vector<Layer>* layers;
    std::string_view operator()(std::uint32_t i) const { return (*layers)[i].prefix; }
  };

 public:
  explicit PrefixIndex(const std::vector<Layer>& layers) : layers_(&layers) {}
  PrefixIndex(const PrefixIndex&) = delete;  // (it points at the layers of its owner)
  PrefixIndex& operator=(const PrefixIndex&) = delete;

  void reserve(std::size_t n) {
    catch_up();
    if (hashed() && !slots_.fits(n)) slots_.rebuild(layers_->size(), n, KeyAt{layers_});
  }
  // key's position, and whether it is new. A new key's position is layers.size(): the caller appends
  // a layer with prefix `key` before any other call.
  std::pair<std::size_t, bool> try_emplace(std::string_view key) {
    catch_up();
    const std::vector<Layer>& ls = *layers_;
    if (!hashed() && (ls.empty() || std::string_view(ls.back().prefix) < key)) return {ls.size(), true};  // inlined
    return try_emplace_other(key);
  }
  // The caller appended every layer there is, with distinct keys, without try_emplace (pre: the
  // index was empty). Keys in increasing order are the sorted table as they stand; others are
  // hashed when the index is next asked anything (if ever: a header of nothing but layers is not).
  void appended_distinct(bool increasing) { stale_ = !increasing && !layers_->empty(); }
  // The same, with `table` already holding every layer's position under its key (the flat metadata
  // read's repeat check built it over these keys, in this order): kept instead of hashed again.
  void appended_distinct(KeySlots table) {
    slots_ = std::move(table);
    stale_ = false;
  }
  std::optional<std::size_t> find(std::string_view key) const {
    catch_up();
    const std::vector<Layer>& ls = *layers_;
    if (hashed()) {
      const std::uint32_t e = slots_[slots_.slot(key, KeyAt{layers_})];
      return e == KeySlots::kEmpty ? std::nullopt : std::optional<std::size_t>(e);
    }
    // Lookups mostly come in key order too (the missing-marker check walks the sorted weight
    // prefixes): the layer after the previous hit is tried before a binary search.
    if (next_ < ls.size() && std::string_view(ls[next_].prefix) == key) return next_++;
    auto it = std::lower_bound(ls.begin(), ls.end(), key,
                               [](const Layer& l, std::string_view k) { return std::string_view(l.prefix) < k; });
    if (it == ls.end() || std::string_view(it->prefix) != key) return std::nullopt;
    next_ = static_cast<std::size_t>(it - ls.begin()) + 1;
    return next_ - 1;
  }
  bool contains(std::string_view key) const { return find(key).has_value(); }

 private:
  bool hashed() const { return !slots_.empty(); }
  // Hashes the layers appended_distinct() left out.
  void catch_up() const {
    if (!stale_) return;
    stale_ = false;
    slots_.rebuild(layers_->size(), std::max(layers_->capacity(), layers_->size() + 1), KeyAt{layers_});
  }
  // try_emplace of a key out of order (it switches to hashing), or once hashing.
  std::pair<std::size_t, bool> try_emplace_other(std::string_view key) {
    const std::size_t n = layers_->size();
    if (!hashed()) {
      if (auto found = find(key)) return {*found, false};
      slots_.rebuild(n, std::max(layers_->capacity(), n + 1), KeyAt{layers_});
    }
    return slots_.try_emplace(key, static_cast<std::uint32_t>(n), KeyAt{layers_});
  }

  const std::vector<Layer>* layers_;  // the keys, in insertion order
  mutable KeySlots slots_;            // empty while the keys are sorted; then layer positions
  mutable std::size_t next_ = 0;      // sorted: the position after the last key found (a hint only)
  mutable bool stale_ = false;        // layers were appended unsorted and are not hashed yet
};

}  // namespace w4a8::validate::detail
