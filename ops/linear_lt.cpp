// cuBLASLt GEMMs with epilogues for Linear layers (ops/linear_lt.h). As in gemm_cublaslt.cpp, a
// row-major matrix stored (r, c) is cuBLASLt's column-major (c, r) with leading dimension c, so
// the row-major y(N, out) = x·wᵀ is the column-major yᵀ(out, N) = w(in,out)ᵀ·xᵀ(in, N): cuBLASLt
// sees m = out, n = N, and its "rows of D" (where BIAS adds) are our features. The weight
// gradient dwᵀ(in, out) = xᵀ(in, N)·dy with B = dy stored (out, N), op T, k = N (the
// TransformerEngine / apex wgrad layout: transa N, transb T), written in fp32 (C = D, beta 1 to
// accumulate). Bias gradients are not taken from the BGRADB epilogue: on H200 (cuBLAS 13.0) it
// ran as a separate kernel after the GEMM (globalKernelBgradAB) at about half of copy bandwidth,
// 3.2 ms of an 85 ms GPT-2 medium step; fused_linear.cpp takes them from ops/column_sum.h. DGELU_BGRAD is not used either: its bf16 bias gradient was off by up to 2.7% of
// an element (0.7% of the rms) for GPT-2 small's c_fc, as if partial sums were rounded to bf16.
#include "ops/linear_lt.h"

#include <stdexcept>
#include <string>

#ifdef GPTBENCH_WITH_CUDA
#include <ATen/cuda/CUDAContext.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <tuple>
#include <vector>

#include "ops/column_sum.h"
#include "ops/cublaslt_device.h"
#include "ops/cuda_check.h"
#include "ops/device/attributes.h"
#include "ops/device/elem_type_torch.h"
#include "ops/gemm_carveout.h"

namespace gptbench {
namespace {

enum class Epi : int { kNone, kBias, kGeluAuxBias, kDGelu };

cublasLtEpilogue_t lt_epilogue(Epi e) {
  switch (e) {
    case Epi::kNone: return CUBLASLT_EPILOGUE_DEFAULT;
    case Epi::kBias: return CUBLASLT_EPILOGUE_BIAS;
    case Epi::kGeluAuxBias: return CUBLASLT_EPILOGUE_GELU_AUX_BIAS;
    case Epi::kDGelu: return CUBLASLT_EPILOGUE_DGELU;
  }
  return CUBLASLT_EPILOGUE_DEFAULT;
}

// One GEMM in cuBLASLt's column-major terms: D(m, n) = op(A)(m, k)·op(B)(k, n) (+ D when beta
// is 1), A and B bf16, D bf16 or fp32.
struct LtCall {
  int64_t m, n, k;
  bool trans_a, trans_b;
  const void* a;
  const void* b;
  void* d;
  Epi epi;
  void* bias;                // bias (read); null for DGELU and the weight gradient
  cudaDataType_t bias_type;  // CUDA_R_16BF or CUDA_R_32F
  void* aux = nullptr;       // GELU input (m, n), ld m: written by GELU_AUX_BIAS, read by DGELU
  cudaDataType_t d_type = CUDA_R_16BF;
  float beta = 0.0f;
};

// Largest power of two (<= 256) dividing the address.
int alignment(const void* p) {
  const auto v = reinterpret_cast<uintptr_t>(p);
  int a = 256;
  while (a > 1 && v % a != 0) a /= 2;
  return a;
}

int call_alignment(const LtCall& c) {
  int a = std::min({alignment(c.a), alignment(c.b), alignment(c.d), alignment(c.bias)});
  return c.aux ? std::min(a, alignment(c.aux)) : a;
}

// (m, n, k, trans_a, trans_b, epilogue, bias type, D type, alignment, device, SM carveout)
using PlanKey = std::tuple<int64_t, int64_t, int64_t, bool, bool, int, int, int, int, int, int>;

// Descriptors of one problem and its algorithm; the pointers are set per call.
struct LtPlan : LtMatmulDescs {
  cublasLtMatmulAlgo_t algo{};

