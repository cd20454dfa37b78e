#pragma once
// GELU's output quantized where it is produced: y = GELU(bf16(u + bias)) (tanh form, as GPT-2's
// MLP) rounded to bf16 and cast to e4m3 per row or per 1x128 block in the pass that computes it
// (ops/fp8/quantize.cu, launch_fp8_quantize_gelu), from u, the MLP-up GEMM's bf16 output before
// its bias: the activation is never written in bf16 and read back, as the two-pass composition
// (GELU to bf16, then quantize_fp8) does. It is the MLP-down GEMM's input in an FP8 recipe with
// those scales. Per-tensor scales are not fused: their amax spans every row before the first
// can be cast.
//   gelu_fp8          ours: one kernel on CUDA bf16 u (rows, cols), cols a multiple of 8, and a
//                     bf16 (cols) bias or none; elsewhere the composition below (a CPU reference).
//   gelu_fp8_composed the two passes: LibTorch's bias add and GELU in bf16, then quantize_fp8
//                     (ours on CUDA, the CPU reference on the CPU).
//   gelu_fp8_torch    the eager LibTorch peer: the same GELU, then quantize_fp8_torch.
// keep_y: also return the bf16 GELU output (ours writes it from the same registers, for checks).
// Throws std::invalid_argument for arguments that do not fit (a message naming them).
#include <ATen/ATen.h>

#include <string>

#include "ops/fp8/quantize.h"

namespace gptbench {

Fp8Produced gelu_fp8(const at::Tensor& u, const at::Tensor& bias, Fp8Granularity g, bool keep_y = false);
Fp8Produced gelu_fp8_composed(const at::Tensor& u, const at::Tensor& bias, Fp8Granularity g);
Fp8Produced gelu_fp8_torch(const at::Tensor& u, const at::Tensor& bias, Fp8Granularity g);

// GELU(bf16(u + bias)) in bf16 by LibTorch: the values every form quantizes (bias may be
// undefined).
at::Tensor gelu_bf16_torch(const at::Tensor& u, const at::Tensor& bias);

// Why gelu_fp8 cannot run its kernel for these arguments ("" when it can): not CUDA, not bf16,
// a width not a multiple of 8, a granularity other than row and 1x128.
std::string gelu_fp8_unsupported(const at::Tensor& u, const at::Tensor& bias, Fp8Granularity g);

}  // namespace gptbench
