#pragma once
// Cross-entropy of the LM head's logits, fused: mean over rows of logsumexp(x_r) - x_r[t_r],
// straight from bf16/fp16/fp32 logits (no fp32 copy), forward and backward each one pass over
// the logits (ops/cross_entropy.cu). The logits may carry padding columns (a vocabulary padded
// to a multiple of 64 so the LM-head GEMMs run on aligned shapes): only the first `classes`
// columns count, and the padding gets a zero gradient.
#include <ATen/ATen.h>

#include <cstdint>

namespace gptbench {

// logits (N, C) with C >= classes, targets (N) int64; rows whose target is ignore_index are
// left out of the mean (as at::cross_entropy_loss; all rows ignored gives NaN). Differentiable
// in the logits. CUDA tensors (fp32, bf16, fp16) run the fused kernels (a target outside
// [0, classes) that is not ignore_index makes the loss NaN: checking it on the host would need a
// synchronisation); anything else runs at::cross_entropy_loss on the first `classes` columns
// in fp32. Throws std::invalid_argument on bad shapes or dtypes.
at::Tensor fused_cross_entropy(const at::Tensor& logits, const at::Tensor& targets,
                               int64_t classes, int64_t ignore_index = -100);

// LibTorch's path the fused one replaces (and the CPU path): at::cross_entropy_loss of the
// first `classes` columns converted to fp32.
at::Tensor torch_cross_entropy(const at::Tensor& logits, const at::Tensor& targets,
                               int64_t classes, int64_t ignore_index = -100);

// float64 reference on the CPU: the mean loss (a 0-dim double tensor) and d loss / d logits
// (N, C) as double, zero in the padding columns and on ignored rows.
struct CrossEntropyReference {
  at::Tensor loss, grad;
};
CrossEntropyReference cross_entropy_reference(const at::Tensor& logits, const at::Tensor& targets,
                                              int64_t classes, int64_t ignore_index = -100);

}  // namespace gptbench