  LtPlan(const LtCall& c, int carveout)
      : LtMatmulDescs(CUBLAS_COMPUTE_32F, CUDA_R_16BF, c.d_type, c.m, c.n, c.k, c.trans_a,
                      c.trans_b) {
    set(CUBLASLT_MATMUL_DESC_EPILOGUE, lt_epilogue(c.epi));
    if (carveout > 0) set(CUBLASLT_MATMUL_DESC_SM_COUNT_TARGET, static_cast<int32_t>(sm_count() - carveout));
    if (c.epi != Epi::kNone) set(CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, static_cast<int32_t>(c.bias_type));
    if (c.aux) set(CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD, c.m);
    set_pointers(c);
  }

  void set_pointers(const LtCall& c) {
    if (c.bias) set(CUBLASLT_MATMUL_DESC_BIAS_POINTER, c.bias);
    if (c.aux) set(CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, c.aux);
  }

  // The heuristic's choices, best first, for operands aligned to `align` bytes (at most
  // `most`); empty when cuBLASLt has none for this combination (an unsupported epilogue / bias
  // type, say).
  std::vector<cublasLtMatmulAlgo_t> candidates(cublasLtHandle_t h, int align, int most) {
    cublasLtMatmulPreference_t pref;
    CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&pref));
    const size_t ws = kLtWorkspaceBytes;
    const uint32_t al = static_cast<uint32_t>(align);
    CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(
        pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof(ws)));
    for (auto attr : {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES,
                      CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
                      CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES,
                      CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES})
      CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(pref, attr, &al, sizeof(al)));
    // Split-K only with its partial sums reduced in fp32: the in-place and output-type schemes
    // add them in bf16, a rounding per split (DGELU at 37 × 256 × 64 on an H200 was 6 bf16 ulps
    // off where the tuning picked one, 2026-11-26).
    const uint32_t schemes = CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE;
    CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(
        pref, CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK, &schemes, sizeof(schemes)));
    std::vector<cublasLtMatmulHeuristicResult_t> res(static_cast<size_t>(most));
    int found = 0;
    const cublasStatus_t st =
        cublasLtMatmulAlgoGetHeuristic(h, op, a, b, d, d, pref, most, res.data(), &found);
    cublasLtMatmulPreferenceDestroy(pref);
    std::vector<cublasLtMatmulAlgo_t> out;
    if (st != CUBLAS_STATUS_SUCCESS) return out;
    for (int i = 0; i < found; ++i)
      if (res[i].state == CUBLAS_STATUS_SUCCESS) out.push_back(res[i].algo);
    return out;
  }
};

// Bytes of one element of cuBLASLt type t (the types used here).
size_t lt_element_bytes(cudaDataType_t t) { return t == CUDA_R_32F ? 4 : 2; }

