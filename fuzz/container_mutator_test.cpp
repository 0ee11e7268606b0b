// The container mutator keeps files structurally meaningful (its reason to exist) and stays within
// its contract; the respelling rules of raw_json.hpp on hand-derived cases.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>

#include "fuzz/container_mutator.hpp"
#include "fuzz/container_mutator_tree.hpp"
#include "gen/raw_json.hpp"
#include "safetensors/reader.hpp"

namespace {

using namespace w4a8;

std::mt19937 g_rng(7);

// Stands in for LLVMFuzzerMutate: flips, inserts or erases one byte.
std::size_t stub_raw(std::uint8_t* d, std::size_t n, std::size_t max) {
  switch (g_rng() % 3) {
    case 0: if (n) d[g_rng() % n] ^= static_cast<std::uint8_t>(1u << (g_rng() % 8)); return n;
    case 1: if (n < max) { const std::size_t at = g_rng() % (n + 1); std::memmove(d + at + 1, d + at, n - at); d[at] = 'x'; return n + 1; } return n;
    default: if (n) { const std::size_t at = g_rng() % n; std::memmove(d + at, d + at + 1, n - at - 1); return n - 1; } return n;
  }
}

std::vector<std::vector<std::uint8_t>> seeds() {
  std::vector<std::vector<std::uint8_t>> out;
  for (const auto& e : std::filesystem::directory_iterator(std::string(W4A8_SOURCE_ROOT) + "/corpus/container")) {
    std::ifstream in(e.path(), std::ios::binary);
    out.emplace_back(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  return out;
}

TEST(ContainerMutator, LengthChangingEditsStayParseable) {
  constexpr std::size_t kMax = 8192;
  std::size_t runs = 0, parsed_before = 0, parsed_after = 0, resized_header_parsed = 0;
  for (const auto& s : seeds()) {
    if (!st::parse(s).ok()) continue;
    ++parsed_before;
    for (unsigned seed = 0; seed < 200; ++seed) {
      std::vector<std::uint8_t> buf(s);
      buf.resize(kMax);
      const std::size_t n = fuzz::mutate_container(buf.data(), s.size(), kMax, seed, stub_raw);
      ASSERT_LE(n, kMax);
      buf.resize(n);
      ++runs;
      auto h = st::parse(buf);
      if (!h) continue;
      ++parsed_after;
      std::uint64_t old_len = 0;
      for (int i = 0; i < 8; ++i) old_len |= std::uint64_t{s[i]} << (8 * i);
      if (h->header_len != old_len) ++resized_header_parsed;
    }
  }
  ASSERT_GT(parsed_before, 10u);
  std::printf("%zu mutants of %zu seeds: %zu parse, %zu of them with a new header length\n", runs, parsed_before, parsed_after, resized_header_parsed);
  // A plain byte mutator leaves almost no length-changing edit parseable (the prefix and offsets
  // break); the structural one must keep a good share parseable, many with a new header length.
  EXPECT_GT(parsed_after * 4, runs) << parsed_after << " of " << runs << " mutants parse";
  EXPECT_GT(resized_header_parsed * 8, runs) << resized_header_parsed << " of " << runs << " parse with a new header length";
}

TEST(ContainerMutator, DeterministicInSeed) {
  const auto s = seeds().front();
  std::vector<std::uint8_t> a(s), b(s);
  a.resize(4096);
  b.resize(4096);
  g_rng.seed(1);
  const std::size_t na = fuzz::mutate_container(a.data(), s.size(), 4096, 42, stub_raw);
  g_rng.seed(1);
  const std::size_t nb = fuzz::mutate_container(b.data(), s.size(), 4096, 42, stub_raw);
  ASSERT_EQ(na, nb);
  EXPECT_TRUE(std::equal(a.begin(), a.begin() + static_cast<std::ptrdiff_t>(na), b.begin()));
}

TEST(ContainerMutator, CrossOverSplicesMembersAndRepairs) {
  const auto all = seeds();
  std::size_t ok = 0, tries = 0;
  std::vector<std::uint8_t> out(16384);
  for (std::size_t i = 0; i + 1 < all.size(); ++i) {
    if (!st::parse(all[i]).ok() || !st::parse(all[i + 1]).ok()) continue;
    ++tries;
    const std::size_t n = fuzz::cross_over_containers(all[i].data(), all[i].size(), all[i + 1].data(), all[i + 1].size(), out.data(), out.size(), 3);
    ASSERT_LE(n, out.size());
    ok += n > 0;
  }
  EXPECT_GT(ok * 2, tries);
}

// The mutator's pooled tree reads and writes headers exactly as raw_json.hpp does (the grammar
// both document), on the seeds' headers and on byte-mutated ones (most no longer JSON), and a
// deep copy emits the same text.
TEST(ContainerMutatorTree, MatchesRawJson) {
  fuzz::tree::Tree t;
  std::size_t compared = 0, rejected = 0;
  for (const auto& s : seeds()) {
    if (s.size() < 8) continue;
    std::uint64_t len = 0;
    for (int i = 0; i < 8; ++i) len |= std::uint64_t{s[i]} << (8 * i);
    if (len > s.size() - 8) continue;
    std::vector<std::uint8_t> h(s.begin() + 8, s.begin() + 8 + static_cast<std::ptrdiff_t>(len));
    for (int round = 0; round < 50; ++round) {
      const std::string_view text(reinterpret_cast<const char*>(h.data()), h.size());
      const auto want = gen::raw::parse(text);
      t.clear();
      const fuzz::tree::Id root = t.parse(text);
      ASSERT_EQ(want.has_value(), root != fuzz::tree::kNil) << text;
      if (want) {
        std::string got, copied;
        t.emit(root, got);
        t.emit(t.copy(root), copied);
        EXPECT_EQ(got, gen::raw::emit(*want));
        EXPECT_EQ(copied, got);
        ++compared;
      } else {
        ++rejected;
      }
      const std::size_t n = h.size();
      h.resize(n + 1);
      h.resize(stub_raw(h.data(), n, n + 1));
    }
  }
  EXPECT_GT(compared, 100u);
  EXPECT_GT(rejected, 100u);
}

std::string respelled(std::string_view doc) {
  auto t = gen::raw::parse(doc);
  if (!t) return "(no parse)";
  auto r = gen::raw::respell(*t);
  return r ? gen::raw::emit(*r) : "(no respelling)";
}

// Expected texts derived by hand from json.loads' documented rules.
TEST(RawJson, RespellingRules) {
  EXPECT_EQ(respelled(R"({"a": 1, "b": 2, "a": 3})"), R"({"a": 3, "b": 2})");  // dict: first place, last value
  EXPECT_EQ(respelled(R"({"a": 1, "\u0061": 2})"), R"({"a": 2})");             // keys compare decoded
  EXPECT_EQ(respelled("[1.5, 2e7, -3E-2, 10, 0.0]"), "[1.50e+0000, 2e+0007, -3e-0002, 10, 0.00e+0000]");
  EXPECT_EQ(respelled(R"(["\u00e9", "é", "\ud83d\ude00", "😀", "\ud800"])"),
            R"(["\u00E9", "\u00E9", "\ud83d\uDE00", "\ud83d\uDE00", "\uD800"])");
  EXPECT_EQ(respelled(R"(["\ud800\u0041"])"), R"(["\uD800A"])");
  EXPECT_EQ(respelled("[\"\xed\xa0\x80\xed\xb0\x80\"]"), "(no respelling)");  // two raw surrogates would join
  EXPECT_EQ(respelled(R"({"k": [NaN, -Infinity, true, null]})"), R"({"k": [NaN, -Infinity, true, null]})");
  EXPECT_EQ(respelled("{\"a\" 1}"), "(no parse)");
  EXPECT_EQ(respelled("[1] x"), "(no parse)");
}

}  // namespace
