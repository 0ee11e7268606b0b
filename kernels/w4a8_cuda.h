/* Plain C ABI of the W4A8 CUDA kernels (asym_w4a8_int8 linear layer, see shared spec w4a8-gemm.md).
 * Every pointer in w4a8_problem is a DEVICE pointer; calls are asynchronous on `stream`.
 * Status codes are returned before any work when operands break the kernel contract. */
#ifndef W4A8_CUDA_H_
#define W4A8_CUDA_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum w4a8_dtype { W4A8_DTYPE_F32 = 0, W4A8_DTYPE_BF16 = 1, W4A8_DTYPE_F16 = 2 } w4a8_dtype;

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
  const int8_t* weight;        /* packed codes [N, K/2], low nibble = even k; 8-byte aligned */
  const uint8_t* s_rel;        /* FP8 E4M3FN bytes [N, K/G] */
  const float* s_channel;      /* [N] */
  const float* codebook;       /* [16] or NULL (code c means c - 8) */
  const float* correction;     /* [K/G, N] or NULL (NULL: integer path) */
  const void* bias;            /* [N] in bias_dtype, or NULL */
  w4a8_dtype bias_dtype;
  void* out;                   /* [M, N], dtype out_dtype, row stride ldo elements */
  w4a8_dtype out_dtype;
  int64_t ldo;
  int32_t act_policy;          /* 0: float32 policy (the only one the device implements) */
  /* Optional intermediates (integer path), written when non-NULL: */
  int8_t* x_q;                 /* [M, K] quantized rotated activations; 16-byte aligned */
  float* x_scale;              /* [M] per-row scales */
  int32_t* acc;                /* [M, N] int32 accumulators */
  int32_t* nan_scale_flag;     /* set to 1 when an FP8 NaN scale byte (0x7F/0xFF) was decoded */
  int8_t* w_q;                 /* [N, K] the decoded int8 grid as the GEMM saw it; 16-byte aligned */
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

#ifdef __cplusplus
}
#endif

#endif /* W4A8_CUDA_H_ */
