/* A plugin that records whether it was called: caps INTEGER_PATH only; check_problem refuses m == 3
 * (W4A8_ERR_UNSUPPORTED) and m == 9 (W4A8_ERR_CONTRACT, for a problem that meets the contract);
 * run() counts its calls (probe_run_calls), fails with a message when m == 5 and returns
 * W4A8_ERR_UNSUPPORTED when m == 7. workspace_size
 * returns probe_ws_bytes (set by the test), and run() writes every byte it is told it has. The name
 * and m=5's error text are variables the test may point elsewhere (printing plugin text). Its output
 * is zeros, written as probe_out_mode says: 0 every element, 1 all but the last, 2 one element past
 * the end as well, 3 every element and a zero into the const input s_channel[0], 4 every element
 * and one element before the start. */
#include <stddef.h>
#include <string.h>

#include "w4a8_cuda.h"

__attribute__((visibility("default"))) int probe_run_calls = 0;
__attribute__((visibility("default"))) int probe_check_calls = 0;
__attribute__((visibility("default"))) size_t probe_ws_bytes = 0;
__attribute__((visibility("default"))) const char* probe_name = "probe";
__attribute__((visibility("default"))) int probe_out_mode = 0;
__attribute__((visibility("default"))) const char* probe_error_on_m5 = "the probe fails on m=5";
static const char* error = "";

static w4a8_status check(const w4a8_problem* p) {
  ++probe_check_calls;
  if (p->m == 3) {
    error = "m=3 is refused by the probe";
    return W4A8_ERR_UNSUPPORTED;
  }
  if (p->m == 9) {
    error = "m=9 breaks the probe's contract";
    return W4A8_ERR_CONTRACT;
  }
  return W4A8_OK;
}
static size_t ws(const w4a8_problem* p) { (void)p; return probe_ws_bytes; }
static w4a8_status run(const w4a8_problem* p, void* w, size_t b, void* s) {
  (void)s;
  ++probe_run_calls;
  if (w) memset(w, 0x5A, b);
  {
    const size_t elem = p->out_dtype == W4A8_DTYPE_F32 ? 4 : 2;
    size_t n = (size_t)(p->m * p->ldo);
    if (probe_out_mode == 1 && n > 0) --n;
    if (probe_out_mode == 2) ++n;
    memset(p->out, 0, n * elem);
    if (probe_out_mode == 3) ((float*)p->s_channel)[0] = 0.0f; /* through a const pointer */
    if (probe_out_mode == 4) memset((char*)p->out - elem, 0, elem);
  }
  if (p->m == 5) {
    error = probe_error_on_m5;
    return W4A8_ERR_CUDA;
  }
  if (p->m == 7) {
    error = "m=7 is beyond the probe's build";
    return W4A8_ERR_UNSUPPORTED;
  }
  return W4A8_OK;
}
static const char* last(void) { return error; }

static w4a8_kernel_plugin table = {W4A8_KERNEL_ABI_VERSION, (uint32_t)sizeof(w4a8_kernel_plugin), "probe", "0.1",
                                   W4A8_MEMORY_HOST, W4A8_CAP_INTEGER_PATH, check, ws, run, last,
                                   NULL, NULL, NULL, NULL, NULL, NULL};

__attribute__((visibility("default"))) const w4a8_kernel_plugin* w4a8_kernel_plugin_v1(void) {
  table.name = probe_name;
  return &table;
}