// The fastest of the heuristic's candidates for call c (fastest_option: kTuneRuns runs each, one
// round) on c's inputs into scratch outputs (D, and the GELU aux the epilogue writes): the heuristic's first choice
// is not always the fastest, and a plan is made once per shape, so the timing costs a few
// milliseconds once. The first candidate when there is one, when the stream is capturing a CUDA
// graph (no synchronisation allowed), or when the scratch does not fit in memory.
constexpr int kTuneCandidates = 8;
constexpr int kTuneRuns = 3;
cublasLtMatmulAlgo_t fastest(LtPlan& p, const std::vector<cublasLtMatmulAlgo_t>& cands,
                             const LtCall& c, const LtContext& lt, int dev) {
  cudaStreamCaptureStatus capturing = cudaStreamCaptureStatusNone;
  CUDA_CHECK(cudaStreamIsCapturing(lt.stream, &capturing));
  if (cands.size() == 1 || capturing != cudaStreamCaptureStatusNone) return cands[0];
  at::Tensor d_scratch, aux_scratch;
  const auto bytes = at::TensorOptions().dtype(at::kByte).device(at::kCUDA, dev);
  try {
    d_scratch = at::empty({c.m * c.n * static_cast<int64_t>(lt_element_bytes(c.d_type))}, bytes);
    if (c.epi == Epi::kGeluAuxBias) aux_scratch = at::empty({c.m * c.n * 2}, bytes);
  } catch (const c10::OutOfMemoryError&) {
    return cands[0];
  }
  LtCall t = c;
  t.d = d_scratch.data_ptr();
  if (aux_scratch.defined()) t.aux = aux_scratch.data_ptr();
  p.set_pointers(t);
  const float alpha = 1.0f;
  auto launch = [&](const cublasLtMatmulAlgo_t& algo) {
    return cublasLtMatmul(lt.handle, p.op, &alpha, t.a, p.a, t.b, p.b, &t.beta, t.d, p.d, t.d, p.d,
                          &algo, lt.workspace, kLtWorkspaceBytes, lt.stream);
  };
  std::vector<cublasLtMatmulAlgo_t> usable;  // those cuBLASLt does not refuse for this call
  for (const auto& algo : cands)
    if (launch(algo) == CUBLAS_STATUS_SUCCESS) usable.push_back(algo);
  if (usable.empty()) {
    p.set_pointers(c);
    return cands[0];
  }
  std::vector<std::function<void()>> options;
  for (const auto& algo : usable) options.push_back([&launch, &algo] { CUBLAS_CHECK(launch(algo)); });
  const size_t best = fastest_option(options, lt.stream, kTuneRuns, /*rounds=*/1);
  p.set_pointers(c);
  return usable[best];
}

struct LtState {
  std::mutex mu;
  std::map<int, bool> fp32_bias;  // probe result per device
  std::map<PlanKey, std::unique_ptr<LtPlan>> plans;
};

LtState& lt_state() {
  static LtState s;
  return s;
}

const char* epi_name(Epi e) {
  switch (e) {
    case Epi::kNone: return "DEFAULT";
    case Epi::kBias: return "BIAS";
    case Epi::kGeluAuxBias: return "GELU_AUX_BIAS";
    case Epi::kDGelu: return "DGELU";
  }
  return "?";
}

void run(const LtCall& c, const at::Device& device) {
  const int align = call_alignment(c);
  if (align < 16)
    throw std::invalid_argument(std::string("linear_lt ") + epi_name(c.epi) +
                                ": operands must be 16-byte aligned");
  const int dev = device.index();
  LtState& st = lt_state();
  std::lock_guard<std::mutex> lock(st.mu);
  const LtContext lt = lt_context(dev);
  const int carveout = gemm_sm_carveout();
  PlanKey key{c.m, c.n, c.k, c.trans_a, c.trans_b, static_cast<int>(c.epi),
              static_cast<int>(c.bias_type), static_cast<int>(c.d_type), align, dev, carveout};
  auto it = st.plans.find(key);
  if (it == st.plans.end()) {
    auto plan = std::make_unique<LtPlan>(c, carveout);
    const auto cands = plan->candidates(lt.handle, align, kTuneCandidates);
    if (cands.empty())
      throw std::runtime_error(std::string("linear_lt: no cuBLASLt algorithm for ") +
                               epi_name(c.epi) + " m=" + std::to_string(c.m) +
                               " n=" + std::to_string(c.n) + " k=" + std::to_string(c.k) +
                               (c.bias_type == CUDA_R_32F ? " (fp32 bias)" : " (bf16 bias)"));
    plan->algo = fastest(*plan, cands, c, lt, dev);
    it = st.plans.emplace(key, std::move(plan)).first;
  }
  LtPlan& p = *it->second;
  p.set_pointers(c);
  const float alpha = 1.0f;
  CUBLAS_CHECK(cublasLtMatmul(lt.handle, p.op, &alpha, c.a, p.a, c.b, p.b, &c.beta, c.d, p.d, c.d,
                              p.d, &p.algo, lt.workspace, kLtWorkspaceBytes, lt.stream));
}

