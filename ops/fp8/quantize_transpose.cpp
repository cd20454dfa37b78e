#include "ops/fp8/quantize_transpose.h"

#include <ATen/Parallel.h>
#include <c10/util/Float8_e4m3fn.h>
#include <c10/util/Float8_e5m2.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>

#include "ops/fp8/gelu_fp8.h"
#include "ops/fp8/input_check.h"

#ifdef GPTBENCH_WITH_CUDA
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>

#include "ops/aligned_operand.h"
#include "ops/fp8/quantize_kernels.h"
#endif

namespace gptbench {
namespace {

void check_scale(const Fp8PerTensor& q, const char* fn) {
  if (!q.scale.defined() || q.scale.numel() != 1 || q.scale.scalar_type() != at::kFloat)
    throw std::invalid_argument(std::string(fn) + ": q.scale must be one fp32 value");
}

// A (1, 1) fp32 tensor holding v, on `device`.
at::Tensor scalar_tensor(float v, c10::Device device) {
  return at::full({1, 1}, v, at::TensorOptions().dtype(at::kFloat)).to(device);
}

// The fp32 values of x (rows, cols) as a contiguous CPU tensor.
at::Tensor cpu_float(const at::Tensor& x) { return x.to(at::kCPU, at::kFloat).contiguous(); }

// max |x| of a CPU fp32 tensor, NaNs ignored (as fmaxf in our kernels).
float amax_reference(const at::Tensor& x) {
  const float* xp = x.data_ptr<float>();
  float amax = 0.f;
  for (int64_t i = 0; i < x.numel(); ++i) amax = std::fmax(amax, std::fabs(xp[i]));
  return amax;
}

template <typename Fp8>
void cast_reference(const float* xp, int64_t rows, int64_t cols, float scale, float max, Fp8* q, Fp8* qt) {
  at::parallel_for(0, rows, 1, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r)
      for (int64_t c = 0; c < cols; ++c) {
        const Fp8 v(std::clamp(xp[r * cols + c] * scale, -max, max));
        if (q) q[r * cols + c] = v;
        if (qt) qt[c * rows + r] = v;
      }
  });
}

}  // namespace

at::ScalarType fp8_scalar_type(Fp8Format f) {
  return f == Fp8Format::kE4m3 ? at::kFloat8_e4m3fn : at::kFloat8_e5m2;
}

std::string quantize_transpose_fp8_unsupported(const at::Tensor& x) {
  if (!x.defined() || x.dim() != 2) return "x must be a 2-D (rows, cols) tensor";
  if (!x.is_cuda()) return "";
  if (x.scalar_type() != at::kBFloat16) return "our kernels take bf16 input";
  if (x.size(0) % 8 != 0 || x.size(1) % 8 != 0)
    return "our kernels need rows and cols to be multiples of 8 (8 x 8 blocks)";
  if ((x.size(0) + 255) / 256 > 65535) return "more than 65,535 tiles of 256 rows";
#ifdef GPTBENCH_WITH_CUDA
  return "";
#else
  return "this build has no CUDA kernels";
#endif
}

Fp8PerTensor fp8_tensor_scale_reference(const at::Tensor& x_in, Fp8Format f) {
  check_fp8_quantizer_input(x_in, "fp8_tensor_scale_reference");
  const float scale = fp8_scale_from_amax(amax_reference(cpu_float(x_in)), f);
  Fp8PerTensor q;
  q.format = f;
  q.scale = scalar_tensor(scale, at::kCPU);
  q.scale_inv = scalar_tensor(1.f / scale, at::kCPU);
  return q;
}

void quantize_transpose_fp8_reference(const at::Tensor& x_in, Fp8PerTensor& q, Fp8Copies copies) {
  check_fp8_quantizer_input(x_in, "quantize_transpose_fp8_reference");
  check_scale(q, "quantize_transpose_fp8_reference");
  const at::Tensor x = cpu_float(x_in);
  const int64_t rows = x.size(0), cols = x.size(1);
  const auto opts = at::TensorOptions().dtype(fp8_scalar_type(q.format));
  q.data = fp8_writes_plain(copies) ? at::empty({rows, cols}, opts) : at::Tensor();
  q.data_t = fp8_writes_transposed(copies) ? at::empty({cols, rows}, opts) : at::Tensor();
  const float scale = q.scale.to(at::kCPU).item<float>(), max = fp8_format_max(q.format);
  const float* xp = x.data_ptr<float>();
  if (q.format == Fp8Format::kE4m3)
    cast_reference(xp, rows, cols, scale, max,
                   q.data.defined() ? q.data.data_ptr<c10::Float8_e4m3fn>() : nullptr,
                   q.data_t.defined() ? q.data_t.data_ptr<c10::Float8_e4m3fn>() : nullptr);
  else
    cast_reference(xp, rows, cols, scale, max,
                   q.data.defined() ? q.data.data_ptr<c10::Float8_e5m2>() : nullptr,
                   q.data_t.defined() ? q.data_t.data_ptr<c10::Float8_e5m2>() : nullptr);
}

