// Checkpoints as shard sets: files, directories, Hugging Face indexes, and every index defect with
// its message; FIFOs and devices refused without blocking.
#include <gtest/gtest.h>

#include <chrono>

#include <sys/stat.h>

#include "io/checkpoint.hpp"
#include "io/read_file.hpp"
#include "io_test_util.hpp"
#include "safetensors/writer.hpp"

namespace w4a8::io {
namespace {

using test::spit;
using test::TempDir;

void shard(const std::string& path, const std::vector<std::string>& names, std::uint8_t fill = 1) {
  std::vector<st::TensorSpec> t;
  t.reserve(names.size());
  for (const auto& n : names) t.push_back({n, st::Dtype::U8, {2}, {fill, fill}});
  auto b = st::serialize(t);
  ASSERT_TRUE(b.ok());
  spit(path, std::string(b->begin(), b->end()));
}

Result<ShardList> resolve(std::vector<std::string> args) { return resolve_checkpoint(args); }

TEST(Checkpoint, FilesAreTakenAsGivenInOrder) {
  TempDir d("files");
  shard(d / "b.safetensors", {"x"});
  shard(d / "a.safetensors", {"y"});
  auto l = resolve({d / "b.safetensors", d / "a.safetensors"});
  ASSERT_TRUE(l.ok());
  EXPECT_EQ(l->shards, (std::vector<std::string>{d / "b.safetensors", d / "a.safetensors"}));
  EXPECT_TRUE(l->index.empty());
}

// A name held by several files is read from the last (find, tensors) and counted once, however many
// hold it; the first such name in name order is given (hand-derived: b in three files, c in two).
TEST(Checkpoint, NamesHeldBySeveralFilesAreCountedOnceAndReadFromTheLast) {
  TempDir d("repeats");
  shard(d / "1.safetensors", {"a", "b", "c"}, 1);
  shard(d / "2.safetensors", {"b", "d"}, 2);
  shard(d / "3.safetensors", {"b", "c"}, 3);
  auto ck = Checkpoint::open(*resolve({d / "1.safetensors", d / "2.safetensors", d / "3.safetensors"}));
  ASSERT_TRUE(ck.ok());
  const auto rep = ck->repeated();
  EXPECT_EQ(rep.names, 2u);
  EXPECT_EQ(rep.first, "b");
  ASSERT_EQ(ck->tensors().size(), 4u);
  for (const auto& [name, ref] : ck->tensors())
    EXPECT_EQ(ref.file, ck->find(name)->file) << name;
  EXPECT_EQ(ck->find("b")->file, &ck->files()[2]);
  EXPECT_EQ(ck->find("d")->file, &ck->files()[1]);
  auto single = Checkpoint::open(*resolve({d / "2.safetensors"}));
  ASSERT_TRUE(single.ok());
  EXPECT_EQ(single->repeated().names, 0u);
}

// An index's shard names are opened as Python opens them (os.fsencode of json.load's str): \udcXX,
// how Python holds a file name's byte that is not UTF-8, is that byte (it opened the three bytes of
// the escape's WTF-8, ED B3 BF, and reported the shard missing; found by a new user's pass,
// 2026-12-07); another lone surrogate is no file name; other characters are their UTF-8.
TEST(Checkpoint, IndexShardNamesAreOpenedAsPythonEncodesThem) {
  TempDir d("fsencode");
  shard(d / "\xff.safetensors", {"a"});
  shard(d / "\xc3\xa9.safetensors", {"b"});
  spit(d / "model.safetensors.index.json", R"({"weight_map": {"a": "\udcff.safetensors", "b": "\u00e9.safetensors"}})");
  auto l = resolve({d / "model.safetensors.index.json"});
  ASSERT_TRUE(l.ok()) << l.error().message;
  EXPECT_EQ(l->shards, (std::vector<std::string>{d / "\xc3\xa9.safetensors", d / "\xff.safetensors"}));
  spit(d / "bad.safetensors.index.json", R"({"weight_map": {"a": "\ud800.safetensors"}})");
  auto bad = resolve({d / "bad.safetensors.index.json"});
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().kind, ErrorKind::IndexInvalid);
  EXPECT_NE(bad.error().message.find("shard name '\\ud800.safetensors' holds a lone surrogate that no file name has"),
            std::string::npos)
      << bad.error().message;
}

TEST(Checkpoint, DirectoryWithoutIndexIsItsShardsSorted) {
  TempDir d("dir");
  shard(d / "m2.safetensors", {"x"});
  shard(d / "m1.safetensors", {"y"});
  shard(d / ".hidden.safetensors", {"z"});
  spit(d / "notes.txt", "ignored");
  auto l = resolve({d.path.string()});
  ASSERT_TRUE(l.ok());
  EXPECT_EQ(l->shards, (std::vector<std::string>{d / "m1.safetensors", d / "m2.safetensors"}));
  TempDir empty("empty");
  auto e = resolve({empty.path.string()});
  ASSERT_FALSE(e.ok());
  EXPECT_EQ(e.error().kind, ErrorKind::UsageError);
}

TEST(Checkpoint, IndexNamesShardsSortedAndMapsTensors) {
  TempDir d("index");
  shard(d / "model-00002-of-00002.safetensors", {"b.weight", "c.weight"});
  shard(d / "model-00001-of-00002.safetensors", {"a.weight"});
  shard(d / "stray.safetensors", {"zzz"});  // not in the index: not part of the checkpoint
  spit(d / "model.safetensors.index.json",
       R"({"metadata": {"total_size": 6}, "weight_map": {"c.weight": "model-00002-of-00002.safetensors",
           "a.weight": "model-00001-of-00002.safetensors", "b.weight": "model-00002-of-00002.safetensors"}})");
  for (const std::string& arg : {d.path.string(), d / "model.safetensors.index.json"}) {
    auto l = resolve({arg});
    ASSERT_TRUE(l.ok()) << l.error().message;
    EXPECT_EQ(l->index, d / "model.safetensors.index.json");
    EXPECT_EQ(l->shards, (std::vector<std::string>{d / "model-00001-of-00002.safetensors", d / "model-00002-of-00002.safetensors"}));
    ASSERT_EQ(l->weight_map.size(), 3u);
    EXPECT_EQ(l->weight_map[0], (std::pair<std::string, std::size_t>{"a.weight", 0}));
    EXPECT_EQ(l->weight_map[2], (std::pair<std::string, std::size_t>{"c.weight", 1}));
    auto ck = Checkpoint::open(*l);
    ASSERT_TRUE(ck.ok());
    EXPECT_TRUE(ck->check_index().ok());
    EXPECT_EQ(ck->tensors().size(), 3u);
    EXPECT_EQ(ck->find("b.weight")->file->path(), d / "model-00002-of-00002.safetensors");
    EXPECT_FALSE(ck->find("zzz").has_value());
  }
}

