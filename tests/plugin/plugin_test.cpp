// Kernel plugins: the loader refuses broken modules with the reason; a problem a plugin cannot run
// is refused before any call into it; the example C plugin (an independent implementation written
// from docs/gemm.md) and a pretend device plugin agree with the C++ reference bit for bit.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <cmath>
#include <cstdlib>
#include <numeric>

#include <dlfcn.h>

#include "gemm/reference.hpp"
#include "kernels/layer_gen.hpp"
#include "plugin/plugin.hpp"
#include "plugin/runner.hpp"

namespace w4a8::plugin {
namespace {

namespace kt = kern::test;

Plugin must_load(const char* path) {
  auto p = Plugin::load(path);
  if (!p.ok()) ADD_FAILURE() << p.error().message;
  return std::move(p).value();
}

template <class T = int>
T* module_int(const char* path, const char* symbol) {
  void* h = ::dlopen(path, RTLD_NOW | RTLD_NOLOAD);  // already loaded by Plugin::load
  return h ? static_cast<T*>(::dlsym(h, symbol)) : nullptr;
}

TEST(PluginLoader, RefusesBrokenModulesWithTheReason) {
  struct Bad {
    const char* path;
    ErrorKind kind;
    const char* says;
  } cases[] = {
      {W4A8_BAD_PLUGIN_NULL_TABLE, ErrorKind::PluginIncompatible, "w4a8_kernel_plugin_v1() returned NULL"},
      {W4A8_BAD_PLUGIN_ABI, ErrorKind::PluginIncompatible, "ABI version 2, expected 1"},
      {W4A8_BAD_PLUGIN_SMALL_STRUCT, ErrorKind::PluginIncompatible, "table of 16 bytes, expected at least"},
      // The missing members are named (the message listed every member whichever was missing).
      {W4A8_BAD_PLUGIN_NO_RUN, ErrorKind::PluginIncompatible, "its table leaves run NULL (name, check_problem"},
      {W4A8_BAD_PLUGIN_DEVICE_MISSING, ErrorKind::PluginIncompatible,
       "its table leaves device_count, alloc, free, copy_to_device, copy_to_host, synchronize NULL (a CUDA_DEVICE"},
      {W4A8_BAD_PLUGIN_EMPTY_NAME, ErrorKind::PluginIncompatible, "its name is empty"},

      {"/nonexistent/libnothing.so", ErrorKind::PluginLoadFailed, "/nonexistent/libnothing.so: cannot open shared object file"},
      {W4A8_BAD_PLUGIN_NO_SYMBOL, ErrorKind::PluginLoadFailed, "it does not export w4a8_kernel_plugin_v1"},
      // A name without '/' is a file in the current directory, never a library-path search.
      {"libm.so.6", ErrorKind::PluginLoadFailed, "./libm.so.6: cannot open shared object file"},
      {"/dev/null", ErrorKind::IoNotRegularFile, "it is a character device, not a regular file"},
      // Not "./", the current directory.
      {"", ErrorKind::PluginLoadFailed, "cannot load kernel plugin \"\": empty path"},
  };
  for (const Bad& b : cases) {
    auto p = Plugin::load(b.path);
    ASSERT_FALSE(p.ok()) << b.path;
    EXPECT_EQ(p.error().kind, b.kind) << b.path;
    EXPECT_NE(p.error().message.find(b.path), std::string::npos) << p.error().message;
    EXPECT_NE(p.error().message.find(b.says), std::string::npos) << p.error().message;
  }
}

// A caps bit this build does not know (a module built against a later header) is ignored, as a larger
// table is: the module loads, and only the known bits are named.
TEST(PluginLoader, UnknownCapsBitsAreIgnored) {
  const Plugin p = must_load(W4A8_BAD_PLUGIN_UNKNOWN_CAPS);
  EXPECT_EQ(p.table().caps, W4A8_CAP_INTEGER_PATH | (1ull << 40));
  EXPECT_EQ(caps_text(p.table().caps), "integer path");
}

TEST(PluginLoader, ExampleTable) {
  const Plugin p = must_load(W4A8_EXAMPLE_PLUGIN);
  EXPECT_EQ(p.name(), "w4a8-example-c");
  EXPECT_EQ(p.version(), "1.0.0");
  EXPECT_FALSE(p.device());
  EXPECT_EQ(p.table().caps, W4A8_CAP_INTEGER_PATH | W4A8_CAP_INTERMEDIATES);
  EXPECT_EQ(caps_text(p.table().caps), "integer path, intermediates");
}

// The example plugin's verdict on a case: refused for what it lacks, else the reference bit for bit.
void check_against_reference(const Plugin& p, const kt::Case& c) {
  const gemm::Layer layer = kt::make_layer(c);
  const gemm::Activations x = kt::make_acts(c);
  const gemm::GemmOptions opt = kt::options(c);
  auto got = run_layer(p, layer, x, opt, true);
  // (Eager with F32 activations is the f32 computation: it runs.)
  if (c.correction || (c.policy == gemm::ActPolicy::Eager && c.x_dtype != gemm::FloatDtype::F32)) {
    RC_ASSERT(!got.ok());
    RC_ASSERT(got.error().kind == ErrorKind::PluginUnsupported);
    return;
  }
  RC_ASSERT(got.ok());
  auto want = gemm::gemm_fast(layer, x, opt);
  RC_ASSERT(want.ok());
  const std::string diff = kt::diff_results(*got, *want);
  RC_LOG() << kt::describe(c) << " " << diff;
  RC_ASSERT(diff.empty());
}

RC_GTEST_PROP(PluginRunner, ExampleCPluginMatchesTheReferenceBitForBit, ()) {
  static const Plugin p = must_load(W4A8_EXAMPLE_PLUGIN);
  check_against_reference(p, kt::draw_case());
}

RC_GTEST_PROP(PluginRunner, DevicePathMatchesTheReferenceAndFreesEverything, ()) {
  static const Plugin p = must_load(W4A8_FAKE_DEVICE_PLUGIN);
  RC_ASSERT(p.device());
  kt::Case c = kt::draw_case();
  c.policy = gemm::ActPolicy::F32;
  check_against_reference(p, c);
  RC_ASSERT(*module_int(W4A8_FAKE_DEVICE_PLUGIN, "fake_live_allocs") == 0);
}

// Rows near float32's top: the rotation multiplies by 1/sqrt(R) before any sum (docs/gemm.md), so a
// row whose result is finite rotates to finite values. The example plugin halved each stage's sums
// and gave x_scale = inf and NaN outputs where the reference is finite (found by a docs review).
TEST(PluginRunner, ExamplePluginRotatesHugeRowsAsTheReference) {
  const Plugin p = must_load(W4A8_EXAMPLE_PLUGIN);
  for (const std::int64_t r : {4, 16, 64}) {
    kt::Case c;
    c.m = 2, c.n = 8, c.k = 64, c.g = 16, c.r = r;
    const auto layer = kt::make_layer(c);
    auto x = kt::make_acts(c);
    for (std::size_t k = 0; k < 3; ++k) x.values[k] = 1.5e38f;  // row 0: within FLT_MAX / sqrt(R) for R <= 4
    x.values[c.k] = 3e38f, x.values[c.k + 1] = -3e38f;          // row 1: random-like signs
    auto want = gemm::gemm_literal(layer, x, kt::options(c));
    ASSERT_TRUE(want.ok()) << want.error().message;
    auto got = run_layer(p, layer, x, kt::options(c), true);
    ASSERT_TRUE(got.ok()) << got.error().message;
    ASSERT_EQ(got->x_scale.size(), want->x_scale.size());
    for (std::size_t m = 0; m < want->x_scale.size(); ++m)
      EXPECT_EQ(gemm::f32_bits(got->x_scale[m]), gemm::f32_bits(want->x_scale[m])) << "R=" << r << " row " << m;
    for (std::size_t i = 0; i < want->out.size(); ++i)
      ASSERT_EQ(gemm::f32_bits(got->out[i]), gemm::f32_bits(want->out[i])) << "R=" << r << " at " << i;
    EXPECT_TRUE(std::isfinite(want->x_scale[0])) << "R=" << r;
  }
}

TEST(PluginRunner, IntegerPathGridWithoutIntermediates) {
  const Plugin p = must_load(W4A8_EXAMPLE_PLUGIN);
  int checked = 0;
  for (std::int64_t g : {4, 8, 16, 32, 48, 64})
    for (std::int64_t r : {4, 16, 64, 256})
      for (auto dt : {gemm::FloatDtype::F32, gemm::FloatDtype::BF16, gemm::FloatDtype::F16}) {
        kt::Case c;
        c.g = g, c.r = r, c.k = std::uint64_t(std::lcm(std::lcm(std::int64_t(16), g), r));
        c.m = 7, c.n = 13, c.codebook = (g + r) % 3 == 0, c.bias = true;
        c.x_dtype = dt, c.out_dtype = dt, c.bias_dtype = gemm::FloatDtype::BF16;
        c.seed = std::uint32_t(g * 1000 + r);
        const auto layer = kt::make_layer(c);
        const auto x = kt::make_acts(c);
        auto got = run_layer(p, layer, x, kt::options(c), false);
        ASSERT_TRUE(got.ok()) << got.error().message;
        EXPECT_TRUE(got->x_q.empty() && got->acc.empty() && got->w_q.empty());  // not asked for
        auto want = gemm::gemm_literal(layer, x, kt::options(c));
        ASSERT_TRUE(want.ok());
        ASSERT_EQ(got->out.size(), want->out.size());
        for (std::size_t i = 0; i < got->out.size(); ++i)
          ASSERT_EQ(gemm::f32_bits(got->out[i]), gemm::f32_bits(want->out[i])) << kt::describe(c) << " at " << i;
        ++checked;
      }
  EXPECT_EQ(checked, 72);
}

TEST(PluginRunner, RefusedProblemsNeverReachThePlugin) {
  const Plugin p = must_load(W4A8_PROBE_PLUGIN);
  int* runs = module_int(W4A8_PROBE_PLUGIN, "probe_run_calls");
  int* checks = module_int(W4A8_PROBE_PLUGIN, "probe_check_calls");
  ASSERT_TRUE(runs && checks);
  kt::Case c;
  c.correction = true;  // the probe offers the integer path only
  auto r = run_layer(p, kt::make_layer(c), kt::make_acts(c), kt::options(c), false);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().kind, ErrorKind::PluginUnsupported);
  EXPECT_NE(r.error().message.find("it lacks correction path (it offers integer path)"), std::string::npos) << r.error().message;
  c.correction = false;
  r = run_layer(p, kt::make_layer(c), kt::make_acts(c), kt::options(c), true);  // intermediates: not offered
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("it lacks intermediates"), std::string::npos) << r.error().message;
  EXPECT_EQ(*checks, 0);
  EXPECT_EQ(*runs, 0);
  c.m = 3;  // check_problem refuses: run is still not called
  r = run_layer(p, kt::make_layer(c), kt::make_acts(c), kt::options(c), false);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().kind, ErrorKind::PluginUnsupported);
  EXPECT_NE(r.error().message.find("check_problem returned W4A8_ERR_UNSUPPORTED: m=3 is refused by the probe"),
            std::string::npos)
      << r.error().message;
  EXPECT_EQ(*checks, 1);
  EXPECT_EQ(*runs, 0);
  c.m = 9;  // check_problem refusing a valid problem with another status: the plugin's failure
  r = run_layer(p, kt::make_layer(c), kt::make_acts(c), kt::options(c), false);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().kind, ErrorKind::PluginFailed);
  EXPECT_NE(r.error().message.find("failed in check_problem: it refused a problem the operand checks accept: "
                                   "W4A8_ERR_CONTRACT: m=9 breaks the probe's contract"),
            std::string::npos)
      << r.error().message;
  EXPECT_EQ(*runs, 0);
  c.m = 7;  // run returning W4A8_ERR_UNSUPPORTED: beyond its build, as from check_problem
  r = run_layer(p, kt::make_layer(c), kt::make_acts(c), kt::options(c), false);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().kind, ErrorKind::PluginUnsupported);
  EXPECT_NE(r.error().message.find("run returned W4A8_ERR_UNSUPPORTED (its check_problem had accepted the problem): "
                                   "m=7 is beyond the probe's build"),
            std::string::npos)
      << r.error().message;
  c.m = 5;  // run fails: its status and last_error are reported
  r = run_layer(p, kt::make_layer(c), kt::make_acts(c), kt::options(c), false);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().kind, ErrorKind::PluginFailed);
  EXPECT_NE(r.error().message.find("failed in run: W4A8_ERR_CUDA: the probe fails on m=5"), std::string::npos)
      << r.error().message;
  EXPECT_EQ(*runs, 2);  // (m = 7 and m = 5)
}

