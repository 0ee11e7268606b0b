// A kernel plugin library (--kernel PATH.so, and the `cuda` built-in's module) as an audit
// implementation. This is the audit's only dlopen use: it will be replaced by the shared loader in
// src/plugin/ once that lands on main (the lead consolidates); keep it in this one file until then.
#include <dlfcn.h>

#include <chrono>
#include <cstring>

#include "audit/implementation.hpp"
#include "kernels/layer_problem.hpp"
#include "kernels/w4a8_cuda.h"

namespace w4a8::audit {

namespace {

std::string status_text(w4a8_status s) {
  switch (s) {
    case W4A8_OK:
      return "W4A8_OK";
    case W4A8_ERR_CONTRACT:
      return "W4A8_ERR_CONTRACT";
    case W4A8_ERR_ARGUMENT:
      return "W4A8_ERR_ARGUMENT";
    case W4A8_ERR_UNSUPPORTED:
      return "W4A8_ERR_UNSUPPORTED";
    case W4A8_ERR_CUDA:
      return "W4A8_ERR_CUDA";
    case W4A8_ERR_NO_DEVICE:
      return "W4A8_ERR_NO_DEVICE";
  }
  return "status " + std::to_string(int(s));
}

// Device buffers obtained through the plugin's own allocator, freed on scope exit.
class DeviceBuffers {
 public:
  explicit DeviceBuffers(const w4a8_kernel_plugin* t) : t_(t) {}
  ~DeviceBuffers() {
    for (void* p : ptrs_) t_->free(p);
  }
  DeviceBuffers(const DeviceBuffers&) = delete;
  DeviceBuffers& operator=(const DeviceBuffers&) = delete;
  // A device copy of bytes (or a zeroed buffer when src is null). nullptr for size 0.
  w4a8_status make(const void* src, std::size_t bytes, void** out) {
    *out = nullptr;
    if (bytes == 0) return W4A8_OK;
    if (w4a8_status s = t_->alloc(out, bytes); s != W4A8_OK) return s;
    ptrs_.push_back(*out);
    return src ? t_->copy_to_device(*out, src, bytes) : W4A8_OK;
  }

 private:
  const w4a8_kernel_plugin* t_;
  std::vector<void*> ptrs_;
};

class PluginImpl final : public Implementation {
 public:
  PluginImpl(void* handle, const w4a8_kernel_plugin* t, std::string path)
      : handle_(handle), t_(t), path_(std::move(path)) {
    if (t_->memory == W4A8_MEMORY_CUDA_DEVICE) {
      int err = 0;
      const int n = t_->device_count ? t_->device_count(&err) : -1;
      if (n <= 0)
        reason_ = "no CUDA device: the plugin's device_count returned " + std::to_string(n) + " (error " +
                  std::to_string(err) + ")";
    }
  }
  ~PluginImpl() override { ::dlclose(handle_); }
  std::string name() const override { return std::string(t_->name ? t_->name : "plugin") + "@" + path_; }
  std::string unavailable_reason() const override { return reason_; }
  gemm::ActPolicy natural_policy() const override { return gemm::ActPolicy::F32; }

