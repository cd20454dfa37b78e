// Row-major C(M, N) = Â·B̂ᵀ is the column-major Cᵀ(N, M) = B̂·Âᵀ: cuBLASLt's A is our B (stored
// (N, K) row-major = column-major (K, N), used transposed) and its B our A (column-major (K, M),
// not transposed): the TN layout cuBLASLt requires for FP8, with no copy. Its "rows of A" are
// therefore our N and its "rows of B" our M, which is how the scale modes below are assigned
// (ops/gemm_cublaslt.cpp uses the same swap for the other dtypes).
#include "ops/fp8/gemm.h"

#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <tuple>

#ifdef GPTBENCH_WITH_CUDA
#include <ATen/cuda/CUDAContext.h>

#include "ops/cublaslt_device.h"
#include "ops/cuda_check.h"
#endif

namespace gptbench {
namespace {

void check_operands(const char* fn, const Fp8Tensor& a, const Fp8Tensor& b, Fp8GemmScaling s,
                    const at::Tensor& c) {
  const std::string f = std::string(fn) + ": ";
  auto fp8_2d = [](const at::Tensor& t) {
    return t.defined() && t.dim() == 2 && t.scalar_type() == at::kFloat8_e4m3fn && t.is_contiguous();
  };
  if (!fp8_2d(a.data) || !fp8_2d(b.data))
    throw std::invalid_argument(f + "a and b must be contiguous 2-D float8_e4m3fn tensors");
  if (a.data.size(1) != b.data.size(1))
    throw std::invalid_argument(f + "a (M, K) and b (N, K) must share K, got " +
                                c10::str(a.data.sizes()) + " and " + c10::str(b.data.sizes()));
  if (a.granularity != fp8_a_granularity(s) || b.granularity != fp8_b_granularity(s))
    throw std::invalid_argument(f + "scaling '" + fp8_gemm_scaling_name(s) + "' takes a " +
                                fp8_granularity_name(fp8_a_granularity(s)) + " and b " +
                                fp8_granularity_name(fp8_b_granularity(s)) + ", got " +
                                fp8_granularity_name(a.granularity) + " and " +
                                fp8_granularity_name(b.granularity));
  const int64_t m = a.data.size(0), n = b.data.size(0), k = a.data.size(1);
  for (const Fp8Tensor* t : {&a, &b}) {
    const Fp8ScaleShape sh = fp8_scale_shape(t->granularity, t->data.size(0), k);
    if (!t->scale_inv.defined() || t->scale_inv.scalar_type() != at::kFloat ||
        !t->scale_inv.is_contiguous() || t->scale_inv.numel() != sh.dim0 * sh.dim1)
      throw std::invalid_argument(f + "scale_inv must be a contiguous fp32 tensor of " +
                                  std::to_string(sh.dim0) + " × " + std::to_string(sh.dim1));
  }
  if (!c.defined() || c.scalar_type() != at::kBFloat16 || !c.is_contiguous() || c.dim() != 2 ||
      c.size(0) != m || c.size(1) != n)
    throw std::invalid_argument(f + "c must be a contiguous bf16 (" + std::to_string(m) + ", " +
                                std::to_string(n) + ") tensor");
  for (const at::Tensor* t : {&a.data, &a.scale_inv, &b.data, &b.scale_inv})
    if (t->device() != c.device())
      throw std::invalid_argument(f + "operands, scales and c must be on one device");
  if (k % 16 != 0 || n % 8 != 0)
    throw std::invalid_argument(f + "K must be a multiple of 16 and N of 8, got K=" +
                                std::to_string(k) + " N=" + std::to_string(n));
}

#ifdef GPTBENCH_WITH_CUDA
int32_t lt_scale_mode(Fp8Granularity g) {
  switch (g) {
    case Fp8Granularity::kTensor: return CUBLASLT_MATMUL_MATRIX_SCALE_SCALAR_32F;
    case Fp8Granularity::kRow: return CUBLASLT_MATMUL_MATRIX_SCALE_OUTER_VEC_32F;
    case Fp8Granularity::kBlock1x128: return CUBLASLT_MATMUL_MATRIX_SCALE_VEC128_32F;
    case Fp8Granularity::kBlock128x128: return CUBLASLT_MATMUL_MATRIX_SCALE_BLK128x128_32F;
  }
  throw std::invalid_argument("lt_scale_mode: unknown granularity");
}

// The scales of one call (device pointers, fp32): cuBLASLt's A is our b, its B our a.
void set_scale_pointers(LtMatmulDescs& p, const Fp8Tensor& a, const Fp8Tensor& b) {
  p.set(CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, static_cast<const void*>(b.scale_inv.data_ptr()));
  p.set(CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, static_cast<const void*>(a.scale_inv.data_ptr()));
}

using PlanKey = std::tuple<int64_t, int64_t, int64_t, int32_t, bool, int32_t, int>;  // m, n, k, scaling, bias, choice, device

LtGemmPlans<PlanKey>& plans() {
  static LtGemmPlans<PlanKey> p;
  return p;
}

LtGemmCandidates make_plan(const LtContext& lt, LtAlgoChoice choice, int64_t m, int64_t n, int64_t k,
                           Fp8GemmScaling s, const Fp8Tensor& a, const Fp8Tensor& b, const at::Tensor& bias) {
  // cuBLASLt's problem: D(n, m) = op(A)(n, k) · B(k, m), A transposed (TN).
  auto p = std::make_unique<LtMatmulDescs>(CUBLAS_COMPUTE_32F, CUDA_R_8F_E4M3, CUDA_R_16BF, n, m,
                                           k, /*trans_a=*/true, /*trans_b=*/false);
  p->set(CUBLASLT_MATMUL_DESC_A_SCALE_MODE, lt_scale_mode(fp8_b_granularity(s)));
  p->set(CUBLASLT_MATMUL_DESC_B_SCALE_MODE, lt_scale_mode(fp8_a_granularity(s)));
  p->set(CUBLASLT_MATMUL_DESC_FAST_ACCUM, int8_t{0});  // partial sums promoted to fp32
  set_scale_pointers(*p, a, b);  // the heuristic wants pointers set for vector/block modes
  if (bias.defined()) {  // D(n, m) column-major: a bias of n values broadcast over its m columns
    p->set(CUBLASLT_MATMUL_DESC_EPILOGUE, CUBLASLT_EPILOGUE_BIAS);
    p->set(CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, static_cast<int32_t>(CUDA_R_16BF));
    p->set(CUBLASLT_MATMUL_DESC_BIAS_POINTER, static_cast<const void*>(bias.data_ptr()));
  }

  auto algos = lt_heuristic_algos(lt, *p, lt_candidate_count(choice));
  TORCH_CHECK(!algos.empty(), "gemm_fp8_cublaslt: cuBLASLt returned no algorithm for e4m3 M=", m, " N=", n,
              " K=", k, " with ", fp8_gemm_scaling_name(s), " scaling", bias.defined() ? " and a bf16 bias" : "",
              " (cuBLASLt ", cublasLtGetVersion(), ")");
  return {std::move(p), std::move(algos)};
}
#endif

}  // namespace

std::string gemm_fp8_unsupported(const std::string& impl, Fp8GemmScaling s, c10::Device device) {
  if (impl != "cublaslt" && impl != "cublaslt_search" && impl != "torch")
    return "unknown FP8 GEMM implementation '" + impl + "'";
  if (impl == "torch" && s == Fp8GemmScaling::kBlock)
    return "no block-scaled peer: LibTorch 2.11's _scaled_mm gave wrong results (relative error "
           "0.1 to 1e31) with the 1x128 and 128x128 scale layouts its checks accept (H200, "
           "2026-11-27)";
  if (!device.is_cuda()) return "FP8 GEMMs run on a CUDA GPU";
#ifdef GPTBENCH_WITH_CUDA
  const cudaDeviceProp* prop = at::cuda::getDeviceProperties(device.index());
  const int cc = prop->major * 10 + prop->minor;
  const std::string has = ", this GPU has " + std::to_string(prop->major) + "." + std::to_string(prop->minor);
  if (cc < 89) return "e4m3 tensor cores need compute capability 8.9 or later" + has;
  // cuBLAS documents outer-vector and 128-block FP8 scales for Hopper; LibTorch falls back to
  // its own row-wise kernel elsewhere, not for blocks.
  const bool hopper_only = s == Fp8GemmScaling::kBlock || (s == Fp8GemmScaling::kRow && impl != "torch");
  if (hopper_only && cc != 90)
    return std::string(impl == "torch" ? "LibTorch's" : "cuBLASLt's") + " " + fp8_gemm_scaling_name(s) +
           "-scaled FP8 GEMM runs on compute capability 9.0 (Hopper)" + has;
  return "";
#else
  return "this build has no CUDA support";
#endif
}

void gemm_fp8_cublaslt(const Fp8Tensor& a, const Fp8Tensor& b, Fp8GemmScaling s, at::Tensor& c,
                       const at::Tensor& bias, LtAlgoChoice choice) {
  check_operands("gemm_fp8_cublaslt", a, b, s, c);
  if (bias.defined() && (bias.dim() != 1 || bias.size(0) != b.data.size(0) || bias.scalar_type() != at::kBFloat16 ||
                         !bias.is_contiguous() || bias.device() != c.device()))
    throw std::invalid_argument("gemm_fp8_cublaslt: bias must be a contiguous bf16 (" +
                                std::to_string(b.data.size(0)) + ") tensor on c's device, got " +
                                c10::str(bias.sizes()) + " " + std::string(c10::toString(bias.scalar_type())));
  if (auto why = gemm_fp8_unsupported("cublaslt", s, c.device()); !why.empty())
    throw std::invalid_argument("gemm_fp8_cublaslt: " + why);
#ifdef GPTBENCH_WITH_CUDA
  const int64_t m = a.data.size(0), n = b.data.size(0), k = a.data.size(1);
  const int dev = c.get_device();
  // cuBLASLt's A is our b, its B our a (make_plan).
  const PlanKey key{m, n, k, static_cast<int32_t>(s), bias.defined(), static_cast<int32_t>(choice), dev};
  plans().run(
      key, dev, choice, [&](const LtContext& lt) { return make_plan(lt, choice, m, n, k, s, a, b, bias); },
      [&](LtMatmulDescs& p) {
        set_scale_pointers(p, a, b);
        if (bias.defined()) p.set(CUBLASLT_MATMUL_DESC_BIAS_POINTER, static_cast<const void*>(bias.data_ptr()));
      },
      b.data.data_ptr(), a.data.data_ptr(), c.data_ptr());
#endif
}

Fp8ScaledMmArgs scaled_mm_args(const Fp8Tensor& a, const Fp8Tensor& b, Fp8GemmScaling s) {
  const int64_t n = b.data.size(0), k = a.data.size(1);
  Fp8ScaledMmArgs r{a.data, b.data.t(), a.scale_inv, b.scale_inv};
  switch (s) {
    case Fp8GemmScaling::kTensor: break;  // one-element scales
    case Fp8GemmScaling::kRow:            // scale_a (M, 1), scale_b (1, N)
      r.scale_b = b.scale_inv.reshape({1, n});
      break;
    case Fp8GemmScaling::kBlock:
      // scale_a (M, K/128) with M fastest: our (K/128, M) transposed. scale_b (K/128, N/128)
      // whose transpose is row-major (N/128, K/128): ours without the padding to 4.
      r.scale_a = a.scale_inv.t();
      r.scale_b = b.scale_inv.narrow(1, 0, fp8_blocks(k)).contiguous().t();
      break;
  }
  return r;
}

void gemm_fp8_torch(const Fp8ScaledMmArgs& args, at::Tensor& c) {
  at::_scaled_mm_out(c, args.mat1, args.mat2, args.scale_a, args.scale_b, std::nullopt,
                     std::nullopt, at::kBFloat16, /*use_fast_accum=*/false);
}

at::Tensor gemm_fp8_reference(const Fp8Tensor& a, const Fp8Tensor& b, const at::Tensor& rows) {
  return at::matmul(dequantize_fp8(a, rows), dequantize_fp8(b).t());
}

int64_t gemm_fp8_cache_size() {
#ifdef GPTBENCH_WITH_CUDA
  return plans().size();
#else
  return 0;
#endif
}

}  // namespace gptbench
