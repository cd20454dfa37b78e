#include "ops/attention/flash_fp8.h"

#include <c10/util/Exception.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "ops/device/elem_type_torch.h"

#ifdef GPTBENCH_WITH_CUDA
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>

#include "ops/attention/flash_host.h"
#include "ops/attention/flash_kernels.h"
#endif

namespace gptbench {
namespace {

constexpr int64_t kD = 128, kBlock = 128, kGroup = 32;

int64_t blocks_of(int64_t L) { return (L + kBlock - 1) / kBlock; }
int64_t lv_of(int64_t L) { return (L + kGroup - 1) / kGroup * kGroup; }

void check_inputs(const char* fn, const FlashFp8Inputs& in) {
  TORCH_CHECK(in.q.defined() && in.k.defined() && in.vt.defined() && in.q_scale.defined() &&
                  in.k_scale.defined() && in.v_scale.defined(),
              fn, ": every tensor of FlashFp8Inputs must be defined (flash_attention_quantize_fp8)");
  TORCH_CHECK(in.q.dim() == 4 && in.q.size(3) == kD, fn, ": q must be (B, H, L, 128), got ",
              in.q.sizes());
  const int64_t B = in.q.size(0), H = in.q.size(1), L = in.q.size(2);
  const auto e4m3 = at::kFloat8_e4m3fn;
  auto check = [&](const at::Tensor& t, const char* name, at::IntArrayRef sizes,
                   at::ScalarType type) {
    TORCH_CHECK(t.sizes() == sizes && t.scalar_type() == type && t.is_contiguous() &&
                    t.device() == in.q.device(),
                fn, ": ", name, " must be a contiguous ", type, " tensor of shape ", sizes,
                " on ", in.q.device(), "; got ", t.scalar_type(), " ", t.sizes(), " on ",
                t.device());
  };
  check(in.q, "q", {B, H, L, kD}, e4m3);
  check(in.k, "k", {B, H, L, kD}, e4m3);
  check(in.vt, "vt", {B, H, kD, lv_of(L)}, e4m3);
  check(in.q_scale, "q_scale", {B, H, blocks_of(L)}, at::kFloat);
  check(in.k_scale, "k_scale", {B, H, blocks_of(L)}, at::kFloat);
  check(in.v_scale, "v_scale", {B, H, blocks_of(L)}, at::kFloat);
  TORCH_CHECK(in.q.is_cuda(), fn, ": needs CUDA tensors, got ", in.q.device());
}

#ifdef GPTBENCH_WITH_CUDA
// Why the GPU of `device` cannot run the FP8 forward (e4m3 wgmma: compute capability 9.0), or "".
std::string hopper_reason(c10::Device device) {
  const cudaDeviceProp* prop = at::cuda::getDeviceProperties(device.index());
  if (prop->major == 9 && prop->minor == 0) return "";
  return "the FP8 forward needs compute capability 9.0 (e4m3 wgmma), this GPU has " +
         std::to_string(prop->major) + "." + std::to_string(prop->minor);
}
#endif

}  // namespace

std::string flash_fp8_unsupported(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v) {
  if (!q.defined() || !k.defined() || !v.defined()) return "q, k and v must be defined";
  if (q.dim() != 4) return "q, k, v must be 4-D (B, H, L, d)";
  if (k.sizes() != q.sizes() || v.sizes() != q.sizes()) return "q, k and v must share a shape";
  if (q.size(3) != kD)
    return "head dim " + std::to_string(q.size(3)) + " unsupported (the FP8 forward takes 128)";
  if (!elem_type_in(q.scalar_type(), {ElemType::kBF16, ElemType::kF16}).has_value() ||
      k.scalar_type() != q.scalar_type() || v.scalar_type() != q.scalar_type())
    return "q, k, v must all be bf16 or all fp16";
  if (q.size(0) > std::numeric_limits<int>::max() || q.size(1) > std::numeric_limits<int>::max() ||
      q.size(2) > std::numeric_limits<int>::max())
    return "B, H and L must each fit in 32 bits";
  if (!q.is_cuda() || k.device() != q.device() || v.device() != q.device())
    return "q, k, v must be CUDA tensors on one device";
#ifdef GPTBENCH_WITH_CUDA
  return hopper_reason(q.device());
#else
  return "this build has no CUDA kernels";
#endif
}

FlashFp8Inputs flash_attention_quantize_fp8(const at::Tensor& q, const at::Tensor& k,
                                            const at::Tensor& v) {
  const std::string why = flash_fp8_unsupported(q, k, v);
  TORCH_CHECK(why.empty(), "flash_attention_quantize_fp8: ", why);
  const int64_t B = q.size(0), H = q.size(1), L = q.size(2);
  const auto e4m3 = q.options().dtype(at::kFloat8_e4m3fn);
  const auto f32 = q.options().dtype(at::kFloat);
  FlashFp8Inputs in{at::empty({B, H, L, kD}, e4m3),         at::empty({B, H, L, kD}, e4m3),
                    at::empty({B, H, kD, lv_of(L)}, e4m3),  at::empty({B, H, blocks_of(L)}, f32),
                    at::empty({B, H, blocks_of(L)}, f32),   at::empty({B, H, blocks_of(L)}, f32)};
#ifdef GPTBENCH_WITH_CUDA
  if (q.numel() == 0) return in;
  c10::cuda::CUDAGuard guard(q.device());
  const cudaStream_t stream = at::cuda::getCurrentCUDAStream(q.device().index()).stream();
  const ElemType dtype = elem_type_in(q.scalar_type(), {ElemType::kBF16, ElemType::kF16}).value();
  auto run = [&](const at::Tensor& src, const at::Tensor& dst, const at::Tensor& scale,
                 FlashFp8QuantParams::Mode mode) {
    const at::Tensor s = flash_reads_in_place(src) ? src : src.contiguous();
    FlashFp8QuantParams p{};
    p.src = s.data_ptr();
    p.st = {s.stride(0), s.stride(1), s.stride(2)};
    p.dtype = dtype;
    p.dst = dst.data_ptr();
    p.scale = scale.data_ptr<float>();
    p.B = static_cast<int>(B);
    p.H = static_cast<int>(H);
    p.L = static_cast<int>(L);
    p.lv = static_cast<int>(lv_of(L));
    p.mode = mode;
    launch_flash_fp8_quantize(p, stream);
  };
  run(q, in.q, in.q_scale, FlashFp8QuantParams::kQ);
  run(k, in.k, in.k_scale, FlashFp8QuantParams::kK);
  run(v, in.vt, in.v_scale, FlashFp8QuantParams::kV);
#endif
  return in;
}

FlashFp8Dequantized flash_attention_dequantize_fp8(const FlashFp8Inputs& in) {
  check_inputs("flash_attention_dequantize_fp8", in);
  const int64_t L = in.q.size(2), nb = blocks_of(L), lv = lv_of(L);
  const auto idx = in.q.options().dtype(at::kLong);
  // The block of each row: q's end at row L, k's and v's start at 0.
  const at::Tensor rows = at::arange(L, idx);
  const at::Tensor q_block = at::div(rows + (nb * kBlock - L), kBlock, "floor");
  const at::Tensor kv_block = at::div(rows, kBlock, "floor");
  auto scaled = [](const at::Tensor& x, const at::Tensor& scale, const at::Tensor& block) {
    return x.to(at::kFloat) * scale.index_select(2, block).unsqueeze(-1);
  };
  // vᵀ position of each key: 32 (key / 32) + the position holding it within its group.
  std::vector<int64_t> pos(static_cast<size_t>(lv));
  for (int64_t g = 0; g < lv; g += kGroup)
    for (int p = 0; p < kGroup; ++p) pos[static_cast<size_t>(g + flash_fp8_v_key(p))] = g + p;
  const at::Tensor key_pos = at::tensor(pos, at::TensorOptions().dtype(at::kLong))
                                 .to(in.q.device())
                                 .narrow(0, 0, L);
  const at::Tensor v = in.vt.to(at::kFloat).index_select(3, key_pos).transpose(2, 3);
  return {scaled(in.q, in.q_scale, q_block), scaled(in.k, in.k_scale, kv_block),
          scaled(v, in.v_scale, kv_block).contiguous()};
}

FlashFp8Output flash_attention_forward_fp8(const FlashFp8Inputs& in, bool causal) {
  constexpr const char* fn = "flash_attention_forward_fp8";
  check_inputs(fn, in);
  const int64_t B = in.q.size(0), H = in.q.size(1), L = in.q.size(2);
  FlashFp8Output out{at::empty({B, H, L, kD}, in.q.options().dtype(at::kBFloat16)),
                     at::empty({B, H, L}, in.q.options().dtype(at::kFloat))};
#ifdef GPTBENCH_WITH_CUDA
  const std::string why = hopper_reason(in.q.device());
  TORCH_CHECK(why.empty(), fn, ": ", why);
  if (in.q.numel() == 0) return out;
  c10::cuda::CUDAGuard guard(in.q.device());
  const cudaStream_t stream = at::cuda::getCurrentCUDAStream(in.q.device().index()).stream();
  FlashFwdParams p{};
  p.q = in.q.data_ptr();
  p.k = in.k.data_ptr();
  p.v = in.vt.data_ptr();
  p.o = out.o.data_ptr();
  p.lse = out.lse.data_ptr<float>();
  p.q_scale = in.q_scale.data_ptr<float>();
  p.k_scale = in.k_scale.data_ptr<float>();
  p.v_scale = in.v_scale.data_ptr<float>();
  p.q_st = p.k_st = {H * L * kD, L * kD, kD};
  p.v_st = {in.vt.stride(0), in.vt.stride(1), in.vt.stride(2)};
  p.B = static_cast<int>(B);
  p.H = static_cast<int>(H);
  p.L = static_cast<int>(L);
  p.d = static_cast<int>(kD);
  p.causal = causal;
  p.scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(kD)));
  p.dtype = ElemType::kBF16;  // the output's
  const at::Tensor counter = flash_zeroed_counter(in.q, stream);
  p.tile_counter = counter.data_ptr<int>();
  launch_flash_forward_sm90_fp8(p, stream);
#else
  TORCH_CHECK(false, fn, ": this build has no CUDA kernels (GPTBENCH_WITH_CUDA is off)");
#endif
  return out;
}

}  // namespace gptbench
