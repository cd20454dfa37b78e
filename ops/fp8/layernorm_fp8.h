#pragma once
// LayerNorm quantized where it is produced: y = LayerNorm(x) rounded to bf16 and cast to e4m3
// (ops/fp8/scaling.h's rule) per row or per 1×128 block in the pass that computes it
// (ops/layernorm.cu, LnForward's y_fp8), so the bf16 y is never written and read back, as the
// two-pass composition (our LayerNorm to bf16, then quantize_fp8) does. Per-tensor scales cannot
// be fused this way: their amax spans every row before the first can be cast.
//   layernorm_fp8          ours: one kernel on CUDA fp32 (rows, C) x, gamma, beta with C a
//                          multiple of 4 within the LayerNorm kernel's width (and of 128 for
//                          1×128 blocks); elsewhere the composition below (a CPU reference).
//   layernorm_fp8_composed the two passes: our LayerNorm's bf16 output (at::layer_norm's off the
//                          kernel's path), then quantize_fp8 (the CPU reference on the CPU).
//   layernorm_fp8_torch    the eager LibTorch peer: at::layer_norm, the cast to bf16, then
//                          quantize_fp8_torch.
// keep_y: also return the bf16 y (ours writes it from the same registers, for checks).
// Throws std::invalid_argument for arguments that do not fit (a message naming them).
#include <ATen/ATen.h>

#include <string>

#include "ops/fp8/quantize.h"

namespace gptbench {

using LayerNormFp8 = Fp8Produced;

LayerNormFp8 layernorm_fp8(const at::Tensor& x, const at::Tensor& gamma, const at::Tensor& beta, double eps,
                           Fp8Granularity g, bool keep_y = false);
LayerNormFp8 layernorm_fp8_composed(const at::Tensor& x, const at::Tensor& gamma, const at::Tensor& beta,
                                    double eps, Fp8Granularity g);
LayerNormFp8 layernorm_fp8_torch(const at::Tensor& x, const at::Tensor& gamma, const at::Tensor& beta,
                                 double eps, Fp8Granularity g);

// LayerNorm(x) in bf16 by LibTorch (fp32 math, then the cast): the values every form quantizes.
at::Tensor layernorm_bf16_torch(const at::Tensor& x, const at::Tensor& gamma, const at::Tensor& beta, double eps);

// Why layernorm_fp8 cannot run its kernel for these arguments ("" when it can): not CUDA, not
// fp32, a width the kernel does not take, a granularity other than row and 1×128.
std::string layernorm_fp8_unsupported(const at::Tensor& x, const at::Tensor& gamma, Fp8Granularity g);

}  // namespace gptbench