// A workspace size near SIZE_MAX used to wrap to 0 when rounded up to 256 bytes: run() was told it
// had SIZE_MAX bytes of a tiny block. Now such sizes (more than any object can hold: PTRDIFF_MAX)
// are refused before run(), as an allocation failure.
TEST(PluginRunner, HugeWorkspaceIsRefusedBeforeRun) {
  const Plugin p = must_load(W4A8_PROBE_PLUGIN);
  int* runs = module_int(W4A8_PROBE_PLUGIN, "probe_run_calls");
  auto* ws = module_int<std::size_t>(W4A8_PROBE_PLUGIN, "probe_ws_bytes");
  ASSERT_TRUE(runs && ws);
  kt::Case c;
  const std::size_t max = SIZE_MAX;
  // max and max - 254 wrapped to 0; max - 255 rounds to itself; 2^63 is PTRDIFF_MAX + 1.
  for (const std::size_t bytes : {max, max - 254, max - 255, std::size_t(1) << 63}) {
    *ws = bytes;
    const int before = *runs;
    auto r = run_layer(p, kt::make_layer(c), kt::make_acts(c), kt::options(c), false);
    ASSERT_FALSE(r.ok()) << bytes;
    EXPECT_EQ(r.error().kind, ErrorKind::SysResources);
    EXPECT_EQ(r.error().message, "kernel plugin workspace: out of memory (" + std::to_string(bytes) +
                                     " bytes asked for by probe 0.1 (" W4A8_PROBE_PLUGIN "))");
    EXPECT_EQ(*runs, before) << bytes;
  }
  *ws = 1000;  // an ordinary size: run() writes all 1000 bytes (checked by ASan in sanitized builds)
  const int before = *runs;
  auto r = run_layer(p, kt::make_layer(c), kt::make_acts(c), kt::options(c), false);
  *ws = 0;
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(*runs, before + 1);
}

