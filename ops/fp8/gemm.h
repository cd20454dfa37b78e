#pragma once
// FP8 GEMM: C(M, N) bf16 = Â · B̂ᵀ, where Â (M, K) and B̂ (N, K) are the values of e4m3 operands
// with their scales (ops/fp8/quantize.h), accumulated in fp32, with the scaling of
// Fp8GemmScaling (ops/fp8/scaling.h): per tensor, per row of A and of B (B's rows are C's
// columns: per output channel), or 1×128 blocks of A × 128×128 blocks of B.
//
// Both operands are K-major (rows of K contiguous values): the "TN" layout Hopper's FP8 tensor
// cores need (8-bit wgmma has no transposed operand form, and cuBLASLt takes FP8 only as
// transa = T, transb = N). The training step's GEMMs whose bf16 operands are stored otherwise
// (dgrad's weight, wgrad's both) get them K-major from the quantizer, which writes a transposed
// copy as FP8 training recipes do; the GEMM itself never transposes.
//
//   gemm_fp8_cublaslt  ours: one cuBLASLt call (the heuristic's algorithm or the fastest of its
//                      candidates, cached per shape and scaling), e4m3 A/B, bf16 C/D, fp32
//                      compute, fast accumulation off; scales through
//                      CUBLASLT_MATMUL_DESC_{A,B}_SCALE_POINTER with the scale modes SCALAR_32F,
//                      OUTER_VEC_32F, or VEC128_32F × BLK128x128_32F.
//   gemm_fp8_torch     the peer: at::_scaled_mm (LibTorch's scaled matmul), same accumulation.
//   gemm_fp8_reference float64 GEMM of the dequantized operands (selected rows of A).
#include <ATen/ATen.h>

#include <cstdint>
#include <string>

#include "ops/cublaslt_device.h"
#include "ops/fp8/quantize.h"
#include "ops/fp8/scaling.h"

namespace gptbench {

// Why `impl` ("cublaslt", "cublaslt_search" or "torch") cannot run an FP8 GEMM with scaling s on `device`, or "":
// no CUDA (device or build), no FP8 tensor cores (compute capability < 8.9), or a scaling the
// implementation offers only on compute capability 9.0 (cuBLASLt's outer-vector and block
// scales), or LibTorch with block scales, which gave wrong results (bench/gemm_fp8.cpp registers
// no such row). Never throws.
std::string gemm_fp8_unsupported(const std::string& impl, Fp8GemmScaling s, c10::Device device);

// c (M, N) bf16 contiguous, written. a: (M, K), b: (N, K), with the granularities of s
// (fp8_a_granularity, fp8_b_granularity), on c's GPU; K a multiple of 16 and N of 8 (cuBLASLt's
// 16-byte alignment). Throws std::invalid_argument for operands that do not fit,
// gptbench::CudaError for a cuBLAS failure, c10::Error when cuBLASLt has no algorithm.
// bias (optional): a contiguous bf16 (N) tensor added to every row of C in cuBLASLt's epilogue
// (CUBLASLT_EPILOGUE_BIAS), in fp32 before C's one rounding to bf16; the FP8 linear layer uses it
// with per-tensor scales (other scalings: as cuBLASLt's heuristic allows).
// choice: the heuristic's first algorithm (the rows `gemm/cublaslt/e4m3` and the FP8 linear
// layer) or the fastest of its candidates, timed once when the plan is made
// (`gemm/cublaslt_search/e4m3`); plans are cached per shape, scaling, bias and choice.
void gemm_fp8_cublaslt(const Fp8Tensor& a, const Fp8Tensor& b, Fp8GemmScaling s, at::Tensor& c,
                       const at::Tensor& bias = {}, LtAlgoChoice choice = LtAlgoChoice::kHeuristic);

// at::_scaled_mm's arguments for a, b (scales in the layouts LibTorch checks), built once
// outside a timed region; the operands' storage is shared, not copied.
struct Fp8ScaledMmArgs {
  at::Tensor mat1, mat2, scale_a, scale_b;  // mat2 (K, N) column-major
};
Fp8ScaledMmArgs scaled_mm_args(const Fp8Tensor& a, const Fp8Tensor& b, Fp8GemmScaling s);
void gemm_fp8_torch(const Fp8ScaledMmArgs& args, at::Tensor& c);

// (rows.numel(), N) float64 on a's device: rows `rows` of Â · B̂ᵀ.
at::Tensor gemm_fp8_reference(const Fp8Tensor& a, const Fp8Tensor& b, const at::Tensor& rows);

// Distinct (shape, scaling, device) cuBLASLt plans cached so far.
int64_t gemm_fp8_cache_size();

}  // namespace gptbench