TEST(Checkpoint, IndexDefectsHaveClearErrors) {
  TempDir d("bad_index");
  const std::string idx = d / "model.safetensors.index.json";
  shard(d / "s1.safetensors", {"a"});
  auto expect = [&](const std::string& text, ErrorKind kind, const std::string& message) {
    spit(idx, text);
    auto l = resolve({idx});
    ASSERT_FALSE(l.ok()) << text;
    EXPECT_EQ(l.error().kind, kind) << text;
    EXPECT_EQ(l.error().message, message) << text;
  };
  spit(idx, "{not json");
  EXPECT_NE(resolve({idx}).error().message.find(idx + " is not a valid safetensors index: not JSON"), std::string::npos);
  expect("[]", ErrorKind::IndexInvalid, idx + " is not a valid safetensors index: the top level is not an object");
  expect(R"({"metadata": {}})", ErrorKind::IndexInvalid, idx + " is not a valid safetensors index: no \"weight_map\" object");
  expect(R"({"weight_map": {"a": 3}})", ErrorKind::IndexInvalid, idx + " is not a valid safetensors index: weight_map['a'] is not a string");
  // Shard names must name a file in the index's directory or below; each refusal says why (all were
  // "leaves the index's directory", and "." an I/O error reading a directory).
  const std::string bad = idx + " is not a valid safetensors index: shard name ";
  expect(R"({"weight_map": {"a": "../s1.safetensors"}})", ErrorKind::IndexInvalid,
         bad + "'../s1.safetensors' has a '..' component (it could leave the index's directory)");
  expect(R"({"weight_map": {"a": "sub/../s1.safetensors"}})", ErrorKind::IndexInvalid,
         bad + "'sub/../s1.safetensors' has a '..' component (it could leave the index's directory)");
  expect(R"({"weight_map": {"a": "/etc/passwd"}})", ErrorKind::IndexInvalid, bad + "'/etc/passwd' is an absolute path");
  expect(R"({"weight_map": {"a": ""}})", ErrorKind::IndexInvalid, bad + "'' is empty");
  // A name that would put terminal escapes or line breaks into every later message (it was echoed raw).
  expect(R"({"weight_map": {"a": "x\u001b[31m.safetensors"}})", ErrorKind::IndexInvalid,
         bad + "'x\\x1b[31m.safetensors' has a control character");
  expect(R"({"weight_map": {"a": "x\n.safetensors"}})", ErrorKind::IndexInvalid,
         bad + "'x\\n.safetensors' has a control character");
  expect(R"({"weight_map": {"a": "x\u009b31m.safetensors"}})", ErrorKind::IndexInvalid,
         bad + "'x\\x9b31m.safetensors' has a control character");
  expect(R"({"weight_map": {"a": "caf\u00e9.safetensors"}})", ErrorKind::IndexMissingShard,
         idx + " maps tensors to " + (d / "caf\u00e9.safetensors") + ", which cannot be opened: No such file or directory");
  for (const std::string dir : {".", "sub/", "sub/."})
    expect(R"({"weight_map": {"a": ")" + dir + R"("}})", ErrorKind::IndexInvalid,
           bad + "'" + dir + "' names a directory, not a file");  // NOLINT(performance-inefficient-string-concatenation)
  // No tensor, so no shard: no weights, as in a directory without a .safetensors file.
  expect(R"({"weight_map": {}})", ErrorKind::IndexInvalid,
         idx + " is not a valid safetensors index: weight_map maps no tensor to a shard");
  expect(R"({"weight_map": {"a": "s1.safetensors", "b": "gone.safetensors"}})", ErrorKind::IndexMissingShard,
         idx + " maps tensors to " + (d / "gone.safetensors") + ", which cannot be opened: No such file or directory");
  // Tensor mapped to a shard that lacks it: found once the shards are open.
  spit(idx, R"({"weight_map": {"a": "s1.safetensors", "ghost": "s1.safetensors"}})");
  auto l = resolve({idx});
  ASSERT_TRUE(l.ok());
  auto ck = Checkpoint::open(*l);
  ASSERT_TRUE(ck.ok());
  const Status s = ck->check_index();
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().kind, ErrorKind::IndexTensorNotInShard);
  EXPECT_EQ(s.error().message, idx + " maps tensor 'ghost' to " + (d / "s1.safetensors") + ", which does not hold it");
  EXPECT_TRUE(ck->check_index(std::vector<std::string>{"a"}).ok());  // only the tensors asked about
  EXPECT_FALSE(ck->check_index(std::vector<std::string>{"ghost"}).ok());
}

