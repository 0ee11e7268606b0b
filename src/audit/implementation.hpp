// An implementation under audit: runs one case and returns its output and, when it can, its
// intermediates. Built-ins (the CPU reference, the CUDA path's host emulation, the CUDA plugin),
// a kernel plugin library (the C ABI of kernels/w4a8_cuda.h), or an external command speaking the
// line protocol of docs/audit.md.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "audit/case_spec.hpp"
#include "audit/suite.hpp"
#include "core/result.hpp"
#include "gemm/numerics.hpp"
#include "gemm/reference.hpp"
#include "plugin/plugin.hpp"

namespace w4a8::audit {

// What one run produced. status Ok: out (and any intermediates) are set. Skip: the implementation
// cannot run here (no GPU, no module) or its adapter declined the case. Unsupported: it refuses the
// case by capability (6-bit codes, F32 group scales, the correction path...): counted apart, never
// as a pass or a mismatch. UpstreamError: the implementation itself raised on a valid case (its own
// failure, reported as such, never as a mismatch). Failed: the adapter or process broke (crash,
// protocol violation). Wrong: it returned a result that breaks the output contract (a kernel plugin
// that left an element unwritten or wrote past a buffer): judged as a wrong result, without values.
struct ImplOutput {
  enum class Status : std::uint8_t { Ok, Skip, Unsupported, UpstreamError, Failed, Wrong } status = Status::Ok;
  std::string message;
  gemm::FloatDtype out_dtype = gemm::FloatDtype::F32;
  std::vector<float> out;                        // [M, N], values representable in out_dtype
  std::optional<std::vector<std::int8_t>> w_q;   // [N, K]
  std::optional<std::vector<std::int8_t>> x_q;   // [M, K]
  std::optional<std::vector<float>> x_scale;     // [M]
  std::optional<std::vector<std::int32_t>> acc;  // [M, N]
  double seconds = 0;                            // wall time of the run as the adapter saw it

  // A run that produced no output: status (not Ok) and why.
  static ImplOutput without_output(Status status, std::string why) {
    ImplOutput o;
    o.status = status;
    o.message = std::move(why);
    return o;
  }
  static ImplOutput skip(std::string why) { return without_output(Status::Skip, std::move(why)); }
  static ImplOutput unsupported(std::string why) { return without_output(Status::Unsupported, std::move(why)); }
  static ImplOutput upstream(std::string why) { return without_output(Status::UpstreamError, std::move(why)); }
  static ImplOutput failed(std::string why) { return without_output(Status::Failed, std::move(why)); }
  static ImplOutput wrong(std::string why) { return without_output(Status::Wrong, std::move(why)); }
};
// "ok", "skip", "unsupported", "upstream_error", "failed" (Wrong is recorded as "ok" with a failing verdict)
std::string_view status_name(ImplOutput::Status s);

// An ImplOutput from a GemmResult: the output, and with `intermediates` w_q, x_q, x_scale and acc
// (w_q on the correction path only when correction_w_q_is_own: some paths fill it from the reference).
ImplOutput from_result(gemm::GemmResult&& r, bool intermediates, bool correction_w_q_is_own);

struct CaseInput {
  const CaseSpec& spec;
  const CaseData& data;
  std::string case_path;   // the case file (external commands read it)
  gemm::ActPolicy policy;  // the activation policy the expected values use
};

class Implementation {
 public:
  virtual ~Implementation() = default;
  virtual std::string name() const = 0;
  // Non-empty when the implementation cannot run at all here (every case is then skipped with it).
  virtual std::string unavailable_reason() const { return ""; }
  // The activation policy this implementation follows (upstream's eager code: Eager).
  virtual gemm::ActPolicy natural_policy() const { return gemm::ActPolicy::F32; }
  virtual ImplOutput run(const CaseInput& in) = 0;
  // Seconds spent before the first case (an external command's start and hello): part of the run's
  // time and of the implementation's.
  virtual double setup_seconds() const { return 0; }
};

// literal, fast, emulate, cuda. threads: for `fast` (0 = all cores). `cuda` loads the CUDA kernels'
// module as `gemm --impl cuda` does (plugin::load_cuda_module); when it is missing, or no device is
// present, every case is skipped with the reason.
// @return the implementation, or AuditImplementation for an unknown name, Plugin::load()'s errors
//         (PluginLoadFailed, PluginIncompatible...) for a module that is there but unusable.
Result<std::unique_ptr<Implementation>> make_builtin(const std::string& name, unsigned threads = 0);
inline constexpr const char* kBuiltinNames[] = {"literal", "fast", "emulate", "cuda"};

// A shared library exporting w4a8_kernel_plugin_v1 (kernels/w4a8_cuda.h), through plugin::Plugin.
// Cases needing a capability it lacks are Unsupported; with W4A8_CAP_INTERMEDIATES its w_q, x_q,
// x_scale and acc are judged too.
// @return the implementation, or PluginLoadFailed, PluginIncompatible.
Result<std::unique_ptr<Implementation>> make_plugin(const std::string& path);
// The same for an already loaded plugin; name prefixes its description ("cuda").
std::unique_ptr<Implementation> make_plugin_impl(plugin::Plugin p, std::string name);

// An external command (run through /bin/sh -c) speaking the audit line protocol (docs/audit.md).
// work_dir: where its output files go (created; files removed after reading unless keep).
// @return the implementation (the process starts at once), or AuditImplementation (empty command),
//         IoWriteFailed (work_dir).
Result<std::unique_ptr<Implementation>> make_command(const std::string& command, const std::string& work_dir,
                                                     bool keep_outputs, double case_timeout_s);

// The reference's result for a case (the expected values), under the given policy: the one place the
// audit calls the CPU reference: gemm::prepare_layer + gemm_prepared (w_q read from the prepared
// layer), or gemm_literal when auditing `fast` itself (an independent path).
// @return the result, or the reference's operand error.
Result<gemm::GemmResult> reference_result(const CaseData& d, gemm::FloatDtype out_dtype, gemm::ActPolicy policy,
                                          bool literal = false, unsigned threads = 0);

}  // namespace w4a8::audit
