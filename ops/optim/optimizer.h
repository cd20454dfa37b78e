#pragma once
// The common shape of our optimizers (AdamW, 8-bit Adam, Adafactor, Lion): built over a list of
// fp32 parameters, step() updates them from their .grad() (or from explicit gradients, fp32 or
// bf16), zero_grad() clears the gradients, state_bytes() reports the optimizer state.
// Each optimizer has two paths with the same state layout:
//   reference — plain LibTorch ops, any device; what the CPU runs and what the tests trust;
//   fused     — our CUDA kernels, one launch (or one fixed sequence of launches) over all tensors.
// One parameter group: every tensor shares the hyper-parameters and the step count.
#include <ATen/ATen.h>

#include <array>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "ops/optim/device_table.h"

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
  // What step_fused does in a build without CUDA kernels (unreachable: fused_ is false there).
  [[noreturn]] void no_fused_kernels() const;

  std::vector<at::Tensor> params_;
  int64_t step_ = 0;
  bool fused_ = false;
};

// An optimizer named `name` whose hyper-parameters are an Options struct (with a valid() of
// their ranges): keeps them, and the device launch tables of its fused path (device_table.h).
// State, steps and state_bytes are each optimizer's own.
template <typename Options>
class OptimizerWith : public FusedOptimizer {
 public:
  std::string name() const override { return name_; }
  const Options& options() const { return opt_; }

 protected:
  // Throws std::invalid_argument("<name>: invalid hyper-parameter") unless options.valid().
  OptimizerWith(const char* name, std::vector<at::Tensor> params, const Options& options,
                OptimBackend backend)
      : FusedOptimizer(std::move(params), backend), opt_(options), name_(name) {
    if (!opt_.valid()) throw std::invalid_argument(name_ + ": invalid hyper-parameter");
  }

  Options opt_;
  optim::LaunchTables tables_;

 private:
  std::string name_;
};

// An optimizer whose state is kStates fp32 tensors per parameter, of its shape and zero at the
// start (AdamW: m, v; Lion: m), updated elementwise.
template <typename Options, size_t kStates>
class Fp32StateOptimizer : public OptimizerWith<Options> {
 public:
  int64_t state_bytes() const override { return 4 * kStates * this->numel(); }
  const std::vector<at::Tensor>& exp_avg() const { return state_[0]; }  // (per param) fp32

 protected:
  Fp32StateOptimizer(const char* name, std::vector<at::Tensor> params, const Options& options,
                     OptimBackend backend)
      : OptimizerWith<Options>(name, std::move(params), options, backend) {
    for (const auto& p : this->params_)
      for (auto& s : state_) s.push_back(at::zeros_like(p));
  }

  std::array<std::vector<at::Tensor>, kStates> state_;  // state_[k][i]: state k of parameter i
};

// The hyper-parameters of the Adam update, shared by AdamW and 8-bit Adam (which differ in the
// default weight decay; a non-zero one is decoupled in both).
struct AdamOptions {
  double lr = 1e-3;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
  double weight_decay = 0.0;

  // No negative lr, eps or weight decay, no beta outside [0, 1).
  bool valid() const {
    return !(lr < 0 || eps < 0 || weight_decay < 0 || beta1 < 0 || beta1 >= 1 || beta2 < 0 ||
             beta2 >= 1);
  }
};

// True when this build has our CUDA kernels and `device` is a CUDA device.
bool fused_available(const c10::Device& device);

}  // namespace gptbench
