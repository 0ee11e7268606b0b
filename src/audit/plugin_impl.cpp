// A kernel plugin (--kernel PATH.so, and the `cuda` built-in's module) as an audit implementation:
// loaded and run through the project's one plugin loader and runner (src/plugin). What is
// audit-specific stays here: the case's capabilities checked first so a missing one is reported as
// "unsupported" (not as a failure), intermediates only when the plugin fills them, and no grid that
// the plugin did not produce (the runner hands back the reference's w_q on the correction path).
#include <chrono>

#include "audit/implementation.hpp"
#include "plugin/call_guard.hpp"
#include "plugin/runner.hpp"

namespace w4a8::audit {

namespace {

// The capabilities a case needs (W4A8_CAP_*), from its manifest entry.
std::uint64_t case_caps(const CaseSpec& c, gemm::ActPolicy policy) {
  std::uint64_t caps = c.correction ? W4A8_CAP_CORRECTION_PATH : W4A8_CAP_INTEGER_PATH;
  if (policy == gemm::ActPolicy::Eager) caps |= W4A8_CAP_EAGER_POLICY;
  if (c.bits == 6) caps |= W4A8_CAP_6BIT;
  if (c.scale_dtype == gemm::ScaleDtype::F32) caps |= W4A8_CAP_F32_SCALES;
  return caps;
}

// Every other case (by the parity of its id's bytes, so a rerun of one case gets the same) gives the
// plugin padded row strides, ldx = K + 3 and ldo = N + 5: the ABI allows them, and a kernel that
// indexes rows by K and N instead of its strides passed every case with dense ones.
plugin::Strides case_strides(const std::string& id) {
  unsigned sum = 0;
  for (const char c : id) sum += static_cast<unsigned char>(c);
  return sum % 2 == 1 ? plugin::Strides{3, 5} : plugin::Strides{};
}

class PluginImpl final : public Implementation {
 public:
  PluginImpl(plugin::Plugin p, std::string name) : p_(std::move(p)), name_(std::move(name)) {
    if (p_.device()) {
      const plugin::CallGuard guard(p_.describe(), "device_count");
      if (auto none = plugin::missing_device(p_)) reason_ = none->message;
    }
  }
  std::string name() const override { return name_.empty() ? p_.describe() : name_ + ": " + p_.describe(); }
  std::string unavailable_reason() const override { return reason_; }

  ImplOutput run(const CaseInput& in) override {
    if (!reason_.empty()) return ImplOutput::skip(reason_);
    // For F32 activations both policies are one computation: ask for the eager capability only
    // where it changes the result.
    const gemm::ActPolicy pol = gemm::effective_policy(in.policy, in.spec.x_dtype);
    const std::uint64_t caps = p_.table().caps;
    if (const std::uint64_t missing = case_caps(in.spec, pol) & ~caps)
      return ImplOutput::unsupported(
          make_error(ErrorKind::PluginUnsupported, {p_.describe(), "it lacks " + plugin::caps_text(missing)}).message);
    gemm::GemmOptions opt;
    opt.out_dtype = in.spec.out_dtype;
    opt.policy = pol;
    const bool inter = (caps & W4A8_CAP_INTERMEDIATES) != 0;
    const plugin::Strides strides = case_strides(in.spec.id);
    // A crash, hang or escaped exception ends the run: its message names the case (and its strides).
    struct Context {
      Context(const std::string& id, plugin::Strides st) {
        plugin::set_call_context("case " + id + (st.x_pad == 0 ? "" : ", ldx = K + " + std::to_string(st.x_pad) + ", ldo = N + " +
                                                                          std::to_string(st.out_pad)));
      }
      ~Context() { plugin::set_call_context(""); }
      Context(const Context&) = delete;
      Context& operator=(const Context&) = delete;
    } const context(in.spec.id, strides);
    const auto t0 = std::chrono::steady_clock::now();
    bool broke_contract = false;
    auto r = plugin::run_layer(p_, in.data.layer, in.data.x, opt, inter, strides, &broke_contract);
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (!r.ok()) {
      const Error& e = r.error();
      // W4A8_ERR_UNSUPPORTED (from check_problem or run) is a capability limit; the runner makes
      // any other refusal of a case that satisfies the contract the plugin's failure.
      if (e.kind == ErrorKind::PluginUnsupported) return ImplOutput::unsupported(e.message);
      if (e.kind == ErrorKind::CudaNoDevice) return ImplOutput::skip(e.message);
      // It returned W4A8_OK with a result that breaks the contract: a wrong result, not a raise.
      if (broke_contract) return ImplOutput::wrong(e.message + " [" + std::string(e.code()) + "]");
      // With its code: the kind of failure (plugin.failed for a failed call or what the output checks
      // found) is not in the Python type.
      return ImplOutput::upstream(std::string(e.type()) + ": " + e.message + " [" + std::string(e.code()) + "]");
    }
    // The runner fills w_q from the reference decode on the correction path: not the plugin's.
    ImplOutput o = from_result(std::move(*r), inter, /*correction_w_q_is_own=*/false);
    o.seconds = secs;
    return o;
  }

 private:
  plugin::Plugin p_;
  std::string name_;
  std::string reason_;
};

}  // namespace

ImplOutput from_result(gemm::GemmResult&& r, bool intermediates, bool correction_w_q_is_own) {
  ImplOutput o;
  o.out_dtype = r.out_dtype;
  o.out = std::move(r.out);
  if (!intermediates) return o;
  if (!r.w_q.empty() && (!r.correction_path || correction_w_q_is_own)) o.w_q = std::move(r.w_q);
  if (!r.correction_path) {
    o.x_q = std::move(r.x_q);
    o.x_scale = std::move(r.x_scale);
    o.acc = std::move(r.acc);
  }
  return o;
}

Result<std::unique_ptr<Implementation>> make_plugin(const std::string& path) {
  // A path without a slash would make dlopen search the library path; name the file itself.
  auto p = plugin::Plugin::load(path);  // (a name without '/' is ./NAME: Plugin::load's rule)
  if (!p.ok()) return std::move(p).error();
  return std::unique_ptr<Implementation>(std::make_unique<PluginImpl>(std::move(*p), ""));
}

std::unique_ptr<Implementation> make_plugin_impl(plugin::Plugin p, std::string name) {
  return std::make_unique<PluginImpl>(std::move(p), std::move(name));
}

}  // namespace w4a8::audit
