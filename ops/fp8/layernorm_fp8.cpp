#include "ops/fp8/layernorm_fp8.h"

#include <cstdint>
#include <stdexcept>
#include <string>

#ifdef GPTBENCH_WITH_CUDA
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>

#include "ops/aligned_operand.h"
#include "ops/layernorm_kernels.h"
#endif

namespace gptbench {
namespace {

void check(const at::Tensor& x, const at::Tensor& gamma, const at::Tensor& beta, Fp8Granularity g, const char* fn) {
  const auto bad = [fn](const std::string& what) { throw std::invalid_argument(std::string(fn) + ": " + what); };
  if (!x.defined() || x.dim() != 2 || x.size(1) == 0) bad("x must be a 2-D (rows, C) tensor with C > 0");
  for (const at::Tensor* p : {&gamma, &beta})
    if (!p->defined() || p->dim() != 1 || p->size(0) != x.size(1))
      bad("gamma and beta must be (" + std::to_string(x.size(1)) + ")");
  if (g != Fp8Granularity::kRow && g != Fp8Granularity::kBlock1x128)
    bad(std::string("fuses per-row and 1x128 scales only, not ") + fp8_granularity_name(g));
  if (x.size(1) % 8 != 0) bad("C must be a multiple of 8 (the quantizers' vector width), got " + std::to_string(x.size(1)));
}

#ifdef GPTBENCH_WITH_CUDA
// Our LayerNorm kernel on contiguous fp32 x, gamma, beta: y (bf16) where defined, and with q the
// e4m3 values and scales of the same pass.
void launch(const at::Tensor& x, const at::Tensor& gamma, const at::Tensor& beta, double eps, at::Tensor* y,
            Fp8Tensor* q) {
  c10::cuda::CUDAGuard guard(x.device());
  const int64_t rows = x.size(0), c = x.size(1);
  const auto f32 = x.options().dtype(at::kFloat);
  at::Tensor mean = at::empty({rows}, f32), rstd = at::empty({rows}, f32);
  LnForward a;
  a.x = x.data_ptr<float>();
  a.gamma = gamma.data_ptr<float>();
  a.beta = beta.data_ptr<float>();
  a.y = y != nullptr ? y->data_ptr() : nullptr;
  a.y_dtype = ElemType::kBF16;
  a.mean = mean.data_ptr<float>();
  a.rstd = rstd.data_ptr<float>();
  a.rows = rows;
  a.columns = static_cast<int>(c);
  a.eps = static_cast<float>(eps);
  if (q != nullptr) {
    a.y_fp8 = static_cast<uint8_t*>(q->data.data_ptr());
    a.y_scale_inv = q->scale_inv.data_ptr<float>();
    a.fp8_granularity = q->granularity;
  }
  launch_layernorm_forward(a, at::cuda::getCurrentCUDAStream());
}
#endif

}  // namespace

at::Tensor layernorm_bf16_torch(const at::Tensor& x, const at::Tensor& gamma, const at::Tensor& beta, double eps) {
  return at::layer_norm(x, {x.size(1)}, gamma, beta, eps).to(at::kBFloat16);
}

std::string layernorm_fp8_unsupported(const at::Tensor& x, const at::Tensor& gamma, Fp8Granularity g) {
#ifdef GPTBENCH_WITH_CUDA
  if (!x.is_cuda()) return "needs a CUDA GPU (this tensor: " + x.device().str() + ")";
  if (x.scalar_type() != at::kFloat || gamma.scalar_type() != at::kFloat) return "needs fp32 x, gamma and beta";
  if (x.dim() != 2 || !layernorm_kernel_supports(x.size(1)))
    return "the LayerNorm kernel does not take width " + std::to_string(x.dim() == 2 ? x.size(1) : 0);
  if (g != Fp8Granularity::kRow && g != Fp8Granularity::kBlock1x128)
    return std::string("fuses per-row and 1x128 scales only, not ") + fp8_granularity_name(g);
  if (g == Fp8Granularity::kBlock1x128 && x.size(1) % kFp8Block != 0)
    return "1x128 blocks need C a multiple of 128, got " + std::to_string(x.size(1));
  return "";
#else
  (void)x;
  (void)gamma;
  (void)g;
  return "needs a CUDA GPU and a build with CUDA kernels (this build has none)";
#endif
}

LayerNormFp8 layernorm_fp8(const at::Tensor& x, const at::Tensor& gamma, const at::Tensor& beta, double eps,
                           Fp8Granularity g, bool keep_y) {
  check(x, gamma, beta, g, "layernorm_fp8");
#ifdef GPTBENCH_WITH_CUDA
  if (layernorm_fp8_unsupported(x, gamma, g).empty() && beta.scalar_type() == at::kFloat) {
    const at::Tensor xc = aligned_contiguous(x), gc = aligned_contiguous(gamma), bc = aligned_contiguous(beta);
    LayerNormFp8 out;
    out.q = empty_fp8(x.size(0), x.size(1), g, x.options());
    if (keep_y) out.y = at::empty(x.sizes(), x.options().dtype(at::kBFloat16));
    launch(xc, gc, bc, eps, keep_y ? &out.y : nullptr, &out.q);
    return out;
  }
#endif
  LayerNormFp8 out = layernorm_fp8_composed(x, gamma, beta, eps, g);
  if (!keep_y) out.y = at::Tensor();
  return out;
}

LayerNormFp8 layernorm_fp8_composed(const at::Tensor& x, const at::Tensor& gamma, const at::Tensor& beta,
                                    double eps, Fp8Granularity g) {
  check(x, gamma, beta, g, "layernorm_fp8_composed");
  LayerNormFp8 out;
#ifdef GPTBENCH_WITH_CUDA
  if (layernorm_fp8_unsupported(x, gamma, g).empty() && beta.scalar_type() == at::kFloat) {
    out.y = at::empty(x.sizes(), x.options().dtype(at::kBFloat16));
    launch(aligned_contiguous(x), aligned_contiguous(gamma), aligned_contiguous(beta), eps, &out.y, nullptr);
    out.q = quantize_fp8(out.y, g);
    return out;
  }
#endif
  out.y = layernorm_bf16_torch(x, gamma, beta, eps);
  out.q = quantize_fp8(out.y, g);  // the CPU reference on the CPU
  return out;
}

LayerNormFp8 layernorm_fp8_torch(const at::Tensor& x, const at::Tensor& gamma, const at::Tensor& beta,
                                 double eps, Fp8Granularity g) {
  check(x, gamma, beta, g, "layernorm_fp8_torch");
  LayerNormFp8 out;
  out.y = layernorm_bf16_torch(x, gamma, beta, eps);
  out.q = quantize_fp8_torch(out.y, g);
  return out;
}

}  // namespace gptbench
