#include "my_softmax.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

#ifdef CUSTOM_KERNEL_WITH_CUDA
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>

#include "my_softmax_kernel.h"
#endif

at::Tensor my_softmax(const at::Tensor& x, bool normalise) {
  if (x.dim() != 2 || (x.scalar_type() != at::kFloat && x.scalar_type() != at::kBFloat16))
    throw std::invalid_argument("my_softmax: a 2-d fp32 or bf16 tensor expected");
  const int64_t rows = x.size(0), cols = x.size(1);
  if (x.is_cuda()) {
#ifdef CUSTOM_KERNEL_WITH_CUDA
    const c10::cuda::CUDAGuard guard(x.device());
    const at::Tensor in = x.contiguous();
    at::Tensor y = at::empty_like(in);  // (rows, cols)
    my_softmax_launch(in.data_ptr(), y.data_ptr(), rows, cols, x.scalar_type() == at::kBFloat16,
                      normalise, at::cuda::getCurrentCUDAStream());
    return y;
#else
    throw std::runtime_error("my_softmax: built without its CUDA kernel");
#endif
  }
  // The CPU fallback: max-shifted exponentials over their sum, row by row, in fp32.
  const at::Tensor in = x.to(at::kFloat).contiguous();
  at::Tensor y = at::empty_like(in);  // (rows, cols) fp32
  const float* src = in.data_ptr<float>();
  float* dst = y.data_ptr<float>();
  for (int64_t r = 0; r < rows; ++r) {
    const float* a = src + r * cols;
    float* b = dst + r * cols;
    const float m = *std::max_element(a, a + cols);
    float sum = 0;
    for (int64_t c = 0; c < cols; ++c) sum += b[c] = std::exp(a[c] - m);
    if (normalise)
      for (int64_t c = 0; c < cols; ++c) b[c] /= sum;
  }
  return y.to(x.scalar_type());
}
