// Differential test against the Python `safetensors` package (the crate's own binding): >= 2000
// seeded files (writer output plus one mutation class each) go through tools/oracle/
// safetensors_verdict.py in one python3 run; our File::open must give the same verdict, the same
// error kind, the same message byte for byte (InvalidHeaderDeserialization's serde_json text is
// counted separately and must match at least kMinSerdeMatch), and for accepted files the same keys,
// dtypes, shapes and metadata. Seed: W4A8_ST_SEED (default fixed), count: W4A8_ST_FILES (default 4000).
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include "json/parse.hpp"
#include "mutator.hpp"
#include "safetensors/header_reference.hpp"
#include "safetensors/reader.hpp"
#include "safetensors/writer.hpp"
#include "support/python.hpp"

namespace w4a8::st {
namespace {

namespace fs = std::filesystem;
using test::Mutation;

// The crate's variant name for each of our container error kinds.
const std::map<ErrorKind, std::string> kCrateName = {
    {ErrorKind::StHeaderTooSmall, "HeaderTooSmall"},
    {ErrorKind::StHeaderTooLarge, "HeaderTooLarge"},
    {ErrorKind::StInvalidHeaderLength, "InvalidHeaderLength"},
    {ErrorKind::StInvalidHeader, "InvalidHeader"},
    {ErrorKind::StInvalidHeaderDeserialization, "InvalidHeaderDeserialization"},
    {ErrorKind::StInvalidOffset, "InvalidOffset"},
    {ErrorKind::StValidationOverflow, "ValidationOverflow"},
    {ErrorKind::StMisalignedSlice, "MisalignedSlice"},
    {ErrorKind::StTensorInvalidInfo, "TensorInvalidInfo"},
    {ErrorKind::StMetadataIncompleteBuffer, "MetadataIncompleteBuffer"},
};

// Share of InvalidHeaderDeserialization messages (serde_json's text + position) that must match.
constexpr double kMinSerdeMatch = 1.0;

std::uint64_t env_u64(const char* name, std::uint64_t dflt) {
  const char* v = std::getenv(name);
  return v && *v ? std::strtoull(v, nullptr, 0) : dflt;
}

// The crate orders tensors with equal data_offsets by a randomly seeded HashMap, so the error
// kind (not the verdict) of such files varies from run to run of Python itself.
bool has_offset_tie(std::span<const std::uint8_t> file) {
  if (file.size() < 8) return false;
  std::uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | file[std::size_t(i)];
  if (n > file.size() - 8) return false;
  auto parsed = json::parse_serde({reinterpret_cast<const char*>(file.data()) + 8, std::size_t(n)});
  if (!parsed.ok()) return false;
  Header h;
  if (!detail::map_header(*parsed, h).ok()) return false;
  std::set<std::pair<std::uint64_t, std::uint64_t>> seen;
  for (const auto& t : h.tensors)
    if (!seen.insert({t.begin, t.end}).second) return true;
  return false;
}

std::string printable(std::span<const std::uint8_t> b, std::size_t max = 300) {
  std::string s;
  for (std::size_t i = 0; i < b.size() && s.size() < max; ++i) {
    const auto c = b[i];
    if (c >= 0x20 && c < 0x7F && c != '\\') {
      s += char(c);
    } else {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      s += buf;
    }
  }
  return s;
}

struct Oracle {
  bool ok = false;
  std::string kind, name, message;
  std::vector<std::string> keys;
  std::vector<std::pair<std::string, std::vector<std::uint64_t>>> info;
  bool has_metadata = false;
  std::map<std::string, std::string> metadata;
};

bool to_oracle(const json::Value& v, Oracle& o) {
  if (!v.is_object()) return false;
  auto str = [&](const char* k) { const json::Value* x = v.get(k); return x && x->is_string() ? x->text : std::string(); };
  const json::Value* ok = v.get("ok");
  if (!ok || ok->kind != json::Kind::Bool) return false;
  o.ok = ok->boolean;
  o.kind = str("kind");
  o.name = str("name");
  o.message = str("message");
  if (const json::Value* keys = v.get("keys"))
    for (const auto& k : keys->items) o.keys.push_back(k.text);
  if (const json::Value* info = v.get("info"))
    for (const auto& i : info->items) {
      if (i.items.size() != 2) return false;
      std::vector<std::uint64_t> shape;
      for (const auto& d : i.items[1].items) shape.push_back(std::strtoull(d.text.c_str(), nullptr, 10));
      o.info.emplace_back(i.items[0].text, shape);
    }
  if (const json::Value* m = v.get("metadata"); m && m->is_object()) {
    o.has_metadata = true;
    for (const auto& [k, val] : m->members) o.metadata[k] = val.text;
  }
  return true;
}

// Runs the oracle once over every path; one verdict per path, in order.
std::vector<Oracle> run_oracle(const fs::path& list, std::size_t expected) {
  const auto run = w4a8::testing::PythonCall::script("tools/oracle/safetensors_verdict.py").stdin_from(list.string()).run();
  EXPECT_TRUE(run.ok()) << "oracle failed (python3 or the safetensors package missing?): " << run.command;
  std::vector<Oracle> out;
  for (const auto& line : run.lines) {
    auto parsed = json::loads_str(line);
    Oracle o;
    EXPECT_TRUE(parsed.ok() && to_oracle(*parsed, o)) << "bad oracle line: " << line;
    out.push_back(std::move(o));
  }
  EXPECT_EQ(out.size(), expected);
  return out;
}

TEST(StDifferential, MatchesPythonSafetensors) {
  const std::uint64_t seed = env_u64("W4A8_ST_SEED", 0x5AFE7E5050);
  const std::size_t count = env_u64("W4A8_ST_FILES", 4000);
  std::string tmpl = (fs::temp_directory_path() / "w4a8_st_diff_XXXXXX").string();
  ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
  const fs::path dir = tmpl;

  test::Mutator mutator(seed);
  std::vector<test::Generated> files;
  std::ofstream list(dir / "list.txt");
  for (std::size_t i = 0; i < count; ++i) {
    const auto mu = Mutation(i % std::size_t(Mutation::kCount));
    files.push_back(mutator.make(mu));
    const fs::path p = dir / ("f" + std::to_string(i) + ".safetensors");
    ASSERT_TRUE(write_file(p.string(), files.back().bytes).ok());
    list << p.string() << "\n";
  }
  list.close();
  const auto oracle = run_oracle(dir / "list.txt", files.size());
  ASSERT_EQ(oracle.size(), files.size());

  std::map<std::string, std::size_t> outcomes;  // crate kind (or "ok") -> count, from Python
  std::size_t disagreements = 0, ambiguous = 0, accepted = 0;
  std::size_t serde_total = 0, serde_same = 0, other_total = 0;  // messages compared
  for (std::size_t i = 0; i < files.size(); ++i) {
    const auto& f = files[i];
    const auto& o = oracle[i];
    const fs::path p = dir / ("f" + std::to_string(i) + ".safetensors");
    auto mine = File::open(p.string());
    auto in_memory = parse(f.bytes);
    ASSERT_EQ(mine.ok(), in_memory.ok());
    if (!mine.ok()) {
      ASSERT_EQ(mine.error(), in_memory.error());
    }
    // parse_prefix on just the first 8 + n bytes agrees with parse on the whole file.
    if (f.bytes.size() >= 8) {
      std::uint64_t n = 0;
      for (int k = 7; k >= 0; --k) n = (n << 8) | f.bytes[std::size_t(k)];
      if (n <= f.bytes.size() - 8) {
        auto pre = parse_prefix(std::span(f.bytes).first(std::size_t(8 + n)), f.bytes.size());
        ASSERT_EQ(pre.ok(), in_memory.ok()) << i;
        if (!pre.ok()) {
          ASSERT_EQ(pre.error(), in_memory.error()) << i;
        }
      }
    }

    outcomes[o.ok ? "ok" : o.kind]++;
    std::string why;
    if (f.mutation == Mutation::None && !o.ok) {
      why = "valid input rejected by Python";
    } else if (mine.ok() != o.ok) {
      why = "verdict";
    } else if (!o.ok) {
      const bool tie = has_offset_tie(f.bytes);
      ambiguous += tie;
      auto it = kCrateName.find(mine.error().kind);
      const std::string my_kind = it == kCrateName.end() ? "?" : it->second;
      if (!tie && my_kind != o.kind) {
        why = "kind";
      } else if (!tie && o.kind == "InvalidHeaderDeserialization") {
        ++serde_total;
        if (mine.error().message == o.message) ++serde_same;
        else if (kMinSerdeMatch >= 1.0) why = "serde message";
      } else if (!tie) {
        ++other_total;
        if (mine.error().message != o.message) why = "message";
      }
    } else {
      ++accepted;
      const Header& h = mine->header();
      std::vector<std::string> keys;
      std::vector<std::pair<std::string, std::vector<std::uint64_t>>> info;
      for (const auto& t : h.tensors) {
        keys.push_back(t.name);
        info.emplace_back(std::string(dtype_name(t.dtype)), t.shape);
      }
      std::map<std::string, std::string> meta(h.metadata.begin(), h.metadata.end());
      if (keys != o.keys) why = "keys";
      else if (info != o.info) why = "dtype/shape";
      else if (h.has_metadata != o.has_metadata || meta != o.metadata) why = "metadata";
    }
    if (!why.empty()) {
      ++disagreements;
      ADD_FAILURE() << "file " << i << " (" << test::mutation_name(f.mutation) << " " << f.note << "): " << why
                    << " differs\n  python: " << (o.ok ? "ok" : o.kind) << " " << o.message
                    << "\n  ours:   " << (mine.ok() ? std::string("ok") : mine.error().message)
                    << "\n  bytes:  " << printable(f.bytes);
      if (disagreements > 25) break;
    }
  }
  std::printf("differential: %zu files, %zu accepted, %zu offset ties (kind not compared), %zu disagreements\n",
              files.size(), accepted, ambiguous, disagreements);
  for (const auto& [k, n] : outcomes) std::printf("  %-30s %zu\n", k.c_str(), n);
  std::printf("messages: other kinds %zu compared (all must match); InvalidHeaderDeserialization %zu/%zu match (%.2f%%)\n",
              other_total, serde_same, serde_total, serde_total ? 100.0 * double(serde_same) / double(serde_total) : 100.0);
  EXPECT_GT(serde_total, 100u);
  EXPECT_GE(double(serde_same), kMinSerdeMatch * double(serde_total));
  // Every verdict the crate can give was reached by the generator (libFuzzer FoundMask style).
  for (const auto& [kind, name] : kCrateName) EXPECT_GT(outcomes[name], 0u) << "never reached: " << name;
  EXPECT_GT(outcomes["ok"], 0u);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace w4a8::st