// Text from the plugin reaches the terminal escaped: a name or an error with a newline or ESC
// cannot forge lines or recolour the output.
TEST(PluginRunner, PluginTextIsPrintable) {
  EXPECT_EQ(printable("plain-name 1.0 é"), "plain-name 1.0 é");
  EXPECT_EQ(printable(std::string_view("a\nb\x1b[31m\r\x7f\\\0z", 13)), "a\\x0ab\\x1b[31m\\x0d\\x7f\\x5c\\x00z");
  (void)must_load(W4A8_PROBE_PLUGIN);
  auto* name = module_int<const char*>(W4A8_PROBE_PLUGIN, "probe_name");
  auto* err = module_int<const char*>(W4A8_PROBE_PLUGIN, "probe_error_on_m5");
  ASSERT_TRUE(name && err);
  const char* old_name = *name;
  const char* old_err = *err;
  *name = "evil\n\x1b[2J";
  *err = "boom\x07\r";
  const Plugin evil = must_load(W4A8_PROBE_PLUGIN);  // the table is filled in again
  EXPECT_EQ(evil.describe(), "evil\\x0a\\x1b[2J 0.1 (" W4A8_PROBE_PLUGIN ")");
  kt::Case c;
  c.m = 5;
  auto r = run_layer(evil, kt::make_layer(c), kt::make_acts(c), kt::options(c), false);
  *name = old_name;
  *err = old_err;
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message, "kernel plugin evil\\x0a\\x1b[2J 0.1 (" W4A8_PROBE_PLUGIN
                               ") failed in run: W4A8_ERR_CUDA: boom\\x07\\x0d");
  EXPECT_EQ(must_load(W4A8_PROBE_PLUGIN).name(), "probe");  // the same table, refilled
}

