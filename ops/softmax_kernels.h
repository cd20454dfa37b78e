#pragma once
// Launchers of our fused softmax kernels (ops/softmax.cu). Torch-free: raw device pointers,
// row-major (rows, cols), contiguous, softmax over the last dimension. Included by the .cu
// file and, under GPTBENCH_WITH_CUDA, by ops/softmax.cpp.
#include <cuda_runtime_api.h>

#include <cstdint>

#include "ops/device/elem_type.h"

namespace gptbench {

// How a launcher will run a problem (chosen by softmax_plan; exposed for tests and docs).
enum class SoftmaxPath {
  kWarpVec,       // cols <= 1024: a group of `lanes` lanes per row (a power of two <= 32; 32 /
                  // lanes rows per warp), the row in registers (`values` per lane), 16-byte loads
  kWarpScalar,    // the same with element loads (cols <= 1024)
  kBlockRegs,     // forward, cols > 1024, 16-byte loads: the row on chip across the row_warps
                  // warps of a block, or of a cluster of `cluster` blocks; `values` per thread.
                  // Up to 32,768 columns the row is in registers (32 values per thread; 64 for
                  // bf16 rows of more than 8,192 columns); longer rows keep 8 packs per thread
                  // in registers and the rest in smem_bytes of shared memory per block
  kBlockVec,      // backward: one block per row on a persistent grid, y and dy copied into
                  // shared memory by 16-byte cp.async, read from DRAM once; the next row streams
                  // in while this one is written. <= 28,928 fp32 / 57,856 bf16 columns (sm_90)
  kBlockScalar,   // one block per row, the row staged in shared memory, element loads
  kBlockPartial,  // one block per row, longer than shared memory: as much as fits is staged,
                  // the rest read twice
};

struct SoftmaxPlan {
  SoftmaxPath path;
  int vec;      // elements per load (4 fp32 / 8 bf16 = 16 bytes, or 1)
  int threads;  // threads per block
  int64_t smem_bytes;  // dynamic shared memory per block (the staged part of the row)
  int cluster = 1;     // kBlockRegs: blocks per row (a thread-block cluster when > 1)
  int row_warps = 0;   // kBlockRegs: warps of a block that share a row (a block holds
                       // threads / 32 / row_warps rows)
  int values = 0;      // kBlockRegs: values of the row per thread (registers and shared memory);
                       // warp paths: values of the row per lane (registers)
  int lanes = 0;       // warp paths: lanes per row
};

// The plan the launchers use for this problem. `backward` stages two rows (y and dy).
// `aligned`: every pointer is 16-byte aligned. `smem_optin`: the device's opt-in shared memory
// per block (cudaDevAttrMaxSharedMemoryPerBlockOptin). `clusters`: the device runs thread-block
// clusters (compute capability >= 9.0); without them a row longer than one block holds on chip
// is read twice (kBlockPartial).
SoftmaxPlan softmax_plan(int64_t cols, ElemType dtype, bool backward, bool aligned,
                         int64_t smem_optin, bool clusters = true);

// y = softmax(x) over each row; fp32 accumulation, fp32 or bf16 storage (another dtype throws
// std::invalid_argument). A row of all -inf gives NaN (as torch::softmax does). Throws
// gptbench::CudaError on a CUDA failure.
void launch_softmax_forward(const void* x, void* y, int64_t rows, int64_t cols,
                            ElemType dtype, cudaStream_t stream);

// dx = y * (dy - sum(y * dy)) over each row.
void launch_softmax_backward(const void* y, const void* dy, void* dx, int64_t rows,
                             int64_t cols, ElemType dtype, cudaStream_t stream);

}  // namespace gptbench
