#pragma once
// The cuBLASLt handle and workspace that our cuBLASLt calls share (ops/gemm_cublaslt.cpp,
// ops/linear_lt.cpp): one of each per device, created on first use and kept for the process;
// and the timing both use to choose among algorithms (fastest_option).
// A workspace is used by one call at a time on the caller's current stream, as LibTorch uses its
// own; callers hold their own lock while they launch.
#include <cstdint>

namespace gptbench {
// How a cuBLASLt plan picks its algorithm (also in builds without CUDA, whose callers name it):
// the heuristic's first, or the fastest of its first kLtSearchCandidates, timed on the call that
// makes the plan after kLtSearchSettleSeconds of the first (fastest_option: kLtSearchReps calls
// each in kLtSearchRounds rounds; another than the first only when faster by more than
// kLtSearchMargin). A plan made while its stream captures a CUDA graph takes the first.
enum class LtAlgoChoice : int32_t { kHeuristic = 0, kSearch = 1 };
}  // namespace gptbench

#ifdef GPTBENCH_WITH_CUDA
#include <cublasLt.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "ops/cuda_check.h"
#include "ops/device/elem_type.h"
#include "ops/timer_hold.h"

namespace gptbench {

constexpr size_t kLtWorkspaceBytes = 32u << 20;  // what LibTorch gives cuBLASLt on Hopper

// The cuBLASLt data type of elements of type t.
constexpr cudaDataType_t lt_data_type(ElemType t) {
  return t == ElemType::kF32 ? CUDA_R_32F : t == ElemType::kBF16 ? CUDA_R_16BF : CUDA_R_16F;
}

// The index of the fastest of `options` (each one call of an alternative, on `stream`): every
// option is called once untimed, then each is timed over `reps` calls with CUDA events in each
// of `rounds` rounds, every batch behind a hold of the stream (ops/gpu_hold.h: kTimerHoldNs plus
// kEnqueueNsPerCall per call) so that the host's launches are not what is timed. Within a round
// the options run back to back, at one clock, each round starting with another; an option's
// score is the median over rounds of the first option's time ÷ its own. Option 0 is the
// incumbent: another wins only when its score exceeds 1 / (1 − `margin`) (a fraction, e.g.
// 0.01), so two options within noise of each other do not alternate from one process to the
// next. Synchronises the stream, so never while it captures a CUDA graph. Throws what an option
// throws, gptbench::CudaError on a CUDA failure, std::invalid_argument when empty.
size_t fastest_option(const std::vector<std::function<void()>>& options, cudaStream_t stream,
                      int reps, int rounds, double margin = 0.0);

// The host's time to enqueue one cuBLASLt call, generously (a few µs measured): the hold in
// front of each of fastest_option's batches covers this much per call.
constexpr uint64_t kEnqueueNsPerCall = 20'000;

// Runs `option` on `stream` for `seconds` of its GPU time, so that what is timed next runs at
// the clock and power the GPU settles at under that load, not at an idle GPU's boost.
void settle_on(const std::function<void()>& option, cudaStream_t stream, double seconds);

struct LtDevice {
  cublasLtHandle_t handle;
  void* workspace;  // kLtWorkspaceBytes
};

// The handle and workspace of CUDA device `device`. Throws gptbench::CudaError when cuBLASLt
// cannot create a handle, c10::Error when the workspace cannot be allocated.
LtDevice lt_device(int device);

// What one call on CUDA device `device` launches with: the device's handle and workspace
// (lt_device) and LibTorch's current stream of the device.
struct LtContext {
  cublasLtHandle_t handle;
  void* workspace;  // kLtWorkspaceBytes
  cudaStream_t stream;
};
LtContext lt_context(int device);

// The descriptors of one GEMM in cuBLASLt's column-major terms, D(m, n) = op(A)(m, k)·op(B)(k, n)
// with A and B of type `data`, C and D of type `out` (default: `data`), C laid out as D: A is stored (k, m) when trans_a, else
// (m, k); B (n, k) when trans_b, else (k, n); each column-major with its first dimension as the
// leading one. Created together, released on destruction.
struct LtMatmulDescs {
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, d = nullptr;

  LtMatmulDescs(cublasComputeType_t compute, cudaDataType_t data, int64_t m, int64_t n, int64_t k,
                bool trans_a, bool trans_b)
      : LtMatmulDescs(compute, data, data, m, n, k, trans_a, trans_b) {}
  LtMatmulDescs(cublasComputeType_t compute, cudaDataType_t data, cudaDataType_t out, int64_t m,
                int64_t n, int64_t k, bool trans_a, bool trans_b);
  ~LtMatmulDescs();
  LtMatmulDescs(const LtMatmulDescs&) = delete;
  LtMatmulDescs& operator=(const LtMatmulDescs&) = delete;

