#include "ops/fp8/quantize.h"

#include <ATen/Parallel.h>
#include <c10/util/Float8_e4m3fn.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "ops/fp8/input_check.h"

#ifdef GPTBENCH_WITH_CUDA
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>

#include "ops/aligned_operand.h"
#include "ops/fp8/quantize_kernels.h"
#endif

namespace gptbench {
namespace {

// The scale_inv of every element of rows `rows` (int64 indices) of a (rows, cols) operand whose
// scales `s` have granularity g's layout: an (rows.numel(), cols) tensor of s's dtype.
at::Tensor row_scales(const at::Tensor& s, Fp8Granularity g, const at::Tensor& rows, int64_t cols) {
  const int64_t r = rows.numel(), b = kFp8Block;
  switch (g) {
    case Fp8Granularity::kTensor: return s.reshape({1, 1}).expand({r, cols});
    case Fp8Granularity::kRow: return s.reshape({-1}).index_select(0, rows).reshape({r, 1}).expand({r, cols});
    case Fp8Granularity::kBlock1x128:
      return s.index_select(1, rows).t().repeat_interleave(b, 1).narrow(1, 0, cols);
    case Fp8Granularity::kBlock128x128:
      return s.narrow(1, 0, fp8_blocks(cols))
          .index_select(0, at::div(rows, b, "floor"))
          .repeat_interleave(b, 1)
          .narrow(1, 0, cols);
  }
  throw std::invalid_argument("row_scales: unknown granularity");
}

}  // namespace

Fp8Tensor empty_fp8(int64_t rows, int64_t cols, Fp8Granularity g, const at::TensorOptions& opts) {
  const Fp8ScaleShape s = fp8_scale_shape(g, rows, cols);
  return {at::empty({rows, cols}, opts.dtype(at::kFloat8_e4m3fn)),
          at::empty({s.dim0, s.dim1}, opts.dtype(at::kFloat)), g};
}

std::string fp8_bitwise_difference(const Fp8Tensor& q, const Fp8Tensor& ref) {
  const at::Tensor scales = q.scale_inv.to(at::kCPU), ref_scales = ref.scale_inv.to(at::kCPU);
  if (scales.sizes() != ref_scales.sizes() || !at::equal(scales, ref_scales)) {
    const std::string delta = scales.sizes() == ref_scales.sizes()
                                  ? std::to_string((scales.to(at::kDouble) - ref_scales.to(at::kDouble)).abs().max().item<double>())
                                  : "shapes differ";
    return "scales differ from the reference (max |Δ| " + delta + ")";
  }
  const at::Tensor a = q.data.view(at::kByte).to(at::kCPU), b = ref.data.view(at::kByte).to(at::kCPU);
  if (a.sizes() != b.sizes()) return "e4m3 shapes differ from the reference";
  if (const int64_t n = (a != b).sum().item<int64_t>(); n > 0)
    return std::to_string(n) + " of " + std::to_string(a.numel()) + " e4m3 values differ from the reference";
  return "";
}

Fp8Tensor quantize_fp8_reference(const at::Tensor& x_in, Fp8Granularity g) {
  check_fp8_quantizer_input(x_in, "quantize_fp8_reference");
  const at::Tensor x = x_in.to(at::kCPU, at::kFloat).contiguous();
  const int64_t rows = x.size(0), cols = x.size(1), nb = fp8_blocks(cols);
  Fp8Tensor out = empty_fp8(rows, cols, g, at::TensorOptions());
  const float* xp = x.data_ptr<float>();

  // amax of every (row, 1×128 block), then of each group.
  std::vector<float> block_amax(static_cast<size_t>(rows * nb), 0.f);
  at::parallel_for(0, rows, 1, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r)
      for (int64_t c = 0; c < cols; ++c) {
        float& m = block_amax[r * nb + c / kFp8Block];
        m = std::fmax(m, std::fabs(xp[r * cols + c]));
      }
  });
  const Fp8ScaleShape shape = fp8_scale_shape(g, rows, cols);
  std::vector<float> group_amax(static_cast<size_t>(shape.dim0 * shape.dim1), 0.f);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t kb = 0; kb < nb; ++kb) {
      float& m = group_amax[fp8_scale_index(g, r, kb * kFp8Block, rows, cols)];
      m = std::fmax(m, block_amax[r * nb + kb]);
    }
  std::vector<float> scale(group_amax.size());
  float* inv = out.scale_inv.data_ptr<float>();
  for (size_t i = 0; i < scale.size(); ++i) {
    scale[i] = fp8_scale_from_amax(group_amax[i]);  // padding groups (amax 0) get 1
    inv[i] = 1.f / scale[i];
  }
  auto* q = out.data.data_ptr<c10::Float8_e4m3fn>();
  at::parallel_for(0, rows, 1, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r)
      for (int64_t c = 0; c < cols; ++c) {
        const float v = xp[r * cols + c] * scale[fp8_scale_index(g, r, c, rows, cols)];
        q[r * cols + c] = c10::Float8_e4m3fn(std::clamp(v, -kE4m3Max, kE4m3Max));
      }
  });
  return out;
}

