// `audit check` and `audit to-f32` end to end, for defects a tester found: a corrupt or tampered
// case file is an input error naming the file, every --json error is JSON on stdout, an external
// command's tensors must have their exact shapes and its hello a known policy, its work directory
// is cleaned up, a CUDA module that is there but unusable is an error (not a skip), an empty
// --kernel is refused, and to-f32 widens FP8 too (checked by numpy).
#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "../cli/run_cli.hpp"
#include "io/atomic_file.hpp"
#include "io/read_file.hpp"
#include "json/dump.hpp"
#include "json/parse.hpp"
#include "safetensors/reader.hpp"
#include "safetensors/writer.hpp"
#include "temp_dir.hpp"

namespace w4a8::audit {
namespace {

using testing::run_cli;
using testing::run_command;

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// A fresh small suite (each test may damage its own).
std::string make_suite() {
  std::string d = test_support::temp_dir("w4a8-audit-defects") + "/s";
  auto r = run_cli("audit make --out " + d + " --grid small 2>&1");
  EXPECT_EQ(r.rc, 0) << r.out;
  return d;
}

json::Value manifest(const std::string& suite) {
  auto m = json::loads_str(*io::read_small_file(suite + "/manifest.json"));
  EXPECT_TRUE(m.ok());
  return m.ok() ? *m : json::Value{};
}

// The first case with M = m on the integer path with 4-bit codes and FP8 scales.
json::Value integer_case(const std::string& suite, std::uint64_t m) {
  const json::Value man = manifest(suite);
  for (const auto& c : man.get("cases")->items)
    if (c.get("m")->text == std::to_string(m) && !c.get("correction")->boolean && c.get("bits")->text == "4" &&
        c.get("scale_dtype")->text == "f8_e4m3")
      return c;
  ADD_FAILURE() << "no such case in the small grid";
  return json::Value::object();
}

std::string command(const std::string& mode) {
  return "--command '" + std::string(W4A8_PYTHON) + " " + W4A8_SOURCE_ROOT + "/tests/audit/commands/reshape.py " +
         W4A8_CLI_BINARY + " --mode " + mode + "'";
}

json::Value parse(const std::string& out) {
  auto p = json::loads_str(out);
  EXPECT_TRUE(p.ok()) << out;
  return p.ok() ? *p : json::Value{};
}
std::string error_field(const json::Value& v, const char* key) {
  const json::Value* e = v.get("error");
  const json::Value* x = e ? e->get(key) : nullptr;
  return x && x->is_string() ? x->text : "";
}

// A: a corrupt case file is an input error (exit 2) naming the file, never a failed case.
TEST(AuditDefects, CorruptCaseFileIsAnInputErrorNamingIt) {
  const std::string s = make_suite();
  const json::Value c = integer_case(s, 1);
  const std::string file = s + "/" + c.get("file")->text;
  std::filesystem::resize_file(file, std::filesystem::file_size(file) / 2);
  const std::string args = "audit check " + s + " --impl fast --case " + c.get("id")->text;
  auto text = run_cli(args + " 2>&1");
  EXPECT_EQ(text.rc, 2) << text.out;
  EXPECT_TRUE(has(text.out, file)) << text.out;
  EXPECT_TRUE(has(text.out, "[audit.case_file]")) << text.out;
  EXPECT_FALSE(has(text.out, "REJECTED")) << text.out;
  auto js = run_cli(args + " --json 2>/dev/null");
  EXPECT_EQ(js.rc, 2) << js.out;
  const json::Value v = parse(js.out);
  EXPECT_FALSE(v.get("ok")->boolean);
  EXPECT_EQ(error_field(v, "code"), "audit.case_file");
  EXPECT_EQ(error_field(v, "file"), file);
  EXPECT_TRUE(has(error_field(v, "message"), "invalid header length")) << js.out;
}

// B: every error of `audit check --json` is a JSON object on stdout.
TEST(AuditDefects, JsonErrorsAreJsonOnStdout) {
  const std::string s = make_suite();
  const std::string none = test_support::temp_dir("w4a8-audit-defects") + "/nosuite";
  struct Case {
    std::string args, code;
  };
  const Case cases[] = {
      {s + " --impl fast --policy bogus", "audit.policy"},
      {none + " --impl fast", "io.open_failed"},
      {s + " --impl fast --kernel x.so", "audit.implementation"},
      {s + " --impl fast --case nope", "audit.no_such_case"},
  };
  for (const auto& c : cases) {
    auto r = run_cli("audit check " + c.args + " --json 2>/dev/null");
    EXPECT_EQ(r.rc, 2) << c.args << "\n" << r.out;
    const json::Value v = parse(r.out);
    ASSERT_TRUE(v.is_object()) << c.args;
    EXPECT_FALSE(v.get("ok")->boolean) << c.args;
    EXPECT_EQ(error_field(v, "code"), c.code) << c.args << "\n" << r.out;
  }
  auto r = run_cli("audit check " + none + " --impl fast --json 2>/dev/null");
  EXPECT_EQ(error_field(parse(r.out), "file"), none + "/manifest.json") << r.out;
}

// C: an external command's tensors are read by their exact shape: a flattened, transposed or
// unsqueezed intermediate is a protocol error naming the tensor and both shapes (a transposed x_q
// has the same bytes as the right one when M = 1).
TEST(AuditDefects, CommandIntermediatesMustHaveTheirShapes) {
  const std::string s = make_suite();
  const json::Value one = integer_case(s, 1);
  const json::Value many = integer_case(s, 3);
  auto dims = [](const json::Value& c, const char* a, const char* b) {
    return "[" + c.get(a)->text + ", " + c.get(b)->text + "]";
  };
  auto ok = run_cli("audit check " + s + " --case " + one.get("id")->text + " " + command("ok") + " --json");
  EXPECT_EQ(ok.rc, 0) << ok.out;
  const std::uint64_t mk = std::stoull(many.get("m")->text) * std::stoull(many.get("k")->text);
  const std::uint64_t mn = std::stoull(many.get("m")->text) * std::stoull(many.get("n")->text);
  struct Case {
    const json::Value& c;
    std::string mode, want;
  };
  const Case cases[] = {
      {many, "flat:x_q", "'x_q' must be I8 [M, K] = " + dims(many, "m", "k") + ", got I8 [" + std::to_string(mk) + "]"},
      {many, "flat:acc", "'acc' must be I32 [M, N] = " + dims(many, "m", "n") + ", got I32 [" + std::to_string(mn) + "]"},
      {one, "transpose:x_q", "'x_q' must be I8 [M, K] = " + dims(one, "m", "k") + ", got I8 " + dims(one, "k", "m")},
      {many, "transpose:w_q", "'w_q' must be I8 [N, K] = " + dims(many, "n", "k") + ", got I8 " + dims(many, "k", "n")},
      {many, "unsqueeze:x_scale", "'x_scale' must be F32 [M] = [" + many.get("m")->text + "], got F32 [" +
                                      many.get("m")->text + ", 1]"},
  };
  for (const auto& c : cases) {
    auto r = run_cli("audit check " + s + " --case " + c.c.get("id")->text + " " + command(c.mode) + " --json");
    EXPECT_EQ(r.rc, 1) << c.mode << "\n" << r.out;
    const json::Value v = parse(r.out);
    ASSERT_TRUE(v.is_object()) << c.mode;
    EXPECT_EQ(v.get("counts")->get("broken")->text, "1") << c.mode << "\n" << r.out;
    const json::Value& k = v.get("cases")->items[0];
    EXPECT_TRUE(has(k.get("message")->text, c.want)) << c.mode << ": " << k.get("message")->text << "\nwant " << c.want;
  }
}

// G: the hello's policy is f32 or eager; anything else leaves the command unusable.
TEST(AuditDefects, HelloPolicyMustBeKnown) {
  const std::string s = make_suite();
  const std::string id = integer_case(s, 1).get("id")->text;
  const std::string args = "audit check " + s + " --case " + id + " ";
  for (const char* policy : {"bf16-nonsense", "7", "F32"}) {
    auto r = run_cli(args + command(std::string("policy:") + policy) + " --json");
    EXPECT_EQ(r.rc, 1) << policy << r.out;
    const json::Value v = parse(r.out);
    ASSERT_TRUE(v.is_object());
    EXPECT_EQ(v.get("counts")->get("broken")->text, "1") << r.out;
    EXPECT_TRUE(has(v.get("cases")->items[0].get("message")->text, "unknown policy")) << r.out;
  }
  auto eager = run_cli("audit check " + s + " --case " + id + " " + command("policy:eager") + " --json");
  EXPECT_EQ(eager.rc, 0) << eager.out;  // the job asks for eager too, and gemm follows it
  EXPECT_EQ(parse(eager.out).get("act_policy")->text, "eager");
}

// F: the work directory a run made is removed at the end; a non-empty stderr log is kept and named;
// --keep-outputs keeps the directory and names it.
TEST(AuditDefects, CommandWorkDirectoryIsCleanedUp) {
  const std::string s = make_suite();
  const std::string id = integer_case(s, 1).get("id")->text;
  const std::string workfile = test_support::temp_dir("w4a8-audit-defects") + "/work";
  auto run = [&](const std::string& mode, const std::string& extra) {
    std::filesystem::remove(workfile);
    auto r = run_command("W4A8_TEST_WORKFILE=" + workfile + " " + W4A8_CLI_BINARY + " audit check " + s + " --case " +
                         id + " " + command(mode) + extra + " 2>&1");
    EXPECT_EQ(r.rc, 0) << r.out;
    auto dir = io::read_small_file(workfile);
    EXPECT_TRUE(dir.ok()) << "the command got no job";
    return std::make_pair(r.out, dir.ok() ? *dir : std::string());
  };
  auto [clean_out, clean] = run("ok", "");
  EXPECT_EQ(clean.rfind("/tmp/w4a8check-audit-", 0), 0u) << clean;
  EXPECT_FALSE(std::filesystem::exists(clean)) << clean << " was left behind";

  auto [err_out, err] = run("stderr", "");
  const std::string log = err + "/command.stderr.log";
  EXPECT_TRUE(std::filesystem::exists(log));
  EXPECT_TRUE(has(err_out, log)) << err_out;
  std::size_t entries = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator(err)) ++entries;
  EXPECT_EQ(entries, 1u) << "only the log is kept";
  std::filesystem::remove_all(err);

