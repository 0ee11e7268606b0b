// The container mutator's header tree: the token-preserving JSON grammar of gen/raw_json.hpp
// (scalars and strings kept exactly as written, emitted with the same ", " and ": " separators),
// but its nodes live in one pool and view their text instead of owning it: the header they were
// parsed from, a vocabulary, or text an edit made (kept in the tree's arena). Children are linked
// lists of pool indices, so an edit relinks nodes. The mutator parses a header on every mutation;
// with a string per token and a vector per container, that parse cost about a fifth of the
// fuzzer's time. A tree reused across mutations allocates nothing once pool and arena have grown.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace w4a8::fuzz::tree {

enum class Kind : std::uint8_t { Scalar, String, Array, Object };
using Id = std::uint32_t;
inline constexpr Id kNil = ~Id{0};
inline constexpr std::size_t kMaxDepth = 2000;  // as raw::kMaxDepth: deeper documents do not parse

struct Node {
  Kind kind = Kind::Scalar;
  std::string_view text;  // Scalar: the literal as written; String: the bytes between the quotes, raw
  Id first = kNil;        // Array: the first item; Object: the first key (keys and values alternate)
  Id next = kNil;         // the next sibling
};

class Tree {
 public:
  // Forgets every node and made text; keeps the capacity.
  void clear();

  // Parses text into new nodes (text must outlive their use). The rules of raw::parse.
  // @return the root, or kNil where raw::parse gives nullopt.
  Id parse(std::string_view text);

  // A new node without children or sibling. Invalidates references to nodes (not ids).
  Id add(Kind kind, std::string_view text = {});
  // A deep copy of n (its sibling not included).
  Id copy(Id n);
  // s copied into the arena: stable until clear().
  std::string_view keep(std::string_view s);

  Node& operator[](Id i) { return nodes_[i]; }
  const Node& operator[](Id i) const { return nodes_[i]; }

  // Appends n as compact text (the format of raw::emit).
  void emit(Id n, std::string& out) const;

 private:
  struct Chunk {
    std::unique_ptr<char[]> bytes;
    std::size_t cap = 0, used = 0;
  };
  std::vector<Node> nodes_;
  std::vector<Chunk> arena_;
  std::size_t chunk_ = 0;  // the arena chunk being filled
};

}  // namespace w4a8::fuzz::tree
