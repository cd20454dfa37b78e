#pragma once
// A linear layer y = x·Wᵀ (x (M, K) bf16 activations, W (N, K) bf16 master weight, y (M, N)
// bf16, no bias), forward and backward, in FP8 with per-tensor current scaling (docs/fp8.md,
// "Linear layer"):
//   forward   X̂ = e4m3(x), Ŵ = e4m3(W), each scaled by the amax the tensor has now (or, with
//             delayed scaling, the largest of its last casts' amaxes: Fp8LinearScales);
//             y = X̂·Ŵᵀ, one FP8 GEMM, bf16 out.
//   backward  dŶ = e5m2(dy) per tensor (the gradients' range: 5 exponent bits);
//             dX = dŶ·Ŵ   (M, K): dŶ (M, N) × Ŵᵀ (K, N), e5m2 × e4m3;
//             dW = dŶᵀ·X̂  (N, K): dŶᵀ (N, M) × X̂ᵀ (K, M), e5m2 × e4m3; both bf16 out.
// cuBLASLt takes FP8 operands K-major only, so the forward of a step that will run its backward
// writes X̂ᵀ and Ŵᵀ beside X̂ and Ŵ, and the backward dŶᵀ beside dŶ, each in the pass that
// quantizes the tensor (ops/fp8/quantize_transpose.h). Every GEMM accumulates in fp32 with fast
// accumulation off. cuBLASLt on Hopper takes e4m3 × e4m3, e4m3 × e5m2 and e5m2 × e4m3 (not e5m2 ×
// e5m2), and at::_scaled_mm the same pairs.
//
//   kFp8        ours: our quantizers (ops/fp8/quantize_transpose.h), the forward GEMM through
//               gemm_fp8_cublaslt (ops/fp8/gemm.h), the backward's e5m2 × e4m3 GEMMs through
//               the same cuBLASLt call with dŶ's layout typed e5m2 (plans cached per shape).
//   kScaledMm   the peer a user composes: LibTorch's eager quantization (abs, amax, division,
//               multiply, clamp, cast, t().contiguous()) and at::_scaled_mm, per-tensor scales.
//   kTorchBf16  the bf16 layer: at::linear forward; dX = dy·W and dW = dyᵀ·x as autograd's
//               linear backward runs them (two at::mm).
#include <ATen/ATen.h>

#include <cstdint>
#include <string>

#include "ops/fp8/quantize_transpose.h"

namespace gptbench {

enum class LinearImpl : int32_t { kFp8 = 0, kScaledMm = 1, kTorchBf16 = 2 };

// "fp8", "scaled_mm", "torch": the impl segment of the rows (bench/linear_fp8.cpp).
constexpr const char* linear_impl_name(LinearImpl i) {
  return i == LinearImpl::kFp8 ? "fp8" : i == LinearImpl::kScaledMm ? "scaled_mm" : "torch";
}
constexpr bool linear_is_fp8(LinearImpl i) { return i != LinearImpl::kTorchBf16; }

// The FP8 operands of one step of the layer, kept from the forward for the backward as autograd
// keeps its saved tensors: X̂ and Ŵ (e4m3, with X̂ᵀ and Ŵᵀ when the backward follows), dŶ and
// dŶᵀ (e5m2) once the backward has run. Unused by kTorchBf16.
struct Fp8LinearSaved {
  Fp8PerTensor x, w, dy;
};

// One layer's delayed scaling (kFp8 only): its input and weight (e4m3) and its output gradient
// (e5m2), each with its own amax history of `history` casts (ops/fp8/quantize_transpose.h).
struct Fp8LinearScales {
  explicit Fp8LinearScales(int64_t history = kFp8AmaxHistory)
      : x(Fp8Format::kE4m3, history), w(Fp8Format::kE4m3, history), dy(Fp8Format::kE5m2, history) {}
  Fp8DelayedScale x, w, dy;
};

// Why `impl` cannot run on `device` ("" when it can): the FP8 impls need a CUDA GPU with FP8
// tensor cores (gemm_fp8_unsupported's per-tensor rule), the bf16 one a CUDA GPU (the rows
// compare FP8 with bf16 on one GPU). Never throws.
std::string linear_unsupported(LinearImpl impl, c10::Device device);

// y (M, N) bf16 contiguous, written. x (M, K), w (N, K) bf16 on y's device; for the FP8 impls
// K a multiple of 16 and M, N multiples of 8 (cuBLASLt's and our kernels' alignment), and for
// the backward M and N multiples of 16 too (the reductions of dW and dX). `saved` receives X̂ and Ŵ (and
// their transposed copies with `for_backward`). delayed (kFp8 only): x and W take its delayed
// scales instead of their current amax. Throws std::invalid_argument for operands that do not
// fit, gptbench::CudaError for a CUDA or cuBLAS failure.
void linear_forward(LinearImpl impl, const at::Tensor& x, const at::Tensor& w, at::Tensor& y,
                    Fp8LinearSaved& saved, bool for_backward, Fp8LinearScales* delayed = nullptr);

// kFp8's forward from x already quantized per tensor to e4m3 (xq: X̂, with X̂ᵀ when
// for_backward; e.g. GELU's output quantized where it is produced, quantize_per_tensor_gelu_fp8):
// saved.x takes xq, W is quantized and the GEMM runs as in linear_forward. Same rules. bias
// (optional, bf16 (N)): added in the GEMM's epilogue (gemm_fp8_cublaslt), y rounded once.
// w_delayed (optional): W's delayed scaling (ops/fp8/quantize_transpose.h Fp8DelayedScale,
// e4m3) instead of its current amax.
void linear_forward_fp8(Fp8PerTensor xq, const at::Tensor& w, at::Tensor& y, Fp8LinearSaved& saved,
                        bool for_backward, const at::Tensor& bias = {}, Fp8DelayedScale* w_delayed = nullptr);

// dx (M, K) and dw (N, K) bf16 contiguous, written from dy (M, N) bf16: the FP8 impls from
// `saved` (after linear_forward with for_backward), which receives dŶ; kTorchBf16 from x and w.
// dy_delayed (kFp8 only, e5m2): dy's delayed scaling instead of its current amax.
void linear_backward(LinearImpl impl, const at::Tensor& dy, const at::Tensor& x, const at::Tensor& w,
                     Fp8LinearSaved& saved, at::Tensor& dx, at::Tensor& dw, Fp8DelayedScale* dy_delayed = nullptr);

// Rows of the layer's outputs in float64, from float64 operands x (M, K), w (N, K), dy (M, N):
// y and dx at rows `rows_m` of M, dw at rows `rows_n` of N (int64 indices). For the FP8 impls
// the operands are the dequantized values the GEMMs multiply (dequantize_per_tensor_fp8 of
// the plain copies, so a wrong transposed copy shows in dx and dw). dy undefined: y alone.
struct LinearReference {
  at::Tensor y, dx, dw;
};
LinearReference linear_reference(const at::Tensor& x, const at::Tensor& w, const at::Tensor& dy,
                                 const at::Tensor& rows_m, const at::Tensor& rows_n);

}  // namespace gptbench
