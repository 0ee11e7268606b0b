// `w4a8check gemm` and `quantize` end to end through the built binary: documented tensors, exit codes,
// the validator's strict error for an invalid layer, and a hand-derived case where the rotation is
// exact and every result is known bit for bit.
//
// Hand derivation (N = 2, K = 16, G = 16, R = 4, uniform codes, s_rel byte 0x38 = 1.0):
//   x row 0 = 127 at k = 0, 5, 10, 15 (one spike per block, at offset b in block b), else 0.
//   Rotating block b (x_block @ H_4, H_4 = seed / 2) gives 127/2 * (row b of the seed):
//     [1,1,1,-1], [1,1,-1,1], [1,-1,1,1], [-1,1,1,1] times 63.5.
//   absmax 63.5 -> scale = 63.5 / 127 = 0.5 exactly; x_q = +-127 with those signs.
//   Weight row 0: every code 9 -> w_q = 1;  row 1: code 9 where x_q > 0, 7 where x_q < 0 -> +-1.
//   acc[0,0] = 127 * (12 - 4) = 1016;  acc[0,1] = 127 * 16 = 2032.
//   s_channel = [0.5, 2]: out = 1016 * (0.5 * 0.5) = 254 and 2032 * (0.5 * 2) = 2032.
//   Bias BF16 [0.25, -1]: f32 output 254.25 and 2031; bf16 output: 254 (254.25 rounds to 8 significant
//   bits) and 2032 (2031 rounds to a multiple of 8, ties to even -> 2032).
//   x row 1 = zeros: absmax 0 -> scale 1e-30f, x_q = 0, acc = 0, out = bias.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <system_error>

#include <sys/wait.h>
#include <unistd.h>

#include "gemm/tensor_io.hpp"
#include "run_cli.hpp"

