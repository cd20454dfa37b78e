#pragma once
// Lion (Chen et al. 2023, "Symbolic Discovery of Optimization Algorithms"), defaults of the
// paper's reference implementation (lr 1e-4, betas (0.9, 0.99), weight decay 0):
//   c ← β1·m + (1−β1)·g;  p ← p·(1 − lr·wd) − lr·sign(c);  m ← β2·m + (1−β2)·g
// State: m in fp32 (4 B/param). Fused path: one launch over all tensors (lion.cu).
#include "ops/optim/device_table.h"
#include "ops/optim/optimizer.h"

namespace gptbench {

struct LionOptions {
  double lr = 1e-4;
  double beta1 = 0.9;
  double beta2 = 0.99;
  double weight_decay = 0.0;
};

class Lion : public FusedOptimizer {
 public:
  Lion(std::vector<at::Tensor> params, LionOptions options = {},
       OptimBackend backend = OptimBackend::kAuto);
  std::string name() const override { return "lion"; }
  int64_t state_bytes() const override;
  const LionOptions& options() const { return opt_; }
  const std::vector<at::Tensor>& exp_avg() const { return m_; }  // (per param) fp32

 protected:
  void step_reference(const std::vector<at::Tensor>& grads) override;
  void step_fused(const std::vector<at::Tensor>& grads) override;

 private:
  LionOptions opt_;
  std::vector<at::Tensor> m_;
  optim::LaunchTables tables_;  // device launch tables (fused path)
};

}  // namespace gptbench
