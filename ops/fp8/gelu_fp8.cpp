#include "ops/fp8/gelu_fp8.h"

#include <cstdint>
#include <stdexcept>
#include <string>

#ifdef GPTBENCH_WITH_CUDA
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>

#include "ops/aligned_operand.h"
#include "ops/fp8/quantize_kernels.h"
#endif

namespace gptbench {
namespace {

bool fusable(Fp8Granularity g) { return g == Fp8Granularity::kRow || g == Fp8Granularity::kBlock1x128; }

void check(const at::Tensor& u, const at::Tensor& bias, Fp8Granularity g, const char* fn) {
  const auto bad = [fn](const std::string& what) { throw std::invalid_argument(std::string(fn) + ": " + what); };
  if (!u.defined() || u.dim() != 2 || u.size(1) == 0) bad("u must be a 2-D (rows, cols) tensor with cols > 0");
  if (bias.defined() && (bias.dim() != 1 || bias.size(0) != u.size(1)))
    bad("bias must be (" + std::to_string(u.size(1)) + ") or undefined");
  if (!fusable(g)) bad(std::string("fuses per-row and 1x128 scales only, not ") + fp8_granularity_name(g));
  if (u.size(1) % 8 != 0) bad("cols must be a multiple of 8 (the quantizers' vector width), got " + std::to_string(u.size(1)));
}

}  // namespace

at::Tensor gelu_bf16_torch(const at::Tensor& u, const at::Tensor& bias) {
  const at::Tensor h = bias.defined() ? (u.to(at::kBFloat16) + bias.to(at::kBFloat16)) : u.to(at::kBFloat16);
  return at::gelu(h, "tanh");
}

std::string gelu_fp8_unsupported(const at::Tensor& u, const at::Tensor& bias, Fp8Granularity g) {
#ifdef GPTBENCH_WITH_CUDA
  if (!u.is_cuda()) return "needs a CUDA GPU (this tensor: " + u.device().str() + ")";
  if (u.scalar_type() != at::kBFloat16 || (bias.defined() && bias.scalar_type() != at::kBFloat16))
    return "needs bf16 u and bias";
  if (u.dim() != 2 || u.size(1) % 8 != 0)
    return "needs a 2-D u whose width is a multiple of 8, got width " + std::to_string(u.dim() == 2 ? u.size(1) : 0);
  if (!fusable(g)) return std::string("fuses per-row and 1x128 scales only, not ") + fp8_granularity_name(g);
  return "";
#else
  (void)u;
  (void)bias;
  (void)g;
  return "needs a CUDA GPU and a build with CUDA kernels (this build has none)";
#endif
}

Fp8Produced gelu_fp8(const at::Tensor& u, const at::Tensor& bias, Fp8Granularity g, bool keep_y) {
  check(u, bias, g, "gelu_fp8");
#ifdef GPTBENCH_WITH_CUDA
  if (gelu_fp8_unsupported(u, bias, g).empty()) {
    c10::cuda::CUDAGuard guard(u.device());
    const at::Tensor uc = aligned_contiguous(u);
    const at::Tensor bc = bias.defined() ? aligned_contiguous(bias) : at::Tensor();
    Fp8Produced out;
    out.q = empty_fp8(u.size(0), u.size(1), g, u.options());
    if (keep_y) out.y = at::empty(u.sizes(), u.options());
    Fp8GeluQuantizeArgs a;
    a.u = uc.data_ptr();
    a.bias = bc.defined() ? bc.data_ptr() : nullptr;
    a.y = keep_y ? out.y.data_ptr() : nullptr;
    a.q = static_cast<uint8_t*>(out.q.data.data_ptr());
    a.scale_inv = out.q.scale_inv.data_ptr<float>();
    a.rows = u.size(0);
    a.cols = u.size(1);
    a.granularity = g;
    launch_fp8_quantize_gelu(a, at::cuda::getCurrentCUDAStream());
    return out;
  }
#endif
  Fp8Produced out = gelu_fp8_composed(u, bias, g);
  if (!keep_y) out.y = at::Tensor();
  return out;
}

Fp8Produced gelu_fp8_composed(const at::Tensor& u, const at::Tensor& bias, Fp8Granularity g) {
  check(u, bias, g, "gelu_fp8_composed");
  Fp8Produced out;
  out.y = gelu_bf16_torch(u, bias);
  out.q = quantize_fp8(out.y, g);  // ours on CUDA, the CPU reference on the CPU
  return out;
}

Fp8Produced gelu_fp8_torch(const at::Tensor& u, const at::Tensor& bias, Fp8Granularity g) {
  check(u, bias, g, "gelu_fp8_torch");
  Fp8Produced out;
  out.y = gelu_bf16_torch(u, bias);
  out.q = quantize_fp8_torch(out.y, g);
  return out;
}

}  // namespace gptbench
