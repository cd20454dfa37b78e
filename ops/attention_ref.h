#pragma once
// Attention implementations that the attention and backward families time side by side, and the
// float64 reference they are verified against. q, k, v: (B, H, L, d) -> (B, H, L, d).
//   naive:          matmul -> scale -> mask (causal) -> softmax -> matmul, the (B, H, L, L)
//                   scores materialised (memory grows as L²).
//   sdpa_math, sdpa_efficient, sdpa_flash, sdpa_cudnn:
//                   at::scaled_dot_product_attention with LibTorch's backend forced through the
//                   global context (docs/design.md §8); a backend that cannot run a problem throws.
#include <ATen/ATen.h>

#include <functional>
#include <string>
#include <vector>

namespace gptbench {

// kFlash and kFlashSm90 are our kernels (ops/attention/flash.h), not SDPA backends: the portable
// FlashAttention-2 kernel (mma.sync) and the Hopper forward (TMA + wgmma; compute capability 9.0,
// d = 64 and 128) with the Hopper backward.
enum class AttnBackend {
  kNaive,
  kSdpaMath,
  kSdpaEfficient,
  kSdpaFlash,
  kSdpaCudnn,
  kFlash,
  kFlashSm90
};

// naive, sdpa_math, sdpa_efficient, sdpa_flash, sdpa_cudnn, flash, flash_sm90.
const std::vector<std::string>& attn_backend_names();
// Throws std::invalid_argument naming the valid names.
AttnBackend parse_attn_backend(const std::string& name);
const char* attn_backend_name(AttnBackend backend);

// Whether `backend` takes inputs of `dtype` on the run's device (`cuda`): LibTorch's flash and
// cuDNN SDPA kernels on a GPU and our kernels anywhere take bf16 and fp16 only; LibTorch's CPU
// flash kernel takes fp32 too. A backend that runs on CUDA only answers for CUDA on the CPU as
// well: its rows there are skipped for want of a GPU, not for their dtype. The families register
// no row for a dtype a backend never takes.
bool attn_backend_takes(AttnBackend backend, at::ScalarType dtype, bool cuda);

// Enables exactly one SDPA backend (all four when given kNaive, which does not use SDPA) for the
// guard's lifetime and restores the previous flags after.
class SdpBackendGuard {
 public:
  explicit SdpBackendGuard(AttnBackend backend);
  ~SdpBackendGuard();
  SdpBackendGuard(const SdpBackendGuard&) = delete;
  SdpBackendGuard& operator=(const SdpBackendGuard&) = delete;

 private:
  bool flash_, mem_efficient_, math_, cudnn_;
};

// The attention of `backend` with the softmax scale 1/sqrt(d); `causal` masks future keys.
at::Tensor attention_forward(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                             bool causal, AttnBackend backend);

// float64 on the CPU (a CPU float64 tensor), computed naively from the inputs' stored values.
at::Tensor attention_reference(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                               bool causal);

// Runs fn; if it throws an error that is not out-of-memory, returns the reason in one line
// (LibTorch's warnings about why an SDPA backend was rejected, when there are any, else the
// error's first line). Returns "" when fn succeeds. Out-of-memory errors propagate.
std::string attention_unsupported_reason(const std::function<void()>& fn);

}  // namespace gptbench
