// json.loads of a _quantization_metadata document in the shape writers give it
// ({"format_version": "1.0", "layers": {"<prefix>": {<marker>}, ...}}), read in one pass without
// building it: each layer comes back as a view of its key and of its marker's text. The general
// parser builds an object per layer (about nine allocations each); here there are none per layer,
// and a caller can parse each distinct marker text once. Anything else returns nullopt and is left
// to the general parser, so every error and every unusual document still comes from one place.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

#include "core/key_slots.hpp"

namespace w4a8::json {

// One layer in 4 bytes (a hostile document of minimal layers, `"k":{}` each, stays near its own
// size): where its key starts, and whether its marker's bytes repeat the layer before's. The rest is
// found again from there: the key ends at the next '"' (the keys read have no escapes), its marker is
// the object after the ':', which the read checked, so scanning it again ends at the same '}'.
class FlatLayer {
 public:
  static constexpr std::uint32_t kRepeats = std::uint32_t{1} << 31;  // (documents under 2 GiB)
  FlatLayer(std::uint32_t key_at, bool repeats) : bits_(key_at | (repeats ? kRepeats : 0)) {}

  std::uint32_t key_at() const { return bits_ & ~kRepeats; }
  // Its marker is spelled exactly as the layer before's.
  bool repeats() const { return (bits_ & kRepeats) != 0; }

  struct Text {
    std::string_view key, marker;
  };
  // Its key, and its value's text, '{' to '}' (an object json.loads accepts). `previous`, when
  // given, must be the marker of the layer before: a repeat is then taken without a scan.
  // pre: text is the document this layer was read from.
  Text read(std::string_view text, std::string_view previous = {}) const;
  std::string_view key(std::string_view text) const;
  std::string_view marker(std::string_view text) const { return read(text).marker; }

 private:
  std::uint32_t bits_;
};

// The layers read, in order, in blocks of kBlock: a block is never moved or copied as the list
// grows. (A vector's growth copies the table and leaves each old block behind; under the CLI's heap,
// where large blocks are not returned to the system, a hostile document of 1.5 M minimal layers kept
// 16 MB of them resident, besides up to twice the room the table needed.)
class FlatLayers {
 public:
  static constexpr std::size_t kBlock = 4096;  // layers a block (16 KiB); the first grows up to it

  std::size_t size() const { return blocks_.empty() ? 0 : (blocks_.size() - 1) * kBlock + blocks_.back().size(); }
  bool empty() const { return blocks_.empty(); }
  // Every block but the last is full.
  const FlatLayer& operator[](std::size_t i) const { return blocks_[i / kBlock][i % kBlock]; }
  const FlatLayer& back() const { return blocks_.back().back(); }
  // The keys came in increasing order (so they are unique, and sorted as the validator's index keeps them).
  bool increasing() const { return increasing_; }
  void set_increasing(bool b) { increasing_ = b; }
  // When they did not: the table the repeat check built, key -> layer position (KeySlots, keyed by
  // the layers' keys), for a caller whose positions are these to keep instead of hashing again.
  KeySlots take_key_slots() { return std::move(key_slots_); }
  void set_key_slots(KeySlots t) { key_slots_ = std::move(t); }
  void push_back(const FlatLayer& l) {
    if (blocks_.empty() || blocks_.back().size() == kBlock) {
      blocks_.emplace_back();
      if (blocks_.size() > 1) blocks_.back().reserve(kBlock);
    }
    blocks_.back().push_back(l);
  }

  // Walks block by block (no division per step).
  class const_iterator {
   public:
    using Block = std::vector<FlatLayer>;
    const_iterator(const Block* b, const Block* last, const FlatLayer* p) : b_(b), last_(last), p_(p) {}
    const FlatLayer& operator*() const { return *p_; }
    const_iterator& operator++() {
      if (++p_ == b_->data() + b_->size() && b_ != last_) p_ = (++b_)->data();
      return *this;
    }
    bool operator==(const const_iterator& o) const { return p_ == o.p_; }

   private:
    const Block* b_;
    const Block* last_;
    const FlatLayer* p_;
  };
  const_iterator begin() const {
    if (blocks_.empty()) return {nullptr, nullptr, nullptr};
    return {blocks_.data(), &blocks_.back(), blocks_.front().data()};
  }
  const_iterator end() const {
    if (blocks_.empty()) return {nullptr, nullptr, nullptr};
    return {&blocks_.back(), &blocks_.back(), blocks_.back().data() + blocks_.back().size()};
  }

 private:
  std::vector<std::vector<FlatLayer>> blocks_;
  bool increasing_ = true;
  KeySlots key_slots_;
};

// Accepts: whitespace, '{', members "key": value separated by ',', '}', whitespace, the end, with
//  - keys spelled without escapes (bytes 0x20 and up, non-ASCII as strict UTF-8: the text is the key),
//    one of them "layers", and "layers" only once;
//  - the value of "layers" an object of any number of members "key": object, keys as above, none
//    repeated;
//  - every marker, and every other root value, any JSON json.loads accepts (strings with escapes and
//    UTF-8, numbers, literals, arrays, objects; flat::Cursor::skip) except NaN/Infinity, a number
//    over kFlatIntDigits characters and nesting over 32 deep: so no int near Python's digit limit and
//    no nesting near its recursion limit, and the only errors upstream could raise are the general
//    parser's (nothing is answered for those documents);
//  - a text shorter than 2 GiB (the offsets are 31-bit).
// post: when it answers, loads_str(text) is an object whose "layers" member is an object with exactly
// these members in this order, each value equal to loads_str(marker) (an object; loads_flat_object's
// too, when it answers for it).
std::optional<FlatLayers> read_flat_layers(std::string_view text);

}  // namespace w4a8::json
