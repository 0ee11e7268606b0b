// json.loads of a _quantization_metadata document ({"format_version": "1.0", "layers": {"<prefix>":
// {<marker>}, ...}}), read in one pass without building it: each layer comes back as a view of its
// key and of its marker's text. The general parser builds an object per layer (about nine
// allocations each); here there are none per layer, and a caller can parse each distinct marker
// text once. A document json.loads refuses, or that upstream refuses for its shape, is told apart
// with the error json.loads raises, so the general parser is needed only for texts that are not
// UTF-8 (which a header's decoded strings never are).
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/key_slots.hpp"
#include "core/pages.hpp"
#include "json/parse.hpp"

namespace w4a8::json {

// One layer in 4 bytes (a hostile document of minimal layers, `"k":{}` each, stays near its own
// size): where its key starts, and whether its marker's bytes repeat the layer before's. The rest is
// found again from there (FlatLayers::read): the key ends at the next '"' (a key read this way has no
// escapes), its marker is the object after the ':', which the read checked, so scanning it again ends
// at the same '}'. A layer whose key is spelled with escapes, or whose value is a later member's (a
// repeated key), is `indirect`: its position indexes the table's few such layers instead.
class FlatLayer {
 public:
  static constexpr std::uint32_t kRepeats = std::uint32_t{1} << 31;
  static constexpr std::uint32_t kIndirect = std::uint32_t{1} << 30;  // (documents under 1 GiB)
  FlatLayer(std::uint32_t at, bool repeats, bool indirect = false)
      : bits_(at | (repeats ? kRepeats : 0) | (indirect ? kIndirect : 0)) {}

  // Where its key starts in the text, or (indirect) its entry among FlatLayers' indirect layers.
  std::uint32_t at() const { return bits_ & ~(kRepeats | kIndirect); }
  // Its marker is spelled exactly as the layer before's.
  bool repeats() const { return (bits_ & kRepeats) != 0; }
  bool indirect() const { return (bits_ & kIndirect) != 0; }

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

  struct Text {
    std::string_view key, marker;
  };
  // A layer's key (the Python str, as UTF-8/WTF-8 bytes), and its value's text, '{' to '}' (an object
  // json.loads accepts). `previous`, when given, must be the marker of the layer before: a repeat is
  // then taken without a scan. pre: l is one of these layers, text the document they were read from.
  Text read(const FlatLayer& l, std::string_view text, std::string_view previous = {}) const;
  std::string_view key(const FlatLayer& l, std::string_view text) const;
  std::string_view marker(const FlatLayer& l, std::string_view text) const { return read(l, text).marker; }

  // The keys decoded from escapes, which indirect layers' keys view: a caller that keeps those keys
  // longer than this table takes the bytes and says where they are kept (the same bytes, moved).
  // (Exactly as long as they are: grown by doubling, up to half of it would be spare room.)
  std::string take_decoded_keys() {
    decoded_.shrink_to_fit();
    return std::move(decoded_);
  }
  void decoded_keys_moved_to(std::string_view kept) { kept_ = kept; }
  bool has_decoded_keys() const { return !decoded_.empty() || !kept_.empty(); }

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
  // An indirect layer: its key is the plain key starting at key_at in the text, or (decoded) the one
  // add_decoded_key returned key_at for; its marker starts at marker_at in the text. @return the
  // FlatLayer to push_back.
  FlatLayer indirect(std::uint32_t key_at, bool decoded, std::uint32_t marker_at) {
    indirect_.push_back({key_at | (decoded ? kDecoded : 0), marker_at});
    return FlatLayer(static_cast<std::uint32_t>(indirect_.size() - 1), false, true);
  }
  // Layer j's marker is now the one at marker_at in the text (a later layer's, of the same key): j
  // becomes indirect (keeping its key) if it was not. pre: j < size().
  void take_marker(std::size_t j, std::uint32_t marker_at);
  // Layer i is to go (remove_dropped removes it). pre: i < size().
  void drop(std::size_t i) { layer(i) = FlatLayer(kDroppedAt, false, true); }
  // Removes the dropped layers, keeping the others' order; a repeat bit that may no longer hold (the
  // layer before it went, or took another marker) is cleared.
  void remove_dropped();
  // Appends a key decoded from escapes: its length (LEB128: one byte under 128), then its bytes.
  // @return where it starts among the decoded keys.
  std::uint32_t add_decoded_key(std::string_view k) {
    const auto at = static_cast<std::uint32_t>(decoded_.size());
    std::size_t n = k.size();
    for (; n >= 0x80; n >>= 7) decoded_.push_back(static_cast<char>(0x80 | (n & 0x7F)));
    decoded_.push_back(static_cast<char>(n));
    decoded_.append(k);
    return at;
  }

