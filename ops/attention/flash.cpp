#include "ops/attention/flash.h"

#include <c10/util/Exception.h>
#include <torch/csrc/autograd/custom_function.h>

#include <cmath>
#include <cstdint>
#include <limits>

#include "ops/attention/flash_tiles.h"
#include "ops/device/elem_type_torch.h"

#ifdef GPTBENCH_WITH_CUDA
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>

#include "ops/attention/flash_host.h"
#include "ops/attention/flash_kernels.h"
#endif

namespace gptbench {
namespace {

// The element type of q, k and v when the kernels take it (bf16 or fp16).
std::optional<ElemType> flash_dtype(at::ScalarType t) {
  return elem_type_in(t, {ElemType::kBF16, ElemType::kF16});
}

// Shape, dtype and head-dim checks shared by forward and backward, then the device check.
void check_qkv(const char* fn, const at::Tensor& q, const at::Tensor& k, const at::Tensor& v) {
  TORCH_CHECK(q.defined() && k.defined() && v.defined(), fn, ": q, k and v must be defined");
  TORCH_CHECK(q.dim() == 4, fn, ": q must be 4-D (B, H, L, d), got ", q.dim(), "-D ", q.sizes());
  TORCH_CHECK(k.sizes() == q.sizes() && v.sizes() == q.sizes(), fn,
              ": q, k and v must have the same shape (B, H, L, d); got q ", q.sizes(), ", k ",
              k.sizes(), ", v ", v.sizes());
  TORCH_CHECK(flash_dtype(q.scalar_type()).has_value(), fn, ": bf16 or fp16 inputs only, got ",
              q.scalar_type());
  TORCH_CHECK(k.scalar_type() == q.scalar_type() && v.scalar_type() == q.scalar_type(), fn,
              ": q, k and v must share a dtype; got ", q.scalar_type(), ", ", k.scalar_type(),
              ", ", v.scalar_type());
  TORCH_CHECK(flash_attention_supports_head_dim(q.size(3)), fn, ": head dim ", q.size(3),
              " unsupported (supported: 16, 32, 64, 128)");
  TORCH_CHECK(q.size(0) <= std::numeric_limits<int>::max() &&
                  q.size(1) <= std::numeric_limits<int>::max() &&
                  q.size(2) <= std::numeric_limits<int>::max(),
              fn, ": B, H and L must each fit in 32 bits, got ", q.sizes());
  TORCH_CHECK(k.device() == q.device() && v.device() == q.device(), fn,
              ": q, k and v must be on one device; got ", q.device(), ", ", k.device(), ", ",
              v.device());
  TORCH_CHECK(q.is_cuda(), fn, ": needs CUDA tensors, got ", q.device(),
              " (the fused kernels have no CPU path; on the CPU use "
              "at::scaled_dot_product_attention or flash_attention_reference)");
#ifndef GPTBENCH_WITH_CUDA
  TORCH_CHECK(false, fn, ": this build has no CUDA kernels (GPTBENCH_WITH_CUDA is off)");
#endif
}

// A companion tensor (o, dout) of q's shape, dtype and device.
void check_like(const char* fn, const char* name, const at::Tensor& t, const at::Tensor& q) {
  TORCH_CHECK(t.defined(), fn, ": ", name, " must be defined");
  TORCH_CHECK(t.sizes() == q.sizes() && t.scalar_type() == q.scalar_type() &&
                  t.device() == q.device(),
              fn, ": ", name, " must match q in shape, dtype and device; got ", t.sizes(), " ",
              t.scalar_type(), " on ", t.device(), ", q ", q.sizes(), " ", q.scalar_type(),
              " on ", q.device());
}

// An output: contiguous, 16-byte aligned, of the given shape, dtype and q's device.
void check_out(const char* fn, const char* name, const at::Tensor& t, at::IntArrayRef sizes,
               at::ScalarType dtype, const at::Tensor& q) {
  TORCH_CHECK(t.defined() && t.sizes() == sizes && t.scalar_type() == dtype &&
                  t.device() == q.device() && t.is_contiguous() &&
                  reinterpret_cast<uintptr_t>(t.data_ptr()) % 16 == 0,
              fn, ": ", name, " must be a contiguous, 16-byte aligned ", dtype, " tensor of shape ",
              sizes, " on ", q.device());
}

#ifdef GPTBENCH_WITH_CUDA
// The view the kernels can read in place (see flash_kernels.h), else a contiguous copy.
at::Tensor kernel_layout(const at::Tensor& t) {
  const int64_t L = t.size(2), d = t.size(3);
  auto fits = [&](const at::Tensor& x) {
    return flash_reads_in_place(x) &&
           flash_row_offsets_fit(L, x.stride(2), d);  // the kernels' 32-bit row offsets
  };
  if (fits(t)) return t;
  at::Tensor c = t.clone(at::MemoryFormat::Contiguous);
  TORCH_CHECK(fits(c), "flash attention: L = ", L, " too long for 32-bit row offsets");
  return c;
}

FlashStrides strides_of(const at::Tensor& t) { return {t.stride(0), t.stride(1), t.stride(2)}; }


// The parameters forward and backward share, from q, k and v in their kernel layouts: pointers
// and strides, the shape (B, H, L, d), causal, the softmax scale 1/sqrt(d) and the dtype.
template <typename Params>
Params qkv_params(const at::Tensor& qk, const at::Tensor& kk, const at::Tensor& vk, bool causal) {
  Params p{};
  p.q = qk.data_ptr();
  p.k = kk.data_ptr();
  p.v = vk.data_ptr();
  p.q_st = strides_of(qk);
  p.k_st = strides_of(kk);
  p.v_st = strides_of(vk);
  p.B = static_cast<int>(qk.size(0));
  p.H = static_cast<int>(qk.size(1));
  p.L = static_cast<int>(qk.size(2));
  p.d = static_cast<int>(qk.size(3));
  p.causal = causal;
  p.scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(p.d)));
  p.dtype = flash_dtype(qk.scalar_type()).value();
  return p;
}

