// Internal: a header's tensors put in name order, as the crate's HashMap hands them to Python's
// keys() (byte order, which is code point order for UTF-8), a repeated name keeping its last
// occurrence (HashMap::insert replaces the value).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "safetensors/reader.hpp"

namespace w4a8::st::detail {

// post: tensors sorted by name, names unique; of equal names the one latest in the input stays.
// @return true when repeated names were dropped.
// Linear in the bytes that tell names apart: already sorted input costs one pass; a few sorted runs
// (the crate's writer: sorted within each dtype) are merged with their LCP values (names are rarely
// read), after names up to 8 places out of order were moved into their run (a writer that keeps each
// layer's tensors together, in numeric block order); anything else goes through a
// most-significant-digit sort on 8-byte chunks of the names.
// The tensors are moved in place, following the permutation's cycles; from `gather_from` tensors on
// they are gathered into a new table in name order instead (the default: where the cycles' cache
// misses cost more than faulting in a second table; name_order.cpp).
inline constexpr std::size_t kGatherFrom = std::size_t{1} << 16;
bool sort_by_name(std::vector<TensorInfo>& tensors, std::size_t gather_from = kGatherFrom);

// sort_by_name in two steps, so that a reader can do the first while it reads the names: add() takes
// the names in input order and finds the ascending runs as they come (each name against the one
// before it, both still in cache; read afterwards from the table, the names missed the cache on
// nearly every pair: a third of a 20,000-tensor sort); sort() merges them and orders the table.
class NameOrder {
 public:
  // A name being sorted: its bytes (so sorting never reads the tensor table), its input position,
  // and the 8 bytes it is currently sorted on.
  struct Entry {
    std::uint64_t key;  // chunked sort: name bytes [depth, depth + 8), big-endian, zero-padded
    const char* p;
    std::uint32_t n;
    std::uint32_t index;
    std::uint32_t h;  // merge path: bytes shared with the previous entry of its run (LCP)
  };

  void reserve(std::size_t n) { e_.reserve(n); }
  // The next name in input order. pre: its bytes stay as they are until sort(); fewer than 2^32 names.
  void add(std::string_view name);
  std::size_t size() const { return e_.size(); }
  // sort_by_name(tensors). pre: tensors[i].name is the i-th name added (same bytes), for every i.
  // Consumes the names added. lcp (optional): set to the sorted names' LCP array where the sort
  // knows it (Header::name_lcp), else left empty.
  bool sort(std::vector<TensorInfo>& tensors, std::size_t gather_from = kGatherFrom,
            std::vector<std::uint32_t>* lcp = nullptr);

 private:
  std::vector<Entry> e_;
  std::vector<std::size_t> runs_;  // where each ascending run starts (up to kMaxMergedRuns + 1 of them)
  std::uint32_t lcp_ = 0;          // bytes every name added shares at its start
  bool moved_ = false;             // a name was moved back into its run
};

}  // namespace w4a8::st::detail
