// Built-in implementations: the CPU reference (literal, fast), the CUDA kernels' computation order
// emulated on the CPU (emulate), and the CUDA kernels themselves through their plugin module (cuda).
#include <chrono>
#include <cstdlib>

#include <unistd.h>

#include "audit/atomic_file.hpp"
#include "audit/implementation.hpp"
#include "gemm/reference.hpp"
#include "kernels/layer_problem.hpp"

namespace w4a8::audit {

std::string_view status_name(ImplOutput::Status s) {
  switch (s) {
    case ImplOutput::Status::Ok:
      return "ok";
    case ImplOutput::Status::Skip:
      return "skip";
    case ImplOutput::Status::UpstreamError:
      return "upstream_error";
    case ImplOutput::Status::Failed:
      return "failed";
  }
  return "failed";
}

Result<gemm::GemmResult> reference_result(const CaseData& d, gemm::FloatDtype out_dtype, gemm::ActPolicy policy,
                                          bool literal, unsigned threads) {
  gemm::GemmOptions o;
  o.out_dtype = out_dtype;
  o.policy = policy;
  o.threads = threads;
  return literal ? gemm::gemm_literal(d.layer, d.x, o) : gemm::gemm_fast(d.layer, d.x, o);
}

namespace {

ImplOutput from_result(gemm::GemmResult&& r) {
  ImplOutput o;
  o.out_dtype = r.out_dtype;
  o.out = std::move(r.out);
  o.w_q = std::move(r.w_q);
  if (!r.correction_path) {
    o.x_q = std::move(r.x_q);
    o.x_scale = std::move(r.x_scale);
    o.acc = std::move(r.acc);
  }
  return o;
}

class ReferenceImpl final : public Implementation {
 public:
  ReferenceImpl(std::string name, unsigned threads) : name_(std::move(name)), threads_(threads) {}
  std::string name() const override { return name_; }
  ImplOutput run(const CaseInput& in) override {
    gemm::GemmOptions o;
    o.out_dtype = in.spec.out_dtype;
    o.policy = in.policy;
    o.threads = threads_;
    const auto t0 = std::chrono::steady_clock::now();
    Result<gemm::GemmResult> r = name_ == "literal" ? gemm::gemm_literal(in.data.layer, in.data.x, o)
                                 : name_ == "fast"  ? gemm::gemm_fast(in.data.layer, in.data.x, o)
                                                    : kern::gemm_emulated(in.data.layer, in.data.x, o);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (!r.ok()) return ImplOutput::upstream(std::string(r.error().type()) + ": " + r.error().message);
    ImplOutput out = from_result(std::move(*r));
    out.seconds = s;
    return out;
  }

 private:
  std::string name_;
  unsigned threads_;
};

std::string exe_dir() {
  char buf[4096];
  const ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return ".";
  std::string p(buf, std::size_t(n));
  const auto s = p.rfind('/');
  return s == std::string::npos ? "." : p.substr(0, s);
}

// `cuda`: the CUDA kernels are a plugin module (the CLI never links the CUDA runtime). Without the
// module (no nvcc at build time) or without a device every case is skipped, with the reason.
class CudaImpl final : public Implementation {
 public:
  CudaImpl() {
    std::vector<std::string> candidates;
    if (const char* env = std::getenv("W4A8_CUDA_PLUGIN"); env && *env) candidates.emplace_back(env);
    const std::string d = exe_dir();
    for (const char* name :
         {"libw4a8_cuda_plugin.so", "libw4a8_cuda.so", "kernels/libw4a8_cuda_plugin.so", "kernels/libw4a8_cuda.so"})
      candidates.push_back(join_path(d, name));
    for (const auto& c : candidates) {
      if (!path_exists(c)) continue;
      auto p = make_plugin(c);
      if (!p.ok()) {
        reason_ = "CUDA kernel module " + c + " did not load: " + p.error().message;
        return;
      }
      plugin_ = std::move(*p);
      reason_ = plugin_->unavailable_reason();
      return;
    }
    reason_ =
        "no CUDA kernel module: this w4a8check was built without CUDA (nvcc not found), or set W4A8_CUDA_PLUGIN=PATH";
  }
  std::string name() const override { return "cuda"; }
  std::string unavailable_reason() const override { return reason_; }
  ImplOutput run(const CaseInput& in) override {
    if (!reason_.empty() || !plugin_) return ImplOutput::skip(reason_);
    return plugin_->run(in);
  }

 private:
  std::unique_ptr<Implementation> plugin_;
  std::string reason_;
};

}  // namespace

Result<std::unique_ptr<Implementation>> make_builtin(const std::string& name, unsigned threads) {
  if (name == "literal" || name == "fast" || name == "emulate")
    return std::unique_ptr<Implementation>(std::make_unique<ReferenceImpl>(name, threads));
  if (name == "cuda") return std::unique_ptr<Implementation>(std::make_unique<CudaImpl>());
  return make_error(ErrorKind::UsageError, {"unknown implementation '" + name + "' (literal, fast, emulate, cuda)"});
}

}  // namespace w4a8::audit
