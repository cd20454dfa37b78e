#pragma once
// Launchers of the fused residual-add + LayerNorm kernels (ops/layernorm.cu). Torch-free: raw
// device pointers, row-major (rows, C) tensors, fp32 residual stream and statistics, fp32 or
// bf16 normalised output and its gradient. Included by the .cu file and, under
// GPTBENCH_WITH_CUDA, by ops/layernorm.cpp.
#include <cuda_runtime_api.h>

#include <cstdint>

#include "ops/device/elem_type.h"
#include "ops/fp8/scaling.h"

namespace gptbench {

// The kernels keep a row in registers: C must be a multiple of 4 and at most kLnMaxColumns, the
// backward's per-warp sums (8·2·C floats) must fit the current device's shared memory per block
// (every C up to kLnMaxColumns does on Ampere and Hopper),
// and every pointer 16-byte aligned (8-byte for bf16 tensors; ops/layernorm.cpp copies an
// operand that is not).
constexpr int kLnMaxColumns = 1664;
bool layernorm_kernel_supports(int64_t columns);

// Per row r (C columns):
//   h = x[r] + branch[r]   (branch may be null: h = x[r]; else h is written to x_out[r])
//   mean[r], rstd[r] = 1/sqrt(biased var(h) + eps)   (two passes over h in registers)
//   y[r] = (h - mean)·rstd·gamma + beta, in y_dtype
// With y_fp8 set (y_dtype bf16; y may then be null): the bf16-rounded y[r] also quantized to e4m3
// in the same pass (ops/fp8/scaling.h's rule), per row (fp8_granularity kRow, y_scale_inv
// (rows, 1)) or per 1×128 block (kBlock1x128, C a multiple of 128, y_scale_inv (C/128, rows),
// rows fastest): what quantize_fp8 of the bf16 y gives, bit for bit. y_fp8 4-byte aligned.
struct LnForward {
  const float* x = nullptr;
  const void* branch = nullptr;
  ElemType branch_dtype = ElemType::kF32;
  const float* gamma = nullptr;
  const float* beta = nullptr;
  float* x_out = nullptr;
  void* y = nullptr;
  ElemType y_dtype = ElemType::kF32;
  float* mean = nullptr;
  float* rstd = nullptr;
  int64_t rows = 0;
  int columns = 0;
  float eps = 1e-5f;
  uint8_t* y_fp8 = nullptr;
  float* y_scale_inv = nullptr;
  Fp8Granularity fp8_granularity = Fp8Granularity::kRow;
};
void launch_layernorm_forward(const LnForward& a, cudaStream_t stream);

// Per row r, with ĥ = (h - mean)·rstd and g = dy·gamma:
//   dx[r] = rstd·(g - mean(g) - ĥ·mean(g·ĥ)) + dres[r]   (dres may be null)
//   dbranch[r] = dx[r] in dbranch_dtype (may be null: a residual add's other operand)
//   dgamma = Σ_r dy·ĥ, dbeta = Σ_r dy   (fp32, per-block partial sums in `scratch`, then one
//   reduction over the blocks: deterministic)
struct LnBackward {
  const void* dy = nullptr;
  ElemType dy_dtype = ElemType::kF32;
  const float* h = nullptr;
  const float* mean = nullptr;
  const float* rstd = nullptr;
  const float* gamma = nullptr;
  const float* dres = nullptr;
  float* dx = nullptr;
  void* dbranch = nullptr;
  ElemType dbranch_dtype = ElemType::kF32;
  float* dgamma = nullptr;
  float* dbeta = nullptr;
  float* scratch = nullptr;  // layernorm_backward_scratch_floats(rows, columns) floats
  int64_t rows = 0;
  int columns = 0;
};
int64_t layernorm_backward_scratch_floats(int64_t rows, int64_t columns);
void launch_layernorm_backward(const LnBackward& a, cudaStream_t stream);

}  // namespace gptbench
