// Internal: a header's tensors put in name order, as the crate's HashMap hands them to Python's
// keys() (byte order, which is code point order for UTF-8), a repeated name keeping its last
// occurrence (HashMap::insert replaces the value).
#pragma once

#include <cstdint>
#include <vector>

#include "safetensors/reader.hpp"

namespace w4a8::st::detail {

// post: tensors sorted by name, names unique; of equal names the one latest in the input stays.
// @return true when repeated names were dropped.
// Linear in the bytes that tell names apart: already sorted input costs one pass; a few sorted runs
// (the crate's writer: sorted within each dtype) are merged; anything else goes through a
// most-significant-digit sort on 8-byte chunks of the names.
// table_budget: the bytes a second tensor table may take (the tensors are then gathered into it in
// name order, one sequential pass; else they are moved in place, cycle by cycle).
bool sort_by_name(std::vector<TensorInfo>& tensors, std::size_t table_budget = SIZE_MAX);

}  // namespace w4a8::st::detail