// ------------------------------------------------------------------ argument checks

[[noreturn]] void bad(const char* fn, const std::string& what) {
  throw std::invalid_argument(std::string(fn) + ": " + what);
}

void check_matrix(const char* fn, const char* name, const at::Tensor& t) {
  if (!t.defined() || !t.is_cuda() || t.scalar_type() != at::kBFloat16 || t.dim() != 2 ||
      !t.is_contiguous() || t.size(0) < 1)
    bad(fn, std::string(name) + " must be a non-empty 2-d contiguous bf16 CUDA tensor");
}

void check_rows(const char* fn, const char* name, const at::Tensor& t, int64_t rows,
                int64_t cols) {
  check_matrix(fn, name, t);
  if (t.size(0) != rows || t.size(1) != cols)
    bad(fn, std::string(name) + " is " + c10::str(t.sizes()) + ", expected [" +
                std::to_string(rows) + ", " + std::to_string(cols) + "]");
}

void check_features(const char* fn, int64_t in, int64_t out) {
  if (!lt_shape_supported(in, out))
    bad(fn, "feature sizes " + std::to_string(in) + " -> " + std::to_string(out) +
                " must be multiples of 8");
}

cudaDataType_t bias_type(const char* fn, at::ScalarType t) {
  const std::string what = std::string(fn) + ": bias";
  return lt_data_type(check_elem_type(t, {ElemType::kBF16, ElemType::kF32}, what));
}

void check_bias(const char* fn, const at::Tensor& b, int64_t out) {
  if (!b.defined() || !b.is_cuda() || b.dim() != 1 || b.size(0) != out || !b.is_contiguous())
    bad(fn, "bias must be a contiguous CUDA vector of " + std::to_string(out) + " elements");
  bias_type(fn, b.scalar_type());
}

// y = x·wᵀ + b with an optional GELU and its aux; shared by lt_linear and lt_linear_gelu.
void forward(const char* fn, const at::Tensor& x, const at::Tensor& w, const at::Tensor& b,
             at::Tensor& y, at::Tensor* pre) {
  check_matrix(fn, "x", x);
  check_matrix(fn, "w", w);
  const int64_t n = x.size(0), in = x.size(1), out = w.size(0);
  check_rows(fn, "w", w, out, in);
  check_features(fn, in, out);
  check_bias(fn, b, out);
  y = at::empty({n, out}, x.options());
  if (pre) *pre = at::empty({n, out}, x.options());
  LtCall c{out, n, in, /*trans_a=*/true, /*trans_b=*/false, w.data_ptr(), x.data_ptr(),
           y.data_ptr(), pre ? Epi::kGeluAuxBias : Epi::kBias, b.data_ptr(),
           bias_type(fn, b.scalar_type()), pre ? pre->data_ptr() : nullptr};
  run(c, x.device());
}

}  // namespace

at::Tensor lt_linear(const at::Tensor& x, const at::Tensor& w, const at::Tensor& b) {
  at::Tensor y;
  forward("lt_linear", x, w, b, y, nullptr);
  return y;
}

std::pair<at::Tensor, at::Tensor> lt_linear_gelu(const at::Tensor& x, const at::Tensor& w,
                                                 const at::Tensor& b) {
  at::Tensor h, pre;
  forward("lt_linear_gelu", x, w, b, h, &pre);
  return {h, pre};
}

