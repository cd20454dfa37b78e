#include "ops/gemm_carveout.h"

#include <atomic>
#include <mutex>
#include <set>
#include <stdexcept>
#include <string>

#ifdef GPTBENCH_WITH_CUDA
#include <ATen/cuda/CUDAContext.h>
#include <cublas_v2.h>

#include "ops/cuda_check.h"
#include "ops/device/attributes.h"
#endif

namespace gptbench {
namespace {

std::atomic<int> g_carveout{0};

struct Handles {
  std::mutex mu;
#ifdef GPTBENCH_WITH_CUDA
  std::set<cublasHandle_t> engaged;  // LibTorch's handles given a target, reset on release
#endif
};

Handles& handles() {
  static Handles h;
  return h;
}

}  // namespace

int gemm_sm_carveout() { return g_carveout.load(); }

void engage_gemm_sm_carveout(int sms) {
#ifdef GPTBENCH_WITH_CUDA
  const int total = sm_count();
#else
  const int total = 1 << 20;
#endif
  if (sms <= 0 || sms >= total)
    throw std::invalid_argument("GEMM SM carveout: " + std::to_string(sms) + " SMs; allowed: 1 to " +
                                std::to_string(total - 1));
  Handles& h = handles();
  std::lock_guard<std::mutex> lock(h.mu);
  g_carveout.store(sms);
#ifdef GPTBENCH_WITH_CUDA
  h.engaged.insert(at::cuda::getCurrentCUDABlasHandle());
  for (cublasHandle_t handle : h.engaged) CUBLAS_CHECK(cublasSetSmCountTarget(handle, total - sms));
#endif
}

void release_gemm_sm_carveout() {
  Handles& h = handles();
  std::lock_guard<std::mutex> lock(h.mu);
  g_carveout.store(0);
#ifdef GPTBENCH_WITH_CUDA
  for (cublasHandle_t handle : h.engaged) CUBLAS_CHECK(cublasSetSmCountTarget(handle, 0));
#endif
}

}  // namespace gptbench
