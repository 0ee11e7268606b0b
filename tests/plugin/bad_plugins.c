/* Deliberately broken kernel plugins, one per -D switch, for the loader's checks (UNKNOWN_CAPS is not
 * broken: a caps bit from a later header, which the loader ignores). */
#include <stddef.h>

#include "w4a8_cuda.h"

static w4a8_status check(const w4a8_problem* p) { (void)p; return W4A8_OK; }
static size_t ws(const w4a8_problem* p) { (void)p; return 0; }
static w4a8_status run(const w4a8_problem* p, void* w, size_t b, void* s) { (void)p, (void)w, (void)b, (void)s; return W4A8_OK; }
static const char* last(void) { return ""; }

static w4a8_kernel_plugin table = {W4A8_KERNEL_ABI_VERSION, (uint32_t)sizeof(w4a8_kernel_plugin), "bad", "0",
                                   W4A8_MEMORY_HOST, W4A8_CAP_INTEGER_PATH, check, ws, run, last,
                                   NULL, NULL, NULL, NULL, NULL, NULL};

#if defined(BAD_NO_SYMBOL) /* a shared library, but no entry point: the symbol stays hidden */
#define W4A8_ENTRY_VISIBILITY "hidden"
#else
#define W4A8_ENTRY_VISIBILITY "default"
#endif
__attribute__((visibility(W4A8_ENTRY_VISIBILITY))) const w4a8_kernel_plugin* w4a8_kernel_plugin_v1(void) {
#if defined(BAD_NULL_TABLE)
  (void)table;
  return NULL;
#else
#if defined(BAD_ABI)
  table.abi_version = 2;
#elif defined(BAD_SMALL_STRUCT)
  table.struct_size = 16;
#elif defined(BAD_NO_RUN)
  table.run = NULL;
#elif defined(BAD_DEVICE_MISSING)
  table.memory = W4A8_MEMORY_CUDA_DEVICE;
#elif defined(BAD_EMPTY_NAME)
  table.name = "";
#elif defined(BAD_UNKNOWN_CAPS)
  table.caps |= 1ull << 40;
#endif
  return &table;
#endif
}
