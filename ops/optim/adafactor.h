#pragma once
// Adafactor (Shazeer & Stern 2018) as torch.optim.Adafactor implements it, with its defaults
// (lr 1e-2, beta2_decay −0.8, eps (None → fp32 machine epsilon, 1e-3), d 1.0, weight decay 0):
//   β2_t = 1 − t^beta2_decay;  ρ_t = min(lr, 1/sqrt(t));  α_t = max(eps2, RMS(p)) · ρ_t
//   p ← p·(1 − lr·wd)
//   ≥2-D: R ← lerp(R, mean_cols(g²), 1−β2_t);  C ← lerp(C, mean_rows(g²), 1−β2_t)
//         V = R·C / max(mean(R), eps1)     (factored over the last two dimensions)
//   1-D:  V ← lerp(V, g², 1−β2_t)
//   u = g / sqrt(max(V, eps1²));  p ← p − α_t / max(1, RMS(u)/d) · u
// No first moment (PyTorch has none). scale_parameter = false replaces α_t by ρ_t (the paper's
// "relative step" switched off). State: rows + cols floats per matrix, n per vector.
// Fused path: four launches over every 1-D and 2-D tensor (adafactor.cu); tensors of more
// dimensions take the reference step inside the fused path.
#include "ops/optim/optimizer.h"

#include <optional>

namespace gptbench {

struct AdafactorOptions {
  double lr = 1e-2;
  double beta2_decay = -0.8;
  std::optional<double> eps1;  // None: machine epsilon of fp32 (torch.finfo(float32).eps)
  double eps2 = 1e-3;
  double d = 1.0;
  double weight_decay = 0.0;
  bool scale_parameter = true;

  // No negative lr, eps or weight decay, no positive beta2_decay, d ≥ 1.
  bool valid() const {
    return !(lr < 0 || beta2_decay > 0 || (eps1 && *eps1 < 0) || eps2 < 0 || d < 1 ||
             weight_decay < 0);
  }
};

class Adafactor : public OptimizerWith<AdafactorOptions> {
 public:
  Adafactor(std::vector<at::Tensor> params, AdafactorOptions options = {},
            OptimBackend backend = OptimBackend::kAuto);
  int64_t state_bytes() const override;
  // State of parameter i: row (..., n, 1) and col (..., 1, m) factors for ≥2-D, else variance.
  const at::Tensor& row_var(size_t i) const { return row_[i]; }
  const at::Tensor& col_var(size_t i) const { return col_[i]; }
  const at::Tensor& variance(size_t i) const { return var_[i]; }

 protected:
  void step_reference(const std::vector<at::Tensor>& grads) override;
  void step_fused(const std::vector<at::Tensor>& grads) override;

 private:
  void reference_one(size_t i, const at::Tensor& grad);
  double eps1() const;

  std::vector<at::Tensor> row_, col_, var_;  // undefined where not used
  at::Tensor scratch_;  // the fused path's stats, sums and counters
  std::vector<size_t> unfused_;  // tensors of > 2 dimensions
};

}  // namespace gptbench
