// In-memory checkpoints: a scenario's files as the reader would return them (headers and data
// bytes), built without the writer or the reader, so the fuzz bodies and the layout properties run
// the validator straight on them. check_round_trip holds the model against writer + reader.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/result.hpp"
#include "gen/scenario.hpp"
#include "safetensors/reader.hpp"
#include "validate/inspect.hpp"

namespace w4a8::gen {

// A lowered file as the reader would see it, built without serializing: the header the reader
// would return and bytes laid out so that header.data_start() + offsets address each tensor.
struct InMemoryFile {
  std::string path;
  st::Header header;
  std::vector<std::uint8_t> bytes;
};
// @return one InMemoryFile a file, or nullopt when a file carries a container edit or the writer
//         would refuse it (duplicate names or metadata keys, inconsistent sizes): serialize then.
std::optional<std::vector<InMemoryFile>> in_memory(const Scenario& s);

// in_memory(s) with the views the validator takes, built once for several validator runs (the
// per-layer check runs it up to five times more on one scenario).
class InMemoryCheckpoint {
 public:
  // nullopt where in_memory(s) is.
  static std::optional<InMemoryCheckpoint> of(const Scenario& s);
  std::span<const validate::ParsedFile> files() const { return views_; }
  // The lowered files themselves (headers and bytes).
  const std::vector<InMemoryFile>& model() const { return *owned_; }
  // validate::inspect_parsed; an accepted report keeps the files alive (it points into them).
  Result<validate::Report> inspect(const validate::Options& opt) const;

 private:
  std::shared_ptr<const std::vector<InMemoryFile>> owned_;
  std::vector<validate::ParsedFile> views_;
};

// The validator on s: in memory when possible, else through serialize + parse (run_validator).
Result<validate::Report> run_validator_fast(const Scenario& s);
// post: "" when m, one file of in_memory(s), equals h, what st::parse read from that file's bytes
//       as serialize(lower(s)) wrote them (same tensors, dtypes, shapes, data bytes and metadata);
//       check_round_trip holds each file to it when given the in-memory build.
std::string compare_in_memory_file(const InMemoryFile& m, std::span<const std::uint8_t> bytes, const st::Header& h);

}  // namespace w4a8::gen
