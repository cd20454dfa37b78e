#pragma once
// SMs that the GEMMs leave free for kernels of other streams while both run: the collectives of
// a data-parallel step overlap its backward's GEMMs (train/dp_step.h). cuBLAS's Hopper GEMMs
// are persistent: they launch one CTA per SM and loop over tiles. When NCCL's CTAs hold some SMs,
// the CTAs that find no SM start only when others finish, and the GEMM ends a wave late. With a
// carveout of K, our cuBLASLt plans (ops/linear_lt.h: CUBLASLT_MATMUL_DESC_SM_COUNT_TARGET) and
// LibTorch's cuBLAS handle of each thread that engaged it (cublasSetSmCountTarget: at::mm,
// at::matmul) size their grids for SMs − K.
//
// Measured (4 × H200, GPT-2 medium ddp, 2026-11-28; docs/multigpu.md): a carveout of 8–24 SMs
// made the backward's GEMMs about a third slower everywhere, far more than the tails it
// removes, so the data-parallel rows leave it off unless asked (--gptbench_dp_sm_carveout).
//
// Process-wide: one step engages it at a time. Builds without CUDA keep the number and narrow
// nothing.
namespace gptbench {

// The SMs our cuBLASLt plans leave free now (0: none). Plans are made and cached per value.
int gemm_sm_carveout();

// From now on GEMMs leave `sms` SMs free (> 0): our cuBLASLt plans, and LibTorch's cuBLAS
// handle of the calling thread and of every thread that engaged before. Call it on the thread
// that launches the GEMMs (autograd's, in a backward). Throws std::invalid_argument unless
// 0 < sms < the device's SM count.
void engage_gemm_sm_carveout(int sms);

// Every GEMM uses every SM again (each handle engage_gemm_sm_carveout touched).
void release_gemm_sm_carveout();

}  // namespace gptbench