  ImplOutput run(const CaseInput& in) override {
    if (!reason_.empty()) return ImplOutput::skip(reason_);
    const bool corr = in.spec.correction;
    if (corr && !(t_->caps & W4A8_CAP_CORRECTION_PATH))
      return ImplOutput::skip("plugin lacks W4A8_CAP_CORRECTION_PATH");
    if (!corr && !(t_->caps & W4A8_CAP_INTEGER_PATH)) return ImplOutput::skip("plugin lacks W4A8_CAP_INTEGER_PATH");
    if (in.policy == gemm::ActPolicy::Eager && in.spec.x_dtype != gemm::FloatDtype::F32 &&
        !(t_->caps & W4A8_CAP_EAGER_POLICY))
      return ImplOutput::skip("plugin lacks W4A8_CAP_EAGER_POLICY");
    if (in.spec.bits == 6 && !(t_->caps & W4A8_CAP_6BIT)) return ImplOutput::skip("plugin lacks W4A8_CAP_6BIT");
    if (in.spec.scale_dtype == ScaleDtype::F32 && !(t_->caps & W4A8_CAP_F32_SCALES))
      return ImplOutput::skip("plugin lacks W4A8_CAP_F32_SCALES");
    gemm::GemmOptions opt;
    opt.out_dtype = in.spec.out_dtype;
    opt.policy = in.policy;
    auto lpr = kern::make_layer_problem(in.data.layer, in.data.x, opt);
    if (!lpr.ok()) return ImplOutput::failed("cannot build the problem: " + lpr.error().message);
    kern::LayerProblem& lp = **lpr;
    const bool inter = (t_->caps & W4A8_CAP_INTERMEDIATES) != 0;
    if (!inter) lp.p.x_q = nullptr, lp.p.x_scale = nullptr, lp.p.acc = nullptr, lp.p.w_q = nullptr;
    if (w4a8_status s = t_->check_problem(&lp.p); s != W4A8_OK)
      return ImplOutput::upstream("check_problem: " + status_text(s) + " " + last_error());
    const auto t0 = std::chrono::steady_clock::now();
    const w4a8_status s = t_->memory == W4A8_MEMORY_HOST ? run_host(lp.p) : run_device(lp);
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (s != W4A8_OK) return ImplOutput::upstream("run: " + status_text(s) + " " + last_error());
    gemm::GemmResult r = kern::collect_result(lp, opt, corr);
    ImplOutput o;
    o.seconds = secs;
    o.out_dtype = opt.out_dtype;
    o.out = std::move(r.out);
    if (inter) {
      if (!lp.w_q.empty()) o.w_q = std::move(lp.w_q);
      if (!corr) o.x_q = std::move(r.x_q), o.x_scale = std::move(r.x_scale), o.acc = std::move(r.acc);
    }
    return o;
  }

 private:
  std::string last_error() const {
    const char* e = t_->last_error ? t_->last_error() : nullptr;
    return e && *e ? std::string("(") + e + ")" : "";
  }
  w4a8_status run_host(const w4a8_problem& p) {
    std::vector<std::uint8_t> ws(t_->workspace_size(&p));
    return t_->run(&p, ws.empty() ? nullptr : ws.data(), ws.size(), nullptr);
  }
  // Copies the problem's host buffers to the device, runs, copies outputs back.
  w4a8_status run_device(kern::LayerProblem& lp) {
    const w4a8_problem& h = lp.p;
    const auto m = std::size_t(h.m), n = std::size_t(h.n), k = std::size_t(h.k), g = std::size_t(h.group_size);
    DeviceBuffers b(t_);
    w4a8_problem d = h;
    void* ptr = nullptr;
    auto put = [&](const void* src, std::size_t bytes) -> void* {
      return src && b.make(src, bytes, &ptr) == W4A8_OK ? ptr : nullptr;
    };
    auto zero = [&](bool want, std::size_t bytes) -> void* {
      return want && b.make(nullptr, bytes, &ptr) == W4A8_OK ? ptr : nullptr;
    };
    d.x = put(h.x, lp.x.size());
    d.weight = static_cast<const std::int8_t*>(put(h.weight, n * k / 2));
    d.s_rel = static_cast<const std::uint8_t*>(put(h.s_rel, n * (k / g)));
    d.s_channel = static_cast<const float*>(put(h.s_channel, n * 4));
    d.codebook = static_cast<const float*>(put(h.codebook, 16 * 4));
    d.correction = static_cast<const float*>(put(h.correction, (k / g) * n * 4));
    d.bias = put(h.bias, lp.bias.size());
    d.out = zero(true, lp.out.size());
    d.x_q = static_cast<std::int8_t*>(zero(h.x_q != nullptr, m * k));
    d.x_scale = static_cast<float*>(zero(h.x_scale != nullptr, m * 4));
    d.acc = static_cast<std::int32_t*>(zero(h.acc != nullptr, m * n * 4));
    d.w_q = static_cast<std::int8_t*>(zero(h.w_q != nullptr, n * k));
    d.nan_scale_flag = static_cast<std::int32_t*>(zero(true, 4));
    const std::size_t wsb = t_->workspace_size(&d);
    void* ws = zero(wsb > 0, wsb);
    if ((m * n > 0 && !d.out) || (wsb > 0 && !ws)) return W4A8_ERR_CUDA;
    if (w4a8_status s = t_->run(&d, ws, wsb, nullptr); s != W4A8_OK) return s;
    if (w4a8_status s = t_->synchronize(nullptr); s != W4A8_OK) return s;
    auto get = [&](void* dst, const void* src, std::size_t bytes) {
      return bytes == 0 || !src ? W4A8_OK : t_->copy_to_host(dst, src, bytes);
    };
    w4a8_status s = get(lp.out.data(), d.out, lp.out.size());
    if (s == W4A8_OK && h.x_q) s = get(lp.x_q.data(), d.x_q, m * k);
    if (s == W4A8_OK && h.x_scale) s = get(lp.x_scale.data(), d.x_scale, m * 4);
    if (s == W4A8_OK && h.acc) s = get(lp.acc.data(), d.acc, m * n * 4);
    if (s == W4A8_OK && h.w_q) s = get(lp.w_q.data(), d.w_q, n * k);
    return s;
  }