Fp8PerTensor quantize_per_tensor_fp8_reference(const at::Tensor& x, Fp8Format f, Fp8Copies copies) {
  Fp8PerTensor q = fp8_tensor_scale_reference(x, f);
  quantize_transpose_fp8_reference(x, q, copies);
  return q;
}

Fp8PerTensor quantize_per_tensor_fp8_torch(const at::Tensor& x_in, Fp8Format f, Fp8Copies copies) {
  check_fp8_quantizer_input(x_in, "quantize_per_tensor_fp8_torch");
  const at::Tensor x = x_in.to(at::kFloat);
  const float max = fp8_format_max(f);
  const at::Tensor amax = x.abs().amax().reshape({1, 1});
  // max / amax as a division (LibTorch's Scalar / Tensor is a reciprocal times max, rounded twice).
  const at::Tensor usable = (amax > 0) & (amax <= FLT_MAX);
  const at::Tensor scale = at::where(usable, at::full_like(amax, max) / amax, 1.0).clamp_max(FLT_MAX);
  const at::Tensor values = (x * scale).clamp(-max, max).to(fp8_scalar_type(f));
  Fp8PerTensor q;
  q.format = f;
  q.scale = scale;
  q.scale_inv = scale.reciprocal();
  if (fp8_writes_plain(copies)) q.data = values;
  if (fp8_writes_transposed(copies)) q.data_t = values.t().contiguous();
  return q;
}

namespace {

#ifdef GPTBENCH_WITH_CUDA
// What our kernels quantize: x itself, or (`on`) GELU(bf16(x + bias)) computed from x.
struct GeluOf {
  bool on = false;
  at::Tensor bias;  // contiguous, aligned, or undefined
};

// The amax pass: *scale and *scale_inv written from x's current amax.
void launch_scale(const at::Tensor& xc, Fp8Format f, const GeluOf& gelu, float* scale, float* scale_inv) {
  at::Tensor partial = at::empty({fp8_quantize_partials(xc.size(0), xc.size(1))}, xc.options().dtype(at::kFloat));
  Fp8TensorScaleArgs a;
  a.x = xc.data_ptr();
  a.gelu = gelu.on;
  a.gelu_bias = gelu.bias.defined() ? gelu.bias.data_ptr() : nullptr;
  a.partial = partial.data_ptr<float>();
  a.scale = scale;
  a.scale_inv = scale_inv;
  a.rows = xc.size(0);
  a.cols = xc.size(1);
  a.format = f;
  launch_fp8_tensor_scale(a, at::cuda::getCurrentCUDAStream(xc.device().index()).stream());
}

Fp8PerTensor scale_on_gpu(const at::Tensor& x, Fp8Format f, const GeluOf& gelu) {
  c10::cuda::CUDAGuard guard(x.device());
  const auto f32 = x.options().dtype(at::kFloat);
  Fp8PerTensor q;
  q.format = f;
  q.scale = at::empty({1, 1}, f32);
  q.scale_inv = at::empty({1, 1}, f32);
  launch_scale(aligned_contiguous(x), f, gelu, q.scale.data_ptr<float>(), q.scale_inv.data_ptr<float>());
  return q;
}

// The cast for the multiplier q.scale. With `delayed` (delayed scaling) instead for the
// multiplier in its state (primed from x's current amax by its first cast): the kernel also
// records the amax, q.scale and q.scale_inv receive the multiplier it used, and the state is
// updated after it.
void cast_on_gpu(const at::Tensor& x, Fp8PerTensor& q, Fp8Copies copies, const GeluOf& gelu,
                 Fp8DelayedScale* delayed = nullptr) {
  c10::cuda::CUDAGuard guard(x.device());
  const at::Tensor xc = aligned_contiguous(x);
  const int64_t rows = xc.size(0), cols = xc.size(1);
  const auto opts = xc.options().dtype(fp8_scalar_type(q.format));
  q.data = fp8_writes_plain(copies) ? at::empty({rows, cols}, opts) : at::Tensor();
  q.data_t = fp8_writes_transposed(copies) ? at::empty({cols, rows}, opts) : at::Tensor();
  const cudaStream_t stream = at::cuda::getCurrentCUDAStream(x.device().index()).stream();
  Fp8QuantizeTransposeArgs a;
  a.x = xc.data_ptr();
  a.gelu = gelu.on;
  a.gelu_bias = gelu.bias.defined() ? gelu.bias.data_ptr() : nullptr;
  a.scale = q.scale.data_ptr<float>();
  a.q = q.data.defined() ? reinterpret_cast<uint8_t*>(q.data.data_ptr()) : nullptr;
  a.qt = q.data_t.defined() ? reinterpret_cast<uint8_t*>(q.data_t.data_ptr()) : nullptr;
  a.rows = rows;
  a.cols = cols;
  a.format = q.format;
  at::Tensor partial;
  if (delayed != nullptr) {
    float* state = delayed->state.data_ptr<float>();
    if (delayed->casts == 0) launch_scale(xc, q.format, gelu, state, q.scale_inv.data_ptr<float>());  // priming
    partial = at::empty({fp8_quantize_transpose_blocks(rows, cols)}, xc.options().dtype(at::kFloat));
    a.scale = state;
    a.amax_partial = partial.data_ptr<float>();
    a.scale_out = q.scale.data_ptr<float>();
    a.scale_inv_out = q.scale_inv.data_ptr<float>();
  }
  launch_fp8_quantize_transpose(a, stream);
  if (delayed != nullptr) {
    launch_fp8_delayed_update(partial.data_ptr<float>(), partial.numel(), delayed->state.data_ptr<float>(),
                              delayed->history, delayed->format, stream);
    ++delayed->casts;
  }
}
#endif

}  // namespace

