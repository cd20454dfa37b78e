#pragma once
// The cuBLASLt handle and workspace that our cuBLASLt calls share (ops/gemm_cublaslt.cpp,
// ops/linear_lt.cpp): one of each per device, created on first use and kept for the process;
// and the timing both use to choose among algorithms (fastest_option).
// A workspace is used by one call at a time on the caller's current stream, as LibTorch uses its
// own; callers hold their own lock while they launch.
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

namespace gptbench {

constexpr size_t kLtWorkspaceBytes = 32u << 20;  // what LibTorch gives cuBLASLt on Hopper

// The cuBLASLt data type of elements of type t.
constexpr cudaDataType_t lt_data_type(ElemType t) {
  return t == ElemType::kF32 ? CUDA_R_32F : t == ElemType::kBF16 ? CUDA_R_16BF : CUDA_R_16F;
}

// The index of the fastest of `options` (each one call of an alternative, on `stream`): every
// option is called once untimed, then timed over `reps` calls with CUDA events in `rounds`
// interleaved rounds, and its best round counts (a clock or neighbour blip in one round does not
// decide). Synchronises the stream, so never while it captures a CUDA graph. Throws what an
// option throws, gptbench::CudaError on a CUDA failure, std::invalid_argument when empty.
size_t fastest_option(const std::vector<std::function<void()>>& options, cudaStream_t stream,
                      int reps, int rounds);

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

// cuBLASLt's first heuristic algorithm for the problem p with kLtWorkspaceBytes of workspace
// (CUBLAS_CHECK on failure); false when it has none.
bool lt_heuristic_algo(const LtContext& lt, const LtMatmulDescs& p, cublasLtMatmulAlgo_t* algo);

// One GEMM's descriptors and the algorithm chosen for them.
struct LtGemmPlan {
  std::unique_ptr<LtMatmulDescs> problem;
  cublasLtMatmulAlgo_t algo;
};

// Plans made once per Key (a problem's shape, formats, device) and the calls that use them.
template <typename Key>
class LtGemmPlans {
 public:
  // Under the cache's lock: the plan of `key` (make(lt_context) the first time), its per-call
  // attributes set by set_call(problem) (scale pointers), then cublasLtMatmul with alpha 1 and
  // beta 0: cuBLASLt's A at `a`, B at `b`, C = D at `d`, on LibTorch's current stream.
  template <typename Make, typename SetCall>
  void run(const Key& key, int device, Make make, SetCall set_call, const void* a, const void* b, void* d) {
    std::lock_guard<std::mutex> lock(mu_);
    const LtContext lt = lt_context(device);
    auto it = plans_.find(key);
    if (it == plans_.end()) it = plans_.emplace(key, make(lt)).first;
    LtMatmulDescs& p = *it->second.problem;
    set_call(p);
    const float alpha = 1.0f, beta = 0.0f;
    CUBLAS_CHECK(cublasLtMatmul(lt.handle, p.op, &alpha, a, p.a, b, p.b, &beta, d, p.d, d, p.d, &it->second.algo,
                                lt.workspace, kLtWorkspaceBytes, lt.stream));
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
