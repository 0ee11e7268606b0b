/* Plain C ABI of W4A8 kernels (the asym_w4a8_int8 linear layer, docs/gemm.md): the problem
 * struct and status codes of this project's CUDA kernels, and the plugin table through which
 * w4a8check loads any kernel module with dlopen (its own CUDA module, or a user's library:
 * `--impl cuda`, `--kernel PATH.so`, `audit`). For the CUDA entry points below every pointer in
 * w4a8_problem is a DEVICE pointer and calls are asynchronous on `stream`; a plugin says where its
 * pointers live (w4a8_kernel_plugin.memory). Status codes are returned before any work when
 * operands break the kernel contract. */
#ifndef W4A8_CUDA_H_
#define W4A8_CUDA_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum w4a8_dtype { W4A8_DTYPE_F32 = 0, W4A8_DTYPE_BF16 = 1, W4A8_DTYPE_F16 = 2 } w4a8_dtype;

/* Storage of weight_s_rel: FP8 E4M3FN bytes (sglang and comfy-kitchen) or little-endian F32
 * (written by comfy-kitchen 0.2.40's quantizer; every checked comfy-kitchen release, 0.2.30 on,
 * decodes either; sglang refuses F32). */
typedef enum w4a8_scale_dtype { W4A8_SCALE_FP8_E4M3 = 0, W4A8_SCALE_F32 = 1 } w4a8_scale_dtype;

typedef enum w4a8_status {
  W4A8_OK = 0,
  W4A8_ERR_CONTRACT = 1,      /* K % 16, K % G, K % R, G shape or R not a power of 4 */
  W4A8_ERR_ARGUMENT = 2,      /* null pointer, misaligned weight/x_q, size < 0, stride < K or N,
                                 bad dtype or policy, workspace too small */
  W4A8_ERR_UNSUPPORTED = 3,   /* valid but beyond this build (grid or shared-memory limits) */
  W4A8_ERR_CUDA = 4,          /* a CUDA or cuBLAS call failed; see w4a8_cuda_last_error() */
  W4A8_ERR_NO_DEVICE = 5      /* cudaGetDeviceCount found no device */
} w4a8_status;

/* out[M, N] = x[M, K] @ W^T + bias, W given by the stored tensors of one layer. */
typedef struct w4a8_problem {
  int64_t m, n, k;             /* rows, outputs, inputs */
  int32_t group_size;          /* G: >= 4, divides 16 or is a multiple of 16, divides K */
  int32_t convrot_groupsize;   /* R: power of 4 >= 4, divides K */
  const void* x;               /* activations [M, K], dtype x_dtype, row stride ldx elements */
  w4a8_dtype x_dtype;
  int64_t ldx;
  const int8_t* weight;        /* packed codes, K*bits/8 bytes per row, rows contiguous; 8-byte
                                  aligned. bits 0 or 4: [N, K/2], code k in byte k/2, low nibble =
                                  even k. bits 6: [N, K*6/8], each row the same K/2-byte plane of the
                                  codes' low 4 bits, then a K/4-byte plane of their top 2 bits
                                  (code k: bits 2*(k%4) of byte K/2 + k/4); see `bits` */
  const uint8_t* s_rel;        /* group scales [N, K/G] as raw bytes, per s_rel_dtype: FP8 E4M3FN
                                  (1 byte each) or little-endian F32 (4 bytes each, N*(K/G)*4 bytes);
                                  4-byte aligned. Multiplies the code value alone: w_q = clamp(rne(
                                  f32(v * s)), -127, 127); s_channel is applied in the epilogue */
  const float* s_channel;      /* [N] */
  const float* codebook;       /* [16] or NULL (code c means c - 8; 6-bit codes: always NULL, c - 32) */
  const float* correction;     /* [K/G, N] or NULL (NULL: integer path) */
  const void* bias;            /* [N] in bias_dtype, or NULL */
  w4a8_dtype bias_dtype;
  void* out;                   /* [M, N], dtype out_dtype, row stride ldo elements */
  w4a8_dtype out_dtype;
  int64_t ldo;
  int32_t act_policy;          /* 0: float32 policy; 1: eager (bf16/fp16 roundings; plugins need
                                  W4A8_CAP_EAGER_POLICY) */
  /* Optional intermediates (integer path), written when non-NULL: */
  int8_t* x_q;                 /* [M, K] quantized rotated activations; 16-byte aligned */
  float* x_scale;              /* [M] per-row scales */
  int32_t* acc;                /* [M, N] int32 accumulators */
  int32_t* nan_scale_flag;     /* set to 1 when an FP8 NaN scale byte (0x7F/0xFF) was decoded */
  int8_t* w_q;                 /* [N, K] the decoded int8 grid as the GEMM saw it; 16-byte aligned */
  /* comfy-kitchen 0.2.40 storage variants (zero-initialized problems keep 0.1's meaning): */
  int32_t bits;                /* code width: 0 or 4 (packed [N, K/2]), or 6 (a K/2-byte plane of the
                                  low 4 bits, then a K/4-byte plane of the top 2 bits, per row) */
  w4a8_scale_dtype s_rel_dtype;/* s_rel bytes: FP8 E4M3FN [N, K/G] or F32 [N, K/G] */
} w4a8_problem;