Fp8PerTensor fp8_tensor_scale(const at::Tensor& x, Fp8Format f) {
  check_fp8_quantizer_input(x, "fp8_tensor_scale");
  if (!x.is_cuda()) return fp8_tensor_scale_reference(x, f);
  if (auto why = quantize_transpose_fp8_unsupported(x); !why.empty())
    throw std::invalid_argument("fp8_tensor_scale: " + why);
#ifdef GPTBENCH_WITH_CUDA
  return scale_on_gpu(x, f, {});
#else
  throw std::logic_error("fp8_tensor_scale: unreachable without CUDA");
#endif
}

void quantize_transpose_fp8(const at::Tensor& x, Fp8PerTensor& q, Fp8Copies copies) {
  check_fp8_quantizer_input(x, "quantize_transpose_fp8");
  check_scale(q, "quantize_transpose_fp8");
  if (!x.is_cuda()) return quantize_transpose_fp8_reference(x, q, copies);
  if (auto why = quantize_transpose_fp8_unsupported(x); !why.empty())
    throw std::invalid_argument("quantize_transpose_fp8: " + why);
  if (q.scale.device() != x.device())
    throw std::invalid_argument("quantize_transpose_fp8: q.scale must be on x's device");
#ifdef GPTBENCH_WITH_CUDA
  cast_on_gpu(x, q, copies, {});
#else
  throw std::logic_error("quantize_transpose_fp8: unreachable without CUDA");
#endif
}

Fp8DelayedScale::Fp8DelayedScale(Fp8Format f, int64_t h) : format(f), history(h) {
  if (h < 1 || h > kFp8MaxAmaxHistory)
    throw std::invalid_argument("Fp8DelayedScale: the amax history holds 1.." + std::to_string(kFp8MaxAmaxHistory) +
                                " values, got " + std::to_string(h));
}

