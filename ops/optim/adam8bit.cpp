#include "ops/optim/adam8bit.h"

#include <ATen/Parallel.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <stdexcept>
#include <string>

#include "ops/optim/quant_map.h"

#ifdef GPTBENCH_WITH_CUDA
#include <ATen/cuda/CUDAContext.h>

#include "ops/optim/adam8bit_kernels.h"
#endif

namespace gptbench {
namespace {

using optim::kMinQuantNumel;
using optim::kQuantBlock;

at::Tensor code_tensor(bool is_signed, c10::Device device) {
  const auto& m = is_signed ? optim::signed_dynamic_map() : optim::unsigned_dynamic_map();
  return at::tensor(at::ArrayRef<float>(m.code.data(), 256)).to(device);
}
// The 255 finite midpoints (bucketize boundaries).
at::Tensor mid_tensor(bool is_signed, c10::Device device) {
  const auto& m = is_signed ? optim::signed_dynamic_map() : optim::unsigned_dynamic_map();
  return at::tensor(at::ArrayRef<float>(m.mid.data(), 255)).to(device);
}

int64_t num_blocks(int64_t n) { return (n + kQuantBlock - 1) / kQuantBlock; }

// absmax of each block, repeated over the block's elements: (n).
at::Tensor per_element(const at::Tensor& absmax, int64_t n) {
  return absmax.repeat_interleave(kQuantBlock).narrow(0, 0, n);
}

// Codes of x / absmax (0 where absmax is 0): the count of midpoints below the value. On the
// CPU a loop over quantize_nearest (bucketize is ~10× slower there); elsewhere at::bucketize.
// Both count the same strict comparisons against the same fp32 midpoints.
at::Tensor quantize_with(const at::Tensor& x, const at::Tensor& absmax, bool is_signed,
                         const at::Tensor& mids) {
  const auto a = per_element(absmax, x.numel());
  const auto normed = at::where(a > 0, x / a, at::zeros_like(x)).contiguous();
  if (normed.device().is_cpu()) {
    const auto& map = is_signed ? optim::signed_dynamic_map() : optim::unsigned_dynamic_map();
    auto out = at::empty({normed.numel()}, normed.options().dtype(at::kByte));
    const float* in = normed.data_ptr<float>();
    uint8_t* codes = out.data_ptr<uint8_t>();
    at::parallel_for(0, normed.numel(), 1 << 16, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) codes[i] = optim::quantize_nearest(map, in[i]);
    });
    return out;
  }
  return at::bucketize(normed, mids, /*out_int32=*/false, /*right=*/false).to(at::kByte);
}

at::Tensor block_absmax(const at::Tensor& x_abs) {
  const int64_t n = x_abs.numel(), nb = num_blocks(n);
  return at::constant_pad_nd(x_abs, {0, nb * kQuantBlock - n}, 0).view({nb, kQuantBlock}).amax(1);
}

}  // namespace

std::pair<at::Tensor, at::Tensor> quantize_blockwise(const at::Tensor& x, bool is_signed) {
  const auto flat = x.reshape({-1}).to(at::kFloat);
  const auto absmax = block_absmax(is_signed ? flat.abs() : flat);
  return {quantize_with(flat, absmax, is_signed, mid_tensor(is_signed, flat.device())), absmax};
}

at::Tensor dequantize_blockwise(const at::Tensor& codes, const at::Tensor& absmax,
                                bool is_signed) {
  const auto code = code_tensor(is_signed, codes.device());
  return code.index({codes.to(at::kLong)}) * per_element(absmax, codes.numel());
}

Adam8bit::Adam8bit(std::vector<at::Tensor> params, Adam8bitOptions options, OptimBackend backend)
    : OptimizerWith("adam8bit", std::move(params), options, backend) {
  const auto device = params_[0].device();
  code_m_ = code_tensor(true, device);
  mid_m_ = mid_tensor(true, device);
  code_v_ = code_tensor(false, device);
  mid_v_ = mid_tensor(false, device);
#ifdef GPTBENCH_WITH_CUDA
  {
    const auto& table = optim::quant_kernel_table();
    table_ = at::from_blob(const_cast<uint32_t*>(table.data()),
                           {static_cast<int64_t>(table.size())}, at::kInt)
                 .to(device, /*non_blocking=*/false, /*copy=*/true);
  }
#endif
  // The code of 0: with absmax 0 every code dequantises to 0; start from the zero codes anyway.
  const auto zero_m = optim::quantize_nearest(optim::signed_dynamic_map(), 0.f);
  const auto zero_v = optim::quantize_nearest(optim::unsigned_dynamic_map(), 0.f);
  for (const auto& p : params_) {
    Adam8bitState st;
    const int64_t n = p.numel();
    st.quantized = n >= kMinQuantNumel;
    const auto f32 = p.options().dtype(at::kFloat);
    if (st.quantized) {
      st.m = at::full({n}, static_cast<int64_t>(zero_m), p.options().dtype(at::kByte));
      st.v = at::full({n}, static_cast<int64_t>(zero_v), p.options().dtype(at::kByte));
      st.m_absmax = at::zeros({num_blocks(n)}, f32);
      st.v_absmax = at::zeros({num_blocks(n)}, f32);
    } else {
      st.m = at::zeros({n}, f32);
      st.v = at::zeros({n}, f32);
    }
    state_.push_back(std::move(st));
  }
}

