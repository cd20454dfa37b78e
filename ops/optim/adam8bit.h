#pragma once
// 8-bit Adam (Dettmers et al. 2022, "8-bit Optimizers via Block-wise Quantization"): Adam whose
// two moments are stored as 8-bit codes of the dynamic maps (signed for m, unsigned for v) with
// one fp32 absmax per block of 256 elements: 2 + 8/256 = 2.03 B/param of state. Tensors under
// 4,096 elements keep fp32 moments (as the paper does). Each step dequantises, updates in fp32
// (bitsandbytes' blockwise update: the parameter step uses the new fp32 moments) and requantises
// to the nearest code of x / absmax. Defaults as bitsandbytes' Adam8bit (lr 1e-3, betas
// (0.9, 0.999), eps 1e-8, weight decay 0; a non-zero weight decay is decoupled, as AdamW):
//   p ← p·(1 − lr·wd) − lr/(1−β1^t) · m / (sqrt(v)/sqrt(1−β2^t) + eps)
// The reference (LibTorch ops: index, bucketize, amax) and the kernel quantise with the same
// table and the same fp32 operations, so they agree code for code up to rare ties (the kernel
// finds the nearest code by a bucket lookup that is exact: quant_map.h).
#include "ops/optim/optimizer.h"

namespace gptbench {

using Adam8bitOptions = AdamOptions;  // its defaults are bitsandbytes'

// The state of one parameter: codes + absmax when quantised, fp32 moments otherwise.
struct Adam8bitState {
  bool quantized = false;
  at::Tensor m, v;                // (n) uint8 codes, or (n) fp32 when not quantised
  at::Tensor m_absmax, v_absmax;  // (ceil(n/256)) fp32; undefined when not quantised
};

class Adam8bit : public OptimizerWith<Adam8bitOptions> {
 public:
  Adam8bit(std::vector<at::Tensor> params, Adam8bitOptions options = {},
           OptimBackend backend = OptimBackend::kAuto);
  int64_t state_bytes() const override;
  const std::vector<Adam8bitState>& state() const { return state_; }
  // The moments of parameter i as fp32 tensors of its shape (dequantised when quantised).
  at::Tensor exp_avg(size_t i) const;
  at::Tensor exp_avg_sq(size_t i) const;

 protected:
  void step_reference(const std::vector<at::Tensor>& grads) override;
  void step_fused(const std::vector<at::Tensor>& grads) override;

 private:
  std::vector<Adam8bitState> state_;
  at::Tensor code_m_, mid_m_, code_v_, mid_v_;  // (256), (255) fp32 on the params' device
  at::Tensor table_;  // int32 (kQuantTableWords): quant_kernel_table() for the kernel
};

// Quantises x (flat fp32) blockwise: codes (n) uint8 and absmax (ceil(n/256)) fp32, with the
// signed (is_signed) or unsigned dynamic map; and the inverse. Used by the reference and tests.
std::pair<at::Tensor, at::Tensor> quantize_blockwise(const at::Tensor& x, bool is_signed);
at::Tensor dequantize_blockwise(const at::Tensor& codes, const at::Tensor& absmax, bool is_signed);

}  // namespace gptbench
