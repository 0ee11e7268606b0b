// Internal: a header's tensors put in name order, as the crate's HashMap hands them to Python's
// keys() (byte order, which is code point order for UTF-8), a repeated name keeping its last
// occurrence (HashMap::insert replaces the value).
#pragma once

#include <cstddef>
#include <cstdint>
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

}  // namespace w4a8::st::detail
