#pragma once
// Fused 8-bit Adam step over many tensors in one launch (torch-free; see adam8bit.h).
#include <cuda_runtime_api.h>

#include <cstdint>

#include "ops/optim/multi_tensor.h"
#include "ops/optim/quant_map.h"

namespace gptbench {
namespace optim {

struct Adam8bitTensor {
  float* p;          // (n) parameter, fp32
  const void* g;     // (n) gradient, fp32 or bf16
  void* m;           // (n) quantised: uint8 codes of the signed map; else fp32
  void* v;           // (n) quantised: uint8 codes of the unsigned map; else fp32
  float* m_absmax;   // (ceil(n/256)) per-block absmax of m (quantised tensors only)
  float* v_absmax;   // (ceil(n/256)) per-block absmax of v
  int64_t n;
  int32_t quantized; // 1: 8-bit states (n ≥ 4096)
  int32_t vec;       // 1: pointers aligned for 16-byte (p, fp32 g), 8-byte (bf16 g), 4-byte codes
};

// table: device copy of quant_kernel_table() (quant_map.h; 16-byte aligned): the code tables
// and the bucket entries, copied into shared memory by every CTA.
// Per element:
//   m ← dequant(m);  v ← dequant(v);  m ← β1·m + (1−β1)·g;  v ← β2·v + (1−β2)·g²  (no FMA)
//   p ← p·decay − step_size · m / (sqrt(v)·inv_sqrt_bc2 + eps)
//   absmax ← max|m| (max v) over the 256-element block;  codes ← nearest(m / absmax)
void adam8bit_step_cuda(const Adam8bitTensor* tensors, const ChunkRef* chunks,
                        int64_t num_chunks, ElemType grad_type, const AdamScalars& s,
                        const uint32_t* table, cudaStream_t stream);

// The kernel: sqrt.approx and __fdividef in the parameter step (not in the moments, so the
// codes stay those of the reference); x/absmax by one reciprocal per block and a Markstein
// correction (quant_div: bit-identical to IEEE division); codes by quantize_unit_signed /
// quantize_unit_unsigned (quant_map.h: the bucket table without the clamps that |x| ≤ 1 makes
// unnecessary; the unsigned map's table only for x ≥ 0); one CTA of 1,024 threads per SM
// (≤ 64 registers), each warp staging its next block's bytes in shared memory by cp.async;
// whole chunks per CTA except the last partial round, which is split into 256-element blocks
// over every warp of the grid.

}  // namespace optim
}  // namespace gptbench
