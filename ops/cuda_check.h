#pragma once
// One error-checking idiom for every CUDA runtime, cuBLAS and cuBLASLt call:
// a failing call throws gptbench::CudaError naming the file, the line and the call.
#include <stdexcept>
#include <string>

namespace gptbench {

struct CudaError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

[[noreturn]] inline void throw_cuda_error(const char* what, const char* call, const char* file,
                                          int line) {
  throw CudaError(std::string(file) + ":" + std::to_string(line) + ": " + call + " failed: " +
                  what);
}

}  // namespace gptbench

#ifdef GPTBENCH_WITH_CUDA
#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime.h>

// CUDA_CHECK(cudaMalloc(...)); CUBLAS_CHECK(cublasLtMatmul(...)); CUDA_CHECK_LAUNCH() after <<<>>>.
#define CUDA_CHECK(call)                                                               \
  do {                                                                                 \
    cudaError_t gptbench_err_ = (call);                                                \
    if (gptbench_err_ != cudaSuccess)                                                  \
      ::gptbench::throw_cuda_error(cudaGetErrorString(gptbench_err_), #call, __FILE__, \
                                   __LINE__);                                          \
  } while (0)

#define CUBLAS_CHECK(call)                                                                 \
  do {                                                                                     \
    cublasStatus_t gptbench_st_ = (call);                                                  \
    if (gptbench_st_ != CUBLAS_STATUS_SUCCESS)                                             \
      ::gptbench::throw_cuda_error(cublasGetStatusString(gptbench_st_), #call, __FILE__,   \
                                   __LINE__);                                              \
  } while (0)

#define CUDA_CHECK_LAUNCH() CUDA_CHECK(cudaGetLastError())
#endif
