// `validate --consumers` (the consumer matrix) and `validate --python` end to end. Hand-built
// checkpoints give one layer per cell kind; every cell's code is hand-derived (docs/validator.md for
// sglang, docs/gemm.md "Operand validation" for comfy-kitchen, kernels/problem.cpp's contract for the
// kernel), and the exact messages are compared with the upstream code itself where it can run:
// sglang's real inspect_comfy_quant_markers from each release's wheel (tools/upstream/
// sglang_upstream.py) and comfy-kitchen's w4a8_int8_linear from the 0.2.35 and 0.2.40 packages
// (tests/cli/ck_operands_check.py, in ~/.cache/w4a8check/ck-venv). Those two are skipped, saying why,
// when their environment is missing.
#include <algorithm>
#include <sstream>
#include <string_view>

#include "cli_fixture.hpp"
#include "gemm/layer.hpp"
#include "json/parse.hpp"

namespace w4a8::testing {
namespace {

const std::string kPy = W4A8_PYTHON;
const std::string kCkPy = W4A8_CK_PYTHON;
const std::vector<std::string> kSglang = {"0.5.19", "0.5.20", "0.5.21", "0.5.22", "0.5.23"};
// Consumer columns: the five sglang profiles, comfy-kitchen 0.2.35 and 0.2.40, the CUDA kernel.
constexpr std::size_t kColumns = 8;

std::vector<std::uint8_t> bytes_of(const std::string& s) { return {s.begin(), s.end()}; }

st::TensorSpec marker(const std::string& prefix, const std::string& json) {
  return {prefix + ".comfy_quant", st::Dtype::U8, {json.size()}, bytes_of(json)};
}

std::vector<st::TensorSpec> w4a8_layer(const std::string& p, std::uint64_t n, std::uint64_t k, std::int64_t g,
                                       std::int64_t r, int bits = 4, gemm::ScaleDtype sd = gemm::ScaleDtype::Fp8E4M3) {
  return gemm::layer_tensors(gemm::make_zero_layer(n, k, g, r, bits, sd), p);
}

// An empty layer (N = 0 or K = 0, G 16, R 256), optionally with a correction [K/G, N] (the correction
// path) and a bias [N], all zeros.
std::vector<st::TensorSpec> empty_layer(const std::string& p, std::uint64_t n, std::uint64_t k, bool correction,
                                        bool bias, gemm::ScaleDtype sd = gemm::ScaleDtype::Fp8E4M3) {
  gemm::Layer l = gemm::make_zero_layer(n, k, 16, 256, 4, sd);
  if (correction) {
    l.correction_shape = gemm::Shape{k / 16, n};
    l.correction.assign(k / 16 * n, 0.0f);
  }
  if (bias) {
    l.bias_shape = gemm::Shape{n};
    l.bias.assign(n, 0.0f);
  }
  return gemm::layer_tensors(l, p);
}

std::vector<st::TensorSpec>& drop(std::vector<st::TensorSpec>& t, const std::string& name) {
  std::erase_if(t, [&](const st::TensorSpec& s) { return s.name == name; });
  return t;
}

// One layer per cell kind, named blk.<case>, with the codes every consumer must give it.
struct Case {
  std::string name;
  std::vector<st::TensorSpec> tensors;
  std::vector<std::string> codes;  // kColumns entries: "ok", "n/a" or an error code
};

std::vector<Case> cases() {
  std::vector<Case> out;
  auto five = [](const std::string& c) { return std::vector<std::string>(5, c); };
  auto join = [](std::vector<std::string> a, std::initializer_list<std::string> b) {
    a.insert(a.end(), b);
    return a;
  };
  // A kernel-ready 4-bit FP8 layer: every consumer loads it.
  out.push_back({"ok", w4a8_layer("blk.ok", 8, 256, 16, 256), std::vector<std::string>(kColumns, "ok")});
  // 6-bit rows [8, 192]: sglang reads K = 2 * 192 = 384, so s_rel should be [8, 24] (it is [8, 16]);
  // comfy-kitchen 0.2.35 reads the same K and 384 % 256 != 0 (its combined contract check); 0.2.40
  // takes K = 16 * 16 = 256 from the scale grid and 6 bits from the row; the kernel refuses 6 bits.
  out.push_back({"six", w4a8_layer("blk.six", 8, 256, 16, 256, 6),
                 join(five("sglang.w4a8.shapes"), {"gemm.contract", "ok", "cuda.unsupported"})});
  // F32 group scales: sglang needs FP8 ones; every comfy-kitchen release decodes s_rel.float();
  // the kernel refuses F32 scales.
  out.push_back({"f32", w4a8_layer("blk.f32", 8, 256, 16, 256, 4, gemm::ScaleDtype::F32),
                 join(five("sglang.w4a8.dtypes"), {"ok", "ok", "cuda.unsupported"})});
  // A 3-D packed weight: sglang's rank rule; comfy-kitchen's first check (2-D int8); the kernel path
  // runs comfy-kitchen 0.2.40's checks first.
  {
    auto t = w4a8_layer("blk.rank3", 8, 256, 16, 256);
    t[0].shape = {2, 4, 128};
    out.push_back({"rank3", t, join(five("sglang.w4a8.rank"), {"gemm.packed_weight", "gemm.packed_weight", "gemm.packed_weight"})});
  }
  // group_size = 3 (K = 48): sglang refuses G < 4; 0.2.35's combined check; 0.2.40's G check.
  {
    std::vector<st::TensorSpec> t = {
        {"blk.g3.weight", st::Dtype::I8, {8, 24}, std::vector<std::uint8_t>(8 * 24, 0x88)},
        {"blk.g3.weight_s_rel", st::Dtype::F8_E4M3, {8, 16}, std::vector<std::uint8_t>(8 * 16, 0x38)},
        {"blk.g3.weight_s_channel", st::Dtype::F32, {8}, std::vector<std::uint8_t>(32, 0)},
        marker("blk.g3", R"({"format": "asym_w4a8_int8", "group_size": 3, "convrot": true, "convrot_groupsize": 16})")};
    out.push_back({"g3", t, join(five("sglang.w4a8.group_size"), {"gemm.contract", "gemm.group_size", "gemm.group_size"})});
  }
  // No channel scales: sglang's required-tensor list; nothing for the GEMM to load.
  {
    auto t = w4a8_layer("blk.nochan", 8, 256, 16, 256);
    out.push_back({"nochan", drop(t, "blk.nochan.weight_s_channel"),
                   join(five("sglang.missing_tensors"), {"consumer.missing_tensor", "consumer.missing_tensor", "consumer.missing_tensor"})});
  }
  // group_size "abc": int() raises for every consumer.
  {
    auto t = w4a8_layer("blk.badint", 8, 256, 16, 256);
    t.back() = marker("blk.badint", R"({"format": "asym_w4a8_int8", "group_size": "abc", "convrot": true})");
    out.push_back({"badint", t, std::vector<std::string>(kColumns, "python.int.invalid_literal")});
  }
  // group_size 2^64: sglang finds it a legal group size (a multiple of 16), then wants s_rel
  // [8, 256 // 2^64] = [8, 0], not [8, 16]. It is beyond the 64 bits the GEMM's checks are modelled
  // in, so the W4A8 consumers' cells say it is not predicted (saturated, it printed, and was judged
  // as, 2^63 - 1).
  {
    auto t = w4a8_layer("blk.gbig", 8, 256, 16, 256);
    t.back() = marker("blk.gbig", R"({"format": "asym_w4a8_int8", "group_size": 18446744073709551616, "convrot": true})");
    out.push_back({"gbig", t, join(five("sglang.w4a8.shapes"), {"consumer.int_range", "consumer.int_range", "consumer.int_range"})});
  }
  // Empty layers, which sglang loads (only --strict refuses them). comfy-kitchen's eager integer path
  // raises on them after its operand checks, whatever M is: N = 0 in its chunk sizing (256 MiB //
  // (N * 4): ZeroDivisionError), K = 0 (0.2.35 only; 0.2.40's row-width check refuses K = 0 on both
  // paths) in its ConvRot reshape (RuntimeError); a bias changes nothing. Neither is a ValueError:
  // usage.error, as `gemm` reports them. Its correction path (F.linear) computes them. The kernel
  // column: the same upstream error first (as `gemm --impl cuda`), else the kernel's own refusal.
  for (const bool bias : {false, true}) {
    const std::string b = bias ? "bias" : "";
    out.push_back({"n0" + b, empty_layer("blk.n0" + b, 0, 256, false, bias),
                   join(five("ok"), {"usage.error", "usage.error", "usage.error"})});
    out.push_back({"n0corr" + b, empty_layer("blk.n0corr" + b, 0, 256, true, bias),
                   join(five("ok"), {"ok", "ok", "cuda.unsupported"})});
    out.push_back({"k0" + b, empty_layer("blk.k0" + b, 8, 0, false, bias),
                   join(five("ok"), {"usage.error", "gemm.row_width", "gemm.row_width"})});
    out.push_back({"k0corr" + b, empty_layer("blk.k0corr" + b, 8, 0, true, bias),
                   join(five("ok"), {"ok", "gemm.row_width", "gemm.row_width"})});
  }
  // Another Comfy format: sglang checks it (accepted); the W4A8 consumers do not load it.
  {
    std::vector<st::TensorSpec> t = {{"blk.int8.weight", st::Dtype::I8, {8, 16}, std::vector<std::uint8_t>(128, 1)},
                                     {"blk.int8.weight_scale", st::Dtype::F32, {}, std::vector<std::uint8_t>(4, 0)},
                                     marker("blk.int8", R"({"format": "int8_tensorwise"})")};
    out.push_back({"int8", t, join(five("ok"), {"n/a", "n/a", "n/a"})});
  }
  return out;
}

class ConsumersCli : public CliFixture {
 protected:
  // validate --consumers --json FILES, parsed; rc through `rc`.
  json::Value matrix(const std::string& args, int& rc) {
    const CliRun r = run_cli("validate --consumers --json " + args);
    rc = r.rc;
    auto v = json::loads_str(r.out);
    EXPECT_TRUE(v.ok()) << r.out;
    return v.ok() ? *v : json::Value{};
  }
  // The codes of one layer's cells ("ok", "n/a", or the legend entry's code).
  static std::vector<std::string> codes(const json::Value& m, const std::string& prefix) {
    std::vector<std::string> out;
    const json::Value* layer = m.get("layers")->get(prefix);
    if (!layer) return {"(no row)"};
    for (const json::Value& c : layer->get("cells")->items)
      out.push_back(c.text == "ok" || c.text == "n/a" ? c.text : m.get("errors")->get(c.text)->get("code")->text);
    return out;
  }
  // A layer-level refusal's exact message for one consumer ("ok" when it loads the layer).
  static std::string message(const json::Value& m, const std::string& prefix, const std::string& consumer) {
    const json::Value* layer = m.get("layers")->get(prefix);
    const json::Value* msg = layer ? layer->get("messages")->get(consumer) : nullptr;
    return msg ? msg->text : "ok";
  }
  // Each case in a file of its own, plus all of them in one checkpoint.
  std::string write_cases() {
    std::vector<st::TensorSpec> all;
    for (const Case& c : cases()) {
      write(p(c.name + ".safetensors"), c.tensors);
      all.insert(all.end(), c.tensors.begin(), c.tensors.end());
    }
    write(p("all.safetensors"), all);
    return p("all.safetensors");
  }
};

TEST_F(ConsumersCli, EveryCellKindHasItsHandDerivedCode) {
  const std::string all = write_cases();
  int rc = -1;
  const json::Value m = matrix(all, rc);
  EXPECT_EQ(rc, 1) << "sglang 0.5.23 refuses several layers";
  EXPECT_FALSE(m.get("ok")->boolean);
  EXPECT_EQ(m.get("upstream")->get("sglang")->text, "0.5.23");
  EXPECT_EQ(m.get("upstream")->get("python")->text, "3.11");
  std::vector<std::string> names;
  for (const json::Value& c : m.get("consumers")->items) names.push_back(c.get("name")->text);
  EXPECT_EQ(names, (std::vector<std::string>{"sglang 0.5.19", "sglang 0.5.20", "sglang 0.5.21", "sglang 0.5.22", "sglang 0.5.23",
                                             "comfy-kitchen 0.2.35", "comfy-kitchen 0.2.40", "CUDA kernel"}));
  for (const Case& c : cases()) EXPECT_EQ(codes(m, "blk." + c.name), c.codes) << c.name;
  // The kernel's own reasons, by name.
  EXPECT_NE(message(m, "blk.six", "CUDA kernel").find("6-bit codes (bits = 6) unsupported by this kernel"), std::string::npos);
  EXPECT_NE(message(m, "blk.f32", "CUDA kernel").find("F32 group scales"), std::string::npos);
  EXPECT_EQ(message(m, "blk.nochan", "comfy-kitchen 0.2.40"),
            "layer 'blk.nochan' has no 'blk.nochan.weight_s_channel' tensor, which the W4A8 GEMM reads");
  // Upstream's exceptions on empty layers, in the words `gemm` uses for them.
  const std::string zde = "N=0: upstream raises ZeroDivisionError: integer division or modulo by zero";
  for (const char* who : {"comfy-kitchen 0.2.35", "comfy-kitchen 0.2.40", "CUDA kernel"}) {
    EXPECT_EQ(message(m, "blk.n0", who), zde) << who;
    EXPECT_EQ(message(m, "blk.n0bias", who), zde) << who;
  }
  EXPECT_EQ(
      message(m, "blk.k0", "comfy-kitchen 0.2.35"),
      "K=0: upstream raises RuntimeError: cannot reshape tensor of 0 elements into shape [-1, 0, 256] because the "
      "unspecified dimension size -1 can be any value and is ambiguous");
  EXPECT_NE(message(m, "blk.n0corr", "CUDA kernel").find("n <= 0"), std::string::npos);
  // Consumers that load everything they load: comfy-kitchen and the kernel refuse some layers too.
  for (const json::Value& c : m.get("consumers")->items) EXPECT_FALSE(c.get("accepts")->boolean) << c.get("name")->text;
  // Alone, the accepted layer: exit 0, every consumer accepts.
  const json::Value ok = matrix(p("ok.safetensors"), rc);
  EXPECT_EQ(rc, 0);
  for (const json::Value& c : ok.get("consumers")->items) EXPECT_TRUE(c.get("accepts")->boolean) << c.get("name")->text;
}

// A header marker that summarizes a tensor marker (corpus/validator/211, verdicts from the wheels):
// 0.5.19 compares whole markers and refuses the checkpoint; 0.5.20+ merge key by key.
TEST_F(ConsumersCli, CheckpointLevelErrorShownOnceAndExitFollowsSglang) {
  const std::string f = kRoot + "/corpus/validator/211-merge-header-subset/model.safetensors";
  int rc = -1;
  const json::Value m = matrix(f, rc);
  EXPECT_EQ(rc, 0) << "the default (0.5.23) accepts";
  const json::Value& first = m.get("consumers")->items[0];
  ASSERT_TRUE(first.get("checkpoint")->is_object());
  EXPECT_EQ(first.get("checkpoint")->get("message")->text, "Conflicting Comfy quantization markers for 'm'");
  EXPECT_EQ(codes(m, "m"), (std::vector<std::string>{"sglang.conflicting_markers", "ok", "ok", "ok", "ok", "ok", "ok", "ok"}));
  EXPECT_EQ(message(m, "m", "sglang 0.5.19"), "ok") << "a checkpoint-level error is not repeated per layer";
  matrix("--sglang 0.5.19 " + f, rc);
  EXPECT_EQ(rc, 1);
  const CliRun t = run_cli("validate --consumers --sglang 0.5.19 " + f);
  EXPECT_EQ(t.rc, 1);
  EXPECT_NE(t.out.find("REJECTED: sglang 0.5.19 (Python 3.11) refuses the whole checkpoint: E1\n"), std::string::npos) << t.out;
  EXPECT_NE(t.out.find("sglang 0.5.19 refuses the whole checkpoint (every layer): E1 ValueError: Conflicting Comfy "
                       "quantization markers for 'm'\n"),
            std::string::npos)
      << t.out;
}

// A container error in a later shard: every sglang profile refuses the checkpoint (replaying the
// shards itself), and no layer row exists.
TEST_F(ConsumersCli, ContainerErrorRefusesTheCheckpointForEverySglang) {
  write(p("a.safetensors"), w4a8_layer("blk", 8, 256, 16, 256));
  spit(p("b.safetensors"), std::string("\x08\x00\x00\x00\x00\x00\x00\x00{}junk", 14));
  int rc = -1;
  const json::Value m = matrix(p("a.safetensors") + " " + p("b.safetensors"), rc);
  EXPECT_EQ(rc, 1);
  for (std::size_t i = 0; i < 5; ++i) {
    const json::Value* cp = m.get("consumers")->items[i].get("checkpoint");
    ASSERT_TRUE(cp->is_object()) << i;
    EXPECT_EQ(m.get("errors")->get(cp->get("error")->text)->get("code")->text.rfind("safetensors.", 0), 0u);
    ASSERT_NE(cp->get("file"), nullptr) << "the shard with the container error is named";
    EXPECT_EQ(cp->get("file")->text, p("b.safetensors"));
  }
  EXPECT_TRUE(m.get("layers")->members.empty());
  // No loader gets past the container: comfy-kitchen and the kernel refuse it too (they read the
  // files with safetensors; they were shown accepting a file that cannot be opened).
  for (std::size_t i = 5; i < m.get("consumers")->items.size(); ++i) {
    const json::Value& c = m.get("consumers")->items[i];
    EXPECT_EQ(c.get("accepts")->kind, json::Kind::Bool);
    EXPECT_FALSE(c.get("accepts")->boolean) << c.get("name")->text;
    ASSERT_TRUE(c.get("checkpoint")->is_object()) << c.get("name")->text;
    EXPECT_EQ(c.get("checkpoint")->get("file")->text, p("b.safetensors"));
  }
  const CliRun t = cli("validate --consumers " + p("a.safetensors") + " " + p("b.safetensors"));
  EXPECT_NE(t.out.find("CUDA kernel refuses the whole checkpoint (every layer): E1 "), std::string::npos) << t.out;
  // The legend says what it refused: no layer row exists, and "0 cell(s)" read as nothing refused.
  EXPECT_NE(t.out.find("E1  [safetensors.InvalidHeaderLength] the whole checkpoint, for 8 consumer(s), first: "),
            std::string::npos)
      << t.out;
  EXPECT_NE(t.out.find("refuses the whole checkpoint (every layer): E1 " + p("b.safetensors") + ": SafetensorError: "),
            std::string::npos)
      << t.out;
}

// Text from the file (a marker's format and keys) is shown as repr() shows it when it holds
// control characters: a checkpoint cannot forge an "OK:" line or send escapes to a CI log (the
// format and keys were printed raw in the layer list, --summary and the --consumers table).
TEST_F(ConsumersCli, FileTextCannotWriteLinesOrEscapesIntoReports) {
  std::vector<st::TensorSpec> t = w4a8_layer("blk", 8, 256, 16, 256);
  t.push_back(marker("evil", R"({"format": "x\nOK: fake\u001b[2J", "k\n": 1})"));
  t.push_back(marker("also", R"({"format": "other", "k\u001b": 1})"));
  write(p("m.safetensors"), t);
  for (const std::string mode : {"", "--summary ", "--consumers ", "--consumers --summary "}) {
    const CliRun r = cli("validate " + mode + p("m.safetensors"));
    EXPECT_EQ(r.out.find('\x1b'), std::string::npos) << mode << r.out;
    EXPECT_EQ(r.out.find("\nOK: fake"), std::string::npos) << mode << r.out;
    EXPECT_NE(r.out.find(R"('x\nOK: fake\x1b[2J')"), std::string::npos) << mode << r.out;
  }
  const CliRun r = cli("validate " + p("m.safetensors"));
  EXPECT_NE(r.out.find(R"( 'k\x1b'=1)"), std::string::npos) << r.out;
}

// Huge models: one line per layer with short codes, one legend entry per error kind (not per
// message), and --summary groups identical rows.
TEST_F(ConsumersCli, TextIsOneLinePerLayerWithALegendPerKind) {
  std::vector<st::TensorSpec> t;
  for (int i = 0; i < 40; ++i) {
    auto l = w4a8_layer("blk." + std::to_string(i), 8, 256, 16, 256, i < 30 ? 6 : 4);
    t.insert(t.end(), l.begin(), l.end());
  }
  write(p("m.safetensors"), t);
  CliRun r = run_cli("validate --consumers " + p("m.safetensors"));
  EXPECT_EQ(r.rc, 1);
  std::istringstream in(r.out);
  std::size_t rows = 0, legend = 0;
  for (std::string line; std::getline(in, line);) {
    rows += line.rfind("'blk.", 0) == 0;
    legend += line.size() > 1 && line[0] == 'E' && std::isdigit(static_cast<unsigned char>(line[1]));
  }
  EXPECT_EQ(rows, 40u);
  EXPECT_EQ(legend, 3u) << r.out;  // sglang.w4a8.shapes, gemm.contract, cuda.unsupported
  EXPECT_NE(r.out.find("REJECTED: sglang 0.5.23 (Python 3.11) refuses 30 of 40 layer(s)\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("E1  [sglang.w4a8.shapes] 150 cell(s), first: ValueError: Comfy W4A8 layer 'blk.0' has "
                       "incompatible weight/scale shapes: (8, 192), (8, 16), and (8,)\n"),
            std::string::npos)
      << r.out;
  r = run_cli("validate --consumers --summary " + p("m.safetensors"));
  EXPECT_NE(r.out.find("\n30 layer(s), e.g. 'blk.0'   asym_w4a8_int8  E1      E1      E1      E1      E1      E2      ok      E3\n"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("\n10 layer(s), e.g. 'blk.30'  asym_w4a8_int8  ok      ok      ok      ok      ok      ok      ok      ok\n"),
            std::string::npos)
      << r.out;
  int rc = -1;
  const json::Value g = matrix("--summary " + p("m.safetensors"), rc);
  ASSERT_EQ(g.get("groups")->items.size(), 2u);
  EXPECT_EQ(g.get("groups")->items[0].get("count")->text, "30");
}

// An empty layer's comfy-kitchen cells are what `gemm --comfy-kitchen V` reports on that layer for
// any input rows (M = 0, 1, 3): F32 group scales, so that gemm judges it by comfy-kitchen alone (an
// FP8 one is refused by gemm's strict validation first).
// Columns stay aligned with non-ASCII layer names: widths count terminal columns, not bytes ('blk.é'
// is 8 bytes but 7 columns, 'blk.漢' 9 bytes and 8 columns: two for the wide character). Each row's
// format column then starts two spaces after the widest label (8 columns); by bytes, 'blk.a' got 4
// spaces and 'blk.é' 3.
TEST_F(ConsumersCli, NonAsciiNamesKeepTheColumnsAligned) {
  std::vector<st::TensorSpec> t;
  for (const std::string name : {"blk.a", "blk.\xc3\xa9", "blk.\xe6\xbc\xa2"}) {
    auto l = w4a8_layer(name, 8, 256, 16, 256);
    t.insert(t.end(), l.begin(), l.end());
  }
  write(p("u.safetensors"), t);
  const CliRun r = cli("validate --consumers " + p("u.safetensors"));
  EXPECT_EQ(r.rc, 0) << r.out;
  for (const std::string row : {"'blk.a'   asym_w4a8_int8  ok", "'blk.\xc3\xa9'   asym_w4a8_int8  ok",
                                "'blk.\xe6\xbc\xa2'  asym_w4a8_int8  ok", "layer     format "})
    EXPECT_NE(r.out.find("\n" + row), std::string::npos) << row << "\n" << r.out;
}

TEST_F(ConsumersCli, EmptyLayerCellsAreWhatGemmReports) {
  struct Empty {
    std::string name;
    std::uint64_t n, k;
    bool correction, bias;
  };
  const std::vector<Empty> layers = {{"n0", 0, 256, false, false},
                                     {"n0bias", 0, 256, false, true},
                                     {"n0corr", 0, 256, true, true},
                                     {"k0", 8, 0, false, false},
                                     {"k0corr", 8, 0, true, true}};
  for (const Empty& e : layers) {
    write(p(e.name + ".safetensors"), empty_layer("l", e.n, e.k, e.correction, e.bias, gemm::ScaleDtype::F32));
    int rc = -1;
    const json::Value m = matrix(p(e.name + ".safetensors"), rc);
    for (const std::uint64_t rows : {0, 1, 3}) {
      const std::string x = p(e.name + "_x" + std::to_string(rows) + ".safetensors");
      write(x, {gemm::float_tensor("input", gemm::FloatDtype::F32, {rows, e.k}, std::vector<float>(rows * e.k, 0.0f))});
      const std::string gemm_args = "gemm --checkpoint " + p(e.name + ".safetensors") + " --layer l --input " + x +
                                    " --out " + p("out.safetensors") + " --comfy-kitchen ";
      for (const std::string release : {"0.2.35", "0.2.40"}) {
        const std::string what = e.name + " M=" + std::to_string(rows) + " under " + release;
        const std::string cell = message(m, "l", "comfy-kitchen " + release);
        const CliRun g = cli(gemm_args + release);
        if (cell == "ok") {
          EXPECT_EQ(g.rc, 0) << what << "\n" << g.out;
        } else {
          EXPECT_NE(g.rc, 0) << what << "\n" << g.out;
          EXPECT_NE(g.out.find(cell + "\n  ["), std::string::npos) << what << ": cell '" << cell << "'\n" << g.out;
        }
        fs::remove(p("out.safetensors"));
      }
    }
  }
  // The text legend: the kind's Python type and code, then the message naming upstream's exception.
  const CliRun t = cli("validate --consumers " + p("n0.safetensors"));
  EXPECT_NE(t.out.find("'l'    asym_w4a8_int8  E1      E1      E1      E1      E1      E2      E2      E2\n"),
            std::string::npos)
      << t.out;
  EXPECT_NE(
      t.out.find("E2  [usage.error] 3 cell(s), first: UsageError: N=0: upstream raises ZeroDivisionError: integer "
                 "division or modulo by zero\n"),
      std::string::npos)
      << t.out;
}

TEST_F(ConsumersCli, ExcludesStrictAndQuiet) {
  write(p("ok.safetensors"), w4a8_layer("blk", 8, 256, 16, 256));
  EXPECT_EQ(run_cli("validate --consumers --strict " + p("ok.safetensors") + " 2>&1").rc, 2);
  EXPECT_EQ(run_cli("validate --consumers --quiet " + p("ok.safetensors") + " 2>&1").rc, 2);
}

// An I/O error names its file once, as without --consumers.
TEST_F(ConsumersCli, MissingFileIsNamedOnce) {
  const std::string missing = p("missing.safetensors");
  auto r = run_cli("validate --consumers " + missing + " 2>&1");
  EXPECT_EQ(r.rc, 2);
  EXPECT_EQ(r.out, "w4a8check: cannot open " + missing + ": No such file or directory\n  [io.open_failed]\n");
}

// A later shard that cannot be opened is never reached when every release refuses an earlier one
// (upstream checks each shard before opening the next): the matrix and exit 1, as `validate` says,
// not the later shard's I/O error (exit 2). Reached, it is still that error.
TEST_F(ConsumersCli, AnEarlierShardsRefusalWinsOverALaterMissingShard) {
  std::vector<st::TensorSpec> bad = w4a8_layer("blk", 8, 256, 16, 256);
  drop(bad, "blk.comfy_quant").push_back(marker("blk", "{x}"));
  write(p("bad.safetensors"), bad);
  const std::string missing = p("missing.safetensors");
  const CliRun plain = run_cli("validate " + p("bad.safetensors") + " " + missing + " 2>&1");
  EXPECT_EQ(plain.rc, 1) << plain.out;
  int rc = -1;
  const json::Value m = matrix(p("bad.safetensors") + " " + missing, rc);
  EXPECT_EQ(rc, 1);
  for (std::size_t i = 0; i < 5; ++i) {
    const json::Value* cp = m.get("consumers")->items[i].get("checkpoint");
    ASSERT_TRUE(cp != nullptr && cp->is_object()) << i;
    EXPECT_EQ(cp->get("message")->text, "Invalid Comfy quantization marker 'blk.comfy_quant' in " + p("bad.safetensors"));
  }
  write(p("ok.safetensors"), w4a8_layer("blk", 8, 256, 16, 256));
  const CliRun reached = run_cli("validate --consumers " + p("ok.safetensors") + " " + missing + " 2>&1");
  EXPECT_EQ(reached.rc, 2) << reached.out;
  EXPECT_NE(reached.out.find("cannot open " + missing), std::string::npos) << reached.out;
}

// sglang's real function, each release's wheel, on each one-layer file: the matrix's sglang cells
// hold exactly the verdict that release gives.
TEST_F(ConsumersCli, SglangCellsMatchEachReleaseWheel) {
#ifdef W4A8_SANITIZED
  GTEST_SKIP() << "sanitizer build: the wheel comparison runs in the plain build (Python time only)";
#endif
  write_cases();
  for (std::size_t v = 0; v < kSglang.size(); ++v) {
    std::string jobs;
    for (const Case& c : cases()) jobs += "{\"dir\": \"" + dir_.string() + "\", \"files\": [\"" + c.name + ".safetensors\"]}\n";
    spit(p("jobs.txt"), jobs);
    std::string cmd = "W4A8_OFFLINE=${W4A8_OFFLINE:-} ";
    cmd.append(kPy).append(" ").append(kRoot).append("/tools/upstream/sglang_upstream.py --sglang ").append(kSglang[v]);
    cmd.append(" --batch < ").append(p("jobs.txt")).append(" 2>&1");
    const CliRun o = run_command(cmd);
    if (o.rc != 0 && o.out.find("Wheel") != std::string::npos) GTEST_SKIP() << "no sglang " << kSglang[v] << " wheel: " << o.out;
    ASSERT_EQ(o.rc, 0) << o.out;
    std::istringstream in(o.out);
    for (const Case& c : cases()) {
      std::string line;
      ASSERT_TRUE(std::getline(in, line)) << o.out;
      auto verdict = json::loads_str(line);
      ASSERT_TRUE(verdict.ok()) << line;
      int rc = -1;
      const json::Value m = matrix(p(c.name + ".safetensors"), rc);
      const std::string want = verdict->get("ok")->boolean ? "ok" : verdict->get("message")->text;
      EXPECT_EQ(message(m, "blk." + c.name, "sglang " + kSglang[v]), want) << c.name << " under " << kSglang[v];
    }
  }
}

// comfy-kitchen's own w4a8_int8_linear, one test per release (so a missing older package cannot
// hide the newer one's result), on zero tensors of each layer's dtypes and shapes with an F32 input
// [1, K]: its first exception is the cell's message, byte for byte (for usage.error: the message's
// end). The venv of tools/upstream/ck_env.sh holds its default release; another one is a --target
// install beside it.
constexpr std::string_view kCkVenvRelease = "0.2.40";

class ConsumersCliCk : public ConsumersCli, public ::testing::WithParamInterface<const char*> {};

TEST_P(ConsumersCliCk, CellsMatchTheRealPackage) {
#ifdef W4A8_SANITIZED
  GTEST_SKIP() << "sanitizer build: the comfy-kitchen comparison runs in the plain build (torch import time)";
#endif
  const std::string version = GetParam();
  if (kCkPy.empty() || !fs::exists(kCkPy) || run_command(kCkPy + " -c 'import torch, comfy_kitchen' 2>/dev/null").rc != 0)
    GTEST_SKIP() << "no Python with torch + comfy-kitchen at '" << kCkPy << "' (tools/upstream/ck_env.sh builds it)";
  std::string path;  // PYTHONPATH: empty for the venv's own release
  if (version != kCkVenvRelease) {
    path = fs::path(kCkPy).parent_path().parent_path().parent_path().string() + "/ck-pkgs/" + version;
    if (!fs::exists(path))
      GTEST_SKIP() << "no comfy-kitchen " << version << " at " << path << " (tools/upstream/ck_env.sh " << version << ")";
  }
  write_cases();
  std::string files;
  for (const Case& c : cases()) files += " " + p(c.name + ".safetensors");
  const CliRun o = run_command("PYTHONPATH=" + path + " " + kCkPy + " " + kRoot + "/tests/cli/ck_operands_check.py" + files + " 2>&1");
  ASSERT_EQ(o.rc, 0) << o.out;
  auto verdicts = json::loads_str(o.out.substr(o.out.find('{')));
  ASSERT_TRUE(verdicts.ok()) << o.out;
  ASSERT_EQ(verdicts->get("comfy_kitchen")->text, version);
  for (const Case& c : cases()) {
    int rc = -1;
    const json::Value m = matrix(p(c.name + ".safetensors"), rc);
    const json::Value* v = verdicts->get("layers")->get(p(c.name + ".safetensors"));
    ASSERT_NE(v, nullptr) << c.name;
    const json::Value* upstream = v->get("blk." + c.name);
    const std::string ours = message(m, "blk." + c.name, "comfy-kitchen " + version);
    if (upstream == nullptr) {  // not an asym_w4a8_int8 layer: not loaded by the W4A8 GEMM
      EXPECT_EQ(codes(m, "blk." + c.name)[version == "0.2.35" ? 5 : 6], "n/a") << c.name;
    } else if (codes(m, "blk." + c.name)[version == "0.2.35" ? 5 : 6] == "consumer.int_range") {
      // Not predicted (beyond 64 bits): ours names the value. The package cannot even be called on
      // this layer: torch refuses an input [1, K] whose K overflows int64.
      EXPECT_NE(ours.find("outside the 64-bit range"), std::string::npos) << c.name << " " << ours;
      EXPECT_EQ(upstream->text.rfind("no input [1, ", 0), 0u) << c.name << ": " << upstream->text;
    } else if (upstream->text.rfind("missing ", 0) == 0) {
      EXPECT_NE(ours.find(upstream->text.substr(8)), std::string::npos) << c.name << " " << ours;
    } else if (codes(m, "blk." + c.name)[version == "0.2.35" ? 5 : 6] == "usage.error") {
      // A Python error that is not a ValueError (no kind of its own): ours ends with upstream's.
      EXPECT_TRUE(ours.ends_with("upstream raises " + upstream->text))
          << c.name << " under comfy-kitchen " << version << ": ours '" << ours << "', upstream '" << upstream->text
          << "'";
    } else {
      EXPECT_EQ(upstream->text == "ok" ? "ok" : upstream->text, ours == "ok" ? "ok" : "ValueError: " + ours)
          << c.name << " under comfy-kitchen " << version;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(ComfyKitchen, ConsumersCliCk, ::testing::Values("0.2.40", "0.2.35"),
                         [](const ::testing::TestParamInfo<const char*>& i) {
                           std::string n = i.param;
                           std::replace(n.begin(), n.end(), '.', '_');
                           return n;
                         });

// --python: U+0CF3 (KANNADA SIGN COMBINING ANUSVARA ABOVE RIGHT) was added in Unicode 15.0, so
// Python 3.11 (Unicode 14.0) finds it unprintable and repr() escapes it, while 3.12+ print it.
TEST_F(ConsumersCli, PythonVersionChangesTheMessage) {
  const std::string name = "blk\xe0\xb3\xb3";  // "blk" + U+0CF3
  auto t = w4a8_layer(name, 8, 256, 16, 256);
  t[0].shape = {2, 4, 128};
  write(p("u.safetensors"), t);
  const CliRun a = run_cli("validate --python 3.11 " + p("u.safetensors"));
  EXPECT_EQ(a.rc, 1);
  EXPECT_NE(a.out.find("Comfy W4A8 layer 'blk\\u0cf3' needs a 2D packed weight, got (2, 4, 128)\n  [sglang.w4a8.rank] "
                       "(sglang 0.5.23, Python 3.11)"),
            std::string::npos)
      << a.out;
  for (const char* v : {"3.12", "3.13", "3.14"}) {
    const CliRun b = run_cli(std::string("validate --python ") + v + " " + p("u.safetensors"));
    EXPECT_NE(b.out.find("Comfy W4A8 layer '" + name + "' needs a 2D packed weight"), std::string::npos) << v << b.out;
    EXPECT_NE(b.out.find(std::string("(sglang 0.5.23, Python ") + v + ")"), std::string::npos) << b.out;
  }
  // The interpreter this machine has (3.11) as the oracle of its own repr().
  const CliRun o = run_command(kPy + " -c 'import sys; print(sys.version_info[:2] == (3, 11), repr(\"blk\\u0cf3\"))'");
  if (o.out.rfind("True", 0) == 0) {
    EXPECT_EQ(o.out, "True 'blk\\u0cf3'\n");
  }
  // JSON names the Python; so does the consumer matrix.
  const CliRun j = run_cli("validate --json --python 3.13 " + p("u.safetensors"));
  EXPECT_NE(j.out.find("\"upstream\": {\"sglang\": \"0.5.23\", \"python\": \"3.13\"}"), std::string::npos) << j.out;
  // json.dumps escapes the printable character itself; under 3.11 it would escape repr()'s backslash.
  EXPECT_NE(j.out.find("layer 'blk\\u0cf3' needs"), std::string::npos) << j.out;
  EXPECT_EQ(j.out.find("\\\\u0cf3"), std::string::npos) << j.out;
  const CliRun m = run_cli("validate --consumers --python 3.10 " + p("u.safetensors"));
  EXPECT_NE(m.out.find("(Python 3.10)"), std::string::npos) << m.out;
  EXPECT_NE(m.out.find("'blk\\u0cf3'"), std::string::npos) << m.out;
  EXPECT_EQ(run_cli("validate --python 3.9 " + p("u.safetensors") + " 2>&1").rc, 2);
}

}  // namespace
}  // namespace w4a8::testing
