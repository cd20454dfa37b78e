#pragma once
// AdamW (Loshchilov & Hutter 2019) with PyTorch's defaults and torch::optim::AdamW's update:
//   p ← p·(1 − lr·wd);  m ← β1·m + (1−β1)·g;  v ← β2·v + (1−β2)·g²;
//   p ← p − lr/(1−β1^t) · m / (sqrt(v)/sqrt(1−β2^t) + eps)
// State: m and v in fp32 (8 B/param). Fused path: one launch over all tensors (adamw.cu).
#include "ops/optim/device_table.h"
#include "ops/optim/optimizer.h"

namespace gptbench {

struct AdamWOptions {
  double lr = 1e-3;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
  double weight_decay = 1e-2;
};

class AdamW : public FusedOptimizer {
 public:
  AdamW(std::vector<at::Tensor> params, AdamWOptions options = {},
        OptimBackend backend = OptimBackend::kAuto);
  std::string name() const override { return "adamw"; }
  int64_t state_bytes() const override;
  const AdamWOptions& options() const { return opt_; }
  const std::vector<at::Tensor>& exp_avg() const { return m_; }     // (per param) fp32
  const std::vector<at::Tensor>& exp_avg_sq() const { return v_; }  // (per param) fp32

 protected:
  void step_reference(const std::vector<at::Tensor>& grads) override;
  void step_fused(const std::vector<at::Tensor>& grads) override;

 private:
  AdamWOptions opt_;
  std::vector<at::Tensor> m_, v_;
  optim::LaunchTables tables_;  // device launch tables (fused path)
};

}  // namespace gptbench
