#include "ops/gemm.h"

#include <stdexcept>

#include "ops/tf32_guard.h"

namespace gptbench {

void gemm_torch(const at::Tensor& a, const at::Tensor& b, at::Tensor& c, const GemmArgs& args) {
  Tf32Guard tf32(args.tf32);
  at::matmul_out(c, gemm_operand(a, args.trans_a), gemm_operand(b, args.trans_b));
}

at::Tensor gemm_reference(const at::Tensor& a, const at::Tensor& b, const GemmArgs& args) {
  const bool small = a.numel() <= (int64_t{1} << 22) && b.numel() <= (int64_t{1} << 22);
  if (small || !a.is_cuda()) {
    return at::matmul(gemm_operand(a, args.trans_a).to(at::kCPU, at::kDouble),
                      gemm_operand(b, args.trans_b).to(at::kCPU, at::kDouble));
  }
  Tf32Guard tf32(false);
  return at::matmul(gemm_operand(a, args.trans_a).to(at::kFloat),
                    gemm_operand(b, args.trans_b).to(at::kFloat));
}

#ifndef GPTBENCH_WITH_CUDA
void gemm_cublaslt(const at::Tensor&, const at::Tensor&, at::Tensor&, const GemmArgs&, bool) {
  throw std::runtime_error("gemm_cublaslt: this build has no CUDA support");
}
int64_t cublaslt_cache_size() { return 0; }
#endif

}  // namespace gptbench