// A default case through the fake device plugin with one of its switches set in the environment.
Result<gemm::GemmResult> run_fake_device_with(const char* switch_name, const char* value) {
  const Plugin p = must_load(W4A8_FAKE_DEVICE_PLUGIN);
  ::setenv(switch_name, value, 1);
  kt::Case c;
  auto r = run_layer(p, kt::make_layer(c), kt::make_acts(c), kt::options(c), false);
  ::unsetenv(switch_name);
  return r;
}

TEST(PluginRunner, DevicePluginWithoutDeviceIsCudaNoDevice) {
  auto r = run_fake_device_with("W4A8_FAKE_DEVICE_COUNT", "0");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().kind, ErrorKind::CudaNoDevice);
  EXPECT_EQ(r.error().message, "no CUDA device: cudaGetDeviceCount returned 100 (no CUDA-capable device is detected (fake))");
  r = run_fake_device_with("W4A8_FAKE_DEVICE_COUNT", "-1");  // it read "returned 0"
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message, "no CUDA device: cudaGetDeviceCount returned -1 without an error code (no device)");
}

// alloc() reporting W4A8_OK with a NULL pointer is named as such (it was shown as W4A8_ERR_CUDA, a
// status the plugin never returned).
TEST(PluginRunner, DeviceAllocOfNullIsNamed) {
  auto r = run_fake_device_with("W4A8_FAKE_NULL_ALLOC", "1");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().kind, ErrorKind::PluginFailed);
  EXPECT_NE(r.error().message.find("failed in alloc: it returned W4A8_OK and a NULL pointer"), std::string::npos)
      << r.error().message;
}