namespace w4a8::gemm {
namespace {

namespace fs = std::filesystem;

using testing::CliRun;

CliRun run_cli(const std::string& args) { return testing::run_cli(args + " 2>&1"); }

fs::path tmp(const std::string& name) {
  const fs::path d = fs::temp_directory_path() / ("w4a8_gemm_cli_" + std::to_string(::getpid()));
  fs::create_directories(d);
  return d / name;
}

void write(const fs::path& p, const std::vector<st::TensorSpec>& t) {
  auto bytes = st::serialize(t);
  ASSERT_TRUE(bytes.ok()) << bytes.error().message;
  ASSERT_TRUE(st::write_file(p.string(), *bytes).ok());
}

Layer hand_layer() {
  Layer l = make_zero_layer(2, 16, 16, 4);
  const int sign[16] = {1, 1, 1, -1, 1, 1, -1, 1, 1, -1, 1, 1, -1, 1, 1, 1};
  for (int j = 0; j < 16; j += 2) {
    l.weight[std::size_t(j / 2)] = 0x99;  // row 0: codes 9, 9
    const int c0 = sign[j] > 0 ? 9 : 7, c1 = sign[j + 1] > 0 ? 9 : 7;
    l.weight[8 + std::size_t(j / 2)] = std::uint8_t(c0 | (c1 << 4));
  }
  l.s_channel = {0.5f, 2.0f};
  l.bias_shape = Shape{2};
  l.bias_dtype = FloatDtype::BF16;
  l.bias = {0.25f, -1.0f};
  return l;
}

std::vector<float> hand_input() {
  std::vector<float> x(32, 0.0f);
  for (std::size_t b = 0; b < 4; ++b) x[b * 4 + b] = 127.0f;
  return x;
}

template <class T>
std::vector<T> tensor(const st::File& f, const std::string& name, st::Dtype dt, const Shape& shape) {
  const st::TensorInfo* t = f.header().find(name);
  EXPECT_NE(t, nullptr) << name;
  if (!t) return {};
  EXPECT_EQ(t->dtype, dt) << name;
  EXPECT_EQ(t->shape, shape) << name;
  const auto b = f.data(*t);
  std::vector<T> v(b.size() / sizeof(T));
  if (!v.empty()) std::memcpy(v.data(), b.data(), v.size() * sizeof(T));
  return v;
}

class GemmCli : public ::testing::Test {
 protected:
  void SetUp() override {
    ckpt_ = tmp("ckpt.safetensors");
    input_ = tmp("x.safetensors");
    write(ckpt_, layer_tensors(hand_layer(), "blk.0"));
    write(input_, {float_tensor("input", FloatDtype::F32, {2, 16}, hand_input())});
  }
  static void TearDownTestSuite() {
    std::error_code ec;
    fs::remove_all(fs::temp_directory_path() / ("w4a8_gemm_cli_" + std::to_string(::getpid())), ec);
  }
  fs::path ckpt_, input_;
};

TEST_F(GemmCli, HandDerivedCaseIsBitExact) {
  for (const char* impl : {"literal", "fast"}) {
    const fs::path out = tmp(std::string("out_") + impl + ".safetensors");
    const CliRun r = run_cli("gemm --checkpoint " + ckpt_.string() + " --layer blk.0 --input " + input_.string() +
                          " --out " + out.string() + " --intermediates --impl " + impl);
    ASSERT_EQ(r.rc, 0) << r.out;
    auto f = st::File::open(out.string());
    ASSERT_TRUE(f.ok());
    EXPECT_EQ(*f->header().meta("path"), "integer");
    EXPECT_EQ(*f->header().meta("policy"), "f32");
    EXPECT_EQ((tensor<float>(*f, "output", st::Dtype::F32, {2, 2})), (std::vector<float>{254.25f, 2031.0f, 0.25f, -1.0f}));
    EXPECT_EQ((tensor<std::int32_t>(*f, "acc", st::Dtype::I32, {2, 2})), (std::vector<std::int32_t>{1016, 2032, 0, 0}));
    EXPECT_EQ((tensor<float>(*f, "x_scale", st::Dtype::F32, {2})), (std::vector<float>{0.5f, 1e-30f}));
    const int sign[16] = {1, 1, 1, -1, 1, 1, -1, 1, 1, -1, 1, 1, -1, 1, 1, 1};
    std::vector<std::int8_t> xq(32, 0), wq(32, 1);
    for (int j = 0; j < 16; ++j) {
      xq[std::size_t(j)] = std::int8_t(127 * sign[j]);
      wq[16 + std::size_t(j)] = std::int8_t(sign[j]);
    }
    EXPECT_EQ((tensor<std::int8_t>(*f, "x_q", st::Dtype::I8, {2, 16})), xq);
    EXPECT_EQ((tensor<std::int8_t>(*f, "w_q", st::Dtype::I8, {2, 16})), wq);
  }
  // BF16 output: the bias is added in bf16.
  const fs::path out = tmp("out_bf16.safetensors");
  const CliRun r = run_cli("gemm --checkpoint " + ckpt_.string() + " --layer blk.0 --input " + input_.string() +
                        " --out " + out.string() + " --out-dtype bf16");
  ASSERT_EQ(r.rc, 0) << r.out;
  auto f = st::File::open(out.string());
  ASSERT_TRUE(f.ok());
  EXPECT_EQ((tensor<std::uint16_t>(*f, "output", st::Dtype::BF16, {2, 2})),
            (std::vector<std::uint16_t>{0x437E, 0x44FE, 0x3E80, 0xBF80}));  // 254, 2032, 0.25, -1
  EXPECT_EQ(f->header().find("acc"), nullptr);  // intermediates only on request
}

TEST_F(GemmCli, InvalidLayerGetsValidatorError) {
  Layer l = hand_layer();
  l.s_rel[1] = 0x7F;  // NaN FP8 group scale: strict validation rejects it
  l.s_rel_shape = {2, 1};
  write(ckpt_, layer_tensors(l, "blk.0"));
  const CliRun r = run_cli("gemm --checkpoint " + ckpt_.string() + " --layer blk.0 --input " + input_.string() +
                        " --out " + tmp("o.safetensors").string());
  EXPECT_EQ(r.rc, 1) << r.out;
  EXPECT_NE(r.out.find("NaN FP8 group scale"), std::string::npos) << r.out;
}

TEST_F(GemmCli, InputKMismatchGetsOperandError) {
  write(input_, {float_tensor("input", FloatDtype::F32, {1, 32}, std::vector<float>(32, 1.0f))});
  const CliRun r = run_cli("gemm --checkpoint " + ckpt_.string() + " --layer blk.0 --input " + input_.string() +
                        " --out " + tmp("o.safetensors").string());
  EXPECT_EQ(r.rc, 1) << r.out;
  // The message is comfy-kitchen's own; the file it is about is named before it.
  EXPECT_NE(r.out.find("REJECTED: --input " + input_.string() + ": ValueError: Input K=32 does not match qdata K=16"),
            std::string::npos)
      << r.out;
  // A 0-d input (no K at all) is a usage error that names the file too.
  write(input_, {float_tensor("input", FloatDtype::F32, {}, std::vector<float>(1, 1.0f))});
  const CliRun z = run_cli("gemm --checkpoint " + ckpt_.string() + " --layer blk.0 --input " + input_.string() +
                           " --out " + tmp("o.safetensors").string());
  EXPECT_EQ(z.rc, 2) << z.out;
  EXPECT_NE(z.out.find("w4a8check: --input " + input_.string() + ": input is 0-d"), std::string::npos) << z.out;
}

// --comfy-kitchen: the profile used is named in the OK line, the output's metadata and rejections;
// a release between profiles maps to the profile standing for it (docs/upstream.md); the 4-bit
// numerics are the same in every profile (docs/upstream.md), so the outputs are byte-identical.
TEST_F(GemmCli, ComfyKitchenReleaseIsNamedEverywhere) {
  struct Case {
    std::string flag, label, requested, profile;
  };
  std::string first_output;
  for (const Case& c : {Case{"", "0.2.40", "0.2.40", "0.2.40"}, Case{"--comfy-kitchen 0.2.37", "0.2.37 (profile 0.2.40)", "0.2.37", "0.2.40"},
                        Case{"--comfy-kitchen 0.2.35", "0.2.35", "0.2.35", "0.2.35"},
                        Case{"--comfy-kitchen 0.2.31", "0.2.31 (profile 0.2.35)", "0.2.31", "0.2.35"}}) {
    const fs::path out = tmp("ck.safetensors");
    const CliRun r = run_cli("gemm --checkpoint " + ckpt_.string() + " --layer blk.0 --input " + input_.string() + " --out " +
                             out.string() + " " + c.flag);
    ASSERT_EQ(r.rc, 0) << r.out;
    EXPECT_NE(r.out.find("-> " + out.string() + " (comfy-kitchen " + c.label + ")\n"), std::string::npos) << r.out;
    auto f = st::File::open(out.string());
    ASSERT_TRUE(f.ok());
    EXPECT_EQ(*f->header().meta("comfy_kitchen"), c.requested);
    EXPECT_EQ(*f->header().meta("comfy_kitchen_profile"), c.profile);
    const auto o = f->data(*f->header().find("output"));
    const std::string bytes(o.begin(), o.end());
    if (first_output.empty()) first_output = bytes;
    EXPECT_EQ(bytes, first_output) << c.flag;
  }
  write(input_, {float_tensor("input", FloatDtype::F32, {1, 32}, std::vector<float>(32, 1.0f))});
  CliRun r = run_cli("gemm --checkpoint " + ckpt_.string() + " --layer blk.0 --input " + input_.string() + " --out " +
                     tmp("o.safetensors").string() + " --comfy-kitchen 0.2.33");
  EXPECT_EQ(r.rc, 1);
  EXPECT_NE(r.out.find("Input K=32 does not match qdata K=16\n  [gemm.input_k] (comfy-kitchen 0.2.33 (profile 0.2.35))\n"),
            std::string::npos)
      << r.out;
  for (const char* bad : {"0.2.41", "0.2.29", "latest"}) {
    r = run_cli("gemm --checkpoint " + ckpt_.string() + " --layer blk.0 --input " + input_.string() + " --out " +
                tmp("o.safetensors").string() + " --comfy-kitchen " + bad);
    EXPECT_EQ(r.rc, 2) << bad;
    EXPECT_NE(r.out.find("profiles: 0.2.35 (releases 0.2.30-0.2.35), 0.2.40 (releases 0.2.36-0.2.40)"), std::string::npos) << r.out;
  }
}

TEST_F(GemmCli, UsageErrorsExit2) {
  EXPECT_EQ(run_cli("gemm --checkpoint " + ckpt_.string() + " --layer nope --input " + input_.string() +
                    " --out " + tmp("o.safetensors").string()).rc, 2);
  EXPECT_EQ(run_cli("gemm --checkpoint /nonexistent --layer blk.0 --input x --out y").rc, 2);
  EXPECT_EQ(run_cli("gemm --checkpoint a --layer b --input c --out d --policy bogus").rc, 2);
}

TEST_F(GemmCli, QuantizeWritesAValidLayerThatRuns) {
  std::vector<float> w(24 * 64);
  for (std::size_t i = 0; i < w.size(); ++i) w[i] = float(int(i * 37 % 101) - 50) / 50.0f;
  const fs::path wf = tmp("w.safetensors"), q = tmp("q.safetensors");
  write(wf, {float_tensor("model.fc.weight", FloatDtype::F32, {24, 64}, w)});
  for (const char* mode : {"--codebook", "--uniform"}) {
    CliRun r = run_cli("quantize --weights " + wf.string() + " --key model.fc.weight --out " + q.string() +
                    " --convrot-groupsize 16 " + mode);
    ASSERT_EQ(r.rc, 0) << r.out;
    EXPECT_NE(r.out.find("relative_l2="), std::string::npos);
    r = run_cli("validate --strict " + q.string());
    EXPECT_EQ(r.rc, 0) << r.out;
    write(input_, {float_tensor("input", FloatDtype::BF16, {3, 64}, std::vector<float>(192, 0.5f))});
    r = run_cli("gemm --checkpoint " + q.string() + " --layer model.fc --input " + input_.string() + " --out " +
                tmp("o.safetensors").string() + " --policy eager");
    EXPECT_EQ(r.rc, 0) << r.out;
  }
  const CliRun bad = run_cli("quantize --weights " + wf.string() + " --key model.fc.weight --out " + q.string() +
                          " --group-size 3");
  EXPECT_EQ(bad.rc, 1);
  EXPECT_NE(bad.out.find("group_size=3 must be >=4 and divide 16 or be a multiple of 16"), std::string::npos) << bad.out;
}

}  // namespace
}  // namespace w4a8::gemm
