#pragma once
// bf16 → FP8 e4m3 with amax scaling (ops/fp8/scaling.h: scale = 448 / amax per group, values
// x · scale rounded to nearest even and saturated at ±448, scale_inv = 1 / scale kept for the
// GEMMs), per tensor, per row, per 1×128 block or per 128×128 block, three ways:
//   quantize_fp8           ours: CUDA kernels (ops/fp8/quantize.cu) for CUDA tensors; CPU
//                          tensors take the reference below. Per tensor needs the global amax
//                          first: two kernels (per-block maxima, then each block of the
//                          quantizing kernel reduces them), no atomics.
//   quantize_fp8_reference the reference: a scalar loop in fp32 on the CPU (c10's e4m3 rounding).
//   quantize_fp8_torch     the peer: the eager LibTorch composition a user writes (abs, amax,
//                          division, multiply, clamp, to(Float8_e4m3fn)), on x's device.
// The three compute the same correctly rounded fp32 operations, so their outputs agree bit for
// bit (tests/ops/fp8_quantize_test.cpp). Inputs are 2-D (rows, cols), any strides; our kernels
// need cols to be a multiple of 8 (16-byte loads) and throw std::invalid_argument otherwise.
// Inputs with NaN or infinities are outside the contract (a NaN amax is ignored by ours and
// propagated by the composition).
#include <ATen/ATen.h>

#include <optional>
#include <string>

#include "ops/fp8/scaling.h"

namespace gptbench {

struct Fp8Tensor {
  at::Tensor data;       // (rows, cols) float8_e4m3fn, contiguous
  at::Tensor scale_inv;  // fp32, contiguous, fp8_scale_shape(granularity, rows, cols)
  Fp8Granularity granularity = Fp8Granularity::kTensor;
};

// A quantization fused into the op that produces its input (ops/fp8/layernorm_fp8.h,
// ops/fp8/gelu_fp8.h): the e4m3 tensor, and the producer's bf16 output where it was kept.
struct Fp8Produced {
  Fp8Tensor q;
  at::Tensor y;  // (rows, cols) bf16 when kept, else undefined
};

Fp8Tensor quantize_fp8(const at::Tensor& x, Fp8Granularity g);
// Uninitialised storage for a (rows, cols) quantization of granularity g on opts' device.
Fp8Tensor empty_fp8(int64_t rows, int64_t cols, Fp8Granularity g, const at::TensorOptions& opts);
Fp8Tensor quantize_fp8_reference(const at::Tensor& x, Fp8Granularity g);
Fp8Tensor quantize_fp8_torch(const at::Tensor& x, Fp8Granularity g);

// The values q stands for, data · scale_inv of each element's group, as a float64 (rows, cols)
// tensor on q's device: the exact inputs an FP8 GEMM multiplies (an e4m3 value times an fp32
// scale is exact in float64). With `rows` (int64 row indices), only those rows, in that order.
at::Tensor dequantize_fp8(const Fp8Tensor& q, const std::optional<at::Tensor>& rows = std::nullopt);

// "" when q equals ref bit for bit (scales and e4m3 bytes, on any devices), else what differs:
// the quantizers' check (their outputs are the same correctly rounded fp32 operations).
std::string fp8_bitwise_difference(const Fp8Tensor& q, const Fp8Tensor& ref);

// Why quantize_fp8 cannot run our kernels on x ("" when it can, or when x is on the CPU).
std::string quantize_fp8_unsupported(const at::Tensor& x);

// Random test input (rows, cols) of opts' dtype and device: normal values, each 1×128 block of a
// row multiplied by its own 2^u, u uniform in [-2, 2). Every group of every granularity then has
// its own amax (up to 16× apart), so a scale applied to the wrong group shows as a large error.
at::Tensor fp8_test_input(int64_t rows, int64_t cols, const at::TensorOptions& opts);

// The fewest bytes a quantization of a (rows, cols) bf16 tensor moves: the input read once
// (2 bytes per element), the e4m3 output written once (1 byte), and the fp32 scales written.
double fp8_quantize_bytes(int64_t rows, int64_t cols, Fp8Granularity g);

}  // namespace gptbench
