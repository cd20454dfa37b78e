#pragma once
// Launchers of our FlashAttention-2-style kernels (ops/attention/flash_fwd.cu, flash_bwd.cu).
// Torch-free: raw device pointers, (B, H, L, d) tensors whose last dimension is contiguous and
// whose batch / head / row strides are given in elements. Included by the .cu files and, under
// GPTBENCH_WITH_CUDA, by ops/attention/flash.cpp. Tile sizes and loop bounds: flash_tiles.h.
//
// Requirements the launchers rely on (flash.cpp checks them or makes a contiguous copy):
//   - d in {16, 32, 64, 128}; B, H, L >= 1; L < 2^31 / 64 rows per grid column (see launchers);
//   - every input pointer 16-byte aligned and every stride a multiple of 8 elements (16 bytes),
//     last-dimension stride 1;
//   - outputs (o, dq, dk, dv) contiguous (B, H, L, d); lse, and the workspaces, contiguous.
#include <cuda_runtime_api.h>

#include <cstdint>
#include <string>

#include "ops/attention/flash_tiles.h"
#include "ops/device/elem_type.h"

namespace gptbench {

// Strides of a (B, H, L, d) tensor in elements; the last dimension has stride 1.
struct FlashStrides {
  int64_t batch, head, row;
};

struct FlashFwdParams {
  const void* q;  // (B, H, L, d), strides q_st
  const void* k;  // (B, H, L, d), strides k_st
  const void* v;  // (B, H, L, d), strides v_st
  void* o;        // (B, H, L, d) contiguous, same dtype
  float* lse;     // (B, H, L) contiguous: log Σ_j exp(scale · q·k_j) over the unmasked j
  int* tile_counter;  // the Hopper kernel's work counter: one int, zero at launch (else null)
  // The FP8 forward only (launch_flash_forward_sm90_fp8; else null): q and k e4m3 (B, H, L, d),
  // v e4m3 vᵀ (B, H, d, Lv) with v_st its strides (row = Lv), o bf16, and the per-block scales
  // of FlashFp8Inputs (ops/attention/flash_fp8.h).
  const float* q_scale;
  const float* k_scale;
  const float* v_scale;
  FlashStrides q_st, k_st, v_st;
  int B, H, L, d;
  bool causal;
  float scale;  // softmax scale, usually 1/sqrt(d)
  ElemType dtype;  // bf16 or fp16 (another: std::invalid_argument)
};

struct FlashBwdParams {
  const void* q;     // (B, H, L, d), strides q_st
  const void* k;     // (B, H, L, d), strides k_st
  const void* v;     // (B, H, L, d), strides v_st
  const void* o;     // (B, H, L, d), strides o_st (the forward output)
  const void* dout;  // (B, H, L, d), strides do_st
  const float* lse;  // (B, H, L) contiguous (the forward's)
  void* dq;          // (B, H, L, d) contiguous, same dtype
  void* dk;          // (B, H, L, d) contiguous
  void* dv;          // (B, H, L, d) contiguous
  float* dq_accum;   // workspace (B, H, L, d) fp32; the launcher zeroes it
  float* dsum;       // workspace (B, H, L) fp32: D = rowsum(dO ∘ O)
  float* rows_pad;   // the Hopper kernel's workspace, 2·B·H·Lpad fp32 (Lpad: L rounded up to
                     // 64): lse·log2e, then D, per head, zero-padded; unused by the portable one
  FlashStrides q_st, k_st, v_st, o_st, do_st;
  int B, H, L, d;
  bool causal;
  float scale;
  ElemType dtype;
};

// Whether the kernels' 32-bit row offsets cover a tensor with this row stride: rows up to L
// plus a tile of padding, times the stride, plus d, below 2^31.
inline bool flash_row_offsets_fit(int64_t L, int64_t row_stride, int64_t d) {
  return row_stride >= 0 && (L + 256) * row_stride + d < (int64_t{1} << 31);
}

// o = softmax(scale · q kᵀ (+ causal mask)) v and its logsumexp, on `stream`.
// Throws gptbench::CudaError on a CUDA failure, std::invalid_argument on unsupported d or L.
void launch_flash_forward(const FlashFwdParams& p, cudaStream_t stream);

// dq, dk, dv from dout, recomputing the probabilities from lse (three kernels: D = rowsum(dO∘O),
// the main pass over key blocks with dQ accumulated by fp32 atomics into dq_accum, and the
// conversion of dq_accum to dq).
void launch_flash_backward(const FlashBwdParams& p, cudaStream_t stream);

// The passes around the backward's main kernel, shared by both backward kernels: before it,
// zero dq_accum and compute dsum (D) (lpad = 0), or with lpad > 0 (the Hopper kernel's
// flash_sm90_rows_pad(L)) zero dq_accum and write rows_pad in one pass; after it,
// dq = scale · dq_accum.
void launch_flash_backward_prepare(const FlashBwdParams& p, cudaStream_t stream,
                                   int64_t lpad = 0);
void launch_flash_backward_finish(const FlashBwdParams& p, cudaStream_t stream);

// The Hopper forward (ops/attention/sm90/flash_fwd_sm90.cu, built for sm_90a: TMA copies and
// warpgroup MMAs), the same contract as launch_flash_forward for the problems it takes.
// Why it cannot run p on a GPU of compute capability cc_major.cc_minor, or "" when it can
// (compute capability 9.0, d = 64 or 128, strides positive multiples of 8 elements).
std::string flash_forward_sm90_unsupported(const FlashFwdParams& p, int cc_major, int cc_minor);
void launch_flash_forward_sm90(const FlashFwdParams& p, cudaStream_t stream);
// The FP8 forward (d = 128): the same kernel on e4m3 MMAs, with the FP8 fields of p.
void launch_flash_forward_sm90_fp8(const FlashFwdParams& p, cudaStream_t stream);

// Its quantization pass (ops/attention/sm90/flash_fp8_quant_sm90.cu): one of q, k, v (B, H, L,
// 128, bf16 or fp16, strides st: row, head and batch multiples of 8, 16-byte aligned) to e4m3
// with one scale per block of 128 rows, as FlashFp8Inputs (ops/attention/flash_fp8.h) holds them.
struct FlashFp8QuantParams {
  enum Mode : int { kQ, kK, kV };
  const void* src;
  FlashStrides st;
  ElemType dtype;
  void* dst;     // q, k: (B, H, L, 128) contiguous; v: vᵀ (B, H, 128, lv) contiguous
  float* scale;  // (B, H, ceil(L / 128))
  int B, H, L;
  int lv;  // v only: L rounded up to 32
  Mode mode;
};
void launch_flash_fp8_quantize(const FlashFp8QuantParams& p, cudaStream_t stream);

// The Hopper backward (ops/attention/sm90/flash_bwd_sm90.cu): launch_flash_backward's contract
// plus the rows_pad workspace, for the problems flash_backward_sm90_unsupported accepts.
GPTBENCH_FLASH_HD inline int64_t flash_sm90_rows_pad(int L) { return (int64_t{L} + 63) / 64 * 64; }
std::string flash_backward_sm90_unsupported(const FlashBwdParams& p, int cc_major, int cc_minor);
void launch_flash_backward_sm90(const FlashBwdParams& p, cudaStream_t stream);

}  // namespace gptbench
