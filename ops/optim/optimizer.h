#pragma once
// The common shape of our optimizers (AdamW, 8-bit Adam, Adafactor, Lion): built over a list of
// fp32 parameters, step() updates them from their .grad() (or from explicit gradients, fp32 or
// bf16), zero_grad() clears the gradients, state_bytes() reports the optimizer state.
// Each optimizer has two paths with the same state layout:
//   reference — plain LibTorch ops, any device; what the CPU runs and what the tests trust;
//   fused     — our CUDA kernels, one launch (or one fixed sequence of launches) over all tensors.
// One parameter group: every tensor shares the hyper-parameters and the step count.
#include <ATen/ATen.h>

#include <cstdint>
#include <string>
#include <vector>

namespace gptbench {

enum class OptimBackend {
  kAuto,       // fused on a CUDA device in a build with CUDA kernels, else reference
  kReference,  // LibTorch ops
  kFused,      // our CUDA kernels; throws where they cannot run
};

class FusedOptimizer {
 public:
  // params: contiguous fp32 tensors on one device (LibTorch leaves; updated in place).
  FusedOptimizer(std::vector<at::Tensor> params, OptimBackend backend);
  virtual ~FusedOptimizer() = default;
  FusedOptimizer(const FusedOptimizer&) = delete;
  FusedOptimizer& operator=(const FusedOptimizer&) = delete;

  virtual std::string name() const = 0;

  // One step from each parameter's .grad() (every parameter must have one).
  void step();
  // One step from explicit gradients (same shapes as the parameters, contiguous, fp32 or bf16,
  // all of one dtype, on the parameters' device).
  void step(const std::vector<at::Tensor>& grads);
  // Zeroes every defined .grad() in place (keeps the buffers, so launch tables stay valid).
  void zero_grad();

  // Bytes of optimizer state held for all parameters (step counter excluded).
  virtual int64_t state_bytes() const = 0;

  bool uses_fused() const { return fused_; }
  int64_t steps() const { return step_; }
  const std::vector<at::Tensor>& params() const { return params_; }
  int64_t numel() const;

 protected:
  // Called with step_ already incremented; grads validated.
  virtual void step_reference(const std::vector<at::Tensor>& grads) = 0;
  virtual void step_fused(const std::vector<at::Tensor>& grads) = 0;

  std::vector<at::Tensor> params_;
  int64_t step_ = 0;
  bool fused_ = false;
};

// True when this build has our CUDA kernels and `device` is a CUDA device.
bool fused_available(const c10::Device& device);

}  // namespace gptbench