  auto [kept_out, kept] = run("ok", " --keep-outputs");
  EXPECT_TRUE(std::filesystem::exists(kept + "/" + id + ".out.safetensors"));
  EXPECT_TRUE(has(kept_out, kept)) << kept_out;
  std::filesystem::remove_all(kept);
}

// D: a CUDA module that is there but cannot be loaded is an error (exit 2) like `gemm --impl cuda`;
// only a missing one skips.
TEST(AuditDefects, UnloadableCudaModuleIsAnError) {
  const std::string s = make_suite();
  const std::string junk = test_support::temp_dir("w4a8-audit-defects") + "/junk.so";
  std::ofstream(junk) << "not a shared library\n";
  auto r = run_command("W4A8CHECK_CUDA_MODULE=" + junk + " " + W4A8_CLI_BINARY + " audit check " + s +
                       " --impl cuda 2>&1");
  EXPECT_EQ(r.rc, 2) << r.out;
  EXPECT_FALSE(has(r.out, "NOTHING RAN")) << r.out;
  EXPECT_TRUE(has(r.out, "[plugin.load_failed]")) << r.out;
  auto j = run_command("W4A8CHECK_CUDA_MODULE=" + junk + " " + W4A8_CLI_BINARY + " audit check " + s +
                       " --impl cuda --json 2>/dev/null");
  EXPECT_EQ(j.rc, 2);
  EXPECT_EQ(error_field(parse(j.out), "code"), "plugin.load_failed") << j.out;
  auto missing = run_command("W4A8CHECK_CUDA_MODULE=" + junk + ".absent " + W4A8_CLI_BINARY + " audit check " + s +
                             " --impl cuda 2>&1");
  EXPECT_EQ(missing.rc, 3) << missing.out;  // nothing ran: neither a pass nor an error
  EXPECT_TRUE(has(missing.out, "NOTHING RAN")) << missing.out;
}

// E: the manifest entry must equal the copy the case file embeds, field by field.
TEST(AuditDefects, TamperedManifestEntryIsACaseFileError) {
  const std::string s = make_suite();
  const json::Value pristine = manifest(s);
  const json::Value c = integer_case(s, 1);
  const std::string id = c.get("id")->text;
  struct Edit {
    const char* field;
    json::Value value;
  };
  const std::string other_dtype = c.get("out_dtype")->text == "f32" ? "bf16" : "f32";
  const std::string other_data = c.get("data")->text == "random" ? "ties" : "random";
  const Edit edits[] = {
      {"codebook", json::Value::from_bool(!c.get("codebook")->boolean)},
      {"bias", json::Value::from_bool(!c.get("bias")->boolean)},
      {"out_dtype", json::Value::from_string(other_dtype)},
      {"data", json::Value::from_string(other_data)},
      {"covers", json::Value::from_string("something else")},
      {"note", json::Value::from_string("a field the file's copy lacks")},
  };
  const std::string check = "audit check " + s + " --impl fast --case " + id + " --json 2>/dev/null";
  for (const auto& e : edits) {
    json::Value m = pristine;
    for (auto& k : m.members)
      if (k.first == "cases")
        for (auto& entry : k.second.items)
          if (entry.get("id")->text == id) entry.set(e.field, e.value);
    const std::string text = json::dump(m);
    ASSERT_TRUE(io::write_file_atomic(s + "/manifest.json",
                                      {reinterpret_cast<const std::uint8_t*>(text.data()), text.size()})
                    .ok());
    auto r = run_cli(check);
    EXPECT_EQ(r.rc, 2) << e.field << "\n" << r.out;
    const json::Value v = parse(r.out);
    EXPECT_EQ(error_field(v, "code"), "audit.case_file") << e.field << "\n" << r.out;
    EXPECT_TRUE(has(error_field(v, "message"), s + "/" + c.get("file")->text)) << r.out;
    EXPECT_TRUE(has(error_field(v, "message"), std::string("'") + e.field + "'")) << e.field << "\n" << r.out;
  }
  const std::string text = json::dump(pristine);
  ASSERT_TRUE(
      io::write_file_atomic(s + "/manifest.json", {reinterpret_cast<const std::uint8_t*>(text.data()), text.size()})
          .ok());
  EXPECT_EQ(run_cli("audit check " + s + " --impl fast --case " + id + " >/dev/null").rc, 0);
}

// I: --kernel with an empty value is refused, never taken for "no --kernel".
TEST(AuditDefects, EmptyKernelIsAUsageError) {
  const std::string s = make_suite();
  auto alone = run_cli("audit check " + s + " --kernel '' 2>&1");
  EXPECT_EQ(alone.rc, 2) << alone.out;
  EXPECT_TRUE(has(alone.out, "--kernel is empty")) << alone.out;
  auto both = run_cli("audit check " + s + " --impl fast --kernel '' 2>&1");
  EXPECT_EQ(both.rc, 2) << both.out;
  EXPECT_TRUE(has(both.out, "(got 2)")) << both.out;
}

// "1 case", not "1 cases".
TEST(AuditDefects, OneCaseIsSingular) {
  const std::string s = make_suite();
  auto r = run_cli("audit check " + s + " --impl fast --case " + integer_case(s, 1).get("id")->text);
  EXPECT_EQ(r.rc, 0) << r.out;
  EXPECT_TRUE(has(r.out, "\n1 case: 1 exact")) << r.out;
  EXPECT_TRUE(has(r.out, " 0 upstream errors,")) << r.out;
}

// H: to-f32 widens FP8 (every byte) to F32 exactly and keeps integers; numpy decodes the bytes
// itself (an independent decoder) and reads the output.
TEST(AuditDefects, ToF32WidensFp8ForNumpy) {
  const std::string d = test_support::temp_dir("w4a8-audit-defects");
  std::vector<std::uint8_t> all(256);
  for (int i = 0; i < 256; ++i) all[std::size_t(i)] = std::uint8_t(i);
  std::vector<st::TensorSpec> t = {{"e4m3", st::Dtype::F8_E4M3, {16, 16}, all},
                                   {"e5m2", st::Dtype::F8_E5M2, {256}, all},
                                   {"e8m0", st::Dtype::F8_E8M0, {256}, all},
                                   {"e4m3fnuz", st::Dtype::F8_E4M3FNUZ, {256}, all},
                                   {"e5m2fnuz", st::Dtype::F8_E5M2FNUZ, {256}, all},
                                   {"q", st::Dtype::I8, {4}, {1, 0xFF, 0x80, 7}}};
  auto bytes = st::serialize(t);
  ASSERT_TRUE(bytes.ok());
  ASSERT_TRUE(io::write_file_atomic(d + "/in.safetensors", *bytes).ok());
  auto r = run_cli("audit to-f32 " + d + "/in.safetensors " + d + "/out.safetensors 2>&1");
  ASSERT_EQ(r.rc, 0) << r.out;
  const std::string py = std::string(W4A8_PYTHON) + " - <<'EOF' 2>&1\n" +
                         "import math, numpy as np, safetensors.numpy as s\n"
                         "o = s.load_file('" + d + "/out.safetensors')\n" +
                         R"PY(
def e4m3(b):
    sign = -1.0 if b & 0x80 else 1.0
    e, m = (b >> 3) & 15, b & 7
    if e == 15 and m == 7: return math.nan
    return sign * (m / 8 * 2.0 ** -6 if e == 0 else (1 + m / 8) * 2.0 ** (e - 7))
def fnuz(b, mbits, bias):  # no inf, no -0: 0x80 is NaN
    if b == 0x80: return math.nan
    e, m = (b & 0x7F) >> mbits, b & ((1 << mbits) - 1)
    v = m / 2 ** mbits * 2.0 ** (1 - bias) if e == 0 else (1 + m / 2 ** mbits) * 2.0 ** (e - bias)
    return -v if b & 0x80 else v
b = np.arange(256)
want = {
    'e4m3': np.array([e4m3(int(x)) for x in b], np.float64).reshape(16, 16),
    'e5m2': (b.astype(np.uint16) << 8).view(np.float16).astype(np.float64),
    'e8m0': np.array([math.nan if x == 255 else 2.0 ** (int(x) - 127) for x in b], np.float64),
    'e4m3fnuz': np.array([fnuz(int(x), 3, 8) for x in b], np.float64),
    'e5m2fnuz': np.array([fnuz(int(x), 2, 16) for x in b], np.float64),
}
assert want['e4m3fnuz'][0x7F] == 240 and want['e5m2fnuz'][0x7F] == 57344 and want['e4m3fnuz'][1] == 2.0 ** -10
for k, w in want.items():
    g = o[k]
    assert g.dtype == np.float32 and g.shape == w.shape, (k, g.dtype, g.shape)
    g = g.astype(np.float64)
    assert np.array_equal(g, w, equal_nan=True), k
    assert np.array_equal(np.signbit(g[~np.isnan(g)]), np.signbit(w[~np.isnan(w)])), k
assert o['q'].dtype == np.int8 and o['q'].tolist() == [1, -1, -128, 7]
print('numpy ok')
EOF)PY";
  auto p = run_command(py);
  EXPECT_EQ(p.rc, 0) << p.out;
  EXPECT_TRUE(has(p.out, "numpy ok")) << p.out;
}

