#pragma once
// FP8 (e4m3) attention forward on Hopper with per-block scaling: q, k and v quantized in blocks
// of 128 rows of one head (one fp32 scale each, amax / 448), the forward of
// ops/attention/sm90/flash_fwd_sm90.cu run on e4m3 tensor-core MMAs (S = Q Kᵀ and O += P V, P
// rounded to e4m3 too), the output in bf16. Design and measured error: docs/flash_attention.md.
//
// Shapes: q, k, v (B, H, L, 128) bf16 or fp16 CUDA tensors (head dim 128 only) on a GPU of
// compute capability 9.0. Errors: c10::Error (TORCH_CHECK) naming the function and the problem.
#include <ATen/ATen.h>

#include <string>

#include "ops/attention/flash_tiles.h"

namespace gptbench {

// The quantized operands the FP8 forward reads, each contiguous, on one device. Values are
// rounded to nearest (even), saturating at ±448.
//   q, k:   (B, H, L, 128) float8_e4m3fn;
//   vt:     (B, H, 128, Lv) float8_e4m3fn, v transposed (keys along the rows, Lv = L rounded up
//           to 32, zero beyond L) with the keys of each group of 32 stored in the order of
//           flash_fp8_v_key, the order of the e4m3 MMA's register operand (the kernel then packs
//           P without moving values between threads);
//   q_scale, k_scale, v_scale: (B, H, ceil(L / 128)) fp32: a block's amax / 448 (the largest
//           e4m3 value; 1 for an all-zero block), its element x stored as x / scale. q's blocks end at row L (block i holds rows L − (n − i)·128 .. + 127, the
//           forward's query tiles); k's and v's start at key 0 (block j: keys 128 j .. + 127).
struct FlashFp8Inputs {
  at::Tensor q, k, vt, q_scale, k_scale, v_scale;
};

// The key stored at position p (0 .. 31) of a group of 32 in FlashFp8Inputs::vt:
// flash_fp8_v_key(p), ops/attention/flash_tiles.h.

// Why the FP8 forward cannot run over q, k, v (bf16/fp16 CUDA tensors (B, H, L, 128) of one
// dtype on one GPU of compute capability 9.0, in a build with the Hopper kernels), or "" when it
// can. Never throws.
std::string flash_fp8_unsupported(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v);

// Quantizes q, k, v (checked as above; any strides) to FlashFp8Inputs, on their device's current
// stream.
FlashFp8Inputs flash_attention_quantize_fp8(const at::Tensor& q, const at::Tensor& k,
                                            const at::Tensor& v);

// The fp32 tensors (B, H, L, 128) the quantized operands stand for (e4m3 value × its block's
// scale; v back in key order), on their device: the exact inputs of the FP8 forward's math.
struct FlashFp8Dequantized {
  at::Tensor q, k, v;
};
FlashFp8Dequantized flash_attention_dequantize_fp8(const FlashFp8Inputs& in);

// o (B, H, L, 128) bf16 and lse (B, H, L) fp32 = log Σ_j exp(scale · q_i·k_j) (scale
// 1/sqrt(128)) over the unmasked keys, from the quantized operands; causal or not. P is rounded
// to e4m3 as 2^8 · exp(s − m), m the row's running maximum, before P·V; l and lse use the fp32 P.
// Throws c10::Error for inputs not shaped as flash_attention_quantize_fp8 makes them, CPU
// tensors, or a GPU other than compute capability 9.0.
struct FlashFp8Output {
  at::Tensor o, lse;
};
FlashFp8Output flash_attention_forward_fp8(const FlashFp8Inputs& in, bool causal);

}  // namespace gptbench