namespace {

void check_dgrad(const char* fn, const at::Tensor& dy, const at::Tensor& w, const at::Tensor* pre) {
  check_matrix(fn, "dy", dy);
  check_matrix(fn, "w", w);
  check_rows(fn, "w", w, dy.size(1), w.size(1));
  if (pre) check_rows(fn, "pre", *pre, dy.size(0), w.size(1));
  check_features(fn, w.size(1), dy.size(1));
}

// d_pre (epilogue DGELU) or dh = dy·w (no epilogue), bf16 (N, in).
at::Tensor dgrad(const char* fn, const at::Tensor& dy, const at::Tensor& w, const at::Tensor* pre) {
  check_dgrad(fn, dy, w, pre);
  const int64_t n = dy.size(0), out = dy.size(1), in = w.size(1);
  auto d = at::empty({n, in}, dy.options());
  LtCall c{in, n, out, /*trans_a=*/false, /*trans_b=*/false, w.data_ptr(), dy.data_ptr(),
           d.data_ptr(), pre ? Epi::kDGelu : Epi::kNone, nullptr, CUDA_R_16BF,
           pre ? pre->data_ptr() : nullptr};
  run(c, dy.device());
  return d;
}

std::pair<at::Tensor, at::Tensor> dgelu_bgrad_by(DgeluPath path, const at::Tensor& dy,
                                                 const at::Tensor& w, const at::Tensor& pre) {
  if (path == DgeluPath::kEpilogue) {
    auto d_pre = dgrad("lt_dgelu_bgrad", dy, w, &pre);
    return {d_pre, column_sum(d_pre)};
  }
  return gelu_backward_column_sum(dgrad("lt_dgelu_bgrad", dy, w, nullptr), pre);
}

// The faster path per (N, in, out, device), chosen on the shape's first call outside a capture
// that has memory to time both.
DgeluPath fastest_dgelu_path(const at::Tensor& dy, const at::Tensor& w, const at::Tensor& pre) {
  static std::mutex mu;
  static std::map<std::tuple<int64_t, int64_t, int64_t, int>, DgeluPath> chosen;
  const auto key = std::make_tuple(dy.size(0), w.size(1), w.size(0), dy.device().index());
  {
    std::lock_guard<std::mutex> lock(mu);
    if (auto it = chosen.find(key); it != chosen.end()) return it->second;
  }
  const cudaStream_t stream = at::cuda::getCurrentCUDAStream(dy.device().index()).stream();
  cudaStreamCaptureStatus capturing = cudaStreamCaptureStatusNone;
  CUDA_CHECK(cudaStreamIsCapturing(stream, &capturing));
  if (capturing != cudaStreamCaptureStatusNone) return DgeluPath::kEpilogue;
  constexpr DgeluPath kPaths[] = {DgeluPath::kEpilogue, DgeluPath::kSeparate};
  DgeluPath best = DgeluPath::kEpilogue;
  try {
    std::vector<std::function<void()>> options;
    for (DgeluPath p : kPaths) options.push_back([&, p] { (void)dgelu_bgrad_by(p, dy, w, pre); });
    best = kPaths[fastest_option(options, stream, kTuneRuns, /*rounds=*/1)];
  } catch (const c10::OutOfMemoryError&) {  // no room to time both: decide on a later call
    return DgeluPath::kEpilogue;
  }
  std::lock_guard<std::mutex> lock(mu);
  chosen.emplace(key, best);
  return best;
}

}  // namespace

at::Tensor lt_dgelu(const at::Tensor& dy, const at::Tensor& w, const at::Tensor& pre) {
  return dgrad("lt_dgelu", dy, w, &pre);
}

std::pair<at::Tensor, at::Tensor> lt_dgelu_bgrad(const at::Tensor& dy, const at::Tensor& w,
                                                 const at::Tensor& pre, DgeluPath path) {
  if (path == DgeluPath::kFastest) {
    check_dgrad("lt_dgelu_bgrad", dy, w, &pre);  // before any timing
    path = fastest_dgelu_path(dy, w, pre);
  }
  return dgelu_bgrad_by(path, dy, w, pre);
}