// Why the Hopper kernel cannot run p (forward or backward) on `device`, or "".
std::string sm90_reason(const FlashFwdParams& p, c10::Device device) {
  const cudaDeviceProp* prop = at::cuda::getDeviceProperties(device.index());
  return flash_forward_sm90_unsupported(p, prop->major, prop->minor);
}
std::string sm90_reason(const FlashBwdParams& p, c10::Device device) {
  const cudaDeviceProp* prop = at::cuda::getDeviceProperties(device.index());
  return flash_backward_sm90_unsupported(p, prop->major, prop->minor);
}

// Whether `kernel` runs the Hopper kernel on p: kPortable never, kAuto where it can, kSm90
// always (a c10::Error naming why where it cannot).
template <typename Params>
bool runs_sm90(const char* fn, FlashKernel kernel, const Params& p, c10::Device device) {
  if (kernel == FlashKernel::kPortable) return false;
  const std::string why = sm90_reason(p, device);
  TORCH_CHECK(kernel == FlashKernel::kAuto || why.empty(), fn,
              ": the Hopper (sm90) kernel cannot run this problem: ", why);
  return why.empty();
}
#endif

}  // namespace

std::string flash_sm90_unsupported(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v) {
  check_qkv("flash_sm90_unsupported", q, k, v);
#ifdef GPTBENCH_WITH_CUDA
  c10::cuda::CUDAGuard guard(q.device());
  return sm90_reason(qkv_params<FlashFwdParams>(kernel_layout(q), kernel_layout(k),
                                                kernel_layout(v), false),
                     q.device());
#else
  return "this build has no CUDA kernels";
#endif
}

bool flash_attention_supports_head_dim(int64_t d) {
  return d == 16 || d == 32 || d == 64 || d == 128;
}

#ifdef GPTBENCH_WITH_CUDA
bool flash_attention_available() { return true; }
#else
bool flash_attention_available() { return false; }
#endif