int64_t Adam8bit::state_bytes() const {
  int64_t b = 0;
  for (const auto& st : state_) {
    b += st.m.nbytes() + st.v.nbytes();
    if (st.quantized) b += st.m_absmax.nbytes() + st.v_absmax.nbytes();
  }
  return b;
}

at::Tensor Adam8bit::exp_avg(size_t i) const {
  const auto& st = state_[i];
  const auto flat = st.quantized ? dequantize_blockwise(st.m, st.m_absmax, true) : st.m;
  return flat.view(params_[i].sizes());
}
at::Tensor Adam8bit::exp_avg_sq(size_t i) const {
  const auto& st = state_[i];
  const auto flat = st.quantized ? dequantize_blockwise(st.v, st.v_absmax, false) : st.v;
  return flat.view(params_[i].sizes());
}

void Adam8bit::step_reference(const std::vector<at::Tensor>& grads) {
  const double t = static_cast<double>(step_);
  const double bc1 = 1 - std::pow(opt_.beta1, t), bc2 = 1 - std::pow(opt_.beta2, t);
  for (size_t i = 0; i < params_.size(); ++i) {
    auto p = params_[i].view({-1});
    const auto g = grads[i].reshape({-1}).to(at::kFloat);
    auto& st = state_[i];
    at::Tensor m, v;  // (n) fp32 moments of the previous step
    if (st.quantized) {
      m = code_m_.index({st.m.to(at::kLong)}) * per_element(st.m_absmax, p.numel());
      v = code_v_.index({st.v.to(at::kLong)}) * per_element(st.v_absmax, p.numel());
    } else {
      m = st.m;
      v = st.v;
    }
    // Separate rounded products and sums (the kernel's order, without FMA).
    const auto m1 = at::add(at::mul(m, opt_.beta1), at::mul(g, 1 - opt_.beta1));
    const auto v1 = at::add(at::mul(v, opt_.beta2), at::mul(at::mul(g, g), 1 - opt_.beta2));
    if (opt_.weight_decay != 0) p.mul_(1 - opt_.lr * opt_.weight_decay);
    const auto denom = (v1.sqrt() / std::sqrt(bc2)).add_(opt_.eps);
    p.addcdiv_(m1, denom, -opt_.lr / bc1);
    if (st.quantized) {
      st.m_absmax.copy_(block_absmax(m1.abs()));
      st.v_absmax.copy_(block_absmax(v1));
      st.m.copy_(quantize_with(m1, st.m_absmax, true, mid_m_));
      st.v.copy_(quantize_with(v1, st.v_absmax, false, mid_v_));
    } else {
      st.m.copy_(m1);
      st.v.copy_(v1);
    }
  }
}

void Adam8bit::step_fused(const std::vector<at::Tensor>& grads) {
#ifdef GPTBENCH_WITH_CUDA
  using namespace optim;
  const ElemType gt = grad_type_of(grads);
  tables_.refresh_chunked<Adam8bitTensor>(params_, grads, [&](auto& t, size_t i) {
    const auto& st = state_[i];
    t.m = st.m.data_ptr();
    t.v = st.v.data_ptr();
    t.m_absmax = st.quantized ? st.m_absmax.data_ptr<float>() : nullptr;
    t.v_absmax = st.quantized ? st.v_absmax.data_ptr<float>() : nullptr;
    t.quantized = st.quantized;
    t.vec = vec_aligned(gt, t.g, {t.p}) && all_aligned({t.m, t.v}, st.quantized ? 4 : 16);
  });
  adam8bit_step_cuda(tables_.rows<Adam8bitTensor>(), tables_.items(), tables_.num_items(), gt,
                     adam_scalars(opt_.lr, opt_.beta1, opt_.beta2, opt_.eps, opt_.weight_decay,
                                  step_),
                     reinterpret_cast<const uint32_t*>(table_.data_ptr<int32_t>()),
                     at::cuda::getCurrentCUDAStream().stream());
#else
  no_fused_kernels();
#endif
}

}  // namespace gptbench
