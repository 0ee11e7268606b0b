/* A plugin that records whether it was called: caps INTEGER_PATH only; check_problem refuses m == 3;
 * run() counts its calls (probe_run_calls) and fails with a message when m == 5. */
#include <stddef.h>

#include "w4a8_cuda.h"

__attribute__((visibility("default"))) int probe_run_calls = 0;
__attribute__((visibility("default"))) int probe_check_calls = 0;
static const char* error = "";

static w4a8_status check(const w4a8_problem* p) {
  ++probe_check_calls;
  if (p->m == 3) {
    error = "m=3 is refused by the probe";
    return W4A8_ERR_UNSUPPORTED;
  }
  return W4A8_OK;
}
static size_t ws(const w4a8_problem* p) { (void)p; return 0; }
static w4a8_status run(const w4a8_problem* p, void* w, size_t b, void* s) {
  (void)w, (void)b, (void)s;
  ++probe_run_calls;
  if (p->m == 5) {
    error = "the probe fails on m=5";
    return W4A8_ERR_CUDA;
  }
  return W4A8_OK;
}
static const char* last(void) { return error; }

static const w4a8_kernel_plugin table = {W4A8_KERNEL_ABI_VERSION, (uint32_t)sizeof(w4a8_kernel_plugin), "probe", "0.1",
                                         W4A8_MEMORY_HOST, W4A8_CAP_INTEGER_PATH, check, ws, run, last,
                                         NULL, NULL, NULL, NULL, NULL, NULL};

__attribute__((visibility("default"))) const w4a8_kernel_plugin* w4a8_kernel_plugin_v1(void) { return &table; }