  void* handle_;
  const w4a8_kernel_plugin* t_;
  std::string path_;
  std::string reason_;
};

}  // namespace

Result<std::unique_ptr<Implementation>> make_plugin(const std::string& path) {
  // A path without a slash would make dlopen search the library path; name the file itself.
  const std::string p = path.find('/') == std::string::npos ? "./" + path : path;
  void* h = ::dlopen(p.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!h) return make_error(ErrorKind::UsageError, {std::string("--kernel: ") + ::dlerror()});
  auto fn = reinterpret_cast<w4a8_kernel_plugin_fn>(::dlsym(h, W4A8_KERNEL_PLUGIN_SYMBOL));
  if (!fn) {
    ::dlclose(h);
    return make_error(ErrorKind::UsageError, {"--kernel: " + path + " does not export " W4A8_KERNEL_PLUGIN_SYMBOL});
  }
  const w4a8_kernel_plugin* t = fn();
  std::string bad;
  if (!t)
    bad = "returned no table";
  else if (t->abi_version != W4A8_KERNEL_ABI_VERSION)
    bad = "ABI version " + std::to_string(t->abi_version) + ", expected " + std::to_string(W4A8_KERNEL_ABI_VERSION);
  else if (t->struct_size < sizeof(w4a8_kernel_plugin) && t->memory == W4A8_MEMORY_CUDA_DEVICE)
    bad = "table too small for a device plugin";
  else if (t->struct_size < offsetof(w4a8_kernel_plugin, device_count))
    bad = "table too small";
  else if (!t->check_problem || !t->workspace_size || !t->run)
    bad = "table lacks check_problem, workspace_size or run";
  else if (t->memory == W4A8_MEMORY_CUDA_DEVICE &&
           (!t->alloc || !t->free || !t->copy_to_device || !t->copy_to_host || !t->synchronize))
    bad = "device plugin lacks alloc/free/copy/synchronize";
  else if (t->memory != W4A8_MEMORY_HOST && t->memory != W4A8_MEMORY_CUDA_DEVICE)
    bad = "unknown memory space";
  if (!bad.empty()) {
    ::dlclose(h);
    return make_error(ErrorKind::UsageError, {"--kernel: " + path + ": " + bad});
  }
  return std::unique_ptr<Implementation>(std::make_unique<PluginImpl>(h, t, path));
}

}  // namespace w4a8::audit