// Outputs start as a NaN pattern, every buffer is a copy with a guard zone, and inputs are compared
// with the originals after the run: what no status reports is still seen (a kernel zeroing s_channel
// and writing out = bias passed the audit: its epilogue was judged against the zeroed copy).
// Nothing depends on the device's alloc zero-filling (a dirty alloc read as "a NaN scale was decoded").
TEST(PluginRunner, UnwrittenOutputsAndWritesPastTheEndAreFailures) {
  const Plugin p = must_load(W4A8_PROBE_PLUGIN);
  int* mode = module_int(W4A8_PROBE_PLUGIN, "probe_out_mode");
  ASSERT_NE(mode, nullptr);
  kt::Case c;
  c.m = 4, c.n = 8, c.out_dtype = gemm::FloatDtype::BF16;
  const auto layer = kt::make_layer(c);
  const auto x = kt::make_acts(c);
  struct Want {
    int mode;
    const char* says;  // "" = it runs
  };
  for (const Want& w : {Want{0, ""}, Want{1, "failed in run: it left 1 of 32 elements of out unwritten (the first at row 3, column 7)"},
                        Want{2, "failed in run: it wrote past the end of out (64 bytes): byte 0 after it changed"},
                        Want{3, "failed in run: it wrote into its input s_channel, which the ABI declares const: "},
                        Want{4, "failed in run: it wrote before the start of out: byte 1 before it changed"}}) {
    *mode = w.mode;
    auto r = run_layer(p, layer, x, kt::options(c), false);
    *mode = 0;
    if (*w.says == 0) {
      ASSERT_TRUE(r.ok()) << r.error().message;
      for (float v : r->out) EXPECT_EQ(gemm::f32_bits(v), 0u);  // what the probe wrote
      continue;
    }
    ASSERT_FALSE(r.ok()) << w.mode;
    EXPECT_EQ(r.error().kind, ErrorKind::PluginFailed);
    EXPECT_NE(r.error().message.find(w.says), std::string::npos) << r.error().message;
  }
  {
    auto r = run_fake_device_with("W4A8_FAKE_OVERRUN", "1");
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.error().message.find("failed in run: it wrote past the end of out ("), std::string::npos)
        << r.error().message;
  }
  {
    // An intermediate the plugin promised (W4A8_CAP_INTERMEDIATES) and never wrote: acc all poison.
    const Plugin dev = must_load(W4A8_FAKE_DEVICE_PLUGIN);
    ::setenv("W4A8_FAKE_NO_ACC", "1", 1);
    kt::Case c2;
    auto r = run_layer(dev, kt::make_layer(c2), kt::make_acts(c2), kt::options(c2), true);
    ::unsetenv("W4A8_FAKE_NO_ACC");
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.error().message.find("failed in run: it left acc unwritten: every element still holds the poison"),
              std::string::npos)
        << r.error().message;
  }
  auto r = run_fake_device_with("W4A8_FAKE_DIRTY_ALLOC", "1");
  ASSERT_TRUE(r.ok()) << r.error().message;
  auto want = gemm::gemm_literal(kt::make_layer(kt::Case{}), kt::make_acts(kt::Case{}), kt::options(kt::Case{}));
  ASSERT_TRUE(want.ok());
  ASSERT_EQ(r->out.size(), want->out.size());
  for (std::size_t i = 0; i < r->out.size(); ++i) ASSERT_EQ(gemm::f32_bits(r->out[i]), gemm::f32_bits(want->out[i])) << i;
  EXPECT_EQ(*module_int(W4A8_FAKE_DEVICE_PLUGIN, "fake_live_allocs"), 0);
}

TEST(CudaModule, FoundThroughTheEnvironmentOrReportedMissing) {
  ::setenv("W4A8CHECK_CUDA_MODULE", W4A8_FAKE_DEVICE_PLUGIN, 1);
  auto p = load_cuda_module();
  ASSERT_TRUE(p.ok()) << p.error().message;
  EXPECT_EQ(p->name(), "fake-device");
  ::setenv("W4A8CHECK_CUDA_MODULE", "/nonexistent/libw4a8check_cuda.so", 1);
  p = load_cuda_module();
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.error().kind, ErrorKind::PluginLoadFailed);
  ::unsetenv("W4A8CHECK_CUDA_MODULE");
  const auto where = cuda_module_candidates();
  ASSERT_GE(where.size(), 4u);
  EXPECT_NE(where[0].find(std::string("/tests/plugin/") + std::string(cuda_module_name())), std::string::npos) << where[0];
  p = load_cuda_module();  // nothing next to this test binary
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.error().kind, ErrorKind::CudaModuleMissing);
  EXPECT_NE(p.error().message.find(where[0]), std::string::npos) << p.error().message;
}

}  // namespace
}  // namespace w4a8::plugin