// F4 and F6 are packed below a byte and numpy has no such types: kept as they are, and said so.
TEST(AuditDefects, ToF32KeepsPackedFloatsAndSaysSo) {
  const std::string d = test_support::temp_dir("w4a8-audit-defects");
  std::vector<st::TensorSpec> t = {{"f4", st::Dtype::F4, {4}, {0x21, 0x43}},
                                   {"f6", st::Dtype::F6_E3M2, {4}, {1, 2, 3}},
                                   {"h", st::Dtype::F16, {1}, {0x00, 0x3C}}};
  auto bytes = st::serialize(t);
  ASSERT_TRUE(bytes.ok());
  ASSERT_TRUE(io::write_file_atomic(d + "/in.safetensors", *bytes).ok());
  auto r = run_cli("audit to-f32 " + d + "/in.safetensors " + d + "/out.safetensors 2>&1");
  ASSERT_EQ(r.rc, 0) << r.out;
  EXPECT_TRUE(has(r.out, "w4a8check: warning: kept in their packed dtype (not widened; numpy cannot read them): "
                         "'f4' (F4), 'f6' (F6_E3M2)\n"))
      << r.out;
  auto out = st::File::open(d + "/out.safetensors");
  ASSERT_TRUE(out.ok());
  const auto* f4 = out->header().find("f4");
  const auto* h = out->header().find("h");
  ASSERT_TRUE(f4 && h);
  EXPECT_EQ(f4->dtype, st::Dtype::F4);
  EXPECT_EQ(h->dtype, st::Dtype::F32);
  const auto f4_bytes = out->data(*f4);
  EXPECT_EQ(std::vector<std::uint8_t>(f4_bytes.begin(), f4_bytes.end()), (std::vector<std::uint8_t>{0x21, 0x43}));
}

}  // namespace
}  // namespace w4a8::audit
