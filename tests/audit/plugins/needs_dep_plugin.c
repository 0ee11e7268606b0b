/* A well-formed kernel plugin that needs a library of its own (stub_dep.c, found beside it through
 * $ORIGIN): moved without it, dlopen() fails on the dependency, not on the plugin. */
#include <stddef.h>

#include "kernels/w4a8_cuda.h"

int w4a8_test_stub_dep(int x);

static w4a8_status check(const w4a8_problem* p) { return (w4a8_status)w4a8_test_stub_dep(p ? W4A8_OK : W4A8_OK); }
static size_t ws(const w4a8_problem* p) { (void)p; return 0; }
static w4a8_status run(const w4a8_problem* p, void* w, size_t b, void* s) { (void)p, (void)w, (void)b, (void)s; return W4A8_OK; }
static const char* last(void) { return ""; }

static const w4a8_kernel_plugin table = {W4A8_KERNEL_ABI_VERSION, (uint32_t)sizeof(w4a8_kernel_plugin), "needs-dep", "1",
                                         W4A8_MEMORY_HOST, W4A8_CAP_INTEGER_PATH, check, ws, run, last,
                                         NULL, NULL, NULL, NULL, NULL, NULL};

__attribute__((visibility("default"))) const w4a8_kernel_plugin* w4a8_kernel_plugin_v1(void) { return &table; }