/* Device memory the call needs beyond the problem's buffers (x_q and x_scale when NULL there,
 * the dequantized weight on the correction path). 0 on invalid problems. */
size_t w4a8_gemm_cuda_workspace_size(const w4a8_problem* p);

/* Runs the layer. workspace: device memory of w4a8_gemm_cuda_workspace_size(p) bytes (may be NULL
 * when that size is 0). Integer path: activation ConvRot + per-row int8 quantization, then the fused
 * W4A8 GEMM. Correction path: dequantize + un-rotate W, then a float GEMM (cuBLAS).
 * @return W4A8_OK or one of the w4a8_status errors (nothing launched on error). */
w4a8_status w4a8_gemm_cuda(const w4a8_problem* p, void* workspace, size_t workspace_bytes,
                           void* stream /* cudaStream_t */);

/* Checks p against the kernel contract (the same conditions as the shared operand validation). */
w4a8_status w4a8_check_problem(const w4a8_problem* p);

/* Text of the last CUDA/cuBLAS failure seen by this thread ("" when none). */
const char* w4a8_cuda_last_error(void);

/* Number of CUDA devices, or -1 with the CUDA error code in *cuda_error when the query fails
 * (no driver, no device: cudaGetDeviceCount returns e.g. 35 or 100). */
int w4a8_cuda_device_count(int* cuda_error);

/* ---- Kernel plugins ------------------------------------------------------------------------------
 * A kernel module (shared library) exports exactly one symbol, w4a8_kernel_plugin_v1, returning a
 * table that lives as long as the module. The loader checks abi_version and struct_size, then calls
 * only through the table. A HOST plugin gets host pointers in w4a8_problem and runs synchronously
 * (stream is NULL); a CUDA_DEVICE plugin gets device pointers that the loader obtained through the
 * plugin's own alloc/copy functions, so the loader itself never links a GPU runtime. */
#define W4A8_KERNEL_ABI_VERSION 1u

typedef enum w4a8_memory { W4A8_MEMORY_HOST = 0, W4A8_MEMORY_CUDA_DEVICE = 1 } w4a8_memory;

/* Capability flags: what a plugin implements; the loader refuses other problems before calling it. */
#define W4A8_CAP_INTEGER_PATH    (1ull << 0) /* no correction tensor */
#define W4A8_CAP_CORRECTION_PATH (1ull << 1) /* weight_correction present (float GEMM) */
#define W4A8_CAP_6BIT            (1ull << 2) /* bits == 6 */
#define W4A8_CAP_F32_SCALES      (1ull << 3) /* s_rel_dtype == W4A8_SCALE_F32 */
#define W4A8_CAP_EAGER_POLICY    (1ull << 4) /* act_policy == 1 */
#define W4A8_CAP_INTERMEDIATES   (1ull << 5) /* fills x_q, x_scale, acc, w_q when given */

typedef struct w4a8_kernel_plugin {
  uint32_t abi_version;        /* W4A8_KERNEL_ABI_VERSION the module was built with */
  uint32_t struct_size;        /* sizeof(w4a8_kernel_plugin) in the module's build */
  const char* name;            /* e.g. "w4a8check-cuda" */
  const char* version;         /* the implementation's own version, e.g. w4a8check's */
  w4a8_memory memory;          /* where the problem's pointers live */
  uint64_t caps;               /* W4A8_CAP_* */
  w4a8_status (*check_problem)(const w4a8_problem* p);
  size_t (*workspace_size)(const w4a8_problem* p);
  w4a8_status (*run)(const w4a8_problem* p, void* workspace, size_t workspace_bytes, void* stream);
  const char* (*last_error)(void); /* text of this thread's last failure, "" when none */
  /* CUDA_DEVICE plugins only (NULL in HOST plugins): */
  int (*device_count)(int* error_code);
  w4a8_status (*alloc)(void** ptr, size_t bytes); /* contents unspecified: the loader copies every buffer in */
  void (*free)(void* ptr);
  w4a8_status (*copy_to_device)(void* dst, const void* src, size_t bytes);
  w4a8_status (*copy_to_host)(void* dst, const void* src, size_t bytes);
  w4a8_status (*synchronize)(void* stream);
} w4a8_kernel_plugin;

typedef const w4a8_kernel_plugin* (*w4a8_kernel_plugin_fn)(void);
#define W4A8_KERNEL_PLUGIN_SYMBOL "w4a8_kernel_plugin_v1"

#ifdef __cplusplus
}
#endif

#endif /* W4A8_CUDA_H_ */
