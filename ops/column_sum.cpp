#include "ops/column_sum.h"

#include <cstdint>
#include <stdexcept>
#include <string>

#ifdef GPTBENCH_WITH_CUDA
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>

#include "ops/column_sum_kernels.h"
#include "ops/device/elem_type_torch.h"
#endif

namespace gptbench {

bool column_sum_uses_kernel(const at::Tensor& x) {
#ifdef GPTBENCH_WITH_CUDA
  return x.dim() == 2 && x.is_cuda() && x.is_contiguous() && x.size(1) % 8 == 0 &&
         (x.scalar_type() == at::kFloat || x.scalar_type() == at::kBFloat16) &&
         reinterpret_cast<uintptr_t>(x.data_ptr()) % 16 == 0;
#else
  (void)x;
  return false;
#endif
}

namespace {

void check_matrix(const char* fn, const at::Tensor& x) {
  if (!x.defined() || x.dim() != 2)
    throw std::invalid_argument(std::string(fn) + ": a 2-d (rows, cols) tensor is needed, got " +
                                (x.defined() ? std::to_string(x.dim()) + "-d" : std::string("none")));
}

#ifdef GPTBENCH_WITH_CUDA
// What a launch on x's rows needs: the fp32 sums (cols) and the kernels' partials, and the stream.
struct SumLaunch {
  at::Tensor out, partial;
  cudaStream_t stream;
};
SumLaunch sum_launch(const at::Tensor& x) {
  const auto f32 = x.options().dtype(at::kFloat);
  const int64_t rows = x.size(0), cols = x.size(1);
  return {at::empty({cols}, f32), at::empty({column_sum_parts(rows, cols) * cols}, f32),
          at::cuda::getCurrentCUDAStream(x.device().index()).stream()};
}
#endif

}  // namespace

at::Tensor column_sum(const at::Tensor& x) {
  check_matrix("column_sum", x);
#ifdef GPTBENCH_WITH_CUDA
  if (column_sum_uses_kernel(x) && x.numel() > 0) {
    const c10::cuda::CUDAGuard guard(x.device());
    const SumLaunch l = sum_launch(x);
    const ElemType t = check_elem_type(x.scalar_type(), {ElemType::kF32, ElemType::kBF16}, "column_sum");
    launch_column_sum(x.data_ptr(), t, x.size(0), x.size(1), l.partial.data_ptr<float>(),
                      l.out.data_ptr<float>(), l.stream);
    return l.out;
  }
#endif
  return x.sum(0, /*keepdim=*/false, at::kFloat);
}

std::pair<at::Tensor, at::Tensor> gelu_backward_column_sum(const at::Tensor& dh, const at::Tensor& pre,
                                                           const at::Tensor& bias) {
  check_matrix("gelu_backward_column_sum", dh);
  check_matrix("gelu_backward_column_sum", pre);
  if (dh.sizes() != pre.sizes())
    throw std::invalid_argument("gelu_backward_column_sum: dh " + c10::str(dh.sizes()) +
                                " and pre " + c10::str(pre.sizes()) + " differ");
  if (bias.defined() && (bias.dim() != 1 || bias.size(0) != pre.size(1) || bias.device() != pre.device()))
    throw std::invalid_argument("gelu_backward_column_sum: bias must be (" + std::to_string(pre.size(1)) +
                                ") on pre's device, got " + c10::str(bias.sizes()));
#ifdef GPTBENCH_WITH_CUDA
  const bool bias_ok = !bias.defined() || (bias.scalar_type() == at::kBFloat16 && bias.is_contiguous() &&
                                           reinterpret_cast<uintptr_t>(bias.data_ptr()) % 16 == 0);
  const bool kernel = column_sum_uses_kernel(dh) && column_sum_uses_kernel(pre) &&
                      dh.scalar_type() == at::kBFloat16 && pre.scalar_type() == at::kBFloat16 &&
                      dh.device() == pre.device() && dh.numel() > 0 && bias_ok;
  if (kernel) {
    const c10::cuda::CUDAGuard guard(dh.device());
    const SumLaunch l = sum_launch(dh);
    auto d_pre = at::empty_like(dh);
    launch_gelu_backward_column_sum(dh.data_ptr(), pre.data_ptr(), bias.defined() ? bias.data_ptr() : nullptr,
                                    d_pre.data_ptr(), dh.size(0), dh.size(1), l.partial.data_ptr<float>(),
                                    l.out.data_ptr<float>(), l.stream);
    return {d_pre, l.out};
  }
#endif
  const at::Tensor x = bias.defined() ? pre + bias.to(pre.scalar_type()) : pre;
  auto d_pre = at::gelu_backward(dh, x, "tanh");
  return {d_pre, d_pre.sum(0, /*keepdim=*/false, at::kFloat)};
}

}  // namespace gptbench
