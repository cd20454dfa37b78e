#pragma once
// The GEMMs of one GPT-2 training step, derived from the config (the one place shapes come
// from; bench/ never writes them as literals).
#include <cstdint>
#include <string>
#include <vector>

#include "model/config.h"

namespace gptbench {

// C(M, N) = op(A) · op(B) with op(A) of shape (M, K) and op(B) of shape (K, N), row-major.
// trans_a / trans_b say the operand is stored transposed, as in the real training step:
// forward Y = X·Wᵀ (trans_b), input gradient dX = dY·W, weight gradient dW = dYᵀ·X (trans_a).
struct GemmShape {
  std::string name;  // "<layer>.<pass>", e.g. "qkv.fwd", "mlp_down.dgrad", "lm_head.wgrad"
  int64_t m, n, k;
  bool trans_a = false, trans_b = false;
};

// Every GEMM of a training step at `tokens` = B·T rows: QKV, attention projection, MLP up,
// MLP down and LM head (padded vocabulary), each as fwd, dgrad and wgrad.
std::vector<GemmShape> training_gemms(const GPT2Config& cfg, int64_t tokens);

// Square GEMMs n³ for n in [lo, hi], doubling.
std::vector<GemmShape> square_gemms(int64_t lo, int64_t hi);

}  // namespace gptbench