void flash_attention_forward_out(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                                 bool causal, at::Tensor& o, at::Tensor& lse,
                                 FlashKernel kernel) {
  constexpr const char* fn = "flash_attention_forward";
  check_qkv(fn, q, k, v);
  check_out(fn, "o", o, q.sizes(), q.scalar_type(), q);
  check_out(fn, "lse", lse, q.sizes().slice(0, 3), at::kFloat, q);
#ifdef GPTBENCH_WITH_CUDA
  if (q.numel() == 0) return;
  c10::cuda::CUDAGuard guard(q.device());
  const at::Tensor qk = kernel_layout(q), kk = kernel_layout(k), vk = kernel_layout(v);
  auto p = qkv_params<FlashFwdParams>(qk, kk, vk, causal);
  p.o = o.data_ptr();
  p.lse = lse.data_ptr<float>();
  const cudaStream_t stream = at::cuda::getCurrentCUDAStream(q.device().index()).stream();
  if (!runs_sm90(fn, kernel, p, q.device())) return launch_flash_forward(p, stream);
  const at::Tensor counter = flash_zeroed_counter(q, stream);
  p.tile_counter = counter.data_ptr<int>();
  launch_flash_forward_sm90(p, stream);
#endif
}

FlashOutput flash_attention_forward(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                                    bool causal, FlashKernel kernel) {
  check_qkv("flash_attention_forward", q, k, v);
  FlashOutput out;
  out.o = at::empty(q.sizes(), q.options().memory_format(at::MemoryFormat::Contiguous));
  out.lse = at::empty(q.sizes().slice(0, 3), q.options().dtype(at::kFloat));
  flash_attention_forward_out(q, k, v, causal, out.o, out.lse, kernel);
  return out;
}

void flash_attention_backward_out(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                                  const at::Tensor& o, const at::Tensor& lse,
                                  const at::Tensor& dout, bool causal, at::Tensor& dq,
                                  at::Tensor& dk, at::Tensor& dv, FlashKernel kernel) {
  constexpr const char* fn = "flash_attention_backward";
  check_qkv(fn, q, k, v);
  check_like(fn, "o", o, q);
  check_like(fn, "dout", dout, q);
  TORCH_CHECK(lse.defined() && lse.sizes() == q.sizes().slice(0, 3) &&
                  lse.scalar_type() == at::kFloat && lse.device() == q.device(),
              fn, ": lse must be the forward's (B, H, L) fp32 tensor on q's device");
  check_out(fn, "dq", dq, q.sizes(), q.scalar_type(), q);
  check_out(fn, "dk", dk, q.sizes(), q.scalar_type(), q);
  check_out(fn, "dv", dv, q.sizes(), q.scalar_type(), q);
#ifdef GPTBENCH_WITH_CUDA
  if (q.numel() == 0) return;
  c10::cuda::CUDAGuard guard(q.device());
  const at::Tensor qk = kernel_layout(q), kk = kernel_layout(k), vk = kernel_layout(v);
  const at::Tensor ok = kernel_layout(o), gk = kernel_layout(dout);
  const at::Tensor lsec = lse.contiguous();
  auto p = qkv_params<FlashBwdParams>(qk, kk, vk, causal);
  p.o = ok.data_ptr();
  p.dout = gk.data_ptr();
  p.lse = lsec.data_ptr<float>();
  p.dq = dq.data_ptr();
  p.dk = dk.data_ptr();
  p.dv = dv.data_ptr();
  p.o_st = strides_of(ok);
  p.do_st = strides_of(gk);
  const cudaStream_t stream = at::cuda::getCurrentCUDAStream(q.device().index()).stream();
  // One fp32 workspace (one allocation: the host's share of a short call is as long as the
  // GPU's): dq_accum (B, H, L, d) (zeroed by the launcher), then dsum (B, H, L) for the portable
  // kernel or rows_pad (2 · B · H · rows_pad(L)) for the Hopper one.
  const bool sm90 = runs_sm90(fn, kernel, p, q.device());
  const int64_t bh = q.size(0) * q.size(1), accum = q.numel();
  const int64_t rows = sm90 ? 2 * bh * flash_sm90_rows_pad(p.L) : bh * p.L;
  const at::Tensor work = at::empty({accum + rows}, q.options().dtype(at::kFloat));
  p.dq_accum = work.data_ptr<float>();
  if (!sm90) {
    p.dsum = p.dq_accum + accum;
    return launch_flash_backward(p, stream);
  }
  p.rows_pad = p.dq_accum + accum;  // accum is a multiple of d (16 floats at least): aligned
  launch_flash_backward_sm90(p, stream);
#endif
}

