#pragma once
// AdamW (Loshchilov & Hutter 2019) with PyTorch's defaults and torch::optim::AdamW's update:
//   p ← p·(1 − lr·wd);  m ← β1·m + (1−β1)·g;  v ← β2·v + (1−β2)·g²;
//   p ← p − lr/(1−β1^t) · m / (sqrt(v)/sqrt(1−β2^t) + eps)
// State: m and v in fp32 (8 B/param). Fused path: one launch over all tensors (adamw.cu).
#include "ops/optim/optimizer.h"

namespace gptbench {

// PyTorch's defaults: lr 1e-3, betas (0.9, 0.999), eps 1e-8, weight decay 1e-2.
struct AdamWOptions : AdamOptions {
  AdamWOptions() { weight_decay = 1e-2; }
};

class AdamW : public Fp32StateOptimizer<AdamWOptions, 2> {
 public:
  AdamW(std::vector<at::Tensor> params, AdamWOptions options = {},
        OptimBackend backend = OptimBackend::kAuto)
      : Fp32StateOptimizer("adamw", std::move(params), options, backend) {}
  const std::vector<at::Tensor>& exp_avg_sq() const { return state_[1]; }  // (per param) fp32

 protected:
  void step_reference(const std::vector<at::Tensor>& grads) override;
  void step_fused(const std::vector<at::Tensor>& grads) override;
};

}  // namespace gptbench