namespace {

void check_gelu_operands(const at::Tensor& u, const at::Tensor& bias) {
  check_fp8_quantizer_input(u, "quantize_per_tensor_gelu_fp8");
  if (bias.defined() && (bias.dim() != 1 || bias.size(0) != u.size(1)))
    throw std::invalid_argument("quantize_per_tensor_gelu_fp8: bias must be (" + std::to_string(u.size(1)) +
                                ") or undefined, got " + c10::str(bias.sizes()));
}

#ifdef GPTBENCH_WITH_CUDA
// Our kernels' GELU input when they can take u and bias; none otherwise.
std::optional<GeluOf> gpu_gelu(const at::Tensor& u, const at::Tensor& bias) {
  const bool bias_ok = !bias.defined() || (bias.scalar_type() == at::kBFloat16 && bias.device() == u.device());
  if (!u.is_cuda() || !bias_ok || !quantize_transpose_fp8_unsupported(u).empty()) return std::nullopt;
  return GeluOf{true, bias.defined() ? aligned_contiguous(bias) : at::Tensor()};
}
#endif

// A delayed scale given for a tensor quantized to f must be of format f.
void check_delayed(const char* fn, const Fp8DelayedScale* d, Fp8Format f) {
  if (d != nullptr && d->format != f)
    throw std::invalid_argument(std::string(fn) + ": the delayed scale is " + fp8_format_name(d->format) +
                                ", the tensor is quantized to " + fp8_format_name(f));
}

// d's state on x's device (made zero by the first cast), and q's scales to be written.
Fp8PerTensor start_delayed(const at::Tensor& x, Fp8DelayedScale& d, const char* fn) {
  const auto f32 = x.options().dtype(at::kFloat);
  if (!d.state.defined()) d.state = at::zeros({1 + d.history}, f32);
  if (d.state.device() != x.device())
    throw std::invalid_argument(std::string(fn) + ": the delayed scale's state is on " + d.state.device().str() +
                                ", x on " + x.device().str() + " (one Fp8DelayedScale per tensor and device)");
  Fp8PerTensor q;
  q.format = d.format;
  q.scale = at::empty({1, 1}, f32);
  q.scale_inv = at::empty({1, 1}, f32);
  return q;
}

// The reference of a delayed cast, on the CPU: x's fp32 values, the same operations as ours.
Fp8PerTensor delayed_reference(const at::Tensor& x_in, Fp8DelayedScale& d, Fp8Copies copies, const char* fn) {
  const at::Tensor x = cpu_float(x_in);
  Fp8PerTensor q = start_delayed(x, d, fn);
  float* state = d.state.data_ptr<float>();
  float* hist = state + 1;
  const float amax = amax_reference(x);
  if (d.casts == 0) state[0] = fp8_scale_from_amax(amax, d.format);
  q.scale.fill_(state[0]);
  q.scale_inv.fill_(1.f / state[0]);
  quantize_transpose_fp8_reference(x, q, copies);
  float m = amax;
  for (int64_t i = d.history - 1; i > 0; --i) {
    hist[i] = hist[i - 1];
    m = std::fmax(m, hist[i]);
  }
  hist[0] = amax;
  state[0] = fp8_scale_from_amax(m, d.format);
  ++d.casts;
  return q;
}

}  // namespace

Fp8PerTensor quantize_per_tensor_gelu_fp8(const at::Tensor& u, const at::Tensor& bias, Fp8Format f,
                                          Fp8Copies copies, Fp8DelayedScale* delayed) {
  const char* fn = "quantize_per_tensor_gelu_fp8";
  check_gelu_operands(u, bias);
  check_delayed(fn, delayed, f);
#ifdef GPTBENCH_WITH_CUDA
  if (auto gelu = gpu_gelu(u, bias)) {
    Fp8PerTensor q = delayed != nullptr ? start_delayed(u, *delayed, fn) : scale_on_gpu(u, f, *gelu);
    cast_on_gpu(u, q, copies, *gelu, delayed);
    return q;
  }
#endif
  return quantize_per_tensor_fp8(gelu_bf16_torch(u, bias), f, copies, delayed);
}

Fp8PerTensor quantize_per_tensor_fp8(const at::Tensor& x, Fp8Format f, Fp8Copies copies, Fp8DelayedScale* delayed) {
  if (delayed == nullptr) {
    Fp8PerTensor q = fp8_tensor_scale(x, f);
    quantize_transpose_fp8(x, q, copies);
    return q;
  }
  const char* fn = "quantize_per_tensor_fp8";
  check_fp8_quantizer_input(x, fn);
  check_delayed(fn, delayed, f);
  if (!x.is_cuda()) return delayed_reference(x, *delayed, copies, fn);
  if (auto why = quantize_transpose_fp8_unsupported(x); !why.empty())
    throw std::invalid_argument(std::string(fn) + ": " + why);
#ifdef GPTBENCH_WITH_CUDA
  Fp8PerTensor q = start_delayed(x, *delayed, fn);
  cast_on_gpu(x, q, copies, {}, delayed);
  return q;
#else
  throw std::logic_error("quantize_per_tensor_fp8: unreachable without CUDA");
#endif
}

at::Tensor dequantize_per_tensor_fp8(const Fp8PerTensor& q) {
  return q.data.to(at::kDouble) * q.scale_inv.to(at::kDouble);
}

}  // namespace gptbench
