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

at::Tensor column_sum(const at::Tensor& x) {
  if (!x.defined() || x.dim() != 2)
    throw std::invalid_argument("column_sum: x must be a 2-d (rows, cols) tensor, got " +
                                (x.defined() ? std::to_string(x.dim()) + "-d" : std::string("none")));
#ifdef GPTBENCH_WITH_CUDA
  if (column_sum_uses_kernel(x) && x.numel() > 0) {
    const c10::cuda::CUDAGuard guard(x.device());
    const int64_t rows = x.size(0), cols = x.size(1);
    const auto f32 = x.options().dtype(at::kFloat);
    auto out = at::empty({cols}, f32);
    auto partial = at::empty({column_sum_parts(rows, cols) * cols}, f32);
    const ElemType t = check_elem_type(x.scalar_type(), {ElemType::kF32, ElemType::kBF16}, "column_sum");
    launch_column_sum(x.data_ptr(), t, rows, cols, partial.data_ptr<float>(), out.data_ptr<float>(),
                      at::cuda::getCurrentCUDAStream(x.device().index()).stream());
    return out;
  }
#endif
  return x.sum(0, /*keepdim=*/false, at::kFloat);
}

}  // namespace gptbench
