#pragma once
// Lion (Chen et al. 2023, "Symbolic Discovery of Optimization Algorithms"), defaults of the
// paper's reference implementation (lr 1e-4, betas (0.9, 0.99), weight decay 0):
//   c ← β1·m + (1−β1)·g;  p ← p·(1 − lr·wd) − lr·sign(c);  m ← β2·m + (1−β2)·g
// State: m in fp32 (4 B/param). Fused path: one launch over all tensors (lion.cu).
#include "ops/optim/optimizer.h"

namespace gptbench {

struct LionOptions {
  double lr = 1e-4;
  double beta1 = 0.9;
  double beta2 = 0.99;
  double weight_decay = 0.0;

  // No negative lr or weight decay, no beta outside [0, 1].
  bool valid() const {
    return !(lr < 0 || weight_decay < 0 || beta1 < 0 || beta1 > 1 || beta2 < 0 || beta2 > 1);
  }
};

class Lion : public Fp32StateOptimizer<LionOptions, 1> {
 public:
  Lion(std::vector<at::Tensor> params, LionOptions options = {},
       OptimBackend backend = OptimBackend::kAuto)
      : Fp32StateOptimizer("lion", std::move(params), options, backend) {}

 protected:
  void step_reference(const std::vector<at::Tensor>& grads) override;
  void step_fused(const std::vector<at::Tensor>& grads) override;
};

}  // namespace gptbench
