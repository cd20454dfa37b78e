#pragma once
// Launchers of the bf16 → e4m3 quantizing kernels (ops/fp8/quantize.cu). Torch-free: raw device
// pointers of a row-major (rows, cols) bf16 input, cols a multiple of 8, x 16-byte aligned and q
// 8-byte aligned. Included by the .cu file and, under GPTBENCH_WITH_CUDA, by ops/fp8/quantize.cpp.
#include <cuda_runtime_api.h>

#include <cstdint>

#include "ops/fp8/scaling.h"

namespace gptbench {

struct Fp8QuantizeArgs {
  const void* x = nullptr;      // (rows, cols) bf16
  uint8_t* q = nullptr;         // (rows, cols) e4m3
  float* scale_inv = nullptr;   // fp8_scale_shape(granularity, rows, cols) floats
  float* partial = nullptr;     // kTensor: fp8_quantize_partials(rows, cols) floats of scratch
  int64_t rows = 0, cols = 0;
  Fp8Granularity granularity = Fp8Granularity::kTensor;
};

// Blocks of the per-tensor amax pass (one partial maximum each; at most 1,024).
int64_t fp8_quantize_partials(int64_t rows, int64_t cols);

void launch_fp8_quantize(const Fp8QuantizeArgs& a, cudaStream_t stream);

// GELU's output quantized where it is produced (ops/fp8/gelu_fp8.h): y = GELU(bf16(u + bias))
// in bf16, cast to e4m3 per row or per 1x128 block (throws std::invalid_argument for other
// granularities); u and y 16-byte aligned, bias (optional) 16-byte aligned, cols a multiple of 8.
struct Fp8GeluQuantizeArgs {
  const void* u = nullptr;     // (rows, cols) bf16: the GEMM's output before its bias
  const void* bias = nullptr;  // (cols) bf16, or nullptr
  void* y = nullptr;           // (rows, cols) bf16 GELU output, or nullptr (not written)
  uint8_t* q = nullptr;        // (rows, cols) e4m3
  float* scale_inv = nullptr;  // fp8_scale_shape(granularity, rows, cols) floats
  int64_t rows = 0, cols = 0;
  Fp8Granularity granularity = Fp8Granularity::kRow;
};
void launch_fp8_quantize_gelu(const Fp8GeluQuantizeArgs& a, cudaStream_t stream);

// The per-tensor quantizer's first pass on its own: partial[i] = max |x| over block i's share of
// the (rows, cols) bf16 x, for fp8_quantize_partials(rows, cols) blocks (returned).
int launch_fp8_amax_partials(const void* x, float* partial, int64_t rows, int64_t cols, cudaStream_t stream);

}  // namespace gptbench