Fp8Tensor quantize_fp8_torch(const at::Tensor& x_in, Fp8Granularity g) {
  check_fp8_quantizer_input(x_in, "quantize_fp8_torch");
  const int64_t rows = x_in.size(0), cols = x_in.size(1), b = kFp8Block;
  at::Tensor x = x_in.to(at::kFloat);
  // The blocked granularities pad to whole blocks with zeros (which leave every amax as it is).
  const int64_t pad_c = g == Fp8Granularity::kBlock1x128 || g == Fp8Granularity::kBlock128x128
                            ? fp8_blocks(cols) * b - cols : 0;
  const int64_t pad_r = g == Fp8Granularity::kBlock128x128 ? fp8_blocks(rows) * b - rows : 0;
  if (pad_c > 0 || pad_r > 0) x = at::constant_pad_nd(x, {0, pad_c, 0, pad_r});
  const int64_t R = rows + pad_r, nb = (cols + pad_c) / b;
  at::Tensor blocked;  // x viewed so that each group's values share the scale of shape `amax`
  at::Tensor amax;
  switch (g) {
    case Fp8Granularity::kTensor: blocked = x; amax = x.abs().amax(); break;
    case Fp8Granularity::kRow: blocked = x; amax = x.abs().amax(1, true); break;
    case Fp8Granularity::kBlock1x128:
      blocked = x.view({R, nb, b});
      amax = blocked.abs().amax(-1, true);  // (R, nb, 1)
      break;
    case Fp8Granularity::kBlock128x128:
      blocked = x.view({R / b, b, nb, b});
      amax = blocked.abs().amax({1, 3}, true);  // (R/128, 1, nb, 1)
      break;
  }
  // 448 / amax as a division (LibTorch's Scalar / Tensor is a reciprocal times 448, rounded twice).
  const at::Tensor usable = (amax > 0) & (amax <= FLT_MAX);
  const at::Tensor ratio = at::full_like(amax, kE4m3Max) / amax;
  const at::Tensor scale = at::where(usable, ratio, 1.0).clamp_max(FLT_MAX);
  const at::Tensor q = (blocked * scale).clamp(-kE4m3Max, kE4m3Max).to(at::kFloat8_e4m3fn);
  const at::Tensor inv = scale.reciprocal();

  Fp8Tensor out;
  out.granularity = g;
  out.data = q.reshape({R, x.size(1)}).narrow(0, 0, rows).narrow(1, 0, cols).contiguous();
  switch (g) {
    case Fp8Granularity::kTensor: out.scale_inv = inv.reshape({1, 1}); break;
    case Fp8Granularity::kRow: out.scale_inv = inv.reshape({rows, 1}); break;
    case Fp8Granularity::kBlock1x128: out.scale_inv = inv.reshape({R, nb}).t().contiguous(); break;
    case Fp8Granularity::kBlock128x128: {
      const int64_t ld = fp8_block_ld(cols);
      out.scale_inv = at::constant_pad_nd(inv.reshape({R / b, nb}), {0, ld - nb}, 1.0);
      break;
    }
  }
  return out;
}

