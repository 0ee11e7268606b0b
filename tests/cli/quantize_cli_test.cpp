// Whole-model quantize end to end on the worked example's float checkpoint (two shards + index):
// the output passes our `validate --strict` and the independent Python oracle
// (tools/oracle/sglang_spec.py); tests/cli/quantized_model_check.py (numpy, from docs/gemm.md)
// decodes every layer, recomputes its relative L2 error and checks every other tensor is copied byte
// for byte; markers, --keys, sharding, threads, single-layer mode and failures.
#include <cstring>
#include <limits>
#include <map>
#include <regex>
#include <sstream>

#include "cli_fixture.hpp"
#include "json/parse.hpp"

namespace w4a8::testing {
namespace {

const std::string kPy = W4A8_PYTHON;

class QuantizeCli : public CliFixture {
 protected:
  void SetUp() override {
    CliFixture::SetUp();
    const CliRun r = run_command(kPy + " " + kRoot + "/examples/make_float_checkpoint.py " + p("f") + " 2>&1");
    ASSERT_EQ(r.rc, 0) << r.out;
    float_shards_ = p("f/model-00001-of-00002.safetensors") + " " + p("f/model-00002-of-00002.safetensors");
  }
  // Output shards of a directory, sorted (the index, when any, names the same set).
  std::string shards_of(const std::string& sub) const {
    std::string s;
    for (const auto& n : names(sub))
      if (n.size() > 12 && n.substr(n.size() - 12) == ".safetensors") s.append(" ").append(p(sub + "/" + n));  // NOLINT(performance-inefficient-string-concatenation)
    return s;
  }
  // {prefix: relative L2} from the independent numpy check, or a failure.
  std::map<std::string, double> independent_errors(const std::string& out_shards, int& copied) {
    const CliRun r = run_command(kPy + " " + kRoot + "/tests/cli/quantized_model_check.py " + float_shards_ + " --" +
                                 out_shards + " | " + kPy +
                                 " -c 'import json,sys; d=json.load(sys.stdin); print(d[\"copied\"]); "
                                 "[print(k, v) for k, v in d[\"layers\"].items()]'");
    EXPECT_EQ(r.rc, 0) << r.out;
    std::istringstream in(r.out);
    std::map<std::string, double> m;
    in >> copied;
    std::string k;
    double v;
    while (in >> k >> v) m[k] = v;
    return m;
  }
  void expect_oracle_accepts(const std::string& shards, std::size_t layers) {
    const CliRun r = run_command(kPy + " " + kRoot + "/tools/oracle/sglang_spec.py" + shards + " | " + kPy +
                                 " -c 'import json,sys; d=json.load(sys.stdin); print(d[\"ok\"], len(d.get(\"layers\") or {}), d.get(\"message\"))'");
    EXPECT_EQ(r.out, "True " + std::to_string(layers) + " None\n") << shards;
  }
  std::string float_shards_;
};

TEST_F(QuantizeCli, WholeModelShardedPassesStrictAndTheOracleWithIndependentErrors) {
  const CliRun r = cli("quantize --weights " + p("f/model.safetensors.index.json") + " --out " + p("q") +
                       " --max-shard-size 600KB --threads 2");
  ASSERT_EQ(r.rc, 0) << r.out;
  EXPECT_EQ(names("q"), (std::vector<std::string>{"model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors",
                                                  "model.safetensors.index.json"}));
  EXPECT_NE(r.out.find("OK: quantized 8 layer(s), skipped 3, copied 4 other tensor(s) -> 2 shards + " +
                       p("q/model.safetensors.index.json")),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("skipped (copied unchanged): blocks.0.norm.weight (1-D, not [N, K]), blocks.1.norm.weight (1-D, "
                       "not [N, K]), head.weight (K=100 not divisible by 16)"),
            std::string::npos)
      << r.out;
  // Ours, strict, through the index; and the independent oracle on the shards.
  const CliRun v = cli("validate --strict " + p("q"));
  EXPECT_EQ(v.rc, 0) << v.out;
  EXPECT_NE(v.out.find("OK: 8 quantized layer(s) accepted"), std::string::npos) << v.out;
  expect_oracle_accepts(shards_of("q"), 8);
  // Every layer's error as printed (plain progress lines: stderr is not a terminal here) equals the
  // independent recomputation; the 7 other tensors are byte-identical copies.
  int copied = 0;
  const auto want = independent_errors(shards_of("q"), copied);
  EXPECT_EQ(copied, 7);
  ASSERT_EQ(want.size(), 8u);
  const std::regex line(R"(\[\d+/8\] (\S+) \[\d+ x \d+\] relative_l2=([0-9.]+))");
  std::size_t seen = 0;
  for (auto it = std::sregex_iterator(r.out.begin(), r.out.end(), line); it != std::sregex_iterator(); ++it, ++seen) {
    ASSERT_TRUE(want.count((*it)[1])) << (*it)[1];
    EXPECT_NEAR(std::stod((*it)[2]), want.at((*it)[1]), 1e-6) << (*it)[1];
    EXPECT_LT(want.at((*it)[1]), 0.08);  // the fixed codebook on Gaussian weights: ~0.073 (docs/gemm.md)
  }
  EXPECT_EQ(seen, 8u);
}

TEST_F(QuantizeCli, MarkersInTheHeaderOrBoth) {
  for (const std::string m : {"metadata", "both"}) {
    const std::string out = "q_" + m;
    const CliRun r = cli("quantize --weights " + p("f") + " --out " + p(out) + " --markers " + m + " --quiet");
    ASSERT_EQ(r.rc, 0) << r.out;
    EXPECT_EQ(names(out), std::vector<std::string>{"model.safetensors"});  // under the default 5GB
    EXPECT_EQ(cli("validate --strict " + p(out)).rc, 0);
    expect_oracle_accepts(shards_of(out), 8);
    const std::string bytes = slurp(p(out + "/model.safetensors"));
    EXPECT_NE(bytes.find("_quantization_metadata"), std::string::npos);
    EXPECT_EQ(bytes.find(".comfy_quant\"") != std::string::npos, m == "both") << m;
    int copied = 0;
    EXPECT_EQ(independent_errors(shards_of(out), copied).size(), 8u);
    EXPECT_EQ(copied, 7);
  }
}

// A float checkpoint whose _quantization_metadata already names a layer being quantized (here 'a',
// as bf16): the new marker replaces that entry in every marker mode. Kept, it conflicts with the new
// tensor marker under sglang, or repeats the key "a" in the metadata. Other entries and members stay.
TEST_F(QuantizeCli, InputMetadataEntriesOfQuantizedLayersAreReplaced) {
  const CliRun mk = run_command(kPy + " - " + p("m.safetensors") + R"( <<'EOF'
import json, struct, sys
meta = {"format_version": "1.0", "extra": [1, 2], "layers": {"a": {"format": "bf16"}, "keep": {"format": "later_fmt"}}}
tensors, data = {}, b""
for name in ("a.weight", "b.weight"):
    blob = struct.pack("<4096f", *[((i * 7919) % 113 - 56) / 50.0 for i in range(4096)])
    tensors[name] = {"dtype": "F32", "shape": [16, 256], "data_offsets": [len(data), len(data) + len(blob)]}
    data += blob
tensors["__metadata__"] = {"_quantization_metadata": json.dumps(meta)}
h = json.dumps(tensors).encode()
open(sys.argv[1], "wb").write(struct.pack("<Q", len(h)) + h + data)
EOF)");
  ASSERT_EQ(mk.rc, 0) << mk.out;
  // The output's layers entries in order, and any key the layers object repeats.
  const auto layers_of = [&](const std::string& file) {
    return run_command(kPy + " - " + file + R"( <<'EOF'
import json, struct, sys
f = open(sys.argv[1], "rb"); n = struct.unpack("<Q", f.read(8))[0]
q = json.loads(f.read(n))["__metadata__"]["_quantization_metadata"]
def pairs(ps):
    keys = [k for k, _ in ps]
    if len(set(keys)) != len(keys): print("REPEATED", keys)
    return dict(ps)
d = json.loads(q, object_pairs_hook=pairs)
print(sorted(k for k in d if k != "layers"), [(k, v["format"]) for k, v in d["layers"].items()])
EOF)");
  };
  const std::string two_layers = "('a', 'asym_w4a8_int8'), ('b', 'asym_w4a8_int8')]";
  const std::map<std::string, std::string> want = {
      {"tensor", "['extra', 'format_version'] [('keep', 'later_fmt')]\n"},  // the rest as the input has it
      {"metadata", "['format_version'] [('keep', 'later_fmt'), " + two_layers + "\n"},
      {"both", "['format_version'] [('keep', 'later_fmt'), " + two_layers + "\n"}};
  for (const auto& [mode, layers] : want) {
    const std::string out = "mq_" + mode;
    const CliRun r = cli("quantize --weights " + p("m.safetensors") + " --out " + p(out) + " --markers " + mode +
                         " --threads 1 --quiet");
    ASSERT_EQ(r.rc, 0) << r.out;
    EXPECT_NE(r.out.find("note: the input's _quantization_metadata named 1 of the layers quantized here"),
              std::string::npos)
        << r.out;
    const CliRun v = cli("validate --strict " + p(out));
    EXPECT_EQ(v.rc, 0) << mode << ": " << v.out;
    EXPECT_NE(v.out.find("OK: 2 quantized layer(s) accepted"), std::string::npos) << mode << ": " << v.out;
    EXPECT_EQ(layers_of(p(out + "/model.safetensors")).out, layers) << mode;
  }
}

TEST_F(QuantizeCli, KeysSelectLayersAndThreadsDoNotChangeBytes) {
  CliRun r = cli("quantize --weights " + p("f") + " --out " + p("a.safetensors") + " --keys '*.mlp.*' --quiet --threads 1");
  ASSERT_EQ(r.rc, 0) << r.out;
  EXPECT_NE(r.out.find("OK: quantized 4 layer(s), skipped 2, copied 9 other tensor(s) -> " + p("a.safetensors")), std::string::npos)
      << r.out;
  EXPECT_EQ(cli("validate --strict " + p("a.safetensors")).rc, 0);
  r = cli("quantize --weights " + p("f") + " --out " + p("b.safetensors") + " --keys '*.mlp.*' --quiet --threads 2");
  ASSERT_EQ(r.rc, 0) << r.out;
  EXPECT_EQ(slurp(p("a.safetensors")), slurp(p("b.safetensors")));
  EXPECT_EQ(r.out.find("[1/4]"), std::string::npos) << "--quiet prints no progress";
  // Leading zeros are decimal (CLI11 alone reads 016 as octal 14, not a legal group size).
  r = cli("quantize --weights " + p("f") + " --out " + p("c.safetensors") +
          " --keys '*.mlp.*' --quiet --group-size 016 --convrot-groupsize 0256");
  ASSERT_EQ(r.rc, 0) << r.out;
  EXPECT_EQ(slurp(p("a.safetensors")), slurp(p("c.safetensors")));
}

TEST_F(QuantizeCli, ProgressIsABarOnATerminal) {
  if (run_command("command -v script >/dev/null 2>&1").rc != 0) GTEST_SKIP() << "script(1) is not installed (no pty)";
  const CliRun r = run_command("script -qc \"" + kBin + " quantize --weights " + p("f") + " --out " + p("q") +
                               " >/dev/null\" /dev/null");
  EXPECT_EQ(r.rc, 0) << r.out;
  EXPECT_NE(r.out.find("\r[##############################] 8/8 layers"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("[1/8]"), std::string::npos) << "no plain lines on a terminal";
}

TEST_F(QuantizeCli, SingleLayerKeepsItsBias) {
  const CliRun r = cli("quantize --weights " + p("f") + " --key blocks.1.mlp.fc1.weight --prefix mlp --out " + p("one.safetensors"));
  ASSERT_EQ(r.rc, 0) << r.out;
  EXPECT_NE(r.out.find("OK: mlp N=512 K=256 group_size=16 convrot_groupsize=256 codebook relative_l2="), std::string::npos) << r.out;
  auto f = st::File::open(p("one.safetensors"));
  ASSERT_TRUE(f.ok());
  std::vector<std::string> got;
  for (const auto& t : f->header().tensors) got.push_back(t.name);
  EXPECT_EQ(got, (std::vector<std::string>{"mlp.bias", "mlp.comfy_quant", "mlp.weight", "mlp.weight_codebook",
                                           "mlp.weight_s_channel", "mlp.weight_s_rel"}));
  EXPECT_EQ(f->header().find("mlp.bias")->dtype, st::Dtype::BF16);  // copied as stored
  EXPECT_EQ(cli("validate --strict " + p("one.safetensors")).rc, 0);
  const CliRun missing = cli("quantize --weights " + p("f") + " --key blocks.1.mlp.fc3.weight --out " + p("x.safetensors"));
  EXPECT_EQ(missing.rc, 2);
  EXPECT_NE(missing.out.find("has no tensor 'blocks.1.mlp.fc3.weight'; closest: 'blocks.1.mlp.fc1.weight', "
                             "'blocks.1.mlp.fc2.weight'"),
            std::string::npos)
      << missing.out;  // A layer prefix instead of its weight: the weight is named (by edits the bias is closest).
  const CliRun prefix = cli("quantize --weights " + p("f") + " --key blocks.1.mlp.fc1 --out " + p("x.safetensors"));
  EXPECT_EQ(prefix.rc, 2);
  EXPECT_NE(prefix.out.find("has no tensor 'blocks.1.mlp.fc1'; --key names the float weight: 'blocks.1.mlp.fc1.weight'"),
            std::string::npos)
      << prefix.out;
}

// --out naming a character device is a dry run: the same layers and errors as a sharded run into a
// directory, one file on the device whatever --max-shard-size says, nothing beside it, and no
// consumers claimed (nothing is read back). It was refused as "not a directory".
TEST_F(QuantizeCli, ACharacterDeviceOutIsADryRun) {
  if (::access("/dev/null", W_OK) != 0) GTEST_SKIP() << "no writable /dev/null on this system";
  const std::string opts = " --max-shard-size 600KB --quiet";
  const CliRun dir = cli("quantize --weights " + float_shards_ + " --out " + p("q") + opts);
  ASSERT_EQ(dir.rc, 0) << dir.out;
  ASSERT_NE(dir.out.find("-> 2 shards + "), std::string::npos) << dir.out;
  const auto before = names();
  const CliRun dry = cli("quantize --weights " + float_shards_ + " --out /dev/null" + opts);
  ASSERT_EQ(dry.rc, 0) << dry.out;
  EXPECT_EQ(names(), before) << "a dry run wrote a file";
  EXPECT_NE(dry.out.find("OK: quantized 8 layer(s), skipped 3, copied 4 other tensor(s) -> /dev/null ("), std::string::npos)
      << dry.out;
  EXPECT_NE(dry.out.find("  consumers: not determined (the output went to a character device and is not read back)\n"),
            std::string::npos)
      << dry.out;
  // The error lines (mean, max, worst five) are the directory run's.
  const auto from = [](const std::string& out) { return out.substr(out.find("  relative L2 weight error:")); };
  ASSERT_NE(dir.out.find("  relative L2 weight error:"), std::string::npos) << dir.out;
  ASSERT_NE(dry.out.find("  relative L2 weight error:"), std::string::npos) << dry.out;
  EXPECT_EQ(from(dry.out), from(dir.out));
  const CliRun one = cli("quantize --weights " + float_shards_ + " --key blocks.1.mlp.fc1.weight --out /dev/null");
  EXPECT_EQ(one.rc, 0) << one.out;
  EXPECT_NE(one.out.find("relative_l2="), std::string::npos) << one.out;
  if (::access("/dev/full", W_OK) != 0) GTEST_SKIP() << "no writable /dev/full on this system";
  // A summary that cannot be written: io.write_failed in the usual two lines (--quiet here silences
  // progress only; validate's --quiet is the one that puts every message on one line).
  const CliRun summary = run_cli("quantize --weights " + float_shards_ + " --out /dev/null" + opts + " 2>&1 >/dev/full");
  EXPECT_EQ(summary.rc, 2) << summary.out;
  EXPECT_EQ(summary.out, "w4a8check: cannot write standard output: No space left on device\n  [io.write_failed]\n");
  const CliRun full = cli("quantize --weights " + float_shards_ + " --out /dev/full" + opts);
  EXPECT_EQ(full.rc, 2) << full.out;
  EXPECT_NE(full.out.find("cannot write /dev/full: No space left on device"), std::string::npos) << full.out;
}

// An input tensor that the new layer's consumers would read as part of it, but that this run does
// not write, is refused (nothing written): a stale correction, a stale codebook under --uniform, a
// stale tensor marker under --markers metadata. Copied, they made gemm compute with them (a relative
// error of 6.3 against x @ W^T from a correction) while validate --strict and the summary's weight
// error saw nothing wrong (found by a new user's pass, 2026-12-07). A layer left out with --keys
// keeps them as ordinary tensors.
TEST_F(QuantizeCli, LeftoverTensorsOfAQuantizedLayerAreRefused) {
  std::vector<float> w(16 * 256);
  for (std::size_t i = 0; i < w.size(); ++i) w[i] = 0.01f * static_cast<float>(static_cast<int>(i % 13) - 6);
  const auto weight = gemm::float_tensor("b.weight", gemm::FloatDtype::F32, {16, 256}, w);
  const std::string marker = R"({"format": "bf16"})";
  struct Case {
    st::TensorSpec leftover;
    std::string options;
  };
  const std::vector<Case> cases = {
      {gemm::float_tensor("b.weight_correction", gemm::FloatDtype::F32, {16, 16}, std::vector<float>(256, 0.5f)), ""},
      {gemm::float_tensor("b.weight_codebook", gemm::FloatDtype::F32, {16}, std::vector<float>(16, 1.0f)), " --uniform"},
      {{"b.comfy_quant", st::Dtype::U8, {marker.size()}, std::vector<std::uint8_t>(marker.begin(), marker.end())},
       " --markers metadata"},
  };
  for (const Case& c : cases) {
    write(p("g.safetensors"), {weight, c.leftover});
    const CliRun r = cli("quantize --weights " + p("g.safetensors") + " --out " + p("q") + c.options + " --quiet");
    EXPECT_EQ(r.rc, 2) << c.leftover.name << ": " << r.out;
    EXPECT_NE(r.out.find("input tensor '" + c.leftover.name + "' would be copied beside quantized layer 'b', and consumers "
                         "read it as part of that layer (asym_w4a8_int8 reads PREFIX" +
                         c.leftover.name.substr(1) + "): remove it from the input, or exclude the layer with --keys "
                         "(nothing written)"),
              std::string::npos)
        << r.out;
    EXPECT_FALSE(fs::exists(p("q"))) << c.leftover.name;
  }
  // With the codebook written (the default), the stale one is a name clash, refused as before.
  write(p("g.safetensors"), {weight, cases[1].leftover});
  const CliRun clash = cli("quantize --weights " + p("g.safetensors") + " --out " + p("q") + " --quiet");
  EXPECT_EQ(clash.rc, 2) << clash.out;
  EXPECT_NE(clash.out.find("the output would hold tensor 'b.weight_codebook' twice"), std::string::npos) << clash.out;
  // Another layer quantized, b left out: b's tensors are ordinary ones, copied.
  write(p("g.safetensors"), {weight, cases[0].leftover, gemm::float_tensor("c.weight", gemm::FloatDtype::F32, {16, 256}, w)});
  const CliRun other = cli("quantize --weights " + p("g.safetensors") + " --keys 'c.*' --out " + p("q") + " --quiet");
  EXPECT_EQ(other.rc, 0) << other.out;
  EXPECT_NE(other.out.find("OK: quantized 1 layer(s), skipped 0, copied 2 other tensor(s)"), std::string::npos) << other.out;
}

// An input _quantization_metadata that --markers metadata cannot extend is refused with sglang's own
// error for it, the one validate gives on the same input (one without a "layers" object was called
// invalid JSON; found by a new user's pass, 2026-12-07).
TEST_F(QuantizeCli, UnreadableInputQuantizationMetadataIsRefusedAsValidateDoes) {
  std::vector<float> w(16 * 256, 0.01f);
  for (const std::string text : {"{not json", "[]", R"({"format_version": "1.0"})"}) {
    st::WriteOptions o;
    o.metadata = std::vector<std::pair<std::string, std::string>>{{"_quantization_metadata", text}};
    write(p("m.safetensors"), {gemm::float_tensor("b.weight", gemm::FloatDtype::F32, {16, 256}, w)}, o);
    const CliRun v = cli("validate --quiet " + p("m.safetensors"));
    ASSERT_EQ(v.rc, 1) << text << ": " << v.out;
    const CliRun q = cli("quantize --quiet --markers metadata --weights " + p("m.safetensors") + " --out " + p("q.safetensors"));
    EXPECT_EQ(q.rc, 1) << text << ": " << q.out;
    // The verdict line up to its code: "REJECTED: ValueError: MESSAGE  [CODE]".
    const std::string want = v.out.substr(0, v.out.find(']') + 1);
    EXPECT_NE(q.out.find(want.substr(0, want.find("  [")) + "\n  [" + want.substr(want.find("  [") + 3)), std::string::npos)
        << text << "\nvalidate: " << v.out << "quantize: " << q.out;
    EXPECT_FALSE(fs::exists(p("q.safetensors")));
  }
}

// An index already in the output directory is rewritten only when it is this output's own from an
// earlier run (ASecondRunIntoTheSameDirectoryLeavesItConsistent). Another model's is refused, byte
// for byte intact: the float input's own index beside its shards (quantizing into the input's
// directory replaced it, and the float model then named the new file), one reached through a link
// (it broke the model in the other directory), one naming shards of another naming. (Found by a new
// user's pass, 2026-12-07.)
TEST_F(QuantizeCli, AnotherModelsIndexIsNotReplaced) {
  const std::string index = p("f/model.safetensors.index.json");
  const std::string before = slurp(index);
  const std::string refused = "an index is there that this output did not write (";
  CliRun r = cli("quantize --weights " + float_shards_ + " --out " + p("f") + " --quiet");
  EXPECT_EQ(r.rc, 2) << r.out;
  EXPECT_NE(r.out.find("cannot write " + index + ": " + refused + "it names 'model-00001-of-00002.safetensors', an input of "
                       "this run); replacing it would break the model it indexes"),
            std::string::npos)
      << r.out;
  EXPECT_FALSE(fs::exists(p("f/model.safetensors"))) << "written before the refusal";
  fs::create_directory(p("t"));
  fs::create_symlink("../f/model.safetensors.index.json", p("t/model.safetensors.index.json"));
  r = cli("quantize --weights " + float_shards_ + " --out " + p("t") + " --quiet");
  EXPECT_EQ(r.rc, 2) << r.out;
  EXPECT_NE(r.out.find(refused + "it is a symbolic link)"), std::string::npos) << r.out;
  EXPECT_EQ(slurp(index), before);
  fs::create_directory(p("o"));
  spit(p("o/model.safetensors.index.json"), R"({"weight_map": {"x.weight": "other-00001-of-00002.safetensors"}})");
  r = cli("quantize --weights " + float_shards_ + " --out " + p("o") + " --quiet");
  EXPECT_EQ(r.rc, 2) << r.out;
  EXPECT_NE(r.out.find(refused + "it names 'other-00001-of-00002.safetensors', not a shard of this output's naming)"),
            std::string::npos)
      << r.out;
  EXPECT_EQ(names("o"), std::vector<std::string>{"model.safetensors.index.json"});
  // An earlier run's own index is still this output's when its name is not UTF-8 (the index spells
  // the byte as \udcff, and the check read that escape's bytes instead: the rerun was refused).
  fs::create_directory(p("n"));
  const std::string odd = "'" + p("n/caf\xff.safetensors") + "'";
  for (int run = 0; run < 2; ++run) {
    r = cli("quantize --weights " + float_shards_ + " --out " + odd + " --max-shard-size 600KB --quiet");
    EXPECT_EQ(r.rc, 0) << "run " << run << ": " << r.out;
  }
  EXPECT_EQ(names("n").size(), 3u);  // two shards and the index
}

// --out names a directory whose parent is missing: said so (it read "No such file or directory"), and
// nothing is made (only the last component of --out is ever created).
TEST_F(QuantizeCli, AMissingParentOfOutIsNamed) {
  const CliRun r = cli("quantize --weights " + float_shards_ + " --out " + p("no/such/q") + " --quiet");
  EXPECT_EQ(r.rc, 2) << r.out;
  EXPECT_NE(r.out.find("cannot write " + p("no/such/q") + ": its parent directory does not exist (quantize makes only the "
                       "last component of --out)"),
            std::string::npos)
      << r.out;
  EXPECT_FALSE(fs::exists(p("no")));
}

TEST_F(QuantizeCli, AFailingLayerPublishesNothing) {
  // A NaN weight in the last layer: the earlier shards were already written to temporaries. A tensor
  // that cannot be quantized is refused (exit 1, docs/cli.md), naming the layer, its tensor and the weight.
  std::vector<float> w(10 * 256, 0.01f);
  w[256 + 77] = std::numeric_limits<float>::quiet_NaN();
  write(p("f/model-00002-of-00002.safetensors"),
        {gemm::float_tensor("zz.weight", gemm::FloatDtype::F32, {10, 256}, w)});
  const CliRun r = cli("quantize --weights " + float_shards_ + " --out " + p("q") + " --max-shard-size 200KB --quiet");
  EXPECT_EQ(r.rc, 1) << r.out;
  EXPECT_NE(r.out.find("REJECTED: layer zz (tensor 'zz.weight'): ValueError: cannot quantize the weights: weight [1, 77] "
                       "is nan (weights must be finite to quantize)\n  [gemm.quantize.non_finite]"),
            std::string::npos)
      << r.out;
  EXPECT_FALSE(fs::exists(p("q"))) << "the run made it: a failure removes it";
}

// Finite weights whose rotation leaves float32 (upstream stores inf/NaN scales): refused, exit 1,
// gemm.quantize.non_finite, naming the tensor and the row (it used to write NaN scales and report OK,
// or read outside the level table for 6-bit storage; then it exited 2 as a usage error). Row 3 follows
// column 0 of H_256, so its rotated weight 0 is sqrt(256) * 1e38 = 1.6e39.
TEST_F(QuantizeCli, WeightsOverflowingFloat32AreRefused) {
  std::vector<float> w(16 * 256, 0.01f);
  for (int j = 0; j < 256; ++j) w[3 * 256 + j] = 1e38f * float(gemm::hadamard_sign(256, j, 0));
  write(p("hv.safetensors"), {gemm::float_tensor("h.weight", gemm::FloatDtype::F32, {16, 256}, w)});
  for (const std::string extra : {"", " --bits 6", " --key h.weight", " --key h.weight --prefix other"}) {
    const CliRun r = cli("quantize --weights " + p("hv.safetensors") + " --out " + p("hq.safetensors") + extra);
    EXPECT_EQ(r.rc, 1) << extra << "\n" << r.out;
    const std::string layer = extra.find("other") != std::string::npos ? "other" : "h";
    EXPECT_NE(r.out.find("REJECTED: layer " + layer + " (tensor 'h.weight'): ValueError: cannot quantize the weights: "
                         "row 3 (max |w| = 1e+38) overflows F32 in the rotation (convrot_groupsize=256; comfy-kitchen "
                         "would store inf/NaN scales)\n  [gemm.quantize.non_finite]"),
              std::string::npos)
        << r.out;
    EXPECT_FALSE(fs::exists(p("hq.safetensors"))) << extra;
  }
  // A constant row of 1e38 rotates to itself (every column of H_R sums to sqrt(R)): quantized, as upstream does.
  for (int j = 0; j < 256; ++j) w[3 * 256 + j] = 1e38f;
  write(p("hv.safetensors"), {gemm::float_tensor("h.weight", gemm::FloatDtype::F32, {16, 256}, w)});
  const CliRun ok = cli("quantize --weights " + p("hv.safetensors") + " --out " + p("hq.safetensors") + " --key h.weight");
  EXPECT_EQ(ok.rc, 0) << ok.out;
}

// BF16/F16 weights are rotated in their own dtype, as upstream's (its Hadamard matrix and matmul are
// in the weight's dtype), not in float32. Hand-derived, R = 4, G = 4, 4-bit uniform: a group
// [1, e, 0, 0] with e = 2^-8 (BF16) or 2^-11 (F16), both exact in the dtype, rotates to
// [(1+e)/2, (1+e)/2, (1-e)/2, -(1-e)/2]; (1+e)/2 = 0.5 + e/2 is a rounding tie in the dtype (its ulp
// at 0.5 is e) and rounds to even, 0.5, while (1-e)/2 is exact. So absmax = 0.5, scale s = f32(0.5/7),
// codes 7, 7, 7, -7, and s_channel = f32(f32(7 s) / 127); rotated in float32, absmax would be 0.5 + e/2.
TEST_F(QuantizeCli, Bf16AndF16WeightsAreRotatedInTheirDtype) {
  for (const auto& [dt, e] : {std::pair{gemm::FloatDtype::BF16, 0x1p-8f}, std::pair{gemm::FloatDtype::F16, 0x1p-11f}}) {
    std::vector<float> w(2 * 16, 0.0f);
    for (int row = 0; row < 2; ++row) w[std::size_t(row) * 16] = 1.0f, w[std::size_t(row) * 16 + 1] = e;
    write(p("d.safetensors"), {gemm::float_tensor("d.weight", dt, {2, 16}, w)});
    const CliRun r = cli("quantize --weights " + p("d.safetensors") + " --out " + p("dq.safetensors") +
                         " --key d.weight --uniform --group-size 4 --convrot-groupsize 4 --quiet");
    ASSERT_EQ(r.rc, 0) << r.out;
    auto f = st::File::open(p("dq.safetensors"));
    ASSERT_TRUE(f.ok());
    const auto* sc = f->header().find("d.weight_s_channel");
    ASSERT_NE(sc, nullptr);
    float got[2];
    std::memcpy(got, f->data(*sc).data(), sizeof got);
    auto channel_scale = [](float amax) {  // (volatile: each step rounded to float32, as the quantizer's)
      const volatile float s = amax / 7.0f;
      const volatile float shifted = 7.0f * s;
      return shifted / 127.0f;
    };
    const float want = channel_scale(0.5f);
    EXPECT_EQ(got[0], want) << gemm::float_dtype_name(dt);
    EXPECT_EQ(got[1], want) << gemm::float_dtype_name(dt);
    EXPECT_NE(want, channel_scale(0.5f + e / 2));  // what a float32 rotation gives
  }
}

// A run that would quantize nothing is refused with the reason, and writes nothing: no tensor
// matches --keys; every match is skipped (here R = 4^31, which also used to exhaust memory building
// the marker from a zero layer of K = R).
TEST_F(QuantizeCli, NothingToQuantizeIsAnErrorNotACopy) {
  CliRun r = cli("quantize --weights " + float_shards_ + " --out " + p("q") + " --keys 'nomatch*'");
  EXPECT_EQ(r.rc, 2) << r.out;
  EXPECT_NE(r.out.find("no tensor matches --keys 'nomatch*' (nothing written)"), std::string::npos) << r.out;
  r = cli("quantize --weights " + float_shards_ + " --out " + p("q") + " --prefix foo");  // --prefix needs --key
  EXPECT_EQ(r.rc, 2) << r.out;
  EXPECT_NE(r.out.find("--prefix requires --key"), std::string::npos) << r.out;
  r = cli("quantize --weights " + float_shards_ + " --out " + p("q") + " --convrot-groupsize 4611686018427387904");
  EXPECT_EQ(r.rc, 2) << r.out;
  EXPECT_NE(r.out.find("can be quantized with these options, e.g. "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("not divisible by convrot_groupsize=4611686018427387904"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("out of memory"), std::string::npos) << r.out;
  EXPECT_FALSE(fs::exists(p("q")));
}

// Whole model with --keys '*': a 2-D float tensor not named PREFIX.weight is copied under its own
// name, never quantized as a layer PREFIX (which would write it as `emb.weight`); nor does it then
// collide with a layer `emb` of the same checkpoint.
TEST_F(QuantizeCli, OnlyTensorsNamedWeightBecomeLayers) {
  write(p("e.safetensors"), {gemm::float_tensor("emb", gemm::FloatDtype::F32, {16, 256}, std::vector<float>(16 * 256, 0.25f)),
                             gemm::float_tensor("emb.weight", gemm::FloatDtype::F32, {16, 256}, std::vector<float>(16 * 256, 0.5f))});
  const CliRun r = cli("quantize --weights " + p("e.safetensors") + " --out " + p("eq.safetensors") + " --keys '*' --quiet");
  ASSERT_EQ(r.rc, 0) << r.out;
  EXPECT_NE(r.out.find("OK: quantized 1 layer(s), skipped 1"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("emb (not named PREFIX.weight)"), std::string::npos) << r.out;
  const CliRun names = run_command(kPy + " -c 'import json, struct, sys\n"
                                   "b = open(sys.argv[1], \"rb\").read()\n"
                                   "h = json.loads(b[8:8 + struct.unpack(\"<Q\", b[:8])[0]])\n"
                                   "print(h[\"emb\"][\"dtype\"], h[\"emb\"][\"shape\"], h[\"emb.weight\"][\"dtype\"])' " + p("eq.safetensors"));
  EXPECT_EQ(names.out, "F32 [16, 256] I8\n") << names.out;
  EXPECT_EQ(cli("validate --strict --quiet " + p("eq.safetensors")).rc, 0);
}

TEST_F(QuantizeCli, ASecondRunIntoTheSameDirectoryLeavesItConsistent) {
  CliRun r = cli("quantize --weights " + p("f") + " --out " + p("q") + " --max-shard-size 600KB --quiet");
  ASSERT_EQ(r.rc, 0) << r.out;
  ASSERT_EQ(names("q").size(), 3u);
  // Now one shard: the old index would still name the old shards, so it is rewritten; the old
  // shards are the user's files and stay, with a note.
  r = cli("quantize --weights " + p("f") + " --out " + p("q") + " --quiet");
  ASSERT_EQ(r.rc, 0) << r.out;
  EXPECT_NE(r.out.find("-> " + p("q/model.safetensors") + " + " + p("q/model.safetensors.index.json")), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("note: 2 shard file(s) in " + p("q") + " are not part of this output and were left as they are: "
                       "model-00001-of-00002.safetensors, model-00002-of-00002.safetensors"),
            std::string::npos)
      << r.out;
  const CliRun v = cli("validate --summary " + p("q"));
  EXPECT_EQ(v.rc, 0) << v.out;
  EXPECT_NE(v.out.find("OK: 8 quantized layer(s)"), std::string::npos) << "the directory must mean the new output\n" << v.out;
}

// Files named like the output that a run did not write stay, with a note. Sharded after a single file:
// the earlier STEM.safetensors is named with its risk (Hugging Face loaders prefer it to the index).
// Single file after shards: the shards are listed (the index is rewritten). Directory and
// --out FILE.safetensors alike; another output's files in the directory are not mentioned.
TEST_F(QuantizeCli, EarlierOutputsOfTheOtherShapeAreNamedWithTheirRisk) {
  const std::string run = "quantize --quiet --weights " + p("f") + " --out ";
  const std::string sharded = " --max-shard-size 600KB";
  const auto prefer_note = [](const std::string& single, const std::string& index) {
    return "note: " + single + " is not part of this output and was left as it is; loaders that find both prefer it to " +
           index + " (Hugging Face's do) and would load it instead of this output: remove or move it";
  };
  const std::vector<std::string> both = {"model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors",
                                         "model.safetensors", "model.safetensors.index.json"};
  // Directory: single (group size 32), then sharded.
  ASSERT_EQ(cli(run + p("q") + " --group-size 32").rc, 0);
  const std::string earlier = slurp(p("q/model.safetensors"));
  CliRun r = cli(run + p("q") + sharded);
  ASSERT_EQ(r.rc, 0) << r.out;
  EXPECT_NE(r.out.find(prefer_note(p("q/model.safetensors"), p("q/model.safetensors.index.json"))), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("shard file(s)"), std::string::npos) << r.out;
  EXPECT_EQ(slurp(p("q/model.safetensors")), earlier) << "the user's file is kept byte for byte";
  EXPECT_EQ(names("q"), both);
  // Directory: sharded, then single.
  ASSERT_EQ(cli(run + p("r") + sharded).rc, 0);
  r = cli(run + p("r"));
  ASSERT_EQ(r.rc, 0) << r.out;
  EXPECT_NE(r.out.find("note: 2 shard file(s) in " + p("r") + " are not part of this output and were left as they are: "
                       "model-00001-of-00002.safetensors, model-00002-of-00002.safetensors"),
            std::string::npos)
      << r.out;
  EXPECT_EQ(r.out.find("loaders that find both"), std::string::npos) << r.out;
  EXPECT_EQ(names("r"), both);
  // FILE.safetensors: F single then sharded, then single again, beside another output G's shards.
  fs::create_directory(p("d"));
  ASSERT_EQ(cli(run + p("d/G.safetensors") + sharded).rc, 0);
  ASSERT_EQ(cli(run + p("d/F.safetensors")).rc, 0);
  r = cli(run + p("d/F.safetensors") + sharded);
  ASSERT_EQ(r.rc, 0) << r.out;
  EXPECT_NE(r.out.find(prefer_note(p("d/F.safetensors"), p("d/F.safetensors.index.json"))), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("G-0000"), std::string::npos) << r.out;
  r = cli(run + p("d/F.safetensors"));
  ASSERT_EQ(r.rc, 0) << r.out;
  EXPECT_NE(r.out.find("note: 2 shard file(s) in " + p("d") + " are not part of this output and were left as they are: "
                       "F-00001-of-00002.safetensors, F-00002-of-00002.safetensors\n"),
            std::string::npos)
      << r.out;
  EXPECT_EQ(r.out.find("loaders that find both"), std::string::npos) << r.out;
  EXPECT_EQ(names("d").size(), 7u);  // F: 2 shards, file, index; G: 2 shards, index
}

TEST_F(QuantizeCli, RefusesIllegalOptionsAndNameClashes) {
  CliRun r = cli("quantize --weights " + p("f") + " --out " + p("q") + " --group-size 5");
  EXPECT_EQ(r.rc, 2) << r.out;
  EXPECT_NE(r.out.find("group_size must be >= 4 and divide 16 or be a multiple of 16"), std::string::npos) << r.out;
  r = cli("quantize --weights " + p("f") + " --out " + p("q") + " --max-shard-size 5 parsecs");
  EXPECT_EQ(r.rc, 2) << r.out;
  // Integers are decimal and in range: CLI11 alone would read 0x10 as hex and saturate 2^64 to INT64_MAX.
  for (const std::string bad : {"--group-size 99999999999999999999", "--group-size 0x10", "--convrot-groupsize 1e3",
                                "--threads -1", "--threads 4294967296"}) {
    r = cli("quantize --weights " + p("f") + " --out " + p("q") + " " + bad);
    EXPECT_EQ(r.rc, 2) << bad << r.out;
    EXPECT_NE(r.out.find("is not a decimal integer in ["), std::string::npos) << bad << r.out;
  }
  // An input tensor already named like a quantized layer's tensor.
  write(p("clash.safetensors"), {gemm::float_tensor("a.weight", gemm::FloatDtype::F32, {16, 256}, std::vector<float>(4096, 1.f)),
                                 gemm::float_tensor("a.weight_s_rel", gemm::FloatDtype::F32, {1}, {1.f})});
  r = cli("quantize --weights " + p("clash.safetensors") + " --out " + p("c.safetensors"));
  EXPECT_EQ(r.rc, 2) << r.out;
  EXPECT_NE(r.out.find("the output would hold tensor 'a.weight_s_rel' twice"), std::string::npos) << r.out;
  EXPECT_FALSE(fs::exists(p("c.safetensors")));
  // A tensor named ".weight" gives layer '' (marker ".comfy_quant"): skipped whole-model, refused with
  // --key as --prefix '' is, taken under another --prefix. It was quantized as layer ''.
  write(p("ew.safetensors"), {gemm::float_tensor(".weight", gemm::FloatDtype::F32, {16, 256}, std::vector<float>(4096, 1.f)),
                              gemm::float_tensor("a.weight", gemm::FloatDtype::F32, {16, 256}, std::vector<float>(4096, 1.f))});
  r = cli("quantize --weights " + p("ew.safetensors") + " --out " + p("ew") + " --quiet");
  EXPECT_EQ(r.rc, 0) << r.out;
  EXPECT_NE(r.out.find("skipped (copied unchanged): .weight (an empty layer prefix)"), std::string::npos) << r.out;
  r = cli("quantize --weights " + p("ew.safetensors") + " --key .weight --out " + p("ew1.safetensors"));
  EXPECT_EQ(r.rc, 2) << r.out;
  EXPECT_NE(r.out.find("--key '.weight' gives an empty layer prefix"), std::string::npos) << r.out;
  EXPECT_EQ(cli("quantize --weights " + p("ew.safetensors") + " --key .weight --prefix x --out " + p("ew1.safetensors")).rc, 0);
  // Options no layer can take are usage errors with --key too (they were exit 1).
  for (const std::string bad : {"--group-size 0", "--group-size 5", "--convrot-groupsize 8", "--bits 6 --group-size 8"}) {
    r = cli("quantize --weights " + p("ew.safetensors") + " --key a.weight --out " + p("ew2.safetensors") + " " + bad);
    EXPECT_EQ(r.rc, 2) << bad << r.out;
    EXPECT_NE(r.out.find("[usage.error]"), std::string::npos) << bad << r.out;
  }
}

// --bits 6 / --scale-dtype f32, whole model: the layers decode (independent numpy check, from
// docs/gemm.md) to the error the summary prints, and the summary names who loads them. The consumer
// line is hand-derived: sglang reads K = 2 * weight.shape[1] and needs FP8 scales (its dtype check
// comes before its shape check), comfy-kitchen 0.2.35 reads the same K (384 for a 6-bit row of 192
// bytes, not a multiple of R = 256: its combined contract message), 0.2.40 takes K from the scale grid,
// and the CUDA kernel implements neither storage.
TEST_F(QuantizeCli, SixBitAndF32ScaleModelsNameTheirConsumers) {
  struct Variant {
    std::string args, storage, consumers, sglang_code;
    double max_err;
  };
  const Variant variants[] = {
      {"--bits 6", "6-bit", "loaded by comfy-kitchen 0.2.40; refused by sglang 0.5.19-0.5.23 [sglang.w4a8.shapes], "
                            "comfy-kitchen 0.2.35 [gemm.contract], CUDA kernel [cuda.unsupported]",
       "sglang.w4a8.shapes", 0.03},
      {"--scale-dtype f32", "F32 scales", "loaded by comfy-kitchen 0.2.35, 0.2.40; refused by sglang 0.5.19-0.5.23 "
                                          "[sglang.w4a8.dtypes], CUDA kernel [cuda.unsupported]",
       "sglang.w4a8.dtypes", 0.08},
      {"--bits 6 --scale-dtype f32", "6-bit, F32 scales",
       "loaded by comfy-kitchen 0.2.40; refused by sglang 0.5.19-0.5.23 [sglang.w4a8.dtypes], comfy-kitchen 0.2.35 "
       "[gemm.contract], CUDA kernel [cuda.unsupported]",
       "sglang.w4a8.dtypes", 0.03},
  };
  for (const Variant& v : variants) {
    const CliRun r = cli("quantize --weights " + p("f") + " --out " + p("q.safetensors") + " --quiet " + v.args);
    ASSERT_EQ(r.rc, 0) << r.out;
    EXPECT_NE(r.out.find(", markers: tensor, " + v.storage + ")\n"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("\n  consumers: " + v.consumers + " (validate --consumers shows each layer)\n"), std::string::npos)
        << v.args << "\n" << r.out;
    int copied = 0;
    const auto want = independent_errors(" " + p("q.safetensors"), copied);
    EXPECT_EQ(copied, 7);
    ASSERT_EQ(want.size(), 8u) << v.args;
    for (const auto& [layer, err] : want) EXPECT_LT(err, v.max_err) << layer;
    const std::regex worst(R"(worst: (\S+) ([0-9.]+))");
    std::smatch w;
    ASSERT_TRUE(std::regex_search(r.out, w, worst)) << r.out;
    EXPECT_NEAR(std::stod(w[2]), want.at(w[1]), 1e-6);
    // sglang refuses it (exit 1, its code); the matrix agrees.
    const CliRun val = cli("validate " + p("q.safetensors"));
    EXPECT_EQ(val.rc, 1);
    EXPECT_NE(val.out.find("[" + v.sglang_code + "] (sglang 0.5.23, Python 3.11)"), std::string::npos) << val.out;
    EXPECT_EQ(cli("validate --consumers --quiet " + p("q.safetensors")).rc, 2) << "--quiet is not a matrix mode";
    EXPECT_EQ(cli("validate --consumers " + p("q.safetensors")).rc, 1);
  }
}

// One 6-bit F32-scale layer: the tensors comfy-kitchen's quantizer writes for that variant (as in its
// golden file corpus/golden/ck/case_027_b6_u_f32_*: I8 [N, 3K/4], F32 [N, K/G], F32 [N], no
// codebook), and the reference runs it (sglang's refusal becomes a note: comfy-kitchen loads it).
TEST_F(QuantizeCli, SixBitLayerHasComfyKitchensLayoutAndRunsInTheReference) {
  const CliRun r = cli("quantize --weights " + p("f") + " --key blocks.0.mlp.fc1.weight --out " + p("one.safetensors") +
                       " --bits 6 --scale-dtype f32");
  ASSERT_EQ(r.rc, 0) << r.out;
  EXPECT_NE(r.out.find("OK: blocks.0.mlp.fc1 N=512 K=256 group_size=16 convrot_groupsize=256 uniform 6-bit F32 scales relative_l2="),
            std::string::npos)
      << r.out;
  auto f = st::File::open(p("one.safetensors"));
  ASSERT_TRUE(f.ok());
  auto g = st::File::open(kRoot + "/corpus/golden/ck/case_027_b6_u_f32_int_g48_r16.safetensors");
  ASSERT_TRUE(g.ok());
  const st::TensorInfo *gw = g->header().find("layer.weight"), *gs = g->header().find("layer.weight_s_rel"),
                       *gx = g->header().find("expect.w_q");
  ASSERT_TRUE(gw && gs && gx);
  const std::uint64_t gk = gx->shape[1];  // the golden layer's K (G = 48)
  EXPECT_EQ(gw->shape[1] * 4, 3 * gk);
  EXPECT_EQ(gs->shape[1] * 48, gk);
  const st::TensorInfo *w = f->header().find("blocks.0.mlp.fc1.weight"), *s = f->header().find("blocks.0.mlp.fc1.weight_s_rel");
  ASSERT_TRUE(w && s);
  EXPECT_EQ(w->dtype, gw->dtype);
  EXPECT_EQ(w->shape, (std::vector<std::uint64_t>{512, 256 * 3 / 4}));
  EXPECT_EQ(s->dtype, gs->dtype);
  EXPECT_EQ(s->shape, (std::vector<std::uint64_t>{512, 256 / 16}));
  EXPECT_EQ(f->header().find("blocks.0.mlp.fc1.weight_codebook"), nullptr);
  EXPECT_EQ(g->header().find("layer.weight_codebook"), nullptr);
  // The reference runs it; comfy-kitchen 0.2.35 (no 6-bit rows) does not.
  const std::string run = "gemm --checkpoint " + p("one.safetensors") + " --layer blocks.0.mlp.fc1 --input " +
                          p("f/input.safetensors") + " --intermediates --out ";
  CliRun gr = cli(run + p("o.safetensors"));
  ASSERT_EQ(gr.rc, 0) << gr.out;
  EXPECT_NE(gr.out.find("note: sglang 0.5.23 (Python 3.11) refuses layer 'blocks.0.mlp.fc1' [sglang.w4a8.dtypes], but "
                        "comfy-kitchen 0.2.40 loads it"),
            std::string::npos)
      << gr.out;
  EXPECT_NE(gr.out.find("-> " + p("o.safetensors") + " (comfy-kitchen 0.2.40)"), std::string::npos) << gr.out;
  // 0.2.35 reads F32 scales but takes the 6-bit rows (192 bytes) for 4-bit ones of K = 384: its own
  // operand error, not sglang's storage refusal (the real comfy-kitchen 0.2.35's w4a8_int8_linear on
  // this layer raises exactly this ValueError).
  gr = cli(run + p("o35.safetensors") + " --comfy-kitchen 0.2.35");
  EXPECT_EQ(gr.rc, 1) << gr.out;
  EXPECT_NE(gr.out.find("REJECTED: ValueError: K=384 must be divisible by 16, group_size=16, and convrot_groupsize=256; "
                        "group_size must be >=4 and divide 16 or be a multiple of 16\n  [gemm.contract] (comfy-kitchen 0.2.35)"),
            std::string::npos)
      << gr.out;
  // The emulated CUDA kernel refuses 6-bit rows by name, as its limit (exit 2, like the CUDA module's
  // and the emulate plugin's plugin.unsupported), not as a verdict on the layer.
  gr = cli(run + p("oe.safetensors") + " --impl emulate");
  EXPECT_EQ(gr.rc, 2) << gr.out;
  EXPECT_NE(gr.out.find("w4a8check: CUDA W4A8 kernel does not support this problem: 6-bit codes (bits = 6) "
                        "unsupported by this kernel"),
            std::string::npos)
      << gr.out;
  EXPECT_NE(gr.out.find("[cuda.unsupported]"), std::string::npos) << gr.out;
  // comfy-kitchen itself, when this machine has it: it accepts the layer, decodes it to the int8 grid
  // our reference used (w_q, bit for bit), and its own quantizer writes the same layout with the same
  // error on these weights.
#ifdef W4A8_SANITIZED
  GTEST_SKIP() << "sanitizer build: the comfy-kitchen comparison runs in the plain build (torch import time)";
#endif
  const std::string ck = W4A8_CK_PYTHON;
  if (ck.empty() || !fs::exists(ck) || run_command(ck + " -c 'import torch, comfy_kitchen' 2>/dev/null").rc != 0)
    GTEST_SKIP() << "no Python with torch + comfy-kitchen at '" << ck << "' (tools/upstream/ck_env.sh builds it)";
  const std::vector<std::string> variants = {"--bits 6", "--bits 6 --scale-dtype f32", "--scale-dtype f32", "--uniform"};
  std::string jobs;
  for (std::size_t i = 0; i < variants.size(); ++i) {
    const std::string q = p("v" + std::to_string(i) + ".safetensors"), o = p("vo" + std::to_string(i) + ".safetensors");
    ASSERT_EQ(cli("quantize --weights " + p("f") + " --key blocks.0.mlp.fc1.weight --out " + q + " --quiet " +  // NOLINT(performance-inefficient-string-concatenation)
                  variants[i])
                  .rc,
              0);
    ASSERT_EQ(cli("gemm --checkpoint " + q + " --layer blocks.0.mlp.fc1 --input " + p("f/input.safetensors") +
                  " --intermediates --out " + o)  // NOLINT(performance-inefficient-string-concatenation)
                  .rc,
              0);
    jobs.append(" ").append(q).append(" blocks.0.mlp.fc1 blocks.0.mlp.fc1.weight ").append(o);
  }
  const CliRun c = run_command(ck + " " + kRoot + "/tests/cli/ck_quantize_check.py " + float_shards_ + " --" + jobs + " 2>&1");
  ASSERT_EQ(c.rc, 0) << c.out;
  std::istringstream lines(c.out);
  for (const std::string& v : variants) {
    std::string line;
    ASSERT_TRUE(std::getline(lines, line)) << c.out;
    auto j = json::loads_str(line);
    ASSERT_TRUE(j.ok()) << line;
    EXPECT_EQ(j->get("comfy_kitchen")->text, "0.2.40");
    EXPECT_EQ(j->get("linear")->text, "ok") << v;
    EXPECT_TRUE(j->get("w_q_equal")->boolean) << v;
    EXPECT_TRUE(j->get("layout_equal")->boolean) << v << " " << line;
    const double ours = j->get("rel_l2_ours")->number, theirs = j->get("rel_l2_ck")->number;
    EXPECT_NEAR(ours, theirs, 0.02 * theirs) << v;  // same recipe; the rotations differ in the last bits
  }
}

TEST_F(QuantizeCli, SixBitRefusals) {
  CliRun r = cli("quantize --weights " + p("f") + " --out " + p("q") + " --bits 6 --codebook");
  EXPECT_EQ(r.rc, 2) << r.out;
  EXPECT_NE(r.out.find("6-bit codes are uniform only"), std::string::npos) << r.out;
  r = cli("quantize --weights " + p("f") + " --out " + p("q") + " --bits 6 --group-size 8");
  EXPECT_EQ(r.rc, 2) << r.out;
  EXPECT_NE(r.out.find("(at 6 bits: a multiple of 16)"), std::string::npos) << r.out;
  EXPECT_EQ(cli("quantize --weights " + p("f") + " --out " + p("q") + " --bits 5").rc, 2);
  EXPECT_EQ(cli("quantize --weights " + p("f") + " --out " + p("q") + " --scale-dtype bf16").rc, 2);
  // K = 48 fits 4-bit rows but not 6-bit ones (K % 32): skipped whole-model, refused with --key.
  write(p("k48.safetensors"), {gemm::float_tensor("a.weight", gemm::FloatDtype::F32, {4, 48}, std::vector<float>(192, 0.5f)),
                               gemm::float_tensor("b.weight", gemm::FloatDtype::F32, {4, 64}, std::vector<float>(256, 0.5f))});
  r = cli("quantize --weights " + p("k48.safetensors") + " --out " + p("k.safetensors") + " --bits 6 --convrot-groupsize 16");
  EXPECT_EQ(r.rc, 0) << r.out;
  EXPECT_NE(r.out.find("skipped (copied unchanged): a.weight (K=48 not divisible by 32 (6-bit rows))"), std::string::npos) << r.out;
  r = cli("quantize --weights " + p("k48.safetensors") + " --key a.weight --out " + p("k1.safetensors") + " --bits 6 --convrot-groupsize 16");
  EXPECT_EQ(r.rc, 1) << r.out;
  EXPECT_NE(r.out.find("[gemm.six_bit_layout]"), std::string::npos) << r.out;
}

// A 6-bit FP8 layer with one group (K = G = 32): sglang's shape check passes it by floor division
// (its 24-byte rows read as 4-bit codes of K = 48), so only --strict's K % G sees it, reading the rows
// the same wrong way. gemm runs it as comfy-kitchen 0.2.40 does (which computes it: a differential hunt
// compared this layer bit for bit) instead of refusing it, and says why.
TEST_F(QuantizeCli, SixBitOneGroupLayerRunsAsComfyKitchenReadsIt) {
  std::vector<float> w(4 * 32);
  for (std::size_t i = 0; i < w.size(); ++i) w[i] = float(int(i * 37 % 29) - 14) / 64.0f;
  write(p("w.safetensors"), {gemm::float_tensor("l.weight", gemm::FloatDtype::F32, {4, 32}, w)});
  ASSERT_EQ(cli("quantize --weights " + p("w.safetensors") + " --key l.weight --out " + p("q.safetensors") +
                " --bits 6 --group-size 32 --convrot-groupsize 16 --quiet")
                .rc,
            0);
  write(p("x.safetensors"), {gemm::float_tensor("input", gemm::FloatDtype::F32, {2, 32}, std::vector<float>(w.begin(), w.begin() + 64))});
  const std::string run = "gemm --checkpoint " + p("q.safetensors") + " --layer l --input " + p("x.safetensors") + " --out ";
  CliRun r = cli(run + p("o.safetensors"));
  ASSERT_EQ(r.rc, 0) << r.out;
  EXPECT_NE(r.out.find("note: --strict refuses layer 'l' [strict.w4a8.k_multiple_group] reading its rows as 4-bit "
                       "codes, but it holds 6-bit codes, which comfy-kitchen 0.2.40 reads"),
            std::string::npos)
      << r.out;
  ASSERT_EQ(cli(run + p("lit.safetensors") + " --impl literal").rc, 0);
  auto output = [&](const std::string& file) {
    auto f = st::File::open(p(file));
    const st::TensorInfo* t = f.ok() ? f->header().find("output") : nullptr;
    if (t == nullptr) return std::vector<std::uint8_t>{};
    const auto d = f->data(*t);
    return std::vector<std::uint8_t>(d.begin(), d.end());
  };
  EXPECT_EQ(output("o.safetensors").size(), 2u * 4u * 4u);
  EXPECT_EQ(output("o.safetensors"), output("lit.safetensors"));  // the fast path and the spec agree
  // comfy-kitchen 0.2.35 has no 6-bit rows: the strict refusal stands there.
  r = cli(run + p("o35.safetensors") + " --comfy-kitchen 0.2.35");
  EXPECT_EQ(r.rc, 1) << r.out;
  EXPECT_NE(r.out.find("[strict.w4a8.k_multiple_group]"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace w4a8::testing
