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
// GPTBENCH_CHECK_STATUS: `call` returns a Status; anything but `ok` throws, with what(status).
#define GPTBENCH_CHECK_STATUS(call, text, Status, ok, what)                           \
  do {                                                                                \
    Status gptbench_status_ = (call);                                                 \
    if (gptbench_status_ != ok)                                                       \
      ::gptbench::throw_cuda_error(what(gptbench_status_), text, __FILE__, __LINE__); \
  } while (0)

#define CUDA_CHECK(call) \
  GPTBENCH_CHECK_STATUS(call, #call, cudaError_t, cudaSuccess, cudaGetErrorString)
#define CUBLAS_CHECK(call)                                                  \
  GPTBENCH_CHECK_STATUS(call, #call, cublasStatus_t, CUBLAS_STATUS_SUCCESS, \
                        cublasGetStatusString)
#define CUDA_CHECK_LAUNCH() CUDA_CHECK(cudaGetLastError())
#endif
