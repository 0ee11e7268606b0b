#include "plugin/runner.hpp"

#include <cstdint>
#include <cstdlib>
#include <functional>
#include <type_traits>
#include <memory>
#include <vector>

#include "kernels/layer_problem.hpp"
#include "plugin/call_guard.hpp"

namespace w4a8::plugin {
namespace {

Error failed(const Plugin& pl, std::string_view where, w4a8_status s) {
  std::string why(status_name(s));
  const char* e = pl.table().last_error();
  if (e && *e) why += ": " + printable(e);
  return make_error(ErrorKind::PluginFailed, {pl.describe(), std::string(where), why});
}

// alloc() reporting success without a pointer: named as such (it was shown as W4A8_ERR_CUDA, a status
// the plugin never returned).
Error null_alloc(const Plugin& pl) {
  return make_error(ErrorKind::PluginFailed, {pl.describe(), "alloc", "it returned W4A8_OK and a NULL pointer"});
}

// One host buffer mirrored on the device.
struct Mirror {
  std::function<void(void*)> point;  // sets the problem's pointer to the device copy
  const void* host;                  // source (inputs) or destination (outputs)
  std::size_t bytes;
  bool output;
  void* device = nullptr;
};

// Device allocations, freed on every path out.
struct DeviceBuffers {
  const w4a8_kernel_plugin* t = nullptr;
  std::vector<void*> ptrs;
  ~DeviceBuffers() {
    for (void* p : ptrs) t->free(p);
  }
};

Status run_on_device(const Plugin& pl, const kern::LayerProblem& lp, const gemm::Layer& layer, w4a8_problem& p) {
  const w4a8_kernel_plugin& t = pl.table();
  int err = 0;
  const int devices = t.device_count(&err);
  if (devices <= 0) {
    const char* e = t.last_error();
    return make_error(ErrorKind::CudaNoDevice, {std::to_string(devices < 0 ? err : 0), e && *e ? printable(e) : "no device"});
  }
  std::vector<Mirror> m;
  auto add = [&](auto& ptr, const void* host, std::size_t bytes, bool output) {
    using Ptr = std::remove_reference_t<decltype(ptr)>;
    if (ptr) m.push_back({[&ptr](void* d) { ptr = static_cast<Ptr>(d); }, host, bytes, output});
  };
  add(p.x, lp.x.data(), lp.x.size(), false);
  add(p.weight, layer.weight.data(), layer.weight.size(), false);
  add(p.s_rel, layer.s_rel.data(), layer.s_rel.size(), false);
  add(p.s_channel, layer.s_channel.data(), layer.s_channel.size() * sizeof(float), false);
  add(p.codebook, layer.codebook.data(), layer.codebook.size() * sizeof(float), false);
  add(p.correction, layer.correction.data(), layer.correction.size() * sizeof(float), false);
  add(p.bias, lp.bias.data(), lp.bias.size(), false);
  add(p.out, lp.out.data(), lp.out.size(), true);
  add(p.x_q, lp.x_q.data(), lp.x_q.size(), true);
  add(p.x_scale, lp.x_scale.data(), lp.x_scale.size() * sizeof(float), true);
  add(p.acc, lp.acc.data(), lp.acc.size() * sizeof(std::int32_t), true);
  add(p.w_q, lp.w_q.data(), lp.w_q.size(), true);
  add(p.nan_scale_flag, &lp.nan_flag, sizeof(std::int32_t), true);
  DeviceBuffers bufs;
  bufs.t = &t;
  for (Mirror& b : m) {
    void* d = nullptr;
    const std::size_t bytes = b.bytes ? b.bytes : 1;  // never ask for 0 bytes
    if (const w4a8_status s = t.alloc(&d, bytes); s != W4A8_OK || !d) return s == W4A8_OK ? null_alloc(pl) : failed(pl, "alloc", s);
    bufs.ptrs.push_back(d);
    if (!b.output && b.bytes)
      if (const w4a8_status s = t.copy_to_device(d, b.host, b.bytes); s != W4A8_OK) return failed(pl, "copy_to_device", s);
    b.device = d;
    b.point(d);
  }
  const std::size_t ws_bytes = t.workspace_size(&p);
  void* ws = nullptr;
  if (ws_bytes) {
    if (const w4a8_status s = t.alloc(&ws, ws_bytes); s != W4A8_OK || !ws) return s == W4A8_OK ? null_alloc(pl) : failed(pl, "alloc", s);
    bufs.ptrs.push_back(ws);
  }
  if (const w4a8_status s = t.run(&p, ws, ws_bytes, nullptr); s != W4A8_OK) return failed(pl, "run", s);
  if (const w4a8_status s = t.synchronize(nullptr); s != W4A8_OK) return failed(pl, "synchronize", s);
  for (const Mirror& b : m)
    if (b.output && b.bytes)
      if (const w4a8_status s = t.copy_to_host(const_cast<void*>(b.host), b.device, b.bytes); s != W4A8_OK)
        return failed(pl, "copy_to_host", s);
  return Ok{};
}

Status run_on_host(const Plugin& pl, w4a8_problem& p) {
  const w4a8_kernel_plugin& t = pl.table();
  const std::size_t ws_bytes = t.workspace_size(&p);
  struct Free {
    void operator()(void* q) const { std::free(q); }
  };
  std::unique_ptr<void, Free> ws;
  if (ws_bytes) {
    // Rounded up to the alignment (aligned_alloc's rule) only where that cannot wrap: near SIZE_MAX
    // the sum would wrap to a tiny block that run() is told holds ws_bytes. No object can exceed
    // PTRDIFF_MAX bytes, so larger sizes are refused without asking the allocator.
    constexpr std::size_t kAlign = 256;
    if (ws_bytes <= std::size_t(PTRDIFF_MAX) - (kAlign - 1))
      ws.reset(std::aligned_alloc(kAlign, (ws_bytes + kAlign - 1) / kAlign * kAlign));
    if (!ws)
      return make_error(ErrorKind::SysResources,
                        {"kernel plugin workspace", "out of memory (" + std::to_string(ws_bytes) + " bytes asked for by " +
                                                        pl.describe() + ")"});
  }
  if (const w4a8_status s = t.run(&p, ws.get(), ws_bytes, nullptr); s != W4A8_OK) return failed(pl, "run", s);
  return Ok{};
}

}  // namespace

std::uint64_t required_caps(const w4a8_problem& p, bool intermediates) {
  std::uint64_t c = p.correction ? W4A8_CAP_CORRECTION_PATH : W4A8_CAP_INTEGER_PATH;
  if (p.act_policy == 1) c |= W4A8_CAP_EAGER_POLICY;
  if (p.bits == 6) c |= W4A8_CAP_6BIT;
  if (p.s_rel_dtype == W4A8_SCALE_F32) c |= W4A8_CAP_F32_SCALES;
  if (intermediates) c |= W4A8_CAP_INTERMEDIATES;
  return c;
}

Result<gemm::GemmResult> run_layer(const Plugin& pl, const gemm::Layer& layer, const gemm::Activations& x,
                                   const gemm::GemmOptions& opt, bool intermediates) {
  kern::LayoutOptions layout;
  layout.kernel_limits = false;  // this project's kernel limits are not the plugin's: its caps and check decide
  auto made = kern::make_layer_problem(layer, x, opt, layout);
  if (!made.ok()) return std::move(made).error();
  kern::LayerProblem& lp = **made;
  w4a8_problem p = lp.p;
  const bool correction = p.correction != nullptr;
  const std::uint64_t need = required_caps(p, intermediates);
  if (const std::uint64_t missing = need & ~pl.table().caps)
    return make_error(ErrorKind::PluginUnsupported,
                      {pl.describe(), "it lacks " + caps_text(missing) + " (it offers " + caps_text(pl.table().caps) + ")"});
  if (!intermediates) p.x_q = nullptr, p.x_scale = nullptr, p.acc = nullptr, p.w_q = nullptr;
  {
    const CallGuard guard(pl.describe(), "check_problem");
    if (const w4a8_status s = pl.table().check_problem(&p); s != W4A8_OK) {
      const char* e = pl.table().last_error();
      return make_error(ErrorKind::PluginUnsupported,
                        {pl.describe(), "check_problem returned " + std::string(status_name(s)) +
                                            (e && *e ? ": " + printable(e) : std::string())});
    }
  }
  {
    const CallGuard guard(pl.describe(), "run");  // its workspace, device memory and copies included
    W4A8_TRY(pl.device() ? run_on_device(pl, lp, layer, p) : run_on_host(pl, p));
  }
  if (lp.nan_flag)
    return make_error(ErrorKind::PluginFailed, {pl.describe(), "run", "it decoded a NaN scale the operand checks had excluded"});
  gemm::GemmResult r = kern::collect_result(lp, opt, correction);
  if (!intermediates) {
    r.x_q.clear(), r.x_scale.clear(), r.acc.clear(), r.w_q.clear(), r.w_dequant.clear();
  } else {
    r.w_dequant.clear();  // not part of the ABI
    // The correction path returns no grid, and with M = 0 nothing was decoded: the reference's.
    if (r.w_q.empty()) r.w_q = gemm::decode_weights(layer);
  }
  return r;
}

}  // namespace w4a8::plugin
