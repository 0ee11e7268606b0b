// A checkpoint is a set of shards however the user names it: safetensors files, a directory, or a
// Hugging Face `model.safetensors.index.json` (its `weight_map` says which shard holds each tensor).
// Each shard is opened once (mmap, header parsed); the index is checked against the shards.
#pragma once

#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/result.hpp"
#include "safetensors/reader.hpp"

namespace w4a8::io {

inline constexpr std::string_view kIndexSuffix = ".index.json";
inline constexpr std::string_view kDefaultIndexName = "model.safetensors.index.json";

struct ShardList {
  std::vector<std::string> shards;  // paths in load order: as given, or the index's directory + file name
  std::string index;                // the index file, when one named the shards
  // The index's weight_map: tensor name -> position in `shards`, sorted by name.
  std::vector<std::pair<std::string, std::size_t>> weight_map;
  // What the caller should tell the user about the choice made (a directory holding both
  // NAME.safetensors and NAME.safetensors.index.json that does not name it).
  std::vector<std::string> notes;
};

// Expands command-line arguments into shards, in order:
//  - FILE.safetensors (any other file): itself;
//  - NAME.index.json: the shards its weight_map names, sorted (the order Hugging Face loads them);
//  - DIRECTORY: its one *.index.json (model.safetensors.index.json when there are several), else its
//    *.safetensors files sorted by name (hidden files skipped).
// At most one index in all.
// No path in the result holds a NUL byte (the OS would read it cut short there).
// @return ShardList, or IoOpenFailed / IoNotRegularFile / IoReadFailed (unreadable argument or index),
//         IndexInvalid (not JSON, no weight_map object, an empty weight_map, a non-string or unsafe
//         shard name, one with a NUL byte), IndexMissingShard (a shard the index names does not
//         exist), UsageError (empty directory, two indexes, no arguments, an argument with a NUL).
Result<ShardList> resolve_checkpoint(std::span<const std::string> args);

// The bytes Python opens for a file name from a JSON document (os.fsencode of the str json.load gave
// it): U+DC80..U+DCFF, how Python holds a file name's byte that is not UTF-8, is that byte again;
// any other lone surrogate cannot be encoded (nullopt: Python raises UnicodeEncodeError). Otherwise
// the name's UTF-8 as it is. (An index's shard names; json::dump_os_string is its inverse.)
std::optional<std::string> fs_encode(std::string_view wtf8);

class Checkpoint {
 public:
  struct Ref {
    const st::File* file = nullptr;
    const st::TensorInfo* info = nullptr;
  };

  // Opens every shard (mmap + header), in order; before_parse as in st::File::open, for each shard.
  // @return Checkpoint, or the first shard's st::File::open error (IoOpenFailed, IoNotRegularFile,
  //         IoReadFailed, container errors); `failed_shard` then names it.
  static Result<Checkpoint> open(ShardList list, std::string* failed_shard = nullptr,
                                 const st::BeforeParse& before_parse = {});

  const ShardList& shards() const { return list_; }
  std::span<const st::File> files() const { return files_; }
  // Where a tensor is read from: the last shard holding it (a later file wins, as in the validator).
  std::optional<Ref> find(std::string_view name) const;
  // Every tensor once (the copy `find` returns), sorted by name; built on the first call (one thread).
  const std::vector<std::pair<std::string_view, Ref>>& tensors() const;
  // Names held by more than one of the files (find and tensors give the last file's; a sharded
  // checkpoint holds each tensor once), and the first of them in name order. Built with tensors().
  struct Repeats {
    std::size_t names = 0;
    std::string_view first;
  };
  Repeats repeated() const;
  // The index agrees with the shards for these tensors (every mapped tensor when `names` is empty):
  // each is held by the shard the index names. Ok when no index was used.
  // @return Ok or IndexTensorNotInShard.
  Status check_index(std::span<const std::string> names = {}) const;
  // A short description for messages: the index, the one file, or "N shards (first, ...)".
  std::string describe() const;

 private:
  ShardList list_;
  std::vector<st::File> files_;
  void build_index() const;
  mutable bool indexed_ = false;
  mutable std::vector<std::pair<std::string_view, Ref>> all_;
  mutable Repeats repeats_;
};

}  // namespace w4a8::io
