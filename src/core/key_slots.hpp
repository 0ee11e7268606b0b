// An open-addressing table of positions into a sequence of string keys that the caller keeps: it
// stores no keys (key_at(i) gives position i's), at most half full, linear probing. What both
// json::read_flat_layers (a document's repeated layer keys) and validate's PrefixIndex (layer prefix
// -> position) hash with: 4 bytes a slot, no allocation per key; keyed (core/key_hash.hpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <utility>
#include <vector>

#include "core/key_hash.hpp"
#include "core/pages.hpp"

namespace w4a8 {

class KeySlots {
 public:
  static constexpr std::uint32_t kEmpty = UINT32_MAX;  // (fewer keys than that: each is bytes of a header)

  // A large table's pages go back to the kernel when it is dropped or outgrown: the metadata read's
  // table is transient (16 MiB for 1.5 M keys), and the CLI's heap keeps freed pages resident.
  KeySlots() = default;
  KeySlots(KeySlots&&) noexcept = default;
  KeySlots& operator=(KeySlots&& o) noexcept {
    release();
    slots_ = std::move(o.slots_);
    return *this;
  }
  KeySlots(const KeySlots&) = default;
  KeySlots& operator=(const KeySlots&) = default;
  ~KeySlots() { release(); }

  bool empty() const { return slots_.empty(); }
  // Whether `count` keys fit while keeping the table at most half full.
  bool fits(std::size_t count) const { return 2 * count <= slots_.size(); }
  // The slot holding key, or the empty slot where it would go. pre: !empty().
  template <class KeyAt>
  std::size_t slot(std::string_view key, const KeyAt& key_at) const {
    const std::size_t mask = slots_.size() - 1;
    std::size_t at = KeyHash{}(key) & mask;  // (keyed: a file cannot aim its keys at one slot)
    while (slots_[at] != kEmpty && std::string_view(key_at(slots_[at])) != key) at = (at + 1) & mask;
    return at;
  }
  std::uint32_t operator[](std::size_t slot) const { return slots_[slot]; }
  // The position of `key` when it is hashed (second: false); else `count`, the next position, is put
  // for it (second: true), the table first growing when it would be over half full (doubling: its
  // size is a power of two). pre: !empty(), positions [0, count) hashed, count < kEmpty.
  template <class KeyAt>
  std::pair<std::uint32_t, bool> try_emplace(std::string_view key, std::uint32_t count, const KeyAt& key_at) {
    std::size_t at = slot(key, key_at);
    if (slots_[at] != kEmpty) return {slots_[at], false};
    if (!fits(std::size_t{count} + 1)) {
      rebuild(count, std::size_t{count} + 1, key_at);
      at = slot(key, key_at);
    }
    slots_[at] = count;
    return {count, true};
  }
  void put(std::size_t slot, std::uint32_t position) { slots_[slot] = position; }
  // Room for `room` keys, with positions [0, count) hashed in again (their keys must be distinct).
  template <class KeyAt>
  void rebuild(std::size_t count, std::size_t room, const KeyAt& key_at) {
    std::size_t size = 16;
    while (size < 2 * room) size *= 2;
    release();
    slots_.assign(size, kEmpty);
    for (std::uint32_t i = 0; i < count; ++i) slots_[slot(key_at(i), key_at)] = i;
  }

 private:
  void release() { release_freed_block(slots_.data(), slots_.size() * sizeof(std::uint32_t)); }

  std::vector<std::uint32_t> slots_;  // positions, kEmpty for none; a power of two in size
};

}  // namespace w4a8
