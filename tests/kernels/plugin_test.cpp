// The kernel plugin modules as a loader sees them: dlopen, the one exported entry symbol, the table's
// ABI fields and capabilities, refusals with a reason, and real runs through the table compared
// with the CPU reference (the HOST emulation module, everywhere) and with the emulation module (the
// CUDA module, where a device exists; without one its device queries must fail cleanly).
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "kernels/layer_problem.hpp"
#include "kernels/w4a8_cuda.h"
#include "layer_gen.hpp"

namespace w4a8::kern::test {
namespace {

constexpr std::uint64_t kExpectedCaps =
    W4A8_CAP_INTEGER_PATH | W4A8_CAP_CORRECTION_PATH | W4A8_CAP_EAGER_POLICY | W4A8_CAP_INTERMEDIATES;

struct Module {
  void* handle = nullptr;
  const w4a8_kernel_plugin* table = nullptr;
  std::string error;
  // path: the module as built; W4A8_PLUGIN_DIR (the GPU bundle) names another folder holding it.
  explicit Module(const char* path) {
    std::string where = path;
    if (const char* dir = std::getenv("W4A8_PLUGIN_DIR")) where = std::string(dir) + "/" + where.substr(where.rfind('/') + 1);
    handle = dlopen(where.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
      error = dlerror();
      return;
    }
    auto entry = reinterpret_cast<w4a8_kernel_plugin_fn>(dlsym(handle, W4A8_KERNEL_PLUGIN_SYMBOL));
    if (!entry) {
      error = "no entry symbol";
      return;
    }
    table = entry();
  }
  ~Module() {
    if (handle) dlclose(handle);
  }
};

void expect_abi(const Module& m, const char* name, w4a8_memory memory) {
  ASSERT_NE(m.table, nullptr) << m.error;
  EXPECT_EQ(m.table->abi_version, W4A8_KERNEL_ABI_VERSION);
  EXPECT_EQ(m.table->struct_size, sizeof(w4a8_kernel_plugin));
  EXPECT_STREQ(m.table->name, name);
  EXPECT_NE(std::string(m.table->version), "");
  EXPECT_EQ(m.table->memory, memory);
  EXPECT_EQ(m.table->caps, kExpectedCaps);  // no 6-bit, no F32 scales: refused, see below
  ASSERT_TRUE(m.table->check_problem && m.table->workspace_size && m.table->run && m.table->last_error);
  // Only the entry is exported: the C entry points linked inside stay hidden.
  EXPECT_EQ(dlsym(m.handle, "w4a8_check_problem"), nullptr);
  EXPECT_EQ(dlsym(m.handle, "w4a8_gemm_cuda_workspace_size"), nullptr);
}

void expect_refusals(const Module& m) {
  const OwnedProblem o = small_problem();
  ASSERT_TRUE(o.lp);
  w4a8_problem p = o.lp->p;
  p.bits = 6;
  EXPECT_EQ(m.table->check_problem(&p), W4A8_ERR_UNSUPPORTED);
  EXPECT_NE(std::string(m.table->last_error()).find("unsupported by this kernel"), std::string::npos)
      << m.table->last_error();
  p.bits = 4, p.s_rel_dtype = W4A8_SCALE_F32;
  EXPECT_EQ(m.table->check_problem(&p), W4A8_ERR_UNSUPPORTED);
  EXPECT_NE(std::string(m.table->last_error()).find("F32 group scales"), std::string::npos);
  p.s_rel_dtype = W4A8_SCALE_FP8_E4M3, p.group_size = 12;
  EXPECT_EQ(m.table->check_problem(&p), W4A8_ERR_CONTRACT);
  EXPECT_EQ(m.table->check_problem(nullptr), W4A8_ERR_ARGUMENT);
}

std::vector<Case> plugin_cases() {
  std::vector<Case> cs;
  int idx = 0;
  for (std::uint64_t m : {1, 16, 33})
    for (bool corr : {false, true}) {
      Case c;
      c.m = m, c.n = 72, c.k = 512, c.g = corr ? 32 : 16, c.r = 64, c.correction = corr, c.bias = true;
      c.codebook = idx % 2, c.x_dtype = gemm::FloatDtype::BF16, c.out_dtype = gemm::FloatDtype::F16;
      c.seed = 300u + idx++;
      cs.push_back(c);
    }
  return cs;
}

TEST(PluginEmulate, TableAndRefusals) {
  Module m(W4A8_EMULATE_PLUGIN);
  expect_abi(m, "w4a8check-emulate", W4A8_MEMORY_HOST);
  if (HasFatalFailure()) return;
  EXPECT_EQ(m.table->device_count, nullptr);
  EXPECT_EQ(m.table->alloc, nullptr);
  expect_refusals(m);
}

// Host pointers through the table, against the CPU reference bit for bit (intermediates included).
TEST(PluginEmulate, RunsLayersBitExact) {
  Module m(W4A8_EMULATE_PLUGIN);
  ASSERT_NE(m.table, nullptr) << m.error;
  for (const Case& c : plugin_cases()) {
    const gemm::Layer layer = make_layer(c);
    const gemm::Activations x = make_acts(c);
    auto ref = gemm::gemm_literal(layer, x, options(c));
    auto lp = make_layer_problem(layer, x, options(c));
    ASSERT_TRUE(ref.ok() && lp.ok());
    LayerProblem& l = **lp;
    ASSERT_EQ(m.table->check_problem(&l.p), W4A8_OK) << m.table->last_error();
    std::vector<unsigned char> ws(m.table->workspace_size(&l.p) + 1);
    ASSERT_EQ(m.table->run(&l.p, ws.data(), ws.size(), nullptr), W4A8_OK) << m.table->last_error();
    gemm::GemmResult got = collect_result(l, options(c), c.correction);
    if (c.correction) {
      got.w_dequant = ref->w_dequant;  // not an ABI output; the out comparison is the point here
    } else {
      got.w_q = l.w_q;
    }
    EXPECT_EQ(diff_results(got, *ref), "") << describe(c);
  }
}

#if defined(W4A8_CUDA_PLUGIN)
TEST(PluginCuda, TableAndRefusals) {
  Module m(W4A8_CUDA_PLUGIN);
  expect_abi(m, "w4a8check-cuda", W4A8_MEMORY_CUDA_DEVICE);
  if (HasFatalFailure()) return;
  ASSERT_TRUE(m.table->device_count && m.table->alloc && m.table->free && m.table->copy_to_device &&
              m.table->copy_to_host && m.table->synchronize);
  expect_refusals(m);
}

// Without a device the module's queries fail cleanly (a count of -1 and the CUDA error, a refused
// allocation with a reason); with one, layers run through alloc / copy / run / synchronize and match
// the emulation module byte for byte.
TEST(PluginCuda, RunsLayersOrReportsNoDevice) {
  Module cuda(W4A8_CUDA_PLUGIN), emu(W4A8_EMULATE_PLUGIN);
  ASSERT_TRUE(cuda.table && emu.table) << cuda.error << emu.error;
  const w4a8_kernel_plugin& t = *cuda.table;
  int err = 0;
  const int devices = t.device_count(&err);
  if (devices <= 0) {
    EXPECT_EQ(devices, -1);
    EXPECT_NE(err, 0);
    void* p = reinterpret_cast<void*>(1);
    EXPECT_NE(t.alloc(&p, 64), W4A8_OK);
    EXPECT_EQ(p, nullptr);
    EXPECT_NE(std::string(t.last_error()), "");
    GTEST_SKIP() << "no CUDA device (cudaGetDeviceCount error " << err << "): module loaded, queries fail cleanly";
  }
  for (const Case& c : plugin_cases()) {
    const gemm::Layer layer = make_layer(c);
    const gemm::Activations x = make_acts(c);
    auto lp = make_layer_problem(layer, x, options(c));
    ASSERT_TRUE(lp.ok());
    LayerProblem& l = **lp;
    w4a8_problem h = l.p;
    h.x_q = nullptr, h.x_scale = nullptr, h.acc = nullptr, h.w_q = nullptr;  // out only
    std::vector<void*> owned;
    auto put = [&](const void* src, std::size_t bytes) {
      void* d = nullptr;
      EXPECT_EQ(t.alloc(&d, bytes), W4A8_OK) << t.last_error();
      if (src) {
        EXPECT_EQ(t.copy_to_device(d, src, bytes), W4A8_OK);
      }
      owned.push_back(d);
      return d;
    };
    w4a8_problem d = h;
    d.x = put(l.x.data(), l.x.size());
    d.weight = static_cast<const std::int8_t*>(put(layer.weight.data(), layer.weight.size()));
    d.s_rel = static_cast<const std::uint8_t*>(put(layer.s_rel.data(), layer.s_rel.size()));
    d.s_channel = static_cast<const float*>(put(layer.s_channel.data(), layer.s_channel.size() * 4));
    d.codebook = h.codebook ? static_cast<const float*>(put(h.codebook, 64)) : nullptr;
    d.correction = h.correction ? static_cast<const float*>(put(h.correction, layer.correction.size() * 4)) : nullptr;
    d.bias = h.bias ? put(l.bias.data(), l.bias.size()) : nullptr;
    d.out = put(nullptr, l.out.size());
    d.nan_scale_flag = static_cast<std::int32_t*>(put(nullptr, 4));
    const std::size_t ws_bytes = t.workspace_size(&d);
    void* ws = put(nullptr, ws_bytes);
    ASSERT_EQ(t.run(&d, ws, ws_bytes, nullptr), W4A8_OK) << t.last_error();
    ASSERT_EQ(t.synchronize(nullptr), W4A8_OK) << t.last_error();
    std::vector<std::uint8_t> dev_out(l.out.size());
    ASSERT_EQ(t.copy_to_host(dev_out.data(), d.out, dev_out.size()), W4A8_OK);
    h.nan_scale_flag = nullptr;
    ASSERT_EQ(emu.table->run(&h, nullptr, 0, nullptr), W4A8_OK) << emu.table->last_error();
    if (!c.correction) {
      EXPECT_EQ(dev_out, l.out) << describe(c);  // integer path: byte for byte
    }
    for (void* p : owned) t.free(p);
  }
}
#endif

}  // namespace
}  // namespace w4a8::kern::test