  // Hands back the pages of the blocks wholly before layer i (read no more of them): a caller that
  // walks the layers once, recording each, keeps the read's table and its own records resident at
  // once otherwise (6 MB of 54 for 1.5 M minimal layers).
  void release_before(std::size_t i) {
    for (std::size_t b = i / kBlock; released_ < b; ++released_)
      release_pages(blocks_[released_].data(), blocks_[released_].size() * sizeof(FlatLayer));
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
  static constexpr std::uint32_t kDecoded = std::uint32_t{1} << 31;  // Indirect::key_at is among the decoded keys
  static constexpr std::uint32_t kDroppedAt = FlatLayer::kIndirect - 1;  // an indirect layer's at(): dropped
  FlatLayer& layer(std::size_t i) { return blocks_[i / kBlock][i % kBlock]; }
  struct Indirect {  // 8 bytes: a hostile document may spell every key with escapes
    std::uint32_t key_at, marker_at;
  };
  std::string_view decoded() const { return kept_.data() != nullptr ? kept_ : std::string_view(decoded_); }

  std::vector<std::vector<FlatLayer>> blocks_;
  std::deque<Indirect> indirect_;  // (a deque: growing never copies it)
  std::string decoded_;            // keys decoded from escapes, back to back
  std::string_view kept_;          // where they went (decoded_keys_moved_to)
  std::size_t released_ = 0;  // blocks [0, released_) handed back (release_before)
  bool increasing_ = true;
  KeySlots key_slots_;
};

// What json.loads, then upstream's first look at the result, make of a _quantization_metadata text.
enum class MetadataShape {
  Layers,     // an object whose "layers" is an object: `layers` holds its members
  NotObject,  // valid JSON, not an object
  NoLayers,   // an object without "layers", or whose "layers" is not an object
  Invalid,    // json.loads raises: `error` says how (Syntax, IntTooLong, TooDeep), first in the text
  Declined,   // not read here: the text is not UTF-8 (or a WTF-8 surrogate), or over 1 GiB
};

struct FlatRead {
  MetadataShape shape = MetadataShape::Declined;
  // Layers: the members of "layers" as json.loads leaves them. Every marker is a value json.loads
  // accepts; one that is not an object is upstream's error when its turn comes.
  FlatLayers layers;
  ParseError error;  // Invalid: failure (Syntax, IntTooLong with digits, TooDeep with in_array), offset
};

// The text in one pass, without building it. As json.loads: a repeated key keeps its first position
// and takes its last value (a repeated "layers": the last one; a repeated layer key: its first
// place, its last marker, read indirectly); keys spelled with escapes are decoded (layer keys into
// the table's decoded keys); other root members are only checked (upstream reads "layers" alone).
// post (checked against loads_str in tests and the marker_json fuzz target):
//  - Layers: loads_str(text) is an object whose "layers" is an object with exactly these members in
//    this order; each value equals loads_str(marker) (loads_bytes' too: the text is UTF-8);
//  - NotObject, NoLayers: loads_str(text) is valid JSON of that shape;
//  - Invalid: loads_str(text) fails the same way (failure, digits, in_array);
//  - Declined: only for the texts named there.
// opt: as for loads_str (the nesting limit of the interpreter modelled); the same post holds for
// loads_str(text, opt).
FlatRead read_flat_layers(std::string_view text, const LoadsOptions& opt = {});

}  // namespace w4a8::json
