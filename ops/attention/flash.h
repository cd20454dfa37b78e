#pragma once
// Our fused attention (FlashAttention-2 style, Dao 2023): forward, backward, an autograd
// function, and float64 references. Kernels: ops/attention/flash_fwd.cu, flash_bwd.cu (design
// notes there and in docs/flash_attention.md).
//
// Tensors are (B, H, L, d) — batch, heads, sequence, head dim — bf16 or fp16 CUDA tensors with
// d in {16, 32, 64, 128} and any L ≥ 1; q, k, v share shape, dtype and device. Strided views are
// used in place when their last dimension is contiguous, every other stride is a multiple of 8
// elements and the data is 16-byte aligned (as GPT-2's q, k, v views of the c_attn output are);
// other layouts are copied to contiguous first. Softmax scale 1/sqrt(d). Work runs on the current
// CUDA stream of the inputs' device.
//
// Errors (c10::Error through TORCH_CHECK, with a message naming the function and the problem):
// a shape, dtype or head dim the kernels do not support; CPU tensors; a build without CUDA
// kernels. Shape and dtype are checked before the device, so they are reported on the CPU too.
#include <ATen/ATen.h>

#include <string>

namespace gptbench {

// Which forward kernel runs. kAuto: the Hopper kernel (TMA + wgmma, ops/attention/sm90/) where
// it can run (compute capability 9.0, d = 64 or 128), else the portable mma.sync kernel;
// kPortable, kSm90: that kernel (kSm90 throws, saying why, where it cannot run). The same for
// the backward kernels.
enum class FlashKernel { kAuto, kPortable, kSm90 };

struct FlashOutput {
  at::Tensor o;    // (B, H, L, d), the inputs' dtype
  at::Tensor lse;  // (B, H, L) fp32: log Σ_j exp(scale · q_i·k_j) over the unmasked keys j
};

struct FlashGrads {
  at::Tensor dq, dk, dv;  // (B, H, L, d) each
};

// True when this build has the CUDA kernels (GPTBENCH_WITH_CUDA).
bool flash_attention_available();

// Head dims the kernels are compiled for: 16, 32, 64, 128.
bool flash_attention_supports_head_dim(int64_t d);

// Why the Hopper (sm90) forward cannot run attention over q, k, v (checked as
// flash_attention_forward checks them), or "" when it can.
std::string flash_sm90_unsupported(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v);

// Forward: o and lse. Not differentiable by itself (see flash_attention).
FlashOutput flash_attention_forward(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                                    bool causal, FlashKernel kernel = FlashKernel::kAuto);
// As flash_attention_forward, into o (contiguous (B, H, L, d), the inputs' dtype, 16-byte
// aligned) and lse (contiguous (B, H, L) fp32) on the inputs' device.
void flash_attention_forward_out(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                                 bool causal, at::Tensor& o, at::Tensor& lse,
                                 FlashKernel kernel = FlashKernel::kAuto);

// Backward from the forward's o and lse and dout = dLoss/do: dq, dk, dv. Allocates an fp32 dQ
// workspace of B·H·L·d floats and B·H·L floats for D = rowsum(dout ∘ o) (the Hopper kernel
// 2·B·H·L' more, L' = L rounded up to 64).
FlashGrads flash_attention_backward(const at::Tensor& q, const at::Tensor& k,
                                    const at::Tensor& v, const at::Tensor& o,
                                    const at::Tensor& lse, const at::Tensor& dout, bool causal,
                                    FlashKernel kernel = FlashKernel::kAuto);
// As flash_attention_backward, into dq, dk, dv (each contiguous (B, H, L, d), the inputs' dtype,
// 16-byte aligned).
void flash_attention_backward_out(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                                  const at::Tensor& o, const at::Tensor& lse,
                                  const at::Tensor& dout, bool causal, at::Tensor& dq,
                                  at::Tensor& dk, at::Tensor& dv,
                                  FlashKernel kernel = FlashKernel::kAuto);

// o = softmax(q kᵀ / sqrt(d) (+ causal mask)) v, differentiable through a
// torch::autograd::Function whose backward is flash_attention_backward (saves q, k, v, o, lse).
at::Tensor flash_attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                           bool causal, FlashKernel kernel = FlashKernel::kAuto);

// ---- References (CPU, float64; any dtype and device in, CPU float64 tensors out) -------------

// The naive formula: S = scale · q kᵀ, masked entries −inf, lse = logsumexp(S), o = exp(S − lse) v.
FlashOutput flash_attention_reference(const at::Tensor& q, const at::Tensor& k,
                                      const at::Tensor& v, bool causal);
// The closed-form gradients of the naive formula: P = exp(S − lse), dV = Pᵀ dO, dP = dO Vᵀ,
// dS = P ∘ (dP − rowsum(dO ∘ O)), dQ = scale · dS K, dK = scale · dSᵀ Q.
FlashGrads flash_attention_backward_reference(const at::Tensor& q, const at::Tensor& k,
                                              const at::Tensor& v, const at::Tensor& dout,
                                              bool causal);

// The kernels' algorithm emulated tile by tile on the CPU in float64, with the same tile
// arithmetic (ops/attention/flash_tiles.h): zero-padded tiles, masking only on tiles that
// flash_tile_needs_mask selects, causal tile skipping, online softmax with running max and sum
// (forward), P recomputed from lse and D = rowsum(dO ∘ O) (backward). block_m / block_n: query
// and key rows per tile (the kernels use flash_fwd_tile(d) and flash_bwd_tile(d)).
FlashOutput flash_attention_tiled_cpu(const at::Tensor& q, const at::Tensor& k,
                                      const at::Tensor& v, bool causal, int block_m,
                                      int block_n);
FlashGrads flash_attention_backward_tiled_cpu(const at::Tensor& q, const at::Tensor& k,
                                              const at::Tensor& v, const at::Tensor& o,
                                              const at::Tensor& lse, const at::Tensor& dout,
                                              bool causal, int block_m, int block_n);

}  // namespace gptbench
