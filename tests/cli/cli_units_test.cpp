// Pieces of the CLI: the reporter's exit statuses (from the error table's exit column) and formats,
// the streaming JSON writer against Python's json.dumps, enum option tables, the banded "did you
// mean" distance against a plain dynamic program, --max-shard-size parsing, the --threads cap, the
// heap's huge pages, --help's constraint notes.
#include <CLI/CLI.hpp>
#include <gtest/gtest.h>
#include <sys/resource.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <random>
#include <sstream>
#include <thread>

#include "cli/heap_pages.hpp"
#include "cli/options.hpp"
#include "cli/quantize_model.hpp"
#include "cli/report.hpp"
#include "cli/suggest.hpp"
#include "json/dump.hpp"
#include "json/value.hpp"
#include "run_cli.hpp"

namespace w4a8::cli {
namespace {

// The constraints are written out in words after the description, names sorted whatever the order
// the options were made in (CLI11 keeps them in sets ordered by address); the name column keeps the
// type and default only.
TEST(HelpFormat, ConstraintsEndTheDescriptionInWords) {
  CLI::App app{"t"};
  use_help_format(app);
  std::string s;
  bool a = false, b = false, c = false;
  CLI::Option* zeta = app.add_flag("--zeta", a, "z");
  CLI::Option* alpha = app.add_flag("--alpha", b, "a");
  CLI::Option* mid = app.add_flag("--mid", c, "m");
  CLI::Option* key = app.add_option("--key", s, "k")->default_str("x");
  mid->excludes(zeta)->excludes(alpha)->needs(key);
  EXPECT_EQ(constraint_note(*mid), " (not with --alpha or --zeta; needs --key)");
  EXPECT_EQ(constraint_note(*zeta), " (not with --mid)");  // excludes() binds both ways
  EXPECT_EQ(constraint_note(*key), "");
  zeta->excludes(alpha);
  EXPECT_EQ(constraint_note(*zeta), " (not with --alpha or --mid)");
  alpha->excludes(key);
  EXPECT_EQ(constraint_note(*alpha), " (not with --key, --mid or --zeta)");
  const std::string help = app.help();
  EXPECT_EQ(help.find("Excludes"), std::string::npos) << help;
  EXPECT_EQ(help.find("Needs"), std::string::npos) << help;
  EXPECT_NE(help.find("m (not with --alpha or --zeta; needs --key)\n"), std::string::npos) << help;
  EXPECT_NE(help.find("--key TEXT=x"), std::string::npos) << help;
}

long minor_faults() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return ru.ru_minflt;
}

// /proc/vmstat's count of huge-page faults the kernel served with small pages (no free 2 MiB block).
long thp_fallbacks() {
  std::ifstream in("/proc/vmstat");
  std::string key;
  long value = 0;
  while (in >> key >> value)
    if (key == "thp_fault_fallback") return value;
  return 0;
}

// After allocate_from_huge_pages(), a new block lies in the huge pages: touching 4 MiB of it takes a
// few 2 MiB faults, not the 1,024 of 4 KiB pages. Without it, glibc places the block just above the
// reserve's probe, where at least 256 KiB (64 faults) of 4 KiB pages lie below the first huge page.
// Its own process (ctest runs each test alone): the reserve is a once-per-process step.
TEST(HeapPages, LaterBlocksComeFromHugePages) {
#if defined(W4A8_SANITIZED) || defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "a sanitizer's allocator: the reserve does not apply";
#endif
  std::ifstream thp("/sys/kernel/mm/transparent_hugepage/enabled");
  std::string mode;
  std::getline(thp, mode);
  if (mode.empty() || mode.find("[never]") != std::string::npos)
    GTEST_SKIP() << "transparent huge pages are off on this machine (" << mode << ")";
  reserve_heap_in_huge_pages(std::size_t{32} << 20);
  allocate_from_huge_pages();
  constexpr std::size_t kBlock = std::size_t{4} << 20;
  const long fallbacks = thp_fallbacks();
  const long before = minor_faults();
  char* block = static_cast<char*>(std::malloc(kBlock));
  ASSERT_NE(block, nullptr);
  std::memset(block, 1, kBlock);
  const long faults = minor_faults() - before;
  asm volatile("" : : "r"(block) : "memory");
  std::free(block);
  if (thp_fallbacks() != fallbacks) GTEST_SKIP() << "the kernel had no free 2 MiB block (thp_fault_fallback rose)";
  EXPECT_LT(faults, 48) << "a 4 MiB block took " << faults << " faults: not in huge pages";
}

// The verdict line names the check of ours behind a refusal by its owner (rule_owner); the only
// refusal of ours besides --strict's is --min-layers, so a new one must get its own label.
TEST(Reporter, RefusalsOfOursAreLabelled) {
  for (const ErrorInfo& info : kErrorTable) {
    if (info.exit != ExitClass::Reject || rule_owner(info.code) != RuleOwner::Ours) continue;
    EXPECT_EQ(info.kind, ErrorKind::ValidateTooFewLayers) << info.code << ": give it a label in Reporter::fail";
  }
  EXPECT_EQ(rule_owner("strict.w4a8.k_multiple_16"), RuleOwner::Strict);
  EXPECT_EQ(rule_owner("sglang.w4a8.rank"), RuleOwner::Upstream);
  EXPECT_EQ(rule_owner("strict"), RuleOwner::Upstream);  // a family is the text before its dot
}

TEST(Reporter, ExitStatusComesFromTheErrorTable) {
  int rejects = 0, usages = 0;
  for (const ErrorInfo& info : kErrorTable) {
    Error e{info.kind, "m"};
    const int want = info.exit == ExitClass::Reject ? 1 : 2;
    EXPECT_EQ(exit_status(e), want) << info.code;
    std::ostringstream out, err;
    Reporter r(out, err);
    r.fail(e);
    EXPECT_EQ(r.exit_code(), want);
    (want == 1 ? rejects : usages)++;
    if (want == 1) {
      EXPECT_EQ(out.str(), "REJECTED: " + std::string(info.py_type) + ": m\n  [" + std::string(info.code) + "]\n");
      EXPECT_TRUE(err.str().empty());
    } else {
      EXPECT_EQ(err.str(), "w4a8check: m\n  [" + std::string(info.code) + "]\n");
      EXPECT_TRUE(out.str().empty());
    }
  }
  EXPECT_GT(rejects, 0);
  EXPECT_GT(usages, 0);
}

TEST(Reporter, JsonAndOneLineForms) {
  std::ostringstream out, err;
  Reporter r(out, err);
  FailStyle s;
  s.format = Format::Json;
  s.upstream = Predicts{"0.5.23", "3.12", {}};
  s.where = "a\"b.safetensors";
  r.fail(make_error(ErrorKind::SgW4a8Rank, {"'x'", "(1,)"}), s);
  EXPECT_EQ(out.str(),
            "{\"ok\": false, \"upstream\": {\"sglang\": \"0.5.23\", \"python\": \"3.12\"}, \"error\": {\"type\": \"ValueError\", \"message\": "
            "\"Comfy W4A8 layer 'x' needs a 2D packed weight, got (1,)\", \"code\": \"sglang.w4a8.rank\", \"file\": "
            "\"a\\\"b.safetensors\"}}\n");
  std::ostringstream o2, e2;
  Reporter q(o2, e2);
  FailStyle one;
  one.one_line = true;
  q.fail(make_error(ErrorKind::IoOpenFailed, {"f", "No such file or directory"}), one);
  EXPECT_EQ(e2.str(), "w4a8check: cannot open f: No such file or directory  [io.open_failed]\n");
  // A Reject verdict names the releases it predicts after its code; a usage error does not.
  std::ostringstream o3, e3;
  Reporter t(o3, e3);
  FailStyle ck;
  ck.upstream.comfy_kitchen = "0.2.37 (profile 0.2.40)";
  t.fail(make_error(ErrorKind::OpInputK, {"8", "16"}), ck);
  EXPECT_EQ(o3.str(), "REJECTED: ValueError: Input K=8 does not match qdata K=16\n  [gemm.input_k] (comfy-kitchen 0.2.37 "
                      "(profile 0.2.40))\n");
  t.fail(make_error(ErrorKind::IoOpenFailed, {"f", "x"}), ck);
  EXPECT_EQ(e3.str(), "w4a8check: cannot open f: x\n  [io.open_failed]\n");
  EXPECT_EQ((Predicts{"0.5.19", "3.10", "0.2.35"}.text()), "sglang 0.5.19, Python 3.10, comfy-kitchen 0.2.35");
}

TEST(JsonWriter, MatchesPythonJsonDumps) {
  std::ostringstream s;
  JsonWriter w(s);
  json::Value v = json::Value::object();
  v.set("k", json::Value::from_int(3));
  w.begin_object().key("a\u00e9\n").string("x\u2028y").key("b").begin_object().end_object().key("c").number(std::uint64_t(7));
  w.key("d").number(0.1).key("e").boolean(false).key("f").value(v).end_object();
  const std::string py = std::string(W4A8_PYTHON) +
                         " -c 'import json; print(json.dumps({\"a\\u00e9\\n\": \"x\\u2028y\", \"b\": {}, \"c\": 7, \"d\": 0.1, "
                         "\"e\": False, \"f\": {\"k\": 3}}), end=\"\")'";
  const auto r = testing::run_command(py);
  ASSERT_EQ(r.rc, 0);
  EXPECT_EQ(s.str(), r.out);
}

// Output for any JSON parser: non-finite numbers, given alone or inside a value, are strings; a
// document for Python (a checkpoint's metadata) keeps json.dumps' bare tokens when asked.
TEST(JsonWriter, NonFiniteNumbersAreStrings) {
  std::ostringstream s;
  JsonWriter w(s);
  json::Value v = json::Value::array();
  v.items.push_back(json::Value::from_float(-INFINITY));
  w.begin_array().number(double(NAN)).number(double(INFINITY)).number(1.5).value(v).value(v, json::NonFinite::PythonToken);
  w.end_array();
  EXPECT_EQ(s.str(), R"(["NaN", "Infinity", 1.5, ["-Infinity"], [-Infinity]])");
}

// --comfy-kitchen: a profile as itself; a checked release mapped to the profile standing for it
// (docs/upstream.md: 0.2.30-0.2.35 -> 0.2.35, 0.2.36-0.2.40 -> 0.2.40); anything else refused.
TEST(Options, ComfyKitchenReleases) {
  struct Case {
    const char* v;
    const char* label;
  };
  for (const Case& c : {Case{"0.2.40", "0.2.40"}, Case{"0.2.35", "0.2.35"}, Case{"0.2.37", "0.2.37 (profile 0.2.40)"},
                        Case{"0.2.36", "0.2.36 (profile 0.2.40)"}, Case{"0.2.30", "0.2.30 (profile 0.2.35)"},
                        Case{"0.2.33", "0.2.33 (profile 0.2.35)"},
                        // Leading zeros name the same release, and it is named as written without them
                        // (they were echoed: "00.2.40 (profile 0.2.40)").
                        Case{"0.2.040", "0.2.40"}, Case{"00.2.40", "0.2.40"}, Case{"0.02.037", "0.2.37 (profile 0.2.40)"}}) {
    auto r = parse_comfy_kitchen_release(c.v);
    ASSERT_TRUE(r.ok()) << c.v;
    EXPECT_EQ(r->label(), c.label);
  }
  for (const char* bad : {"0.2.41", "0.3.0", "0.2.29", "0.1.99", "latest", "", "0.2.", "0..2", "1e3"}) {
    auto r = parse_comfy_kitchen_release(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.error().kind, ErrorKind::UsageError);
    EXPECT_NE(r.error().message.find("profiles: 0.2.35 (releases 0.2.30-0.2.35), 0.2.40 (releases 0.2.36-0.2.40)"),
              std::string::npos)
        << r.error().message;
  }
}

TEST(Options, EnumTablesRoundTrip) {
  for (const auto& c : kImpls) EXPECT_EQ(choice_name<ImplChoice>(kImpls, c.value), c.name);
  EXPECT_EQ(choice_list<gemm::FloatDtype>(kOutDtypes), "f32, bf16, f16");
  EXPECT_EQ(choice_list<MarkerChoice>(kMarkers), "tensor, metadata, both");
  EXPECT_EQ(choice_list<int>(kBits), "4, 6");
  EXPECT_EQ(choice_list<gemm::ScaleDtype>(kScaleDtypes), "fp8, f32");
  EXPECT_EQ(choice_list(python_choices()), "3.10, 3.11, 3.12, 3.13, 3.14");
  ASSERT_EQ(comfy_kitchen_choices().size(), upstream::kComfyKitchenCount);
  EXPECT_EQ(comfy_kitchen_choices().back().value, upstream::kLatestComfyKitchen);
  ASSERT_EQ(sglang_choices().size(), upstream::kSglangCount);
  EXPECT_EQ(sglang_choices().back().value, upstream::kLatestSglang);
}

std::size_t plain_distance(const std::string& a, const std::string& b) {
  std::vector<std::vector<std::size_t>> d(a.size() + 1, std::vector<std::size_t>(b.size() + 1));
  for (std::size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (std::size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i)
    for (std::size_t j = 1; j <= b.size(); ++j)
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (a[i - 1] != b[j - 1])});
  return d[a.size()][b.size()];
}

