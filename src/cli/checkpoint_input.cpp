#include "cli/checkpoint_input.hpp"

#include "cli/report.hpp"

namespace w4a8::cli {

Result<io::Checkpoint> open_checkpoint(std::span<const std::string> args, const validate::Options& vopt) {
  auto list = io::resolve_checkpoint(args);
  if (!list.ok()) return std::move(list).error();
  const std::vector<std::string> shards = list->shards;
  auto ck = io::Checkpoint::open(std::move(*list));
  if (ck.ok() || exit_status(ck.error()) != 1) return ck;
  // A container error: the validator opens shards one by one and may fail earlier, elsewhere.
  validate::Options o = vopt;
  o.strict = false;
  auto upstream_first = validate::inspect_paths(shards, o);
  if (!upstream_first.ok()) return std::move(upstream_first).error();
  return ck;
}

std::vector<validate::ParsedFile> parsed_files(const io::Checkpoint& ck) {
  std::vector<validate::ParsedFile> out;
  out.reserve(ck.files().size());
  for (const st::File& f : ck.files()) out.push_back({f.path(), f.bytes(), &f.header()});
  return out;
}

}  // namespace w4a8::cli
