#include "io/checkpoint.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <optional>

#include <dirent.h>
#include <sys/stat.h>

#include "io/read_file.hpp"
#include "json/parse.hpp"
#include "json/wtf8.hpp"
#include "py/repr.hpp"

namespace w4a8::io {
namespace {

bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

std::string join(const std::string& dir, const std::string& name) {
  if (dir.empty() || dir == ".") return dir.empty() ? name : "./" + name;
  return dir.back() == '/' ? dir + name : dir + "/" + name;
}

std::string dir_of(const std::string& p) {
  const auto slash = p.rfind('/');
  if (slash == std::string::npos) return "";
  return slash == 0 ? "/" : p.substr(0, slash);
}

// The OS reads a path up to its first NUL: a name holding one would open a different, shorter name
// (Python's open() refuses it: "embedded null byte").
bool has_nul(std::string_view name) { return name.find('\0') != std::string_view::npos; }

Error invalid_index(const std::string& index, const std::string& why) {
  return make_error(ErrorKind::IndexInvalid, {index, why});
}

// Why an index's shard name is refused, or nullptr: it must name a file inside the index's
// directory (or below it).
const char* unsafe_shard_name(std::string_view name) {
  if (name.empty()) return "is empty";
  if (name.front() == '/') return "is an absolute path";
  std::string_view last;
  for (std::size_t start = 0; start <= name.size();) {
    const std::size_t end = std::min(name.find('/', start), name.size());
    last = name.substr(start, end - start);
    if (last == "..") return "has a '..' component (it could leave the index's directory)";
    start = end + 1;
  }
  if (last.empty() || last == ".") return "names a directory, not a file";
  // Shard paths reach messages and reports as they are: a name from a downloaded index must not
  // carry terminal escapes or line breaks (C0, DEL, and C1 as UTF-8: U+0080..U+009F).
  for (std::size_t i = 0; i < name.size(); ++i) {
    const auto b = static_cast<unsigned char>(name[i]);
    const bool c1 = b == 0xC2 && i + 1 < name.size() && static_cast<unsigned char>(name[i + 1]) <= 0x9F &&
                    static_cast<unsigned char>(name[i + 1]) >= 0x80;
    if (b < 0x20 || b == 0x7F || c1) return "has a control character";
  }
  return nullptr;
}

// The index's shards (sorted unique names) and weight_map. Its names are untrusted text: messages
// show them through py::repr_str().
Status read_index(const std::string& index, ShardList& out) {
  auto text = read_small_file(index);
  W4A8_TRY(text);
  const json::ParseResult doc = json::loads_str(*text);
  if (!doc.ok()) return invalid_index(index, "not JSON (" + doc.error().detail + ")");
  if (!doc->is_object()) return invalid_index(index, "the top level is not an object");
  const json::Value* map = doc->get("weight_map");
  if (!map || !map->is_object()) return invalid_index(index, "no \"weight_map\" object");
  // No shard, no weights: refused like a directory without a .safetensors file.
  if (map->members.empty()) return invalid_index(index, "weight_map maps no tensor to a shard");
  std::vector<std::string> names;
  names.reserve(map->members.size());
  for (const auto& [tensor, file] : map->members) {
    if (!file.is_string()) return invalid_index(index, "weight_map[" + py::repr_str(tensor) + "] is not a string");
    if (has_nul(file.text))
      return invalid_index(index, "shard name " + py::repr_str(file.text) + " has an embedded null byte");
    if (const char* why = unsafe_shard_name(file.text))
      return invalid_index(index, "shard name " + py::repr_str(file.text) + " " + why);
    std::optional<std::string> bytes = fs_encode(file.text);
    if (!bytes)
      return invalid_index(index, "shard name " + py::repr_str(file.text) +
                                      " holds a lone surrogate that no file name has (Python cannot encode it)");
    names.push_back(std::move(*bytes));
  }
  std::vector<std::string> unique = names;
  std::sort(unique.begin(), unique.end());
  unique.erase(std::unique(unique.begin(), unique.end()), unique.end());
  const std::string dir = dir_of(index);
  const std::size_t base = out.shards.size();
  for (const std::string& u : unique) {
    const std::string path = join(dir, u);
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0)
      return make_error(ErrorKind::IndexMissingShard, {index, path, std::strerror(errno)});
    out.shards.push_back(path);
  }
  out.weight_map.reserve(names.size());
  for (std::size_t i = 0; i < names.size(); ++i) {
    const auto pos = std::lower_bound(unique.begin(), unique.end(), names[i]) - unique.begin();
    out.weight_map.emplace_back(map->members[i].first, base + std::size_t(pos));
  }
  std::sort(out.weight_map.begin(), out.weight_map.end());
  out.index = index;
  return Ok{};
}

// A directory's index, or its shards.
Status read_directory(const std::string& dir, ShardList& out) {
  DIR* d = ::opendir(dir.c_str());
  if (!d) return make_error(ErrorKind::IoOpenFailed, {dir, std::strerror(errno)});
  std::vector<std::string> indexes, shards;
  while (const dirent* e = ::readdir(d)) {
    const std::string name = e->d_name;
    if (name.empty() || name[0] == '.') continue;
    if (ends_with(name, std::string(".safetensors") + std::string(kIndexSuffix))) indexes.push_back(name);
    else if (ends_with(name, ".safetensors")) shards.push_back(name);
  }
  ::closedir(d);
  if (!indexes.empty()) {
    std::sort(indexes.begin(), indexes.end());
    std::string pick = indexes.front();
    if (indexes.size() > 1) {
      if (std::find(indexes.begin(), indexes.end(), kDefaultIndexName) == indexes.end())
        return make_error(ErrorKind::UsageError,
                          {"directory " + dir + " holds " + std::to_string(indexes.size()) + " indexes (" +
                           indexes[0] + ", " + indexes[1] + (indexes.size() > 2 ? ", ..." : "") +
                           "); name one of them"});
      pick = std::string(kDefaultIndexName);
    }
    if (!out.index.empty())
      return make_error(ErrorKind::UsageError, {"more than one index given (" + out.index + ", " + join(dir, pick) + ")"});
    const std::size_t first = out.shards.size();
    W4A8_TRY(read_index(join(dir, pick), out));
    // NAME.safetensors beside NAME.safetensors.index.json, not among its shards: Hugging Face's
    // loaders read that file and ignore the index (a leftover of an earlier save, one way or the other).
    const std::string single = pick.substr(0, pick.size() - kIndexSuffix.size());
    const std::string single_path = join(dir, single);
    if (std::find(shards.begin(), shards.end(), single) != shards.end() &&
        std::find(out.shards.begin() + std::ptrdiff_t(first), out.shards.end(), single_path) == out.shards.end())
      out.notes.push_back("directory " + dir + " holds both " + single + " and " + pick + ", which does not name it: " +
                          "reading the index's shards; Hugging Face's loaders read " + single +
                          " instead (name that file to check it)");
    return Ok{};
  }
  if (shards.empty()) return make_error(ErrorKind::UsageError, {"directory " + dir + " holds no .safetensors file"});
  std::sort(shards.begin(), shards.end());
  for (const std::string& s : shards) out.shards.push_back(join(dir, s));
  return Ok{};
}

}  // namespace

