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

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>
#include <system_error>

#include <sys/wait.h>
#include <unistd.h>

#include "gemm/tensor_io.hpp"
#include "cli_fixture.hpp"
#include "run_cli.hpp"

namespace w4a8::gemm {
namespace {

namespace fs = std::filesystem;

using testing::CliRun;

CliRun run_cli(const std::string& args) { return testing::run_cli(args + " 2>&1"); }

fs::path tmp(const std::string& name) { return testing::scratch("gemm_cli", name); }

void write(const fs::path& p, const std::vector<st::TensorSpec>& t) { testing::write_checkpoint(p.string(), t); }

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

// comfy-kitchen's correction path refuses a bias whose dtype is not the activations' (torch's
// F.linear: "self and mat2 must have the same dtype", docs/gemm.md); gemm computes it, and says so.
TEST_F(GemmCli, CorrectionPathBiasOfAnotherDtypeIsNoted) {
  Layer l = hand_layer();  // bias BF16
  l.correction_shape = Shape{1, 2};
  l.correction = {0.0f, 0.0f};
  const fs::path ck = tmp("corr.safetensors");
  write(ck, layer_tensors(l, "blk.0"));
  const std::string note = "note: comfy-kitchen 0.2.40 raises here (torch: \"self and mat2 must have the same dtype\"): "
                           "layer 'blk.0''s bias is bf16, the activations f32";
  CliRun r = run_cli("gemm --checkpoint " + ck.string() + " --layer blk.0 --input " + input_.string() + " --out " +
                     tmp("o.safetensors").string());
  EXPECT_EQ(r.rc, 0) << r.out;
  EXPECT_NE(r.out.find(note), std::string::npos) << r.out;
  const fs::path xb = tmp("xb.safetensors");
  write(xb, {float_tensor("input", FloatDtype::BF16, {2, 16}, hand_input())});
  r = run_cli("gemm --checkpoint " + ck.string() + " --layer blk.0 --input " + xb.string() + " --out " + tmp("o.safetensors").string());
  EXPECT_EQ(r.rc, 0) << r.out;
  EXPECT_EQ(r.out.find("raises here"), std::string::npos) << r.out;
  r = run_cli("gemm --checkpoint " + ckpt_.string() + " --layer blk.0 --input " + input_.string() + " --out " +
              tmp("o.safetensors").string());  // the integer path adds the bias itself
  EXPECT_EQ(r.out.find("raises here"), std::string::npos) << r.out;
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

// A checkpoint refused while it is opened (a container error) is sglang's verdict, and says whose, as
// validate does (it said only the code).
TEST_F(GemmCli, ACheckpointRefusedWhenOpenedNamesTheRelease) {
  const fs::path bad = tmp("container.safetensors");
  std::ofstream(bad, std::ios::binary) << std::string("\x08\x00\x00\x00\x00\x00\x00\x00{}junk", 14);
  const CliRun r = run_cli("gemm --checkpoint " + bad.string() + " --layer blk.0 --input " + input_.string() + " --out " +
                           tmp("o.safetensors").string());
  EXPECT_EQ(r.rc, 1) << r.out;
  EXPECT_NE(r.out.find("REJECTED: " + bad.string() + ": SafetensorError: Error while deserializing header: invalid header "
                       "length\n  [safetensors.InvalidHeaderLength] (sglang 0.5.23, Python 3.11)\n"),
            std::string::npos)
      << r.out;
  // An index error is ours: no release named (as validate).
  const fs::path index = tmp("model.safetensors.index.json");
  std::ofstream(index) << R"({"weight_map": 5})";
  const CliRun i = run_cli("gemm --checkpoint " + index.string() + " --layer blk.0 --input " + input_.string() + " --out " +
                           tmp("o.safetensors").string());
  EXPECT_EQ(i.rc, 1) << i.out;
  EXPECT_NE(i.out.find("  [index.invalid]\n"), std::string::npos) << i.out;
}

TEST_F(GemmCli, UsageErrorsExit2) {
  EXPECT_EQ(run_cli("gemm --checkpoint " + ckpt_.string() + " --layer nope --input " + input_.string() +
                    " --out " + tmp("o.safetensors").string()).rc, 2);
  EXPECT_EQ(run_cli("gemm --checkpoint /nonexistent --layer blk.0 --input x --out y").rc, 2);
  EXPECT_EQ(run_cli("gemm --checkpoint a --layer b --input c --out d --policy bogus").rc, 2);
}

// A safetensors file declaring `input` F32 of `shape` whose data is a hole (sparse: no disk, no reading).
void write_sparse_input(const fs::path& p, const Shape& shape) {
  std::uint64_t n = 4;
  std::string dims;
  for (auto d : shape) n *= d, dims += (dims.empty() ? "" : ",") + std::to_string(d);
  std::string h = R"({"input":{"dtype":"F32","shape":[)" + dims + R"(],"data_offsets":[0,)" + std::to_string(n) + "]}}";
  h.append((8 - h.size() % 8) % 8, ' ');
  {
    std::ofstream f(p, std::ios::binary | std::ios::trunc);
    const std::uint64_t len = h.size();  // little-endian host
    f.write(reinterpret_cast<const char*>(&len), 8);
    f << h;
  }
  fs::resize_file(p, 8 + h.size() + n);
}

// docs/gemm.md: sizes are gemm.too_large (2^32 elements per tensor); the input's declared shape is
// judged from its header, before its data is read or any buffer allocated. Under a 20 GB address
// space limit the 16 GiB inputs can be mapped but not also copied: reading them first was
// `out of memory` (exit 2) instead of the documented rejection.
TEST_F(GemmCli, OversizedOrMismatchedInputIsRefusedBeforeReading) {
#ifdef W4A8_SANITIZED
  const std::string limit;  // the sanitizers' shadow memory does not fit an address space limit
#else
  const std::string limit = "ulimit -v 20000000; ";
#endif
  const fs::path big = tmp("big.safetensors");
  fs::remove(tmp("o.safetensors"));  // (the scratch directory is shared: another test may have left one)
  // [2^28 + 1, 16]: 2^32 + 16 = 4294967312 elements (16 GiB of F32).
  write_sparse_input(big, {(std::uint64_t(1) << 28) + 1, 16});
  CliRun r = testing::run_command(limit + "exec " W4A8_CLI_BINARY " gemm --checkpoint " + ckpt_.string() +
                                  " --layer blk.0 --input " + big.string() + " --out " + tmp("o.safetensors").string() + " 2>&1");
  EXPECT_EQ(r.rc, 1) << r.out;
  // The limit is this tool's, not comfy-kitchen's: no release named; the file named.
  EXPECT_NE(r.out.find("REJECTED: --input " + big.string() +
                       ": ValueError: input would hold 4294967312 elements, more than the limit of 4294967296\n"
                       "  [gemm.too_large]\n"),
            std::string::npos)
      << r.out;
  // [2^27, 32]: 2^32 elements (legal), but K = 32 against the layer's 16.
  write_sparse_input(big, {std::uint64_t(1) << 27, 32});
  r = testing::run_command(limit + "exec " W4A8_CLI_BINARY " gemm --checkpoint " + ckpt_.string() + " --layer blk.0 --input " +
                           big.string() + " --out " + tmp("o.safetensors").string() + " 2>&1");
  EXPECT_EQ(r.rc, 1) << r.out;
  EXPECT_NE(r.out.find("REJECTED: --input " + big.string() + ": ValueError: Input K=32 does not match qdata K=16"),
            std::string::npos)
      << r.out;
  fs::remove(big);
  EXPECT_FALSE(fs::exists(tmp("o.safetensors")));
}

// Activations near FLT_MAX overflow the rotation (hand derivation, with the header's H_4): a block
// x = 3e38 * [1, 1, 1, -1] (column 0 of H_4's signs) rotates to y_0 = 3e38 * 4 / 2 = 6e38 exactly,
// past FLT_MAX = 3.40e38; the four terms have one sign, so every float32 summation order ends at inf.
// Then absmax = inf and x_scale = inf / 127 = inf, and out = f32(acc) * f32(x_scale * s_channel) + bias
// is inf or NaN (0 * inf) whatever x_q is. Rows 0 and 2 overflow; row 1 (zeros) gives the bias.
TEST_F(GemmCli, NonFiniteOutputsAreNamedAndStrictRefusesThem) {
  std::vector<float> x(48, 0.0f);
  for (std::size_t row : {0u, 2u})
    for (std::size_t j = 0; j < 4; ++j) x[row * 16 + j] = j == 3 ? -3e38f : 3e38f;
  write(input_, {float_tensor("input", FloatDtype::F32, {3, 16}, x)});
  const std::string what = "the output of layer 'blk.0' has NaN or infinite values in 2 row(s) whose activations are "
                           "finite: 0, 2; x_scale is NaN or infinite in 2 of them (0, 2): the rotated activations "
                           "overflow float32";
  for (const char* impl : {"literal", "fast", "emulate"}) {
    const fs::path out = tmp(std::string("nf_") + impl + ".safetensors");
    CliRun r = run_cli("gemm --checkpoint " + ckpt_.string() + " --layer blk.0 --input " + input_.string() + " --out " +
                       out.string() + " --intermediates --impl " + impl);
    ASSERT_EQ(r.rc, 0) << impl << "\n" << r.out;
    EXPECT_NE(r.out.find("w4a8check: warning: " + what + " (--strict makes this an error)\n"), std::string::npos)
        << impl << "\n" << r.out;
    auto f = st::File::open(out.string());
    ASSERT_TRUE(f.ok());
    const auto o = tensor<float>(*f, "output", st::Dtype::F32, {3, 2});
    ASSERT_EQ(o.size(), 6u);
    for (std::size_t i : {0u, 1u, 4u, 5u}) EXPECT_FALSE(std::isfinite(o[i])) << impl << " output " << i;
    EXPECT_EQ(o[2], 0.25f) << impl;  // the bias
    EXPECT_EQ(o[3], -1.0f) << impl;
    const auto sc = tensor<float>(*f, "x_scale", st::Dtype::F32, {3});
    ASSERT_EQ(sc.size(), 3u);
    EXPECT_FALSE(std::isfinite(sc[0]));
    EXPECT_FALSE(std::isfinite(sc[2]));
    r = run_cli("gemm --checkpoint " + ckpt_.string() + " --layer blk.0 --input " + input_.string() + " --out " +
                tmp("strict.safetensors").string() + " --strict --impl " + impl);
    EXPECT_EQ(r.rc, 1) << impl << "\n" << r.out;
    EXPECT_NE(r.out.find("REJECTED: ValueError: " + what + "\n  [gemm.output_nonfinite]\n"),
              std::string::npos)
        << impl << "\n" << r.out;
    EXPECT_FALSE(fs::exists(tmp("strict.safetensors")));
  }
  // A NaN activation in row 1 is reported as such (its output is NaN by contract), not again as an
  // output row.
  x[16 + 7] = std::numeric_limits<float>::quiet_NaN();
  write(input_, {float_tensor("input", FloatDtype::F32, {3, 16}, x)});
  const CliRun r = run_cli("gemm --checkpoint " + ckpt_.string() + " --layer blk.0 --input " + input_.string() +
                           " --out " + tmp("o.safetensors").string());
  ASSERT_EQ(r.rc, 0) << r.out;
  EXPECT_NE(r.out.find("[input] has NaN or infinite values in 1 row(s): 1 (their outputs are NaN"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("warning: " + what), std::string::npos) << r.out;
}

// An empty --kernel (say, an unset variable) is a usage error, never a silent run of --impl fast.
TEST_F(GemmCli, EmptyKernelPathIsAUsageError) {
  const fs::path out = tmp("k.safetensors");
  const CliRun r = run_cli("gemm --checkpoint " + ckpt_.string() + " --layer blk.0 --input " + input_.string() +
                           " --out " + out.string() + " --kernel ''");
  EXPECT_EQ(r.rc, 2) << r.out;
  EXPECT_EQ(r.out, "w4a8check: --kernel: empty path\n  [usage.error]\n");
  EXPECT_FALSE(fs::exists(out));
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
  // An option no layer can take: a usage error (exit 2) with --key as for a whole model (it was exit 1,
  // as if the tensor were at fault).
  EXPECT_EQ(bad.rc, 2);
  EXPECT_NE(bad.out.find("--group-size 3 / --convrot-groupsize 256: group_size must be >= 4 and divide 16 or be a "
                         "multiple of 16"),
            std::string::npos)
      << bad.out;
}

}  // namespace
}  // namespace w4a8::gemm
