// Private to src/validate: raw_markers' keys (layer prefixes) -> their position in Report::layers.
// Keys usually arrive in increasing order (one file's marker tensors come sorted), so the index is a
// sorted vector and recording a new key costs one comparison; the first key out of order switches
// it to a hash map. Keys are views: their bytes must outlive the index (State guarantees it).
#pragma once

#include <algorithm>
#include <cstddef>
#include <optional>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace w4a8::validate::detail {

class PrefixIndex {
 public:
  void reserve(std::size_t n) {
    if (hashed_) map_.reserve(n);
    else sorted_.reserve(n);
  }
  // post: key maps to a position; returns it and whether key was new (then it maps to pos).
  std::pair<std::size_t, bool> try_emplace(std::string_view key, std::size_t pos) {
    if (!hashed_) {
      if (sorted_.empty() || sorted_.back().first < key) {
        sorted_.emplace_back(key, pos);
        return {pos, true};
      }
      if (auto found = find(key)) return {*found, false};
      map_.reserve(sorted_.capacity() + 1);
      for (const auto& [k, v] : sorted_) map_.emplace(k, v);
      sorted_ = {};
      hashed_ = true;
    }
    auto [it, inserted] = map_.try_emplace(key, pos);
    return {it->second, inserted};
  }
  std::optional<std::size_t> find(std::string_view key) const {
    if (hashed_) {
      auto it = map_.find(key);
      return it == map_.end() ? std::nullopt : std::optional<std::size_t>(it->second);
    }
    // Lookups mostly come in key order too (the missing-marker check walks the sorted weight
    // prefixes): the entry after the previous hit is tried before a binary search.
    if (next_ < sorted_.size() && sorted_[next_].first == key) return sorted_[next_++].second;
    auto it = std::lower_bound(sorted_.begin(), sorted_.end(), key,
                               [](const auto& e, std::string_view k) { return e.first < k; });
    if (it == sorted_.end() || it->first != key) return std::nullopt;
    next_ = static_cast<std::size_t>(it - sorted_.begin()) + 1;
    return it->second;
  }
  bool contains(std::string_view key) const { return find(key).has_value(); }

 private:
  std::vector<std::pair<std::string_view, std::size_t>> sorted_;  // while keys arrive increasing
  std::unordered_map<std::string_view, std::size_t> map_;          // after that
  bool hashed_ = false;
  mutable std::size_t next_ = 0;  // sorted_: the position after the last key found (a hint only)
};

}  // namespace w4a8::validate::detail
