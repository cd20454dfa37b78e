#pragma once
// GEMM: C(M, N) = op(A) · op(B), row-major, as in the GPT-2 training step (model/shapes.h).
// `torch` is torch::matmul; `cublaslt` is our own cuBLASLt call (heuristic algorithm, or the
// fastest of the top candidates found by timing them once per shape and cached).
#include <ATen/ATen.h>

namespace gptbench {

struct GemmArgs {
  bool trans_a = false;  // A stored (K, M) instead of (M, K)
  bool trans_b = false;  // B stored (N, K) instead of (K, N)
  bool tf32 = false;     // fp32 operands may use TF32 tensor cores
};

// op(X) as LibTorch sees it: a transposed view when the operand is stored transposed.
inline at::Tensor gemm_operand(const at::Tensor& x, bool trans) { return trans ? x.t() : x; }

// torch::matmul(op(A), op(B)) into c, with LibTorch's TF32 switch set from args.tf32.
void gemm_torch(const at::Tensor& a, const at::Tensor& b, at::Tensor& c, const GemmArgs& args);

// Reference in float64 on the CPU (small problems), or fp32 without TF32 on the device.
at::Tensor gemm_reference(const at::Tensor& a, const at::Tensor& b, const GemmArgs& args);

// Our cuBLASLt call on the current CUDA stream; c must be contiguous (M, N) of a's dtype.
// search=true times the top heuristic candidates on the first call for a shape and keeps the
// fastest. Throws when built without CUDA.
void gemm_cublaslt(const at::Tensor& a, const at::Tensor& b, at::Tensor& c, const GemmArgs& args,
                   bool search);

// Number of distinct (shape, dtype, mode) algorithm choices cached so far.
int64_t cublaslt_cache_size();

}  // namespace gptbench
