// Replays the committed comfy-kitchen golden vectors (corpus/golden/ck, written by
// tools/upstream/ck_oracle.py from the real comfy-kitchen eager backend; MANIFEST.md there) through
// the literal, fast and prepared reference: no torch needed, every CI run. Also holds MANIFEST.md's
// claim that the set is byte-reproducible: its sha256 list names every file as committed, and (live,
// with the comfy-kitchen environment) a fresh `ck_oracle.py gen --set golden` writes the same bytes.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <regex>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include <unistd.h>

#include "ck_case.hpp"
#include "safetensors/reader.hpp"
#include "support/python.hpp"

namespace w4a8::gemm::ck {
namespace {

const std::string kDir = std::string(W4A8_SOURCE_ROOT) + "/corpus/golden/ck";

TEST(CkGolden, MatchesComfyKitchenEager) {
  ASSERT_TRUE(std::filesystem::exists(kDir + "/operand_errors.safetensors")) << kDir;
  CompareOptions opt;
  opt.profile = upstream::kLatestComfyKitchen;
  opt.all_impls = true;
  opt.threads = 2;
  Stats s;
  const Status st = compare_dir(kDir, opt, s);
  ASSERT_TRUE(st.ok()) << st.error().message;
  std::printf("%s", format_stats(s, opt).c_str());
  EXPECT_GE(s.layers, 30u);
  EXPECT_GE(s.op_sets, 200u);
  EXPECT_EQ(s.upstream_version, std::string(upstream::profile(upstream::kLatestComfyKitchen).version));
  for (const auto& f : tolerance_failures(s)) ADD_FAILURE() << f;
  // The golden set must exercise what it claims: both dtypes, both paths, multi-defect sets.
  EXPECT_GT(s.dt[0].int_runs, 0u);
  EXPECT_GT(s.dt[1].int_runs, 0u);
  EXPECT_GT(s.dt[0].corr_runs + s.dt[1].corr_runs, 0u);
  EXPECT_GT(s.op_agree, 150u);
}

// The .safetensors files of a directory, by name.
std::vector<std::string> golden_names(const std::string& dir) {
  std::vector<std::string> out;
  for (const auto& e : std::filesystem::directory_iterator(dir))
    if (e.path().extension() == ".safetensors") out.push_back(e.path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

// MANIFEST.md's sums are what a regeneration is checked against (sha256sum -c): they must be those of
// the committed files, every one of them. Hashed by the configured Python (required, as every oracle).
TEST(CkGolden, ManifestListsEveryFileWithItsSha256) {
  const auto run = w4a8::testing::PythonCall::code(
                       "import hashlib, os, sys\n"
                       "for n in sorted(os.listdir(sys.argv[1])):\n"
                       "    if n.endswith('.safetensors'):\n"
                       "        with open(os.path.join(sys.argv[1], n), 'rb') as f:\n"
                       "            print(hashlib.sha256(f.read()).hexdigest() + '  ' + n)\n")
                       .args({kDir})
                       .run();
  ASSERT_TRUE(run.ok()) << run.command;
  const std::regex sum_line("[0-9a-f]{64}  [^ ]+\\.safetensors");
  std::vector<std::string> listed;
  std::ifstream manifest(kDir + "/MANIFEST.md");
  for (std::string line; std::getline(manifest, line);)
    if (std::regex_match(line, sum_line)) listed.push_back(line);
  std::sort(listed.begin(), listed.end(), [](const std::string& a, const std::string& b) {
    return a.substr(66) < b.substr(66);  // by file name, as the hashes above
  });
  EXPECT_EQ(run.lines.size(), golden_names(kDir).size());
  EXPECT_EQ(listed, run.lines) << "MANIFEST.md's sha256 list is not that of the committed files";
}

// Names the tensors (and the header) that differ between two golden files of one name.
std::string what_differs(const std::string& committed, const std::string& fresh) {
  auto a = st::File::open(committed);
  auto b = st::File::open(fresh);
  if (!a.ok() || !b.ok()) return "unreadable";
  std::string out;
  const auto& ha = a->header();
  const auto& hb = b->header();
  if (ha.metadata != hb.metadata) out += " metadata;";
  for (const auto& t : ha.tensors) {
    const st::TensorInfo* u = hb.find(t.name.view());
    if (u == nullptr) {
      out += " " + t.name.str() + " (missing);";
      continue;
    }
    const auto da = a->data(t);
    const auto db = b->data(*u);
    if (t.dtype != u->dtype || t.shape != u->shape || !std::equal(da.begin(), da.end(), db.begin(), db.end()))
      out += " " + t.name.str() + ";";
  }
  if (ha.tensors.size() != hb.tensors.size()) out += " tensor count;";
  return out.empty() ? " layout only (same tensors and metadata)" : out;
}

struct RemoveDirAtExit {
  std::string dir;
  ~RemoveDirAtExit() {
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
  }
};

// The CPU kinds (vendor, torch's own choice of kernels there) where a fresh set was seen to equal the
// committed one: the kind it was written on, and an AVX-512 Xeon (2026-12-07, 31 of 31 files).
constexpr std::array<std::string_view, 2> kVerifiedCpus = {"AuthenticAMD AVX2", "GenuineIntel AVX512"};

// LIVE: MANIFEST.md's command, run now, writes exactly the committed bytes (the script pins torch's CPU
// kernels for this set, so any x86-64 CPU with AVX2 should agree). On a CPU of a verified kind a
// difference fails; on another kind equality passes, and a difference is a skip that names the
// differing tensors, so the first such run tells whether the pin holds there. Skipped, saying why, without the
// comfy-kitchen environment (W4A8_CK_PYTHON overrides its interpreter), on a CPU the script cannot pin
// (its exit 3: no AVX2), and when the environment's comfy-kitchen or torch is not the one the set was
// written with (a difference is then upstream drift: tools/upstream/ck_drift.sh), never passed.
TEST(CkLive, GoldenSetRegeneratesByteForByte) {
  const std::string py = w4a8::testing::ck_python();
  if (!std::filesystem::exists(py)) GTEST_SKIP() << "skipped: no comfy-kitchen env at " << py;
  const auto probe = w4a8::testing::PythonCall::code(
                         "import torch, comfy_kitchen\n"
                         "vendor = [l.split(':')[1].strip() for l in open('/proc/cpuinfo') if l.startswith('vendor_id')]\n"
                         "print((vendor[0] if vendor else '?') + ' ' + torch.backends.cpu.get_cpu_capability())\n")
                         .python(py)
                         .run();
  ASSERT_TRUE(probe.ok() && probe.lines.size() == 1)
      << "comfy-kitchen env at " << py << " does not import torch/comfy_kitchen";
  const bool verified_kind = std::find(kVerifiedCpus.begin(), kVerifiedCpus.end(), probe.lines[0]) != kVerifiedCpus.end();
  const RemoveDirAtExit tmp{
      (std::filesystem::temp_directory_path() / ("w4a8_ck_golden_" + std::to_string(::getpid()))).string()};
  std::filesystem::remove_all(tmp.dir);
  const auto gen = w4a8::testing::PythonCall::script("tools/upstream/ck_oracle.py")
                       .args({"gen", "--set", "golden", "--out", tmp.dir})
                       .python(py)
                       .run();
  for (const auto& l : gen.lines) std::printf("%s\n", l.c_str());
  if (gen.exit_code == 3) GTEST_SKIP() << "skipped: this CPU has no AVX2, the kernels the golden set pins";
  ASSERT_TRUE(gen.ok()) << gen.command;

  // Versions first: another comfy-kitchen may write other files (0.2.35: no 6-bit layers).
  auto versions = [](const std::string& dir) -> std::string {
    auto f = st::File::open(dir + "/operand_errors.safetensors");
    if (!f.ok()) return {};
    const std::string* ck = f->header().meta("comfy_kitchen");
    const std::string* torch = f->header().meta("torch");
    return "comfy-kitchen " + (ck ? *ck : "?") + ", torch " + (torch ? *torch : "?");
  };
  const std::string was = versions(kDir), now = versions(tmp.dir);
  ASSERT_FALSE(now.empty()) << "no readable operand_errors.safetensors in the fresh set";
  if (was != now) GTEST_SKIP() << "skipped: the environment has " << now << ", the golden set was written with " << was;
  const auto names = golden_names(kDir);
  ASSERT_EQ(golden_names(tmp.dir), names) << "the fresh set has other files than corpus/golden/ck";
  std::string differ;
  for (const auto& n : names) {
    const std::string committed = (std::filesystem::path(kDir) / n).string();
    const std::string fresh = (std::filesystem::path(tmp.dir) / n).string();
    if (slurp(committed) != slurp(fresh)) differ += "\n  " + n + ":" + what_differs(committed, fresh);
  }
  if (!differ.empty() && !verified_kind) {
    std::string kinds;
    for (std::string_view k : kVerifiedCpus) kinds += (kinds.empty() ? "" : ", ") + std::string(k);
    GTEST_SKIP() << "skipped: on this CPU (" << probe.lines[0] << "; the set was verified on " << kinds
                 << ") the pinned kernels do not reproduce the set:" << differ;
  }
  EXPECT_TRUE(differ.empty()) << "differs from a fresh `ck_oracle.py gen --set golden`:" << differ;
}

}  // namespace
}  // namespace w4a8::gemm::ck