std::optional<std::string> fs_encode(std::string_view wtf8) {
  std::string out;
  out.reserve(wtf8.size());
  for (std::size_t pos = 0; pos < wtf8.size();) {
    const std::size_t at = pos;
    char32_t cp = 0;
    if (!json::decode_wtf8(wtf8, pos, cp, /*allow_surrogates=*/true)) return std::nullopt;  // (loads gives WTF-8 only)
    if (cp >= 0xDC80 && cp <= 0xDCFF) out.push_back(static_cast<char>(cp - 0xDC00));
    else if (cp >= 0xD800 && cp <= 0xDFFF) return std::nullopt;
    else out.append(wtf8.substr(at, pos - at));
  }
  return out;
}

Result<ShardList> resolve_checkpoint(std::span<const std::string> args) {
  if (args.empty()) return make_error(ErrorKind::UsageError, {"no checkpoint given"});
  ShardList out;
  for (const std::string& a : args) {
    // argv cannot hold a NUL, but this span is an API: never let one cut a path short.
    if (has_nul(a))
      return make_error(ErrorKind::UsageError, {"checkpoint path " + py::repr_str(a) + " has an embedded null byte"});
    struct stat st {};
    const bool is_dir = ::stat(a.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
    if (is_dir) {
      W4A8_TRY(read_directory(a, out));
    } else if (ends_with(a, kIndexSuffix)) {
      if (!out.index.empty()) return make_error(ErrorKind::UsageError, {"more than one index given (" + out.index + ", " + a + ")"});
      W4A8_TRY(read_index(a, out));
    } else {
      out.shards.push_back(a);  // opening reports a missing or special file
    }
  }
  return out;
}

Result<Checkpoint> Checkpoint::open(ShardList list, std::string* failed_shard, const st::BeforeParse& before_parse) {
  Checkpoint c;
  c.files_.reserve(list.shards.size());
  for (const std::string& path : list.shards) {
    auto f = st::File::open(path, before_parse);
    if (!f.ok()) {
      if (failed_shard) *failed_shard = path;
      return std::move(f).error();
    }
    c.files_.push_back(std::move(*f));
  }
  c.list_ = std::move(list);
  return c;
}

void Checkpoint::build_index() const {
  if (indexed_) return;
  indexed_ = true;
  std::size_t total = 0;
  for (const st::File& f : files_) total += f.header().tensors.size();
  all_.reserve(total);
  for (const st::File& f : files_)
    for (const st::TensorInfo& t : f.header().tensors) all_.push_back({t.name, Ref{&f, &t}});
  // Stable: for equal names the later file comes last; keep that one.
  std::stable_sort(all_.begin(), all_.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  std::size_t w = 0;
  bool counted = false;  // the name at all_[w - 1] is counted in repeats_ already
  for (std::size_t i = 0; i < all_.size(); ++i) {
    if (w > 0 && all_[w - 1].first == all_[i].first) {  // (another file's: a header holds a name once)
      if (!counted && repeats_.names++ == 0) repeats_.first = all_[i].first;
      counted = true;
      all_[w - 1] = all_[i];
    } else {
      all_[w++] = all_[i];
      counted = false;
    }
  }
  all_.resize(w);
}

Checkpoint::Repeats Checkpoint::repeated() const {
  build_index();
  return repeats_;
}

const std::vector<std::pair<std::string_view, Checkpoint::Ref>>& Checkpoint::tensors() const {
  build_index();
  return all_;
}

std::optional<Checkpoint::Ref> Checkpoint::find(std::string_view name) const {
  for (std::size_t i = files_.size(); i-- > 0;)  // a later file wins
    if (const st::TensorInfo* t = files_[i].header().find(name)) return Ref{&files_[i], t};
  return std::nullopt;
}

Status Checkpoint::check_index(std::span<const std::string> names) const {
  if (list_.index.empty()) return Ok{};
  auto check = [&](const std::string& tensor, std::size_t shard) -> Status {
    if (!files_[shard].header().find(tensor))
      return make_error(ErrorKind::IndexTensorNotInShard, {list_.index, py::repr_str(tensor), list_.shards[shard]});
    return Ok{};
  };
  if (names.empty()) {
    for (const auto& [tensor, shard] : list_.weight_map) W4A8_TRY(check(tensor, shard));
    return Ok{};
  }
  for (const std::string& n : names) {
    auto it = std::lower_bound(list_.weight_map.begin(), list_.weight_map.end(), n,
                               [](const auto& e, const std::string& k) { return e.first < k; });
    if (it != list_.weight_map.end() && it->first == n) W4A8_TRY(check(it->first, it->second));
  }
  return Ok{};
}

std::string Checkpoint::describe() const {
  if (!list_.index.empty()) return list_.index;
  if (list_.shards.size() == 1) return list_.shards.front();
  return std::to_string(list_.shards.size()) + " shards (" + list_.shards.front() + ", ...)";
}

}  // namespace w4a8::io
