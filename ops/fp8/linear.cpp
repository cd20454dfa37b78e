// The FP8 linear layer (ops/fp8/linear.h). Our backward GEMMs take dŶ in e5m2, which
// gemm_fp8_cublaslt (e4m3 only) does not: gemm_per_tensor below is its per-tensor TN call with
// each operand's layout typed by its format, in the same row-major/column-major swap
// (ops/fp8/gemm.cpp): cuBLASLt's A is our b, its B our a.
#include "ops/fp8/linear.h"

#include <initializer_list>
#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <tuple>
#include <utility>

#include "ops/fp8/gemm.h"

#ifdef GPTBENCH_WITH_CUDA
#include <ATen/cuda/CUDAContext.h>

#include "ops/cublaslt_device.h"
#include "ops/cuda_check.h"
#endif

namespace gptbench {
namespace {

// One K-major FP8 operand with its per-tensor dequantization scale.
struct Operand {
  const at::Tensor& data;       // (rows, K) e4m3 or e5m2
  const at::Tensor& scale_inv;  // one fp32
};

Fp8Format format_of(const at::Tensor& t) {
  if (t.scalar_type() == at::kFloat8_e4m3fn) return Fp8Format::kE4m3;
  if (t.scalar_type() == at::kFloat8_e5m2) return Fp8Format::kE5m2;
  throw std::invalid_argument("linear: FP8 operands are float8_e4m3fn or float8_e5m2, got " +
                              std::string(c10::toString(t.scalar_type())));
}

void check_gemm(const Operand& a, const Operand& b, const at::Tensor& c) {
  for (const Operand* o : {&a, &b})
    if (!o->data.defined() || o->data.dim() != 2 || !o->data.is_contiguous() || !o->scale_inv.defined() ||
        o->scale_inv.numel() != 1 || o->scale_inv.scalar_type() != at::kFloat ||
        o->data.device() != c.device() || o->scale_inv.device() != c.device())
      throw std::invalid_argument("linear: FP8 operands must be contiguous 2-D tensors with one fp32 "
                                  "scale, on the output's device (run linear_forward with for_backward "
                                  "before linear_backward)");
  if (format_of(a.data) == Fp8Format::kE5m2 && format_of(b.data) == Fp8Format::kE5m2)
    throw std::invalid_argument("linear: e5m2 x e5m2 is not an FP8 GEMM cuBLASLt offers");
  const int64_t m = a.data.size(0), n = b.data.size(0), k = a.data.size(1);
  if (b.data.size(1) != k || !c.defined() || c.scalar_type() != at::kBFloat16 || !c.is_contiguous() ||
      c.dim() != 2 || c.size(0) != m || c.size(1) != n)
    throw std::invalid_argument("linear: a (M, K), b (N, K) and a contiguous bf16 c (M, N) expected, got " +
                                c10::str(a.data.sizes()) + ", " + c10::str(b.data.sizes()) + ", " +
                                c10::str(c.sizes()));
  if (k % 16 != 0 || n % 8 != 0)
    throw std::invalid_argument("linear: the reduction must be a multiple of 16 and the output's columns "
                                "of 8, got " + std::to_string(k) + " and " + std::to_string(n));
}

#ifdef GPTBENCH_WITH_CUDA
cudaDataType_t lt_type(Fp8Format f) { return f == Fp8Format::kE4m3 ? CUDA_R_8F_E4M3 : CUDA_R_8F_E5M2; }

using PlanKey = std::tuple<int64_t, int64_t, int64_t, int32_t, int32_t, int>;  // m, n, k, formats, device

LtGemmPlans<PlanKey>& plans() {
  static LtGemmPlans<PlanKey> p;
  return p;
}

void set_scale_pointers(LtMatmulDescs& p, const Operand& a, const Operand& b) {
  p.set(CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, static_cast<const void*>(b.scale_inv.data_ptr()));
  p.set(CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, static_cast<const void*>(a.scale_inv.data_ptr()));
}

LtGemmCandidates make_plan(const LtContext& lt, int64_t m, int64_t n, int64_t k, const Operand& a, const Operand& b) {
  // D(n, m) = op(A)(n, k) · B(k, m), A transposed (TN); A typed as b, then B retyped as a.
  auto p = std::make_unique<LtMatmulDescs>(CUBLAS_COMPUTE_32F, lt_type(format_of(b.data)), CUDA_R_16BF, n, m,
                                           k, /*trans_a=*/true, /*trans_b=*/false);
  const uint32_t b_type = lt_type(format_of(a.data));
  CUBLAS_CHECK(cublasLtMatrixLayoutSetAttribute(p->b, CUBLASLT_MATRIX_LAYOUT_TYPE, &b_type, sizeof(b_type)));
  p->set(CUBLASLT_MATMUL_DESC_A_SCALE_MODE, int32_t{CUBLASLT_MATMUL_MATRIX_SCALE_SCALAR_32F});
  p->set(CUBLASLT_MATMUL_DESC_B_SCALE_MODE, int32_t{CUBLASLT_MATMUL_MATRIX_SCALE_SCALAR_32F});
  p->set(CUBLASLT_MATMUL_DESC_FAST_ACCUM, int8_t{0});  // partial sums promoted to fp32
  set_scale_pointers(*p, a, b);

  auto algos = lt_heuristic_algos(lt, *p, lt_candidate_count(LtAlgoChoice::kHeuristic));
  TORCH_CHECK(!algos.empty(), "linear: cuBLASLt returned no algorithm for ",
              fp8_format_name(format_of(a.data)), " x ", fp8_format_name(format_of(b.data)), " M=", m, " N=", n,
              " K=", k, " (cuBLASLt ", cublasLtGetVersion(), ")");
  return {std::move(p), std::move(algos)};
}
#endif

// c (M, N) = Â·B̂ᵀ, a (M, K) and b (N, K) K-major, per-tensor scales, fp32 accumulation.
void gemm_per_tensor(const Operand& a, const Operand& b, at::Tensor& c) {
  check_gemm(a, b, c);
#ifdef GPTBENCH_WITH_CUDA
  const int64_t m = a.data.size(0), n = b.data.size(0), k = a.data.size(1);
  const int dev = c.get_device();
  const PlanKey key{m, n, k, static_cast<int32_t>(format_of(a.data)), static_cast<int32_t>(format_of(b.data)), dev};
  plans().run(
      key, dev, LtAlgoChoice::kHeuristic, [&](const LtContext& lt) { return make_plan(lt, m, n, k, a, b); },
      [&](LtMatmulDescs& p) { set_scale_pointers(p, a, b); }, b.data.data_ptr(), a.data.data_ptr(), c.data_ptr());
#else
  throw std::invalid_argument("linear: this build has no CUDA support");
#endif
}

// c = Â·B̂ᵀ through at::_scaled_mm: b's K-major storage is its mat2 (K, N), column-major.
void scaled_mm(const Operand& a, const Operand& b, at::Tensor& c) {
  at::_scaled_mm_out(c, a.data, b.data.t(), a.scale_inv, b.scale_inv, std::nullopt, std::nullopt,
                     at::kBFloat16, /*use_fast_accum=*/false);
}

// The layer's bf16 tensors: x (M, K), w (N, K), then y (M, N) or dy, dx, dw, on one device.
void check_bf16(std::initializer_list<std::pair<const char*, const at::Tensor*>> named) {
  for (const auto& [what, t] : named)
    if (!t->defined() || t->scalar_type() != at::kBFloat16 || t->dim() != 2)
      throw std::invalid_argument(std::string("linear: ") + what + " must be a 2-D bf16 tensor");
}
void check_shape(const char* what, const at::Tensor& t, int64_t rows, int64_t cols, const at::Tensor& like) {
  if (t.size(0) != rows || t.size(1) != cols || t.device() != like.device())
    throw std::invalid_argument(std::string("linear: ") + what + " must be (" + std::to_string(rows) + ", " +
                                std::to_string(cols) + ") on " + like.device().str() + ", got " +
                                c10::str(t.sizes()) + " on " + t.device().str());
}

}  // namespace

std::string linear_unsupported(LinearImpl impl, c10::Device device) {
  if (!device.is_cuda())
    return "the FP8 linear layer and its bf16 twin run on a CUDA GPU (this device: " + device.str() + ")";
  if (linear_is_fp8(impl))
    return gemm_fp8_unsupported(impl == LinearImpl::kFp8 ? "cublaslt" : "torch", Fp8GemmScaling::kTensor, device);
  return "";
}

void linear_forward(LinearImpl impl, const at::Tensor& x, const at::Tensor& w, at::Tensor& y,
                    Fp8LinearSaved& saved, bool for_backward, Fp8LinearScales* delayed) {
  check_bf16({{"x", &x}, {"w", &w}, {"y", &y}});
  check_shape("w", w, w.size(0), x.size(1), x);
  check_shape("y", y, x.size(0), w.size(0), x);
  if (auto why = linear_unsupported(impl, y.device()); !why.empty())
    throw std::invalid_argument("linear_forward: " + why);
  if (delayed != nullptr && impl != LinearImpl::kFp8)
    throw std::invalid_argument("linear_forward: delayed scaling is kFp8's");
  const Fp8Copies copies = for_backward ? Fp8Copies::kBoth : Fp8Copies::kPlain;
  switch (impl) {
    case LinearImpl::kFp8:
      linear_forward_fp8(quantize_per_tensor_fp8(x, Fp8Format::kE4m3, copies, delayed ? &delayed->x : nullptr), w,
                         y, saved, for_backward, {}, delayed ? &delayed->w : nullptr);
      break;
    case LinearImpl::kScaledMm:
      saved.x = quantize_per_tensor_fp8_torch(x, Fp8Format::kE4m3, copies);
      saved.w = quantize_per_tensor_fp8_torch(w, Fp8Format::kE4m3, copies);
      scaled_mm({saved.x.data, saved.x.scale_inv}, {saved.w.data, saved.w.scale_inv}, y);
      break;
    case LinearImpl::kTorchBf16:
      at::linear_out(y, x, w);
      break;
  }
}

void linear_forward_fp8(Fp8PerTensor xq, const at::Tensor& w, at::Tensor& y, Fp8LinearSaved& saved,
                        bool for_backward, const at::Tensor& bias, Fp8DelayedScale* w_delayed) {
  check_bf16({{"w", &w}, {"y", &y}});
  if (auto why = linear_unsupported(LinearImpl::kFp8, y.device()); !why.empty())
    throw std::invalid_argument("linear_forward_fp8: " + why);
  if (!xq.data.defined() || xq.format != Fp8Format::kE4m3 || xq.data.dim() != 2 ||
      (for_backward && !xq.data_t.defined()))
    throw std::invalid_argument("linear_forward_fp8: x must be quantized to e4m3 with its plain copy (and its "
                                "transposed one for a backward)");
  check_shape("w", w, w.size(0), xq.data.size(1), y);
  check_shape("y", y, xq.data.size(0), w.size(0), y);
  saved.x = std::move(xq);
  const Fp8Copies copies = for_backward ? Fp8Copies::kBoth : Fp8Copies::kPlain;
  saved.w = quantize_per_tensor_fp8(w, Fp8Format::kE4m3, copies, w_delayed);
  gemm_fp8_cublaslt({saved.x.data, saved.x.scale_inv, Fp8Granularity::kTensor},
                    {saved.w.data, saved.w.scale_inv, Fp8Granularity::kTensor}, Fp8GemmScaling::kTensor, y,
                    bias);
}

void linear_backward(LinearImpl impl, const at::Tensor& dy, const at::Tensor& x, const at::Tensor& w,
                     Fp8LinearSaved& saved, at::Tensor& dx, at::Tensor& dw, Fp8DelayedScale* dy_delayed) {
  check_bf16({{"dy", &dy}, {"x", &x}, {"w", &w}, {"dx", &dx}, {"dw", &dw}});
  check_shape("dy", dy, x.size(0), w.size(0), x);
  check_shape("dx", dx, x.size(0), x.size(1), x);
  check_shape("dw", dw, w.size(0), x.size(1), x);
  if (auto why = linear_unsupported(impl, dx.device()); !why.empty())
    throw std::invalid_argument("linear_backward: " + why);
  if (dy_delayed != nullptr && impl != LinearImpl::kFp8)
    throw std::invalid_argument("linear_backward: delayed scaling is kFp8's");
  switch (impl) {
    case LinearImpl::kFp8:
      saved.dy = quantize_per_tensor_fp8(dy, Fp8Format::kE5m2, Fp8Copies::kBoth, dy_delayed);
      gemm_per_tensor({saved.dy.data, saved.dy.scale_inv}, {saved.w.data_t, saved.w.scale_inv}, dx);
      gemm_per_tensor({saved.dy.data_t, saved.dy.scale_inv}, {saved.x.data_t, saved.x.scale_inv}, dw);
      break;
    case LinearImpl::kScaledMm:
      saved.dy = quantize_per_tensor_fp8_torch(dy, Fp8Format::kE5m2, Fp8Copies::kBoth);
      check_gemm({saved.dy.data, saved.dy.scale_inv}, {saved.w.data_t, saved.w.scale_inv}, dx);
      check_gemm({saved.dy.data_t, saved.dy.scale_inv}, {saved.x.data_t, saved.x.scale_inv}, dw);
      scaled_mm({saved.dy.data, saved.dy.scale_inv}, {saved.w.data_t, saved.w.scale_inv}, dx);
      scaled_mm({saved.dy.data_t, saved.dy.scale_inv}, {saved.x.data_t, saved.x.scale_inv}, dw);
      break;
    case LinearImpl::kTorchBf16:
      at::mm_out(dx, dy, w);
      at::mm_out(dw, dy.t(), x);
      break;
  }
}

LinearReference linear_reference(const at::Tensor& x, const at::Tensor& w, const at::Tensor& dy,
                                 const at::Tensor& rows_m, const at::Tensor& rows_n) {
  LinearReference ref{at::matmul(x.index_select(0, rows_m), w.t()), {}, {}};
  if (dy.defined()) {
    ref.dx = at::matmul(dy.index_select(0, rows_m), w);
    ref.dw = at::matmul(dy.index_select(1, rows_n).t(), x);
  }
  return ref;
}

}  // namespace gptbench
