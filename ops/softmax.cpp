#include "ops/softmax.h"

#include <stdexcept>
#include <string>

#ifdef GPTBENCH_WITH_CUDA
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>

#include "ops/device/elem_type_torch.h"
#include "ops/softmax_kernels.h"
#endif

namespace gptbench {

at::Tensor softmax_naive(const at::Tensor& x) {
  auto m = x.amax(-1, /*keepdim=*/true);  // (..., 1)
  auto e = (x - m).exp();                 // (..., cols)
  auto s = e.sum(-1, /*keepdim=*/true);   // (..., 1)
  return e / s;
}

at::Tensor softmax_torch(const at::Tensor& x) { return at::softmax(x, -1); }

at::Tensor softmax_backward_naive(const at::Tensor& y, const at::Tensor& dy) {
  auto dot = (y * dy).sum(-1, /*keepdim=*/true);  // (..., 1)
  return y * (dy - dot);
}

at::Tensor softmax_backward_torch(const at::Tensor& y, const at::Tensor& dy) {
  return at::_softmax_backward_data(dy, y, -1, y.scalar_type());
}

at::Tensor softmax_reference(const at::Tensor& x) {
  auto xd = x.detach().to(at::kCPU, at::kDouble);
  auto m = xd.amax(-1, true);
  auto e = (xd - m).exp();  // a row of -inf: exp(-inf + inf) = NaN, as torch::softmax
  return e / e.sum(-1, true);
}

at::Tensor softmax_backward_reference(const at::Tensor& y, const at::Tensor& dy) {
  auto yd = y.detach().to(at::kCPU, at::kDouble);
  auto gd = dy.detach().to(at::kCPU, at::kDouble);
  return yd * (gd - (yd * gd).sum(-1, true));
}

#ifdef GPTBENCH_WITH_CUDA
namespace {

ElemType kernel_dtype(const at::Tensor& t, const char* what) {
  if (!t.is_cuda())
    throw std::invalid_argument(std::string(what) + ": the fused softmax needs a CUDA tensor");
  if (t.dim() < 1) throw std::invalid_argument(std::string(what) + ": needs at least one dim");
  return check_elem_type(t.scalar_type(), {ElemType::kF32, ElemType::kBF16}, what);
}

void check_out(const at::Tensor& in, const at::Tensor& out, const char* what) {
  if (!out.is_contiguous() || out.sizes() != in.sizes() ||
      out.scalar_type() != in.scalar_type() || out.device() != in.device())
    throw std::invalid_argument(std::string(what) +
                                ": the output must be contiguous, of the input's shape, dtype "
                                "and device");
}

}  // namespace

bool softmax_fused_available() { return true; }

void softmax_fused_out(const at::Tensor& x, at::Tensor& y) {
  const ElemType dt = kernel_dtype(x, "softmax_fused");
  check_out(x, y, "softmax_fused");
  c10::cuda::CUDAGuard guard(x.device());
  const at::Tensor xc = x.contiguous();
  const int64_t cols = xc.size(-1);
  const int64_t rows = cols == 0 ? 0 : xc.numel() / cols;
  launch_softmax_forward(xc.data_ptr(), y.data_ptr(), rows, cols, dt,
                         at::cuda::getCurrentCUDAStream().stream());
}

at::Tensor softmax_fused(const at::Tensor& x) {
  auto y = at::empty(x.sizes(), x.options().memory_format(at::MemoryFormat::Contiguous));
  softmax_fused_out(x, y);
  return y;
}

void softmax_backward_fused_out(const at::Tensor& y, const at::Tensor& dy, at::Tensor& dx) {
  const ElemType dt = kernel_dtype(y, "softmax_backward_fused");
  check_out(y, dx, "softmax_backward_fused");
  if (dy.sizes() != y.sizes() || dy.scalar_type() != y.scalar_type() || dy.device() != y.device())
    throw std::invalid_argument("softmax_backward_fused: dy must match y in shape, dtype, device");
  c10::cuda::CUDAGuard guard(y.device());
  const at::Tensor yc = y.contiguous(), gc = dy.contiguous();
  const int64_t cols = yc.size(-1);
  const int64_t rows = cols == 0 ? 0 : yc.numel() / cols;
  launch_softmax_backward(yc.data_ptr(), gc.data_ptr(), dx.data_ptr(), rows, cols, dt,
                          at::cuda::getCurrentCUDAStream().stream());
}

at::Tensor softmax_backward_fused(const at::Tensor& y, const at::Tensor& dy) {
  auto dx = at::empty(y.sizes(), y.options().memory_format(at::MemoryFormat::Contiguous));
  softmax_backward_fused_out(y, dy, dx);
  return dx;
}

#else  // no CUDA kernels in this build

bool softmax_fused_available() { return false; }

void softmax_fused_out(const at::Tensor&, at::Tensor&) {
  throw std::runtime_error("softmax_fused: this build has no CUDA kernels");
}
at::Tensor softmax_fused(const at::Tensor&) {
  throw std::runtime_error("softmax_fused: this build has no CUDA kernels");
}
void softmax_backward_fused_out(const at::Tensor&, const at::Tensor&, at::Tensor&) {
  throw std::runtime_error("softmax_backward_fused: this build has no CUDA kernels");
}
at::Tensor softmax_backward_fused(const at::Tensor&, const at::Tensor&) {
  throw std::runtime_error("softmax_backward_fused: this build has no CUDA kernels");
}

#endif

}  // namespace gptbench
