// Our cuBLASLt GEMM. Row-major C(M,N) = op(A)·op(B) is computed as the column-major product
// Cᵀ(N,M) = op(B)ᵀ·op(A)ᵀ, so B is cuBLASLt's first operand and A its second; a row-major
// matrix stored (r, c) is the column-major matrix (c, r) with leading dimension c.
#ifdef GPTBENCH_WITH_CUDA
#include <ATen/cuda/CUDAContext.h>

#include <algorithm>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <tuple>
#include <vector>

#include "ops/cublaslt_device.h"
#include "ops/cuda_check.h"
#include "ops/device/elem_type_torch.h"
#include "ops/gemm.h"

namespace gptbench {
namespace {

struct LtTypes {
  cudaDataType_t data;
  cublasComputeType_t compute;
};

LtTypes lt_types(at::ScalarType t, bool tf32) {
  const ElemType e = check_elem_type(t, {ElemType::kF32, ElemType::kBF16, ElemType::kF16},
                                     "gemm_cublaslt");
  const bool fast = e == ElemType::kF32 && tf32;
  return {lt_data_type(e), fast ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F};
}

// Descriptors for one problem: the column-major Cᵀ(N,M) = op(B)ᵀ·op(A)ᵀ, so cuBLASLt's A is our
// B and its B our A (see the top of this file).
std::unique_ptr<LtMatmulDescs> make_problem(int64_t m, int64_t n, int64_t k, const GemmArgs& args,
                                            LtTypes ty) {
  return std::make_unique<LtMatmulDescs>(ty.compute, ty.data, n, m, k, args.trans_b, args.trans_a);
}

using AlgoKey = std::tuple<int64_t, int64_t, int64_t, bool, bool, bool, int, bool, int>;

struct LtState {
  std::mutex mu;
  std::map<AlgoKey, LtGemmPlan> algos;  // descriptors and algorithm, per problem
};

LtState& lt_state() {
  static LtState s;
  return s;
}

void launch(cublasLtHandle_t h, const LtMatmulDescs& p, const cublasLtMatmulAlgo_t* algo,
            const at::Tensor& a, const at::Tensor& b, at::Tensor& c, void* ws,
            cudaStream_t stream) {
  const float alpha = 1.0f, beta = 0.0f;
  CUBLAS_CHECK(cublasLtMatmul(h, p.op, &alpha, b.data_ptr(), p.a, a.data_ptr(), p.b,
                              &beta, c.data_ptr(), p.d, c.data_ptr(), p.d, algo, ws,
                              kLtWorkspaceBytes, stream));
}

}  // namespace

void gemm_cublaslt(const at::Tensor& a, const at::Tensor& b, at::Tensor& c, const GemmArgs& args,
                   bool search_algos) {
  TORCH_CHECK(a.is_cuda() && b.is_cuda() && c.is_cuda(), "gemm_cublaslt: tensors must be on CUDA");
  TORCH_CHECK(a.dim() == 2 && b.dim() == 2 && a.is_contiguous() && b.is_contiguous() &&
                  c.is_contiguous(),
              "gemm_cublaslt: 2-d contiguous operands expected");
  TORCH_CHECK(a.scalar_type() == b.scalar_type() && a.scalar_type() == c.scalar_type(),
              "gemm_cublaslt: operands must share one dtype");
  const int64_t m = args.trans_a ? a.size(1) : a.size(0);
  const int64_t k = args.trans_a ? a.size(0) : a.size(1);
  const int64_t n = args.trans_b ? b.size(0) : b.size(1);
  TORCH_CHECK((args.trans_b ? b.size(1) : b.size(0)) == k, "gemm_cublaslt: inner dimensions differ");
  TORCH_CHECK(c.size(0) == m && c.size(1) == n, "gemm_cublaslt: output must be (M, N)");

  const LtTypes ty = lt_types(a.scalar_type(), args.tf32);
  const int dev = a.get_device();
  LtState& st = lt_state();
  std::lock_guard<std::mutex> lock(st.mu);
  const LtContext lt = lt_context(dev);

  AlgoKey key{m, n, k, args.trans_a, args.trans_b, args.tf32, static_cast<int>(a.scalar_type()),
              search_algos, dev};
  auto it = st.algos.find(key);
  if (it == st.algos.end()) {
    auto problem = make_problem(m, n, k, args, ty);
    const LtMatmulDescs& p = *problem;
    const LtAlgoChoice choice = search_algos ? LtAlgoChoice::kSearch : LtAlgoChoice::kHeuristic;
    const auto cands = lt_heuristic_algos(lt, p, lt_candidate_count(choice));
    TORCH_CHECK(!cands.empty(), "gemm_cublaslt: no cuBLASLt algorithm for M=", m, " N=", n, " K=", k);
    // The search's candidates include the heuristic's first, so it can lose to it only by noise.
    const cublasLtMatmulAlgo_t algo =
        lt_choose_algo(lt, cands, choice,
                       [&](const cublasLtMatmulAlgo_t& cand) { launch(lt.handle, p, &cand, a, b, c, lt.workspace, lt.stream); });
    it = st.algos.emplace(key, LtGemmPlan{std::move(problem), algo}).first;
  }
  launch(lt.handle, *it->second.problem, &it->second.algo, a, b, c, lt.workspace,
         lt.stream);
}

int64_t cublaslt_cache_size() {
  std::lock_guard<std::mutex> lock(lt_state().mu);
  return static_cast<int64_t>(lt_state().algos.size());
}

}  // namespace gptbench
#endif  // GPTBENCH_WITH_CUDA
