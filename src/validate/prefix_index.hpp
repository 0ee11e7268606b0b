// Private to src/validate: raw_markers' keys (layer prefixes) -> their position in Report::layers.
// Keys often arrive in increasing order (one file's marker tensors come sorted), and then the index
// is a sorted vector: recording a new key costs one comparison. The first key out of order (markers
// in _quantization_metadata come in model order: blocks.9 before blocks.10) switches it to an
// open-addressing hash table over the same vector, which allocates nothing per key either.
// Keys are views: their bytes must outlive the index (State guarantees it).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

namespace w4a8::validate::detail {

class PrefixIndex {
 public:
  void reserve(std::size_t n) {
    entries_.reserve(n);
    if (hashed() && slots_.size() < 2 * n) rehash(n);
  }
  // post: key maps to a position; returns it and whether key was new (then it maps to pos).
  std::pair<std::size_t, bool> try_emplace(std::string_view key, std::size_t pos) {
    if (!hashed() && (entries_.empty() || entries_.back().key < key)) {  // the usual case: inlined
      entries_.push_back({key, pos});
      return {pos, true};
    }
    return try_emplace_other(key, pos);
  }
  std::optional<std::size_t> find(std::string_view key) const {
    if (hashed()) {
      const std::uint32_t e = slots_[slot_of(key)];
      return e == kEmpty ? std::nullopt : std::optional<std::size_t>(entries_[e].pos);
    }
    // Lookups mostly come in key order too (the missing-marker check walks the sorted weight
    // prefixes): the entry after the previous hit is tried before a binary search.
    if (next_ < entries_.size() && entries_[next_].key == key) return entries_[next_++].pos;
    auto it = std::lower_bound(entries_.begin(), entries_.end(), key,
                               [](const Entry& e, std::string_view k) { return e.key < k; });
    if (it == entries_.end() || it->key != key) return std::nullopt;
    next_ = static_cast<std::size_t>(it - entries_.begin()) + 1;
    return it->pos;
  }
  bool contains(std::string_view key) const { return find(key).has_value(); }

 private:
  static constexpr std::uint32_t kEmpty = UINT32_MAX;  // (fewer keys than that: each is a header's bytes)
  struct Entry {
    std::string_view key;
    std::size_t pos;
  };

  bool hashed() const { return !slots_.empty(); }
  // try_emplace of a key out of order (it may switch to hashing), or once hashing.
  std::pair<std::size_t, bool> try_emplace_other(std::string_view key, std::size_t pos) {
    if (!hashed()) {
      if (auto found = find(key)) return {*found, false};
      rehash(std::max(entries_.capacity(), entries_.size() + 1));
    }
    std::size_t at = slot_of(key);
    if (slots_[at] != kEmpty) return {entries_[slots_[at]].pos, false};
    if (2 * (entries_.size() + 1) > slots_.size()) {
      rehash(entries_.size() + 1);
      at = slot_of(key);
    }
    slots_[at] = static_cast<std::uint32_t>(entries_.size());
    entries_.push_back({key, pos});
    return {pos, true};
  }
  // The slot holding key, or the empty slot where it would go.
  std::size_t slot_of(std::string_view key) const {
    const std::size_t mask = slots_.size() - 1;
    std::size_t at = std::hash<std::string_view>{}(key) & mask;
    while (slots_[at] != kEmpty && entries_[slots_[at]].key != key) at = (at + 1) & mask;
    return at;
  }
  // Hashes every entry into a table with room for n keys at most half full.
  void rehash(std::size_t n) {
    std::size_t size = 16;
    while (size < 2 * n) size *= 2;
    slots_.assign(size, kEmpty);
    for (std::uint32_t i = 0; i < entries_.size(); ++i) slots_[slot_of(entries_[i].key)] = i;
  }

  std::vector<Entry> entries_;       // in arrival order (sorted while no key came out of order)
  std::vector<std::uint32_t> slots_;  // empty while sorted; then entries_ positions, kEmpty for none
  mutable std::size_t next_ = 0;      // sorted: the position after the last key found (a hint only)
};

}  // namespace w4a8::validate::detail