FlashGrads flash_attention_backward(const at::Tensor& q, const at::Tensor& k,
                                    const at::Tensor& v, const at::Tensor& o,
                                    const at::Tensor& lse, const at::Tensor& dout, bool causal,
                                    FlashKernel kernel) {
  check_qkv("flash_attention_backward", q, k, v);
  const auto opts = q.options().memory_format(at::MemoryFormat::Contiguous);
  FlashGrads g{at::empty(q.sizes(), opts), at::empty(q.sizes(), opts), at::empty(q.sizes(), opts)};
  flash_attention_backward_out(q, k, v, o, lse, dout, causal, g.dq, g.dk, g.dv, kernel);
  return g;
}

namespace {

class FlashAttentionFunction : public torch::autograd::Function<FlashAttentionFunction> {
 public:
  static at::Tensor forward(torch::autograd::AutogradContext* ctx, const at::Tensor& q,
                            const at::Tensor& k, const at::Tensor& v, bool causal,
                            FlashKernel kernel) {
    FlashOutput out = flash_attention_forward(q, k, v, causal, kernel);
    ctx->save_for_backward({q, k, v, out.o, out.lse});
    ctx->saved_data["causal"] = causal;
    ctx->saved_data["kernel"] = static_cast<int64_t>(kernel);
    return out.o;
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    const auto saved = ctx->get_saved_variables();  // q, k, v, o, lse
    const bool causal = ctx->saved_data["causal"].toBool();
    if (!grads[0].defined())
      return {at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor()};
    const auto kernel = static_cast<FlashKernel>(ctx->saved_data["kernel"].toInt());
    FlashGrads g = flash_attention_backward(saved[0], saved[1], saved[2], saved[3], saved[4],
                                            grads[0], causal, kernel);
    return {g.dq, g.dk, g.dv, at::Tensor(), at::Tensor()};
  }
};

}  // namespace

at::Tensor flash_attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                           bool causal, FlashKernel kernel) {
  check_qkv("flash_attention", q, k, v);  // report bad input before autograd wraps it
  return FlashAttentionFunction::apply(q, k, v, causal, kernel);
}

// ---- References ---------------------------------------------------------------------------

namespace {

struct Dbl {
  at::Tensor q, k, v;
  int64_t L, d;
  double scale;
};

Dbl to_double(const char* fn, const at::Tensor& q, const at::Tensor& k, const at::Tensor& v) {
  TORCH_CHECK(q.dim() == 4 && k.sizes() == q.sizes() && v.sizes() == q.sizes(), fn,
              ": q, k, v must share one (B, H, L, d) shape");
  Dbl r;
  r.q = q.detach().to(at::kCPU, at::kDouble);
  r.k = k.detach().to(at::kCPU, at::kDouble);
  r.v = v.detach().to(at::kCPU, at::kDouble);
  r.L = q.size(2);
  r.d = q.size(3);
  r.scale = 1.0 / std::sqrt(static_cast<double>(r.d));
  return r;
}

// Scaled scores (B, H, L, L) with masked entries −inf.
at::Tensor masked_scores(const Dbl& x, bool causal) {
  auto s = at::matmul(x.q, x.k.transpose(-2, -1)) * x.scale;
  if (causal) {
    auto mask = at::ones({x.L, x.L}, at::TensorOptions().dtype(at::kBool)).triu(1);
    s = s.masked_fill(mask, -std::numeric_limits<double>::infinity());
  }
  return s;
}

// (rows, cols) bool mask of a tile from flash_masked.
at::Tensor tile_mask(int m0, int n0, int rows, int cols, int L, bool causal) {
  auto mask = at::empty({rows, cols}, at::TensorOptions().dtype(at::kBool));
  auto a = mask.accessor<bool, 2>();
  for (int i = 0; i < rows; ++i)
    for (int j = 0; j < cols; ++j) a[i][j] = flash_masked(m0 + i, n0 + j, L, causal);
  return mask;
}

// t (B, H, L, ...) zero-padded along dim 2 to `rows`.
at::Tensor pad_rows(const at::Tensor& t, int64_t rows) {
  auto sizes = t.sizes().vec();
  sizes[2] = rows;
  auto out = at::zeros(sizes, t.options());
  out.narrow(2, 0, t.size(2)).copy_(t);
  return out;
}

}  // namespace

