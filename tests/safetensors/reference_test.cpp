// The single-pass header deserializer (hash_metadata) against the DOM reference (header_reference:
// json::parse_serde + its own mapping and position scan, the path the Python differential test
// validated first): the same verdict, the same message byte for byte (position included) and the
// same tables on tens of thousands of mutated headers, with no Python in the loop.
// Count: W4A8_ST_REF_HEADERS (default 40000), seed: W4A8_ST_SEED.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <random>
#include <string>

#include "mutator.hpp"
#include "safetensors/hash_metadata.hpp"
#include "safetensors/header_reference.hpp"
#include "safetensors/name_order.hpp"
#include "safetensors/utf8.hpp"

namespace w4a8::st {
namespace {

std::uint64_t env_u64(const char* name, std::uint64_t dflt) {
  const char* v = std::getenv(name);
  return v && *v ? std::strtoull(v, nullptr, 0) : dflt;
}

// The header text of a generated container, when its length field fits and the text is UTF-8.
bool header_text(const std::vector<std::uint8_t>& file, std::string& out) {
  if (file.size() < 8) return false;
  std::uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | file[std::size_t(i)];
  if (n > file.size() - 8) return false;
  out.assign(reinterpret_cast<const char*>(file.data()) + 8, std::size_t(n));
  return detail::valid_utf8(out);
}

// Byte-level edits on top of the mutator's (which makes one defect per file): JSON-significant
// bytes, deletions and duplicated ranges, so defects combine.
std::string stack_edits(std::mt19937_64& rng, std::string h) {
  static const std::string_view bytes[] = {"\"", "{", "}", "[", "]", ",", ":", "\\", "0", "-", "1e", ".", " ", "\n",
                                           "null", "t", "\\u", "\\ud800", "\xc3\xa9", "\xf0\x9f\x98\x80", "\x01"};
  const int edits = 1 + int(rng() % 3);
  for (int e = 0; e < edits && !h.empty(); ++e) {
    const std::size_t at = rng() % (h.size() + 1);
    switch (rng() % 4) {
      case 0: h.insert(at, bytes[rng() % std::size(bytes)]); break;
      case 1: h.erase(at, 1 + rng() % 4); break;
      case 2: {
        const std::size_t len = std::min<std::size_t>(rng() % 16, h.size() - std::min(at, h.size()));
        h.insert(std::min(at + len, h.size()), h.substr(at, len));
        break;
      }
      default: h.replace(std::min(at, h.size() - 1), 1, bytes[rng() % std::size(bytes)]); break;
    }
  }
  return h;
}

std::string describe(const Status& s, const Header& h) {
  if (!s.ok()) return "error: " + s.error().message;
  std::string out = "ok meta=" + std::to_string(h.has_metadata);
  for (const auto& [k, v] : h.metadata) out.append(" [").append(k).append("=").append(v).append("]");
  for (const auto& t : h.tensors) {
    out.append(" {").append(t.name).append(" ").append(dtype_name(t.dtype)).append(" (");
    for (auto d : t.shape) out.append(std::to_string(d)).append(",");
    out.append(") ").append(std::to_string(t.begin)).append("..").append(std::to_string(t.end)).append("}");
  }
  return out;
}

// Header::name_lcp, where given, against the names themselves. @return whether it was given.
bool lcp_array_right(const Header& h, std::string* why) {
  if (h.name_lcp.empty()) return false;
  if (h.name_lcp.size() != h.tensors.size()) return *why = "name_lcp has the wrong size", true;
  for (std::size_t i = 0; i < h.tensors.size(); ++i) {
    std::uint32_t k = 0;
    if (i > 0) {
      const std::string_view a = h.tensors[i - 1].name, b = h.tensors[i].name;
      while (k < a.size() && k < b.size() && a[k] == b[k]) ++k;
    }
    if (h.name_lcp[i] != k)
      return *why = "name_lcp[" + std::to_string(i) + "] = " + std::to_string(h.name_lcp[i]) + ", names share " + std::to_string(k), true;
  }
  return true;
}

TEST(StReference, SinglePassMatchesDomReference) {
  const std::uint64_t seed = env_u64("W4A8_ST_SEED", 0x5AFE7E5050);
  const std::size_t count = env_u64("W4A8_ST_REF_HEADERS", 40000);
  test::Mutator mutator(seed ^ 0x2EF);
  std::mt19937_64 rng(seed);
  std::size_t compared = 0, accepted = 0, disagreements = 0, with_lcp = 0;
  for (std::size_t i = 0; i < count; ++i) {
    const auto mu = test::Mutation(i % std::size_t(test::Mutation::kCount));
    std::string text;
    if (!header_text(mutator.make(mu).bytes, text)) continue;
    if (i % 2 == 1) {
      text = stack_edits(rng, text);
      if (!detail::valid_utf8(text)) continue;
    }
    Header fast, ref;
    const Status a = detail::deserialize_header(text, fast);
    const Status b = detail::deserialize_header_reference(text, ref);
    ++compared;
    accepted += a.ok();
    std::string why;
    with_lcp += a.ok() && lcp_array_right(fast, &why);
    if (!why.empty() && ++disagreements <= 20) ADD_FAILURE() << "header " << i << ": " << why;
    const std::string da = describe(a, fast), db = describe(b, ref);
    if (da != db && ++disagreements <= 20)
      ADD_FAILURE() << "header " << i << " (" << test::mutation_name(mu) << "): " << text.substr(0, 400)
                    << "\n  single pass: " << da.substr(0, 400) << "\n  reference:   " << db.substr(0, 400);
  }
  std::printf("single pass vs reference: %zu headers compared, %zu accepted, %zu disagreements\n", compared,
              accepted, disagreements);
  EXPECT_EQ(disagreements, 0u);
  EXPECT_GT(compared, count / 2);
  EXPECT_GT(accepted, compared / 10);
  EXPECT_GT(with_lcp, accepted / 4);
}

// Many tensors: names with long shared prefixes, prefixes of each other, NUL bytes and repeats,
// in sorted runs (the merge path) and shuffled (the chunked radix path): the same table and the
// same first offset error as the reference.
TEST(StReference, ManyTensorsSortLikeReference) {
  std::mt19937_64 rng(99);
  const std::vector<std::string> stems = {"model.diffusion_model.double_blocks.", "model.diffusion_model.",
                                          "model.", "m", "", "model.diffusion_model.double_blocks.1\\u0000",
                                          "\\u0000", "model.diffusion_model.double_blocks.10.img_attn.proj"};
  for (int round = 0; round < 150; ++round) {
    const std::size_t count = 1 + rng() % 700;
    std::vector<std::string> names;
    for (std::size_t i = 0; i < count; ++i) {
      std::string n = stems[rng() % stems.size()];
      for (std::size_t k = rng() % 4; k > 0; --k) n += std::to_string(rng() % 13) + (rng() % 3 ? "." : "\\u0000");
      if (!names.empty() && rng() % 10 == 0) n = names[rng() % names.size()];  // a repeat
      names.push_back(n);
    }
    if (round % 3 == 0) std::sort(names.begin(), names.end());
    if (round % 3 == 1) {  // sorted runs (the merge path up to 64 runs, the chunked sort past it)
      std::vector<std::size_t> cuts = {0, names.size()};
      for (std::size_t k = round % 2 ? 1 : rng() % 80; k > 0; --k) cuts.push_back(rng() % names.size());
      std::sort(cuts.begin(), cuts.end());
      for (std::size_t k = 0; k + 1 < cuts.size(); ++k)
        std::sort(names.begin() + std::ptrdiff_t(cuts[k]), names.begin() + std::ptrdiff_t(cuts[k + 1]));
    }
    std::string h = "{";
    std::uint64_t off = 0;
    for (std::size_t i = 0; i < names.size(); ++i) {
      const std::uint64_t len = rng() % 3;
      h += (i ? ",\"" : "\"") + names[i] + "\":{\"dtype\":\"U8\",\"shape\":[" + std::to_string(len) +
           "],\"data_offsets\":[" + std::to_string(off) + "," + std::to_string(off + len) + "]}";
      off += len;
    }
    h += "}";
    Header fast, ref;
    const Status a = detail::deserialize_header(h, fast);
    const Status b = detail::deserialize_header_reference(h, ref);
    ASSERT_EQ(describe(a, fast), describe(b, ref)) << "round " << round;
    EXPECT_TRUE(a.ok());
    // The offset check sees the same table, so the whole-file verdict agrees too.
    const std::vector<std::uint8_t> file = [&] {
      std::vector<std::uint8_t> f(8);
      for (int k = 0; k < 8; ++k) f[std::size_t(k)] = std::uint8_t(std::uint64_t(h.size()) >> (8 * k));
      f.insert(f.end(), h.begin(), h.end());
      f.resize(f.size() + off);
      return f;
    }();
    auto whole = parse(file);
    if (!whole.ok()) {
      EXPECT_TRUE(whole.error().kind == ErrorKind::StInvalidOffset || whole.error().kind == ErrorKind::StMetadataIncompleteBuffer)
          << whole.error().message;
    }
  }
}

// Both ways of putting the table in order (the permutation's cycles in place, and the gather into a
// new table used from kGatherFrom tensors on), forced on the same inputs, against a stable sort by
// name that keeps the last of equal names: sorted runs (the merge), shuffles (the radix sort), near
// order, repeats. Tensors are told apart by their offsets.
TEST(StReference, CyclesAndGatherGiveTheSameTable) {
  std::mt19937_64 rng(77);
  for (int round = 0; round < 120; ++round) {
    const std::size_t count = 1 + rng() % (round % 10 == 0 ? 5000 : 400);
    std::vector<std::string> names(count);
    for (std::string& n : names) {
      n = "model.diffusion_model.blocks." + std::to_string(rng() % (count / 4 + 1)) + (rng() % 2 ? ".w" : ".s");
      if (rng() % 20 == 0) n.resize(rng() % n.size());  // a prefix of others, or empty
    }
    if (round % 3 == 0) std::sort(names.begin(), names.end());
    if (round % 3 == 1) {  // a few sorted runs
      const std::size_t cut = rng() % count;
      std::sort(names.begin(), names.begin() + std::ptrdiff_t(cut));
      std::sort(names.begin() + std::ptrdiff_t(cut), names.end());
    }
    std::vector<TensorInfo> input(count);
    for (std::size_t i = 0; i < count; ++i) {
      input[i].name = Name(names[i]);
      input[i].begin = i;
    }
    std::vector<TensorInfo> want = input;  // the oracle: stable by name, the last of equal names kept
    std::stable_sort(want.begin(), want.end(), [](const TensorInfo& a, const TensorInfo& b) { return a.name < b.name; });
    std::vector<TensorInfo> kept;
    for (std::size_t i = 0; i < want.size(); ++i)
      if (i + 1 == want.size() || want[i].name != want[i + 1].name) kept.push_back(want[i]);
    for (const std::size_t gather_from : {std::size_t{0}, SIZE_MAX}) {
      std::vector<TensorInfo> got = input;
      const bool dropped = detail::sort_by_name(got, gather_from);
      ASSERT_EQ(dropped, kept.size() != count) << "round " << round;
      ASSERT_EQ(got.size(), kept.size()) << "round " << round;
      for (std::size_t i = 0; i < kept.size(); ++i)
        ASSERT_TRUE(got[i].name == kept[i].name && got[i].begin == kept[i].begin)
            << "round " << round << (gather_from == 0 ? " (gather)" : " (cycles)") << " at " << i;
    }
  }
}

// A writer that keeps each layer's tensors together emits "blocks.2" before "blocks.10" and a
// layer's weight before its marker: a few long ascending runs with names a few places out of order
// (moved back into their run, name_order.cpp's insert_near_end). Local shuffles of every width up to
// past the move limit, repeats (a repeat is never moved: input order decides which one stays),
// names that move to a run's first place, and runs of one: the same table as the reference.
TEST(StReference, NearlySortedNamesSortLikeReference) {
  std::mt19937_64 rng(2026);
  std::size_t with_lcp = 0;
  const std::vector<std::string> suffixes = {".weight", ".weight_s_rel", ".weight_s_channel", ".comfy_quant",
                                             ".bias", ".weight_s_channel.x", ".w"};
  for (int round = 0; round < 240; ++round) {
    std::vector<std::string> names;
    const std::size_t blocks = 1 + rng() % 40, layers = 1 + rng() % 4;
    for (std::size_t b = 0; b < blocks; ++b)  // numeric block order: ascending runs of 10, 90, ...
      for (std::size_t l = 0; l < layers; ++l)
        for (const std::string& suf : suffixes)
          if (rng() % 4 != 0) names.push_back("model.blocks." + std::to_string(b) + ".proj_" + std::to_string(l) + suf);
    if (names.empty()) continue;
    // Local disorder: windows of width 2..12 reversed or rotated (up to past the 8-place limit).
    const std::size_t width = 2 + rng() % 11;
    for (std::size_t k = rng() % 3 == 0 ? names.size() / 2 : rng() % 8; k > 0; --k) {
      const std::size_t at = rng() % names.size(), end = std::min(names.size(), at + width);
      if (rng() % 2) std::reverse(names.begin() + std::ptrdiff_t(at), names.begin() + std::ptrdiff_t(end));
      else if (end - at > 1) std::rotate(names.begin() + std::ptrdiff_t(at), names.begin() + std::ptrdiff_t(end - 1),
                                         names.begin() + std::ptrdiff_t(end));
    }
    if (round % 4 == 1)  // repeats, near and far
      for (std::size_t k = 1 + rng() % 6; k > 0; --k) {
        const std::size_t from = rng() % names.size();
        const std::size_t to = std::min(names.size(), from + (rng() % 2 ? 1 + rng() % 6 : rng() % names.size()));
        names.insert(names.begin() + std::ptrdiff_t(to), names[from]);
      }
    if (round % 4 == 2) std::reverse(names.begin(), names.end());  // runs of one: past 64 runs, the radix sort
    std::string h = "{";
    for (std::size_t i = 0; i < names.size(); ++i)
      h += (i ? ",\"" : "\"") + names[i] + "\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[" +
           std::to_string(i) + "," + std::to_string(i + 1) + "]}";
    h += "}";
    Header fast, ref;
    const Status a = detail::deserialize_header(h, fast);
    const Status b = detail::deserialize_header_reference(h, ref);
    ASSERT_TRUE(b.ok()) << b.error().message;
    ASSERT_EQ(describe(a, fast), describe(b, ref)) << "round " << round << ": " << h.substr(0, 600);
    std::string why;
    with_lcp += lcp_array_right(fast, &why);
    ASSERT_EQ(why, "") << "round " << round;
  }
  EXPECT_GT(with_lcp, 100u);  // (not the rounds with repeats or past 64 runs)
}

// The fast path reads the form writers emit and skips whitespace only where a token is not found at
// once: whitespace (one to three bytes) at every byte boundary of such entries, and at two random
// boundaries at once, inside strings and numbers too, and bytes that are not JSON whitespace (errors
// the general path reports).
// The same table or the same error as the reference.
TEST(StReference, WhitespaceAnywhereInATensorEntry) {
  const std::vector<std::string> entries = {
      R"({"dtype":"F32","shape":[2,3],"data_offsets":[0,24]})",
      R"({"dtype":"I8","shape":[],"data_offsets":[24,25]})",
      R"({"dtype":"F8_E4M3","shape":[1234567890123456,1],"data_offsets":[25,25]})"};
  // JSON's four whitespace bytes, and two that are not (form feed, vertical tab: errors).
  const std::vector<std::string> spaces = {" ", "\n", "\t\r ", "\r\n", "\f", " \v"};
  std::mt19937_64 rng(404);
  std::size_t checked = 0, accepted = 0;
  auto check = [&](const std::string& entry) {
    const std::string h = "{\"a\":" + entry + ",\"b\":" + entry + "}";
    Header fast, ref;
    const Status a = detail::deserialize_header(h, fast);
    const Status b = detail::deserialize_header_reference(h, ref);
    ++checked;
    accepted += a.ok();
    ASSERT_EQ(describe(a, fast), describe(b, ref)) << h;
  };
  for (const std::string& e : entries)
    for (std::size_t at = 0; at <= e.size(); ++at)
      for (const std::string& ws : spaces) {
        check(e.substr(0, at) + ws + e.substr(at));
        const std::size_t other = rng() % (e.size() + 1);
        const std::size_t lo = std::min(at, other), hi = std::max(at, other);
        check(e.substr(0, lo) + ws + e.substr(lo, hi - lo) + spaces[rng() % spaces.size()] + e.substr(hi));
      }
  EXPECT_GT(accepted, checked / 8);  // both kinds occur: whitespace between tokens, and inside them
  EXPECT_LT(accepted, checked);
}

// Hand cases where the two could drift: positions across lines, streamed metadata against later
// syntax errors, tensor errors against trailing text, deep nesting.
TEST(StReference, EdgeHeaders) {
  const std::string t = R"({"dtype":"F32","shape":[1],"data_offsets":[0,4]})";
  const std::vector<std::string> headers = {
      "", " ", "{", "{}", "[]", "[", "1", "1 x", "\"a\" x", "nul", "tru e", "{\"a\":1} x", "{} x", "{}  ",
      "{\"__metadata__\":[1], x", "{\"__metadata__\":{\"a\":1}, x", "{\"__metadata__\":{\"a\":[}}",
      "{\"__metadata__\":null,\"__metadata__\"", "{\"__metadata__\":null,\n \"__metadata__\"  x",
      "{\"__metadata__\":nul}", "{\"__metadata__\":{\"a\":\"b\",\"a\":\"c\",\"b\":\"d\"}}",
      "{\"a\":" + t + ",\"a\":" + t + "}", "{\"b\":" + t + ",\"a\":1}", "{\"a\":1,\"b\":x}",
      "{\"a\":[\"F32\",[1],[0,4],{}]}", "{\"a\":[\"F32\",[1]]}", "{\"a\":{\"dtype\":{\"F32\":[1]}}}",
      "{\"a\":{\"dtype\":{\"F32\":null,\"F32\":null}}}", "{\"a\":{\"dtype\":{}}}", "{\"a\":{\"dtype\":{\"Q\":1}}}",
      "{\"a\":{\"shape\":[-0, 1.5], \"shape\":1}}", "{\"a\":{\"shape\":[18446744073709551616]}}",
      "{\"a\":{\"data_offsets\":[-9223372036854775808]}}", "{\"a\":{\"data_offsets\":[1,2,3,[4]]}}",
      "{\"a\":" + std::string(126, '[') + std::string(126, ']') + "}",
      "{\"a\":" + std::string(127, '[') + std::string(127, ']') + "}",
      "{\"a\":{\"x\":" + std::string(125, '{') + "}", "{\"a\\u0000\":1}", "{\"\\u00e9\":[\"F32\",[],[0,4]]}",
      "\n\n  {\"a\":\n 1e999}", "{\"a\":\"\\ud83d\\ude00\" , \"b\":2 ,}", "{\"__meta\\u0064ata__\":{}}",
  };
  for (const auto& h : headers) {
    Header fast, ref;
    const Status a = detail::deserialize_header(h, fast);
    const Status b = detail::deserialize_header_reference(h, ref);
    EXPECT_EQ(describe(a, fast), describe(b, ref)) << h.substr(0, 200);
  }
}

}  // namespace
}  // namespace w4a8::st
