// Built-in implementations: the CPU reference (literal, fast), the CUDA kernels' computation order
// emulated on the CPU (emulate), and the CUDA kernels themselves through their plugin module (cuda,
// found where `gemm --impl cuda` finds it). Also the reference's expected values for a case.
#include <sys/stat.h>

#include <cerrno>
#include <chrono>

#include "audit/implementation.hpp"
#include "gemm/reference.hpp"
#include "kernels/layer_problem.hpp"
#include "plugin/plugin.hpp"

namespace w4a8::audit {

std::string_view status_name(ImplOutput::Status s) {
  switch (s) {
    case ImplOutput::Status::Ok:
      return "ok";
    case ImplOutput::Status::Skip:
      return "skip";
    case ImplOutput::Status::Unsupported:
      return "unsupported";
    case ImplOutput::Status::UpstreamError:
      return "upstream_error";
    case ImplOutput::Status::Failed:
      return "failed";
    case ImplOutput::Status::Wrong:
      return "ok";  // judged: a failing verdict (runner.cpp)
  }
  return "failed";
}

Result<gemm::GemmResult> reference_result(const CaseData& d, gemm::FloatDtype out_dtype, gemm::ActPolicy policy,
                                          bool literal, unsigned threads) {
  gemm::GemmOptions o;
  o.out_dtype = out_dtype;
  o.policy = policy;
  o.threads = threads;
  if (literal) return gemm::gemm_literal(d.layer, d.x, o);
  auto prepared = gemm::prepare_layer(d.layer, o);
  if (!prepared.ok()) return std::move(prepared).error();
  auto r = gemm::gemm_prepared(*prepared, d.x, o);
  if (r.ok()) r->w_q.assign(prepared->w_q().begin(), prepared->w_q().end());  // read once, from the prepared layer
  return r;
}

namespace {

class ReferenceImpl final : public Implementation {
 public:
  ReferenceImpl(std::string name, unsigned threads) : name_(std::move(name)), threads_(threads) {}
  std::string name() const override { return name_; }
  ImplOutput run(const CaseInput& in) override {
    gemm::GemmOptions o;
    o.out_dtype = in.spec.out_dtype;
    o.policy = in.policy;
    o.threads = threads_;
    const bool emulate = name_ == "emulate";
    const auto t0 = std::chrono::steady_clock::now();
    Result<gemm::GemmResult> r = name_ == "literal" ? gemm::gemm_literal(in.data.layer, in.data.x, o)
                                 : emulate          ? kern::gemm_emulated(in.data.layer, in.data.x, o)
                                                    : gemm::gemm_fast(in.data.layer, in.data.x, o);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (!r.ok()) {
      // The emulated kernels refuse problems beyond them (6-bit codes, F32 scales) by name.
      if (emulate && r.error().kind == ErrorKind::CudaUnsupported) return ImplOutput::unsupported(r.error().message);
      return ImplOutput::upstream(std::string(r.error().type()) + ": " + r.error().message);
    }
    // gemm_emulated hands back the reference's grid on the correction path: not the emulation's.
    ImplOutput out = from_result(std::move(*r), true, /*correction_w_q_is_own=*/!emulate);
    out.seconds = s;
    return out;
  }

 private:
  std::string name_;
  unsigned threads_;
};

// `cuda` when its module cannot be used here: every case is skipped with the reason.
class UnavailableImpl final : public Implementation {
 public:
  UnavailableImpl(std::string name, std::string reason) : name_(std::move(name)), reason_(std::move(reason)) {}
  std::string name() const override { return name_; }
  std::string unavailable_reason() const override { return reason_; }
  ImplOutput run(const CaseInput&) override { return ImplOutput::skip(reason_); }

 private:
  std::string name_, reason_;
};

// No CUDA module where the search looks (plugin::cuda_module_candidates(): $W4A8CHECK_CUDA_MODULE
// alone when set): load_cuda_module() then says CudaModuleMissing, or, for a path named in the
// environment, the loader's "no such file".
bool module_missing(const Error& e) {
  if (e.kind == ErrorKind::CudaModuleMissing) return true;
  for (const std::string& c : plugin::cuda_module_candidates())
    if (struct stat st {}; ::stat(c.c_str(), &st) == 0 || errno != ENOENT) return false;
  return true;
}

// The module is there but a library it needs is not (the CUDA runtime or cuBLAS on a machine without
// the toolkit): the loader's "LIB: cannot open shared object file". Like a missing driver, this
// machine cannot run it: the cases are skipped with that reason. A module that is broken itself (not
// ELF, another architecture, a missing symbol, an incompatible table) stays an error.
bool dependency_missing(const Error& e) {
  return e.kind == ErrorKind::PluginLoadFailed &&
         e.message.find(": cannot open shared object file") != std::string::npos &&
         e.message.find(std::string(plugin::cuda_module_name()) + ": cannot open shared object file") == std::string::npos;
}

}  // namespace

Result<std::unique_ptr<Implementation>> make_builtin(const std::string& name, unsigned threads) {
  if (name == "literal" || name == "fast" || name == "emulate")
    return std::unique_ptr<Implementation>(std::make_unique<ReferenceImpl>(name, threads));
  if (name == "cuda") {
    // The CLI never links the CUDA runtime: the kernels are a plugin module, searched as for
    // `gemm --impl cuda` ($W4A8CHECK_CUDA_MODULE, then next to the executable).
    // A module that is not there, or whose CUDA libraries are not, skips the cases (a device that
    // is missing is found later, by the plugin); one that is there but broken or incompatible is an
    // error, as for gemm.
    auto m = plugin::load_cuda_module();
    if (!m.ok() && (module_missing(m.error()) || dependency_missing(m.error())))
      return std::unique_ptr<Implementation>(std::make_unique<UnavailableImpl>("cuda", m.error().message));
    if (!m.ok()) return std::move(m).error();
    return make_plugin_impl(std::move(*m), "cuda");
  }
  return make_error(ErrorKind::AuditImplementation,
                    {" (unknown built-in '" + name + "': literal, fast, emulate, cuda)"});
}

}  // namespace w4a8::audit