  // Sets a matmul descriptor attribute (CUBLAS_CHECK on failure).
  template <typename T>
  void set(cublasLtMatmulDescAttributes_t attr, const T& value) {
    set_raw(attr, &value, sizeof(value));
  }

 private:
  void release() noexcept;
  void set_raw(cublasLtMatmulDescAttributes_t attr, const void* value, size_t bytes);
};

// cuBLASLt's heuristic algorithms for the problem p with kLtWorkspaceBytes of workspace, best
// first, at most `most` (CUBLAS_CHECK on failure); empty when it has none.
std::vector<cublasLtMatmulAlgo_t> lt_heuristic_algos(const LtContext& lt, const LtMatmulDescs& p, int most);

// How a plan picks its algorithm: see LtAlgoChoice at the top of this file.
constexpr int kLtSearchCandidates = 8;
constexpr int kLtSearchReps = 10;
constexpr int kLtSearchRounds = 5;
constexpr double kLtSearchSettleSeconds = 0.2;  // settle_on the incumbent before the search
constexpr double kLtSearchMargin = 0.01;

// How many of the heuristic's algorithms a plan with `choice` asks for: only the first when it
// does not search.
constexpr int lt_candidate_count(LtAlgoChoice choice) {
  return choice == LtAlgoChoice::kSearch ? kLtSearchCandidates : 1;
}

// One GEMM's descriptors and the heuristic's candidates for them (best first, not empty).
struct LtGemmCandidates {
  std::unique_ptr<LtMatmulDescs> problem;
  std::vector<cublasLtMatmulAlgo_t> algos;
};

// One GEMM's descriptors and the algorithm chosen for them.
struct LtGemmPlan {
  std::unique_ptr<LtMatmulDescs> problem;
  cublasLtMatmulAlgo_t algo;
};

// One of the heuristic's candidates for a problem, timed by `launch(algo)` (one call of the
// GEMM with that algorithm) with `choice` kSearch: the algorithm to keep.
cublasLtMatmulAlgo_t lt_choose_algo(const LtContext& lt, const std::vector<cublasLtMatmulAlgo_t>& candidates,
                                    LtAlgoChoice choice,
                                    const std::function<void(const cublasLtMatmulAlgo_t&)>& launch);

// Plans made once per Key (a problem's shape, formats, algorithm choice, device) and the calls
// that use them.
template <typename Key>
class LtGemmPlans {
 public:
  // Under the cache's lock: the plan of `key`, its per-call attributes set by set_call(problem)
  // (scale pointers), then cublasLtMatmul with alpha 1 and beta 0: cuBLASLt's A at `a`, B at
  // `b`, D at `d`, on LibTorch's current stream. C is never read (beta 0): it gets `a`, as
  // LibTorch's scaled GEMM passes its first operand, so the call is the one at::_scaled_mm
  // makes. The first time, make(lt_context) gives the descriptors and the heuristic's
  // candidates (lt_heuristic_algos; make throws when there is none), and lt_choose_algo picks
  // one with this call's operands.
  template <typename Make, typename SetCall>
  void run(const Key& key, int device, LtAlgoChoice choice, Make make, SetCall set_call, const void* a,
           const void* b, void* d) {
    std::lock_guard<std::mutex> lock(mu_);
    const LtContext lt = lt_context(device);
    const float alpha = 1.0f, beta = 0.0f;
    auto launch = [&](const LtMatmulDescs& p, const cublasLtMatmulAlgo_t& algo) {
      CUBLAS_CHECK(cublasLtMatmul(lt.handle, p.op, &alpha, a, p.a, b, p.b, &beta, a, p.d, d, p.d, &algo,
                                  lt.workspace, kLtWorkspaceBytes, lt.stream));
    };
    auto it = plans_.find(key);
    if (it == plans_.end()) {
      auto [problem, candidates] = make(lt);
      set_call(*problem);
      const LtMatmulDescs& p = *problem;
      const cublasLtMatmulAlgo_t algo =
          lt_choose_algo(lt, candidates, choice, [&](const cublasLtMatmulAlgo_t& c) { launch(p, c); });
      it = plans_.emplace(key, LtGemmPlan{std::move(problem), algo}).first;
    }
    LtMatmulDescs& p = *it->second.problem;
    set_call(p);
    launch(p, it->second.algo);
  }

  int64_t size() {
    std::lock_guard<std::mutex> lock(mu_);
    return static_cast<int64_t>(plans_.size());
  }

 private:
  std::mutex mu_;
  std::map<Key, LtGemmPlan> plans_;
};

}  // namespace gptbench
#endif  // GPTBENCH_WITH_CUDA
