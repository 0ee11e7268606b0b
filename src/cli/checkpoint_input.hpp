// A command's checkpoint argument(s) -> the open shard set, with the validator's precedence kept:
// when a shard cannot be parsed, the error reported is the one sglang would raise first (an earlier
// shard's marker error wins over a later shard's container error).
#pragma once

#include <span>
#include <string>
#include <vector>

#include "core/result.hpp"
#include "io/checkpoint.hpp"
#include "validate/inspect.hpp"

namespace w4a8::cli {

class Reporter;

// @return the open checkpoint, or resolve_checkpoint()'s / the validator's / st::File::open's error;
//         `where` then names the shard when the message does not (container errors). The choices the
//         resolution made that the user should hear of (ShardList::notes) go to `notes` as notes.
Result<io::Checkpoint> open_checkpoint(std::span<const std::string> args, const validate::Options& vopt,
                                       std::string* where = nullptr, Reporter* notes = nullptr);

// For io::Checkpoint::open: once the shards declare kHugeHeapFromHeaderBytes of header, later heap
// blocks come from huge pages (heap_pages.hpp).
st::BeforeParse huge_pages_for_large_headers();

// The shards as the validator takes them (parsed once, by Checkpoint::open).
std::vector<validate::ParsedFile> parsed_files(const io::Checkpoint& ck);

}  // namespace w4a8::cli
