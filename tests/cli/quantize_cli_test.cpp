// Whole-model quantize end to end on the worked example's float checkpoint (two shards + index):
// the output passes our `validate --strict` and the independent Python oracle
// (tools/oracle/sglang_spec.py); tests/cli/quantized_model_check.py (numpy, from docs/gemm.md)
// decodes every layer, recomputes its relative L2 error and checks every other tensor is copied byte
// for byte; markers, --keys, sharding, threads, single-layer mode and failures.
#include <limits>
#include <map>
#include <regex>
#include <sstream>

#include "cli_fixture.hpp"

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
      if (n.size() > 12 && n.substr(n.size() - 12) == ".safetensors") s += " " + p(sub + "/" + n);
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
  EXPECT_NE(r.out.find("OK: quantized 8 layer(s), skipped 3, copied 7 other tensor(s) -> 2 shards + " +
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

TEST_F(QuantizeCli, KeysSelectLayersAndThreadsDoNotChangeBytes) {
  CliRun r = cli("quantize --weights " + p("f") + " --out " + p("a.safetensors") + " --keys '*.mlp.*' --quiet --threads 1");
  ASSERT_EQ(r.rc, 0) << r.out;
  EXPECT_NE(r.out.find("OK: quantized 4 layer(s), skipped 2, copied 11 other tensor(s) -> " + p("a.safetensors")), std::string::npos)
      << r.out;
  EXPECT_EQ(cli("validate --strict " + p("a.safetensors")).rc, 0);
  r = cli("quantize --weights " + p("f") + " --out " + p("b.safetensors") + " --keys '*.mlp.*' --quiet --threads 2");
  ASSERT_EQ(r.rc, 0) << r.out;
  EXPECT_EQ(slurp(p("a.safetensors")), slurp(p("b.safetensors")));
  EXPECT_EQ(r.out.find("[1/4]"), std::string::npos) << "--quiet prints no progress";
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
      << missing.out;
}

TEST_F(QuantizeCli, AFailingLayerPublishesNothing) {
  // A NaN weight in the last layer: the earlier shards were already written to temporaries.
  std::vector<float> w(10 * 256, 0.01f);
  w[77] = std::numeric_limits<float>::quiet_NaN();
  write(p("f/model-00002-of-00002.safetensors"),
        {gemm::float_tensor("zz.weight", gemm::FloatDtype::F32, {10, 256}, w)});
  const CliRun r = cli("quantize --weights " + float_shards_ + " --out " + p("q") + " --max-shard-size 200KB --quiet");
  EXPECT_EQ(r.rc, 2) << r.out;
  EXPECT_NE(r.out.find("w4a8check: layer zz: weights must be finite to quantize"), std::string::npos) << r.out;
  EXPECT_TRUE(names("q").empty());
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

TEST_F(QuantizeCli, RefusesIllegalOptionsAndNameClashes) {
  CliRun r = cli("quantize --weights " + p("f") + " --out " + p("q") + " --group-size 5");
  EXPECT_EQ(r.rc, 2) << r.out;
  EXPECT_NE(r.out.find("group_size must be >= 4 and divide 16 or be a multiple of 16"), std::string::npos) << r.out;
  r = cli("quantize --weights " + p("f") + " --out " + p("q") + " --max-shard-size 5 parsecs");
  EXPECT_EQ(r.rc, 2) << r.out;
  // An input tensor already named like a quantized layer's tensor.
  write(p("clash.safetensors"), {gemm::float_tensor("a.weight", gemm::FloatDtype::F32, {16, 256}, std::vector<float>(4096, 1.f)),
                                 gemm::float_tensor("a.weight_s_rel", gemm::FloatDtype::F32, {1}, {1.f})});
  r = cli("quantize --weights " + p("clash.safetensors") + " --out " + p("c.safetensors"));
  EXPECT_EQ(r.rc, 2) << r.out;
  EXPECT_NE(r.out.find("the output would hold tensor 'a.weight_s_rel' twice"), std::string::npos) << r.out;
  EXPECT_FALSE(fs::exists(p("c.safetensors")));
}

}  // namespace
}  // namespace w4a8::testing
