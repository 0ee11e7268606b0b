/* The example plugin's computation behind a pretend device: memory = CUDA_DEVICE, "device" buffers
 * come from this module's alloc (tracked), copies check both sides, and run() refuses any pointer
 * that is not one of its allocations. Exercises the loader's device path (alloc, copy in, run,
 * synchronize, copy out, free) without a GPU. W4A8_FAKE_DEVICE_COUNT=0 pretends there is no device
 * (-1 pretends a failure with error code 0);
 * W4A8_FAKE_NULL_ALLOC=1 makes alloc report success with a NULL pointer; W4A8_FAKE_DIRTY_ALLOC=1 makes
 * it hand out memory full of 0xFF bytes (against the ABI's zero-filled); W4A8_FAKE_OVERRUN=1 makes
 * run() write one byte past the end of out; W4A8_FAKE_NO_ACC=1 makes it leave acc unwritten. */
#define W4A8_EXAMPLE_NO_ENTRY
#include "w4a8_example_plugin.c"

#include <stdlib.h>

#define MAX_ALLOCS 256
static struct { char* p; size_t n; } allocs[MAX_ALLOCS];
__attribute__((visibility("default"))) int fake_live_allocs = 0;

static int on_device(const void* p, size_t n) {
  int i;
  for (i = 0; i < MAX_ALLOCS; ++i)
    if (allocs[i].p && (const char*)p >= allocs[i].p && (const char*)p + n <= allocs[i].p + allocs[i].n) return 1;
  return 0;
}

static int fake_count(int* err) {
  const char* e = getenv("W4A8_FAKE_DEVICE_COUNT");
  if (e && strcmp(e, "-1") == 0) { /* a failure without an error code */
    if (err) *err = 0;
    ex_error = "";
    return -1;
  }
  if (e && e[0] == '0') {
    if (err) *err = 100; /* cudaErrorNoDevice */
    ex_error = "no CUDA-capable device is detected (fake)";
    return -1;
  }
  if (err) *err = 0;
  return 1;
}
static w4a8_status fake_alloc(void** ptr, size_t n) {
  int i;
  if (getenv("W4A8_FAKE_NULL_ALLOC")) {
    *ptr = NULL;
    return W4A8_OK;
  }
  for (i = 0; i < MAX_ALLOCS; ++i)
    if (!allocs[i].p) {
      allocs[i].p = calloc(n ? n : 1, 1);
      allocs[i].n = n;
      if (!allocs[i].p) return W4A8_ERR_CUDA;
      if (getenv("W4A8_FAKE_DIRTY_ALLOC")) memset(allocs[i].p, 0xFF, n);
      *ptr = allocs[i].p;
      ++fake_live_allocs;
      return W4A8_OK;
    }
  return W4A8_ERR_CUDA;
}
static void fake_free(void* p) {
  int i;
  for (i = 0; i < MAX_ALLOCS; ++i)
    if (allocs[i].p == p) {
      free(p);
      allocs[i].p = NULL;
      --fake_live_allocs;
    }
}
static w4a8_status fake_to_device(void* dst, const void* src, size_t n) {
  if (!on_device(dst, n) || on_device(src, n)) return ex_fail(W4A8_ERR_ARGUMENT, "copy_to_device: bad direction");
  memcpy(dst, src, n);
  return W4A8_OK;
}
static w4a8_status fake_to_host(void* dst, const void* src, size_t n) {
  if (on_device(dst, n) || !on_device(src, n)) return ex_fail(W4A8_ERR_ARGUMENT, "copy_to_host: bad direction");
  memcpy(dst, src, n);
  return W4A8_OK;
}
static w4a8_status fake_sync(void* stream) { (void)stream; return W4A8_OK; }

static w4a8_status fake_run(const w4a8_problem* p, void* ws, size_t ws_bytes, void* stream) {
  const void* ptrs[] = {p->x, p->weight, p->s_rel, p->s_channel, p->codebook, p->bias, p->out,
                        p->x_q, p->x_scale, p->acc, p->w_q, p->nan_scale_flag, ws};
  size_t i;
  for (i = 0; i < sizeof ptrs / sizeof ptrs[0]; ++i)
    if (ptrs[i] && !on_device(ptrs[i], 1)) return ex_fail(W4A8_ERR_ARGUMENT, "a host pointer reached the device");
  {
    w4a8_problem q = *p;
    if (getenv("W4A8_FAKE_NO_ACC")) q.acc = NULL;
    const w4a8_status s = ex_run(&q, ws, ws_bytes, stream);
    if (s == W4A8_OK && getenv("W4A8_FAKE_OVERRUN"))
      ((unsigned char*)p->out)[(size_t)(p->m * p->ldo) * (p->out_dtype == W4A8_DTYPE_F32 ? 4 : 2)] ^= 1;
    return s;
  }
}

static const w4a8_kernel_plugin fake_table = {
    W4A8_KERNEL_ABI_VERSION, (uint32_t)sizeof(w4a8_kernel_plugin), "fake-device", "0.1", W4A8_MEMORY_CUDA_DEVICE,
    W4A8_CAP_INTEGER_PATH | W4A8_CAP_INTERMEDIATES, ex_check, ex_workspace, fake_run, ex_last_error,
    fake_count, fake_alloc, fake_free, fake_to_device, fake_to_host, fake_sync};

__attribute__((visibility("default"))) const w4a8_kernel_plugin* w4a8_kernel_plugin_v1(void) { return &fake_table; }