FlashOutput flash_attention_reference(const at::Tensor& q, const at::Tensor& k,
                                      const at::Tensor& v, bool causal) {
  const Dbl x = to_double("flash_attention_reference", q, k, v);
  const auto s = masked_scores(x, causal);   // (B, H, L, L)
  const auto lse = at::logsumexp(s, -1);     // (B, H, L)
  const auto p = (s - lse.unsqueeze(-1)).exp();
  return {at::matmul(p, x.v), lse};
}

FlashGrads flash_attention_backward_reference(const at::Tensor& q, const at::Tensor& k,
                                              const at::Tensor& v, const at::Tensor& dout,
                                              bool causal) {
  const Dbl x = to_double("flash_attention_backward_reference", q, k, v);
  const auto g = dout.detach().to(at::kCPU, at::kDouble);         // (B, H, L, d)
  const auto s = masked_scores(x, causal);
  const auto p = (s - at::logsumexp(s, -1, /*keepdim=*/true)).exp();  // (B, H, L, L)
  const auto o = at::matmul(p, x.v);
  const auto dv = at::matmul(p.transpose(-2, -1), g);
  const auto dp = at::matmul(g, x.v.transpose(-2, -1));
  const auto ds = p * (dp - (g * o).sum(-1, /*keepdim=*/true));
  return {at::matmul(ds, x.k) * x.scale, at::matmul(ds.transpose(-2, -1), x.q) * x.scale, dv};
}

FlashOutput flash_attention_tiled_cpu(const at::Tensor& q, const at::Tensor& k,
                                      const at::Tensor& v, bool causal, int block_m,
                                      int block_n) {
  const Dbl x = to_double("flash_attention_tiled_cpu", q, k, v);
  TORCH_CHECK(block_m > 0 && block_n > 0, "flash_attention_tiled_cpu: tiles must be positive");
  const int L = static_cast<int>(x.L);
  const double inf = std::numeric_limits<double>::infinity();
  const int nm = flash_num_blocks(L, block_m), nn = flash_num_blocks(L, block_n);
  const auto qp = pad_rows(x.q, int64_t{nm} * block_m);  // zero-filled like the kernel's loads
  const auto kp = pad_rows(x.k, int64_t{nn} * block_n);
  const auto vp = pad_rows(x.v, int64_t{nn} * block_n);
  auto o = at::zeros_like(qp);
  auto lse = at::zeros(qp.sizes().slice(0, 3), qp.options());
  for (int mb = 0; mb < nm; ++mb) {
    const int m0 = mb * block_m;
    const auto qt = qp.narrow(2, m0, block_m);                           // (B, H, bm, d)
    auto m = at::full(qt.sizes().slice(0, 3), -inf, qt.options());       // running raw max
    auto l = at::zeros(qt.sizes().slice(0, 3), qt.options());            // running sum
    auto acc = at::zeros_like(qt);                                       // (B, H, bm, d)
    const int n_blocks = flash_fwd_n_blocks(mb, L, causal, block_m, block_n);
    for (int nb = 0; nb < n_blocks; ++nb) {
      const int n0 = nb * block_n;
      auto s = at::matmul(qt, kp.narrow(2, n0, block_n).transpose(-2, -1));  // raw scores
      if (flash_tile_needs_mask(m0, n0, block_m, block_n, L, causal))
        s = s.masked_fill(tile_mask(m0, n0, block_m, block_n, L, causal), -inf);
      const auto mx = at::maximum(m, s.amax(-1));
      const auto mx_scaled = at::where(mx == -inf, at::zeros_like(mx), mx * x.scale);
      const auto alpha = (m * x.scale - mx_scaled).exp();  // 0 while the old max is −inf
      const auto p = (s * x.scale - mx_scaled.unsqueeze(-1)).exp();
      l = l * alpha + p.sum(-1);
      acc = acc * alpha.unsqueeze(-1) + at::matmul(p, vp.narrow(2, n0, block_n));
      m = mx;
    }
    const auto safe_l = at::where(l > 0, l, at::ones_like(l));
    o.narrow(2, m0, block_m).copy_(at::where(l.unsqueeze(-1) > 0, acc / safe_l.unsqueeze(-1),
                                             at::zeros_like(acc)));
    lse.narrow(2, m0, block_m)
        .copy_(at::where((m == -inf).logical_or(l <= 0), at::full_like(l, inf),
                         m * x.scale + safe_l.log()));
  }
  return {o.narrow(2, 0, L).contiguous(), lse.narrow(2, 0, L).contiguous()};
}