void lt_wgrad(const at::Tensor& dy, const at::Tensor& x, const at::Tensor& dw, bool accumulate) {
  const char* fn = "lt_wgrad";
  check_matrix(fn, "dy", dy);
  check_matrix(fn, "x", x);
  const int64_t n = dy.size(0), out = dy.size(1), in = x.size(1);
  check_rows(fn, "x", x, n, in);
  check_features(fn, in, out);
  if (!dw.defined() || !dw.is_cuda() || dw.scalar_type() != at::kFloat || !dw.is_contiguous() ||
      dw.dim() != 2 || dw.size(0) != out || dw.size(1) != in || dw.device() != dy.device())
    bad(fn, "dw must be a contiguous fp32 (" + std::to_string(out) + ", " + std::to_string(in) +
                ") tensor on dy's device");
  LtCall c{in, out, n, /*trans_a=*/false, /*trans_b=*/true, x.data_ptr(), dy.data_ptr(),
           dw.data_ptr(), Epi::kNone, nullptr, CUDA_R_32F, nullptr, CUDA_R_32F,
           accumulate ? 1.0f : 0.0f};
  run(c, dy.device());
}

bool lt_fp32_bias_supported() {
  const int dev = c10::cuda::current_device();
  LtState& st = lt_state();
  std::lock_guard<std::mutex> lock(st.mu);
  auto it = st.fp32_bias.find(dev);
  if (it != st.fp32_bias.end()) return it->second;
  // Heuristic queries only (no launch): a 64³ problem per epilogue with 256-byte aligned
  // pointers into one scratch buffer (the heuristic reads their alignment, not their data).
  auto scratch = at::empty({1 << 16}, at::TensorOptions().dtype(at::kByte).device(at::kCUDA, dev));
  char* p = static_cast<char*>(scratch.data_ptr());
  cublasLtHandle_t h = lt_device(dev).handle;
  bool ok = true;
  for (Epi e : {Epi::kBias, Epi::kGeluAuxBias}) {
    LtCall c{64, 64, 64, /*trans_a=*/true, /*trans_b=*/false, p, p + 8192, p + 16384, e,
             p + 24576, CUDA_R_32F, e == Epi::kGeluAuxBias ? p + 32768 : nullptr};
    try {
      LtPlan plan(c, /*carveout=*/0);
      ok = ok && !plan.candidates(h, 256, 1).empty();
    } catch (const CudaError&) {  // the descriptor refused the attribute
      ok = false;
    }
  }
  st.fp32_bias[dev] = ok;
  return ok;
}

int64_t lt_plan_cache_size() {
  std::lock_guard<std::mutex> lock(lt_state().mu);
  return static_cast<int64_t>(lt_state().plans.size());
}

}  // namespace gptbench

#else  // no CUDA

namespace gptbench {
namespace {
[[noreturn]] void no_cuda(const char* fn) {
  throw std::runtime_error(std::string(fn) + ": this build has no CUDA support");
}
}  // namespace

bool lt_fp32_bias_supported() { return false; }
at::Tensor lt_linear(const at::Tensor&, const at::Tensor&, const at::Tensor&) {
  no_cuda("lt_linear");
}
std::pair<at::Tensor, at::Tensor> lt_linear_gelu(const at::Tensor&, const at::Tensor&,
                                                 const at::Tensor&) {
  no_cuda("lt_linear_gelu");
}
std::pair<at::Tensor, at::Tensor> lt_dgelu_bgrad(const at::Tensor&, const at::Tensor&,
                                                 const at::Tensor&, DgeluPath) {
  no_cuda("lt_dgelu_bgrad");
}
at::Tensor lt_dgelu(const at::Tensor&, const at::Tensor&, const at::Tensor&) {
  no_cuda("lt_dgelu");
}
void lt_wgrad(const at::Tensor&, const at::Tensor&, const at::Tensor&, bool) { no_cuda("lt_wgrad"); }
int64_t lt_plan_cache_size() { return 0; }

}  // namespace gptbench
#endif  // GPTBENCH_WITH_CUDA
