// A command's checkpoint argument(s) -> the open shard set, with the validator's precedence kept:
// when a shard cannot be parsed, the error reported is the one sglang would raise first (an earlier
// shard's marker error wins over a later shard's container error).
#pragma once

#include <span>
#include <string_view>
#include <string>
#include <vector>

#include "core/result.hpp"
#include "io/checkpoint.hpp"
#include "py/version.hpp"
#include "validate/inspect.hpp"

namespace w4a8::cli {

class Reporter;

// @return the open checkpoint, or resolve_checkpoint()'s / the validator's / st::File::open's error;
//         `where` then names the shard when the message does not (container errors). The choices the
//         resolution made that the user should hear of (ShardList::notes) go to `notes` as notes.
Result<io::Checkpoint> open_checkpoint(std::span<const std::string> args, const validate::Options& vopt,
                                       std::string* where = nullptr, Reporter* notes = nullptr);

// Whether a failure to open a checkpoint (open_checkpoint's error) is sglang's own verdict: a
// container or marker error is; an index.* error (an index is ours to read) and I/O errors are not.
bool predicted_by_sglang(const Error& e);

// For io::Checkpoint::open: once the shards declare kHugeHeapFromHeaderBytes of header, later heap
// blocks come from huge pages (heap_pages.hpp).
st::BeforeParse huge_pages_for_large_headers();

// The note for tensor names held by more than one of a checkpoint's files (the last file's copy is
// the one read, as sglang reads them): `names` of them, the first in name order, and what the
// command does with the last file's copy and the others ("is checked, ..., and the others are not").
std::string repeated_tensors_note(std::size_t names, std::string_view first, std::string_view what,
                                  py::Version v = py::kDefaultVersion);
// That note for ck, when it has such names (never for one file: a header holds a name once). Given
// before anything is judged, so a rejection carries it too.
void note_repeated_tensors(const io::Checkpoint& ck, std::string_view what, Reporter& report,
                           py::Version v = py::kDefaultVersion);

// The shards as the validator takes them (parsed once, by Checkpoint::open).
std::vector<validate::ParsedFile> parsed_files(const io::Checkpoint& ck);

}  // namespace w4a8::cli