TEST(Checkpoint, AnEmptyIndexIsRefusedHoweverItIsNamed) {
  TempDir d("empty_index");
  shard(d / "s1.safetensors", {"a"});  // beside the index, given or not: the index alone is refused
  const std::string idx = d / "model.safetensors.index.json";
  spit(idx, R"({"metadata": {"total_size": 0}, "weight_map": {}})");
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{d.path.string()}, {idx}, {idx, d / "s1.safetensors"}}) {
    auto l = resolve(args);
    ASSERT_FALSE(l.ok()) << args.size();
    EXPECT_EQ(l.error().kind, ErrorKind::IndexInvalid);
    EXPECT_EQ(l.error().message, idx + " is not a valid safetensors index: weight_map maps no tensor to a shard");
  }
}

TEST(Checkpoint, ANulByteNeverCutsAPathShort) {
  TempDir d("nul");
  shard(d / "a.safetensors", {"x"});  // what the name would open, cut at its NUL
  const std::string idx = d / "model.safetensors.index.json";
  // The message shows the name as Python's repr() does: the NUL escaped, never a raw
  // byte; checked before the "leaves the directory" rule, which the text after the NUL may also break.
  const std::string prefix = idx + " is not a valid safetensors index: shard name ";
  for (const auto& [name, shown] : std::vector<std::pair<std::string, std::string>>{
           {R"(a.safetensors\u0000.bak)", R"('a.safetensors\x00.bak')"},
           {R"(a.safetensors\u0000/../x)", R"('a.safetensors\x00/../x')"},
           {R"(\u0000)", R"('\x00')"},
           // Python's repr(): printable non-ASCII as itself, U+2028 (a line separator) escaped.
           {R"(\u00e9\u2028\ud83d\ude00'\u0000)", "\"\u00e9\\u2028\U0001f600'\\x00\""}}) {
    spit(idx, R"({"weight_map": {"x": ")" + name + R"("}})");
    for (const std::string& arg : {d.path.string(), idx}) {
      auto l = resolve({arg});
      ASSERT_FALSE(l.ok()) << name;
      EXPECT_EQ(l.error().kind, ErrorKind::IndexInvalid) << name;
      EXPECT_EQ(l.error().message, prefix + shown + " has an embedded null byte");
      EXPECT_EQ(l.error().message.find('\0'), std::string::npos);
    }
  }
  // Tensor names are shown the same way, in both messages that show one.
  spit(idx, R"({"weight_map": {"x\u0000y\n": 1}})");
  EXPECT_EQ(resolve({idx}).error().message, idx + R"( is not a valid safetensors index: weight_map['x\x00y\n'] is not a string)");
  spit(idx, R"({"weight_map": {"x": "a.safetensors", "it's\u0000": "a.safetensors"}})");
  auto l = resolve({idx});
  ASSERT_TRUE(l.ok()) << l.error().message;
  auto ck = Checkpoint::open(*l);
  ASSERT_TRUE(ck.ok());
  EXPECT_EQ(ck->check_index().error().message,
            idx + R"( maps tensor "it's\x00" to )" + (d / "a.safetensors") + ", which does not hold it");
  // A path argument holding a NUL (argv cannot, the API can) is refused, not cut short.
  const std::string cut = d / "a.safetensors";
  auto a = resolve({cut + std::string(1, '\0') + ".bak"});
  ASSERT_FALSE(a.ok());
  EXPECT_EQ(a.error().kind, ErrorKind::UsageError);
  EXPECT_EQ(a.error().message, "checkpoint path '" + cut + R"(\x00.bak' has an embedded null byte)");
  // A byte that is not UTF-8 stays as given (as in every message naming a path); the NUL is escaped.
  EXPECT_EQ(resolve({cut + "\xff" + std::string(1, '\0')}).error().message,
            "checkpoint path '" + cut + "\xff" + R"(\x00' has an embedded null byte)");
}

TEST(Checkpoint, LaterShardWinsForADuplicateTensor) {
  TempDir d("dup");
  shard(d / "1.safetensors", {"a", "b"}, 1);
  shard(d / "2.safetensors", {"b"}, 2);
  auto l = resolve({d / "1.safetensors", d / "2.safetensors"});
  ASSERT_TRUE(l.ok());
  auto ck = Checkpoint::open(*l);
  ASSERT_TRUE(ck.ok());
  ASSERT_EQ(ck->tensors().size(), 2u);
  EXPECT_EQ(ck->tensors()[1].second.file->path(), d / "2.safetensors");
  EXPECT_EQ(ck->find("b")->file->path(), d / "2.safetensors");
  EXPECT_EQ(ck->find("a")->file->path(), d / "1.safetensors");
}

TEST(Checkpoint, FifosAndDevicesAreRefusedWithoutBlocking) {
  TempDir d("fifo");
  const std::string fifo = d / "pipe.safetensors";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const auto t0 = std::chrono::steady_clock::now();
  for (const std::string& p : {fifo, std::string("/dev/zero")}) {
    auto l = resolve({p});
    ASSERT_TRUE(l.ok());
    std::string failed;
    auto ck = Checkpoint::open(*l, &failed);
    ASSERT_FALSE(ck.ok());
    EXPECT_EQ(ck.error().kind, ErrorKind::IoNotRegularFile);
    EXPECT_EQ(failed, p);
    EXPECT_NE(ck.error().message.find(p), std::string::npos);
    auto r = read_small_file(p);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().kind, ErrorKind::IoNotRegularFile);
  }
  EXPECT_EQ(resolve({fifo}).value().shards.size(), 1u);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(1));
  spit(d / "x.index.json", "{}");
  ::unlink(fifo.c_str());
  ASSERT_EQ(::mkfifo((d / "y.index.json").c_str(), 0600), 0);
  auto idx = resolve({d / "y.index.json"});
  ASSERT_FALSE(idx.ok());
  EXPECT_EQ(idx.error().message, "cannot read " + (d / "y.index.json") + ": it is a FIFO, not a regular file");
}

}  // namespace
}  // namespace w4a8::io
