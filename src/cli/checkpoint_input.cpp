#include "cli/checkpoint_input.hpp"

#include <algorithm>

#include "cli/heap_pages.hpp"
#include "cli/report.hpp"
#include "py/repr.hpp"

namespace w4a8::cli {

st::BeforeParse huge_pages_for_large_headers() {
  // The header bytes declared so far (File::open caps each at its file's size), each capped again at
  // the threshold: only reaching it matters.
  return [header_bytes = std::uint64_t{0}](std::uint64_t n) mutable {
    header_bytes += std::min(n, kHugeHeapFromHeaderBytes);
    if (header_bytes >= kHugeHeapFromHeaderBytes) allocate_from_huge_pages();
  };
}

Result<io::Checkpoint> open_checkpoint(std::span<const std::string> args, const validate::Options& vopt,
                                       std::string* where, Reporter* notes) {
  auto list = io::resolve_checkpoint(args);
  if (!list.ok()) return std::move(list).error();
  if (notes)
    for (const std::string& n : list->notes) notes->note(n);
  const std::vector<std::string> shards = list->shards;
  std::string failed;
  auto ck = io::Checkpoint::open(std::move(*list), &failed, huge_pages_for_large_headers());
  if (ck.ok()) return ck;
  Error e = ck.error();
  if (exit_status(e) == 1 || (!shards.empty() && failed != shards.front())) {
    // A container error, or a later shard that cannot be opened or read: upstream opens the shards
    // one by one and checks each before the next, so it may fail earlier, elsewhere.
    validate::Options o = vopt;
    o.strict = false;
    auto upstream_first = validate::inspect_paths(shards, o);
    if (!upstream_first.ok()) e = upstream_first.error();
  }
  // The first failing shard is the same in both orders; a marker error names its own file.
  if (where && e.message.find(failed) == std::string::npos && e.kind == ck.error().kind) *where = failed;
  return e;
}

bool predicted_by_sglang(const Error& e) {
  return exit_status(e) == 1 && !error_info(e.kind).code.starts_with("index.");
}

std::string repeated_tensors_note(std::size_t names, std::string_view first, std::string_view what, py::Version v) {
  return std::to_string(names) + " tensor name(s) are held by more than one of the files (the first: " +
         py::repr_str(first, v) + "); the last file's tensor " + std::string(what) + ": a sharded checkpoint holds each tensor once";
}

void note_repeated_tensors(const io::Checkpoint& ck, std::string_view what, Reporter& report, py::Version v) {
  if (ck.files().size() < 2) return;
  if (const auto rep = ck.repeated(); rep.names > 0) report.note(repeated_tensors_note(rep.names, rep.first, what, v));
}

std::vector<validate::ParsedFile> parsed_files(const io::Checkpoint& ck) {
  std::vector<validate::ParsedFile> out;
  out.reserve(ck.files().size());
  for (const st::File& f : ck.files()) out.push_back({f.path(), f.bytes(), &f.header(), true});
  return out;
}

}  // namespace w4a8::cli
