// The host emulation of the CUDA kernels (emulate.cpp) as a kernel plugin with HOST memory: the
// loader and the audit tooling can exercise a real kernel implementation, through the same table as
// the CUDA module, on machines without a GPU. It refuses what the CUDA module refuses.
#include <new>

#include "core/version.hpp"
#include "kernels/emulate.hpp"
#include "kernels/problem.hpp"
#include "kernels/w4a8_cuda.h"

namespace {

using w4a8::kern::set_last_error;

constexpr std::uint64_t kCaps =
    W4A8_CAP_INTEGER_PATH | W4A8_CAP_CORRECTION_PATH | W4A8_CAP_EAGER_POLICY | W4A8_CAP_INTERMEDIATES;

// The emulation allocates its own scratch: no workspace.
size_t workspace_size(const w4a8_problem*) { return 0; }

w4a8_status run(const w4a8_problem* p, void*, size_t, void*) {
  if (!p) {
    set_last_error("w4a8check-emulate: problem is NULL");
    return W4A8_ERR_ARGUMENT;
  }
  set_last_error("");
  try {
    return w4a8::kern::emulate_w4a8_gemm(*p);
  } catch (const std::bad_alloc&) {
    set_last_error("w4a8check-emulate: out of host memory");
    return W4A8_ERR_UNSUPPORTED;
  }
}

const char* last_error() { return w4a8::kern::last_error(); }

const w4a8_kernel_plugin kPlugin = {
    W4A8_KERNEL_ABI_VERSION, sizeof(w4a8_kernel_plugin), "w4a8check-emulate", W4A8CHECK_VERSION, W4A8_MEMORY_HOST, kCaps,
    w4a8_check_problem, workspace_size, run, last_error,
    nullptr, nullptr, nullptr, nullptr, nullptr, nullptr};

}  // namespace

extern "C" __attribute__((visibility("default"))) const w4a8_kernel_plugin* w4a8_kernel_plugin_v1(void) {
  return &kPlugin;
}
