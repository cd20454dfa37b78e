#pragma once
// Linear layers as cuBLASLt GEMMs with fused epilogues (bf16 operands, fp32 accumulation, the
// current CUDA stream). Row-major: x (N, in), w (out, in) as torch::nn::Linear stores it,
// y (N, out). The epilogues replace the separate kernels of a Linear + tanh-GELU training step:
//   lt_linear       y = x·wᵀ + b                                   (BIAS)
//   lt_linear_gelu  h = gelu_tanh(x·wᵀ + b), pre = x·wᵀ + b        (GELU_AUX_BIAS)
//   lt_dgelu        d_pre = (dy·w) ⊙ gelu_tanh'(pre)                (DGELU)
//   lt_wgrad        dw (+)= dyᵀ·x in fp32                          (no epilogue)
// (Bias gradients are column sums of dy by the caller: see linear_lt.cpp on why not from the
// BGRADB or DGELU_BGRAD epilogues.)
// Requirements (checked, std::invalid_argument otherwise): 2-d contiguous bf16 CUDA matrices
// whose feature sizes (in, out) are multiples of 8 (cuBLASLt's GELU aux leading dimension must
// be, and it keeps every row 16-byte aligned); any row count N >= 1; pointers 16-byte aligned.
// A bias is bf16 or, where lt_fp32_bias_supported(), fp32.
// Descriptors and an algorithm are cached per (shape, epilogue, bias and output types,
// alignment, device): the fastest of cuBLASLt's first 8 heuristic choices, timed once on the
// first call's inputs into scratch outputs (its first choice while a CUDA graph is being
// captured). Each device has one cuBLASLt handle and a 32 MB workspace.
// Built without CUDA, every function but lt_shape_supported throws std::runtime_error.
#include <ATen/ATen.h>

#include <cstdint>
#include <utility>

namespace gptbench {

// Whether a GEMM with these feature sizes meets the multiple-of-8 rule above.
inline bool lt_shape_supported(int64_t in_features, int64_t out_features) {
  return in_features > 0 && out_features > 0 && in_features % 8 == 0 && out_features % 8 == 0;
}

// Whether cuBLASLt accepts fp32 bias vectors beside bf16 matrices for the BIAS and
// GELU_AUX_BIAS epilogues (probed once per process on the current device; false without CUDA).
bool lt_fp32_bias_supported();

at::Tensor lt_linear(const at::Tensor& x, const at::Tensor& w, const at::Tensor& b);

// Returns {h, pre}, both bf16 (N, out).
std::pair<at::Tensor, at::Tensor> lt_linear_gelu(const at::Tensor& x, const at::Tensor& w,
                                                 const at::Tensor& b);

// dy (N, out), w (out, in), pre (N, in). Returns d_pre bf16 (N, in).
at::Tensor lt_dgelu(const at::Tensor& dy, const at::Tensor& w, const at::Tensor& pre);

// How lt_dgelu_bgrad computes d_pre and the bias gradient of the layer before the GELU.
enum class DgeluPath {
  kFastest,   // whichever of the two below ran faster when the shape was first seen (three runs
              // each, timed then; kEpilogue while a CUDA graph is being captured)
  kEpilogue,  // lt_dgelu, then ops/column_sum.h's column_sum(d_pre)
  kSeparate,  // a plain GEMM dy·w, then gelu_backward_column_sum: d_pre and its sum in one pass
};
// dy (N, out), w (out, in), pre (N, in), as lt_dgelu. Returns {d_pre bf16 (N, in), Σrows d_pre
// fp32 (in)}. Why two paths: for some shapes every DGELU kernel cuBLASLt offers is an sm80 one
// (GPT-2 medium at B = 32 on an H200: 838 µs, where the plain GEMM takes 421).
std::pair<at::Tensor, at::Tensor> lt_dgelu_bgrad(const at::Tensor& dy, const at::Tensor& w,
                                                 const at::Tensor& pre,
                                                 DgeluPath path = DgeluPath::kFastest);

// dy (N, out), x (N, in) bf16; dw a contiguous fp32 (out, in) tensor on their device, which
// receives dyᵀ·x (accumulate: dw + dyᵀ·x), summed in fp32 and never rounded to bf16 (the
// weight gradient of an fp32 master weight, as mixed-precision training keeps it).
void lt_wgrad(const at::Tensor& dy, const at::Tensor& x, const at::Tensor& dw, bool accumulate);

// Number of cached plans (descriptor + algorithm) so far.
int64_t lt_plan_cache_size();

}  // namespace gptbench