std::string quantize_fp8_unsupported(const at::Tensor& x) {
  if (!x.defined() || x.dim() != 2) return "x must be a 2-D (rows, cols) tensor";
  if (!x.is_cuda()) return "";
  if (x.scalar_type() != at::kBFloat16) return "our kernels take bf16 input";
  if (x.size(1) % 8 != 0) return "our kernels need cols to be a multiple of 8 (16-byte loads)";
  if (fp8_blocks(x.size(0)) > 65535) return "more than 65,535 blocks of 128 rows";
#ifdef GPTBENCH_WITH_CUDA
  return "";
#else
  return "this build has no CUDA kernels";
#endif
}

Fp8Tensor quantize_fp8(const at::Tensor& x, Fp8Granularity g) {
  check_fp8_quantizer_input(x, "quantize_fp8");
  if (!x.is_cuda()) return quantize_fp8_reference(x, g);
  if (auto why = quantize_fp8_unsupported(x); !why.empty())
    throw std::invalid_argument("quantize_fp8: " + why);
#ifdef GPTBENCH_WITH_CUDA
  c10::cuda::CUDAGuard guard(x.device());
  const at::Tensor xc = aligned_contiguous(x);
  const int64_t rows = xc.size(0), cols = xc.size(1);
  Fp8Tensor out = empty_fp8(rows, cols, g, xc.options());
  at::Tensor partial;
  if (g == Fp8Granularity::kTensor)
    partial = at::empty({fp8_quantize_partials(rows, cols)}, xc.options().dtype(at::kFloat));
  Fp8QuantizeArgs a;
  a.x = xc.data_ptr();
  a.q = reinterpret_cast<uint8_t*>(out.data.data_ptr());
  a.scale_inv = out.scale_inv.data_ptr<float>();
  a.partial = partial.defined() ? partial.data_ptr<float>() : nullptr;
  a.rows = rows;
  a.cols = cols;
  a.granularity = g;
  launch_fp8_quantize(a, at::cuda::getCurrentCUDAStream(x.device().index()).stream());
  return out;
#else
  throw std::logic_error("quantize_fp8: unreachable without CUDA");
#endif
}

at::Tensor dequantize_fp8(const Fp8Tensor& q, const std::optional<at::Tensor>& rows_in) {
  const at::Tensor rows = rows_in ? rows_in->to(q.data.device(), at::kLong)
                                  : at::arange(q.data.size(0), q.data.options().dtype(at::kLong));
  // Rows picked as bytes (index_select takes no float8 dtype), then converted.
  const at::Tensor picked = q.data.view(at::kByte).index_select(0, rows).view(at::kFloat8_e4m3fn);
  return picked.to(at::kDouble) *
         row_scales(q.scale_inv.to(at::kDouble), q.granularity, rows, q.data.size(1));
}

at::Tensor fp8_test_input(int64_t rows, int64_t cols, const at::TensorOptions& opts) {
  const auto f32 = opts.dtype(at::kFloat);
  const at::Tensor mag = at::exp2(at::rand({rows, fp8_blocks(cols)}, f32) * 4 - 2)
                             .repeat_interleave(kFp8Block, 1)
                             .narrow(1, 0, cols);
  return (at::randn({rows, cols}, f32) * mag).to(opts.dtype());
}

double fp8_quantize_bytes(int64_t rows, int64_t cols, Fp8Granularity g) {
  const Fp8ScaleShape s = fp8_scale_shape(g, rows, cols);
  return 3.0 * static_cast<double>(rows) * static_cast<double>(cols) +
         4.0 * static_cast<double>(s.dim0) * static_cast<double>(s.dim1);
}

}  // namespace gptbench