TEST(Suggest, BoundedDistanceAgreesWithThePlainDynamicProgram) {
  std::mt19937 rng(3);
  auto word = [&] {
    std::string s(rng() % 12, 'a');
    for (char& c : s) c = char('a' + rng() % 3);
    return s;
  };
  for (int i = 0; i < 3000; ++i) {
    const std::string a = word(), b = word();
    const std::size_t limit = rng() % 6, d = plain_distance(a, b);
    EXPECT_EQ(edit_distance(a, b, limit), std::min(d, limit + 1)) << a << " / " << b << " limit " << limit;
  }
  const std::vector<std::string_view> names = {"blocks.0.attn", "blocks.1.attn", "blocks.10.attn", "head"};
  EXPECT_EQ(closest_names("blocks.1.atn", names), (std::vector<std::string>{"blocks.1.attn", "blocks.0.attn", "blocks.10.attn"}));
  EXPECT_TRUE(closest_names("zzzzzzzzzzzzzzzzzzzzzzzz", names).empty());
}

TEST(ParseSize, UnitsAndErrors) {
  EXPECT_EQ(*parse_size("5GB"), 5'000'000'000ull);
  EXPECT_EQ(*parse_size("500mb"), 500'000'000ull);
  EXPECT_EQ(*parse_size("2GiB"), 2ull << 30);
  EXPECT_EQ(*parse_size("1000"), 1000ull);
  EXPECT_EQ(*parse_size("64KiB"), 65536ull);
  for (const char* bad : {"", "GB", "5 GB", "0", "-1", "5XB", "99999999999999999999", "20000000000TB"})
    EXPECT_FALSE(parse_size(bad).ok()) << bad;
  // The largest size is 2^64 - 1 bytes (20 digits); past it the message says so (it said "expected a
  // size such as 5GB" for any number of 20 digits).
  EXPECT_EQ(*parse_size("18446744073709551615"), UINT64_MAX);
  EXPECT_EQ(*parse_size("00000000000000000000001KB"), 1000ull);
  for (const char* big : {"18446744073709551616", "99999999999999999999", "20000000000TB", "18446744073709551615KB"})
    EXPECT_EQ(parse_size(big).error().message,
              std::string("--max-shard-size ") + big + ": more than 18446744073709551615 bytes") << big;
  EXPECT_NE(parse_size("5XB").error().message.find("expected a size such as 5GB"), std::string::npos);
}

TEST(Threads, CappedAtTheHardwareWithANote) {
  const unsigned hw = std::max(1u, std::thread::hardware_concurrency());
  std::ostringstream out, err;
  Reporter r(out, err);
  EXPECT_EQ(resolve_threads(0, r), hw);
  EXPECT_EQ(resolve_threads(1, r), 1u);
  EXPECT_TRUE(err.str().empty());
  EXPECT_EQ(resolve_threads(100000, r), hw);
  EXPECT_EQ(err.str(), "w4a8check: note: --threads 100000 capped at " + std::to_string(hw) +
                           " (the hardware threads of this machine)\n");
}

}  // namespace
}  // namespace w4a8::cli