FlashGrads flash_attention_backward_tiled_cpu(const at::Tensor& q, const at::Tensor& k,
                                              const at::Tensor& v, const at::Tensor& o,
                                              const at::Tensor& lse, const at::Tensor& dout,
                                              bool causal, int block_m, int block_n) {
  const Dbl x = to_double("flash_attention_backward_tiled_cpu", q, k, v);
  TORCH_CHECK(block_m > 0 && block_n > 0,
              "flash_attention_backward_tiled_cpu: tiles must be positive");
  const int L = static_cast<int>(x.L);
  const int nm = flash_num_blocks(L, block_m), nn = flash_num_blocks(L, block_n);
  const int64_t Lm = int64_t{nm} * block_m, Ln = int64_t{nn} * block_n;
  const auto od = o.detach().to(at::kCPU, at::kDouble);
  const auto gd = dout.detach().to(at::kCPU, at::kDouble);
  const auto qp = pad_rows(x.q, Lm), gp = pad_rows(gd, Lm);
  const auto lp = pad_rows(lse.detach().to(at::kCPU, at::kDouble).unsqueeze(-1), Lm).squeeze(-1);
  const auto Dp = pad_rows((gd * od).sum(-1, /*keepdim=*/true), Lm).squeeze(-1);  // D, (B, H, Lm)
  const auto kp = pad_rows(x.k, Ln), vp = pad_rows(x.v, Ln);
  auto dq = at::zeros_like(qp);
  auto dk = at::zeros_like(kp), dv = at::zeros_like(vp);
  for (int nb = 0; nb < nn; ++nb) {
    const int n0 = nb * block_n;
    const auto kt = kp.narrow(2, n0, block_n), vt = vp.narrow(2, n0, block_n);
    auto dkt = at::zeros_like(kt), dvt = at::zeros_like(vt);
    for (int mb = flash_bwd_m_begin(nb, causal, block_m, block_n); mb < nm; ++mb) {
      const int m0 = mb * block_m;
      const auto qt = qp.narrow(2, m0, block_m), gt = gp.narrow(2, m0, block_m);
      auto p = (at::matmul(qt, kt.transpose(-2, -1)) * x.scale -
                lp.narrow(2, m0, block_m).unsqueeze(-1))
                   .exp();  // (B, H, bm, bn)
      if (flash_tile_needs_mask(m0, n0, block_m, block_n, L, causal))
        p = p.masked_fill(tile_mask(m0, n0, block_m, block_n, L, causal), 0.0);
      dvt += at::matmul(p.transpose(-2, -1), gt);
      const auto dp = at::matmul(gt, vt.transpose(-2, -1));
      const auto ds = p * (dp - Dp.narrow(2, m0, block_m).unsqueeze(-1));
      dkt += at::matmul(ds.transpose(-2, -1), qt);
      dq.narrow(2, m0, block_m).add_(at::matmul(ds, kt));
    }
    dk.narrow(2, n0, block_n).copy_(dkt * x.scale);
    dv.narrow(2, n0, block_n).copy_(dvt);
  }
  return {(dq * x.scale).narrow(2, 0, L).contiguous(), dk.narrow(2, 0, L).contiguous(),
          dv.narrow(2, 0, L).contiguous()};
}

}  // namespace gptbench
