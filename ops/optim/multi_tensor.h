#pragma once
// Multi-tensor launch tables shared by the fused optimizer kernels (torch-free: included by
// .cu files). Every parameter tensor is cut into chunks of kChunkElems elements; one launch
// walks the chunk table of all tensors with a grid-stride loop, so a step over ~150 GPT-2
// tensors is a single kernel however small or large each tensor is.
#include <cstdint>
#include <vector>

#include "ops/device/elem_type.h"

namespace gptbench {
namespace optim {

// Elements per chunk: a multiple of 256 (the 8-bit quantisation block) and of every vector
// width, so every chunk of an aligned tensor starts 16-byte aligned and on a block boundary.
constexpr int64_t kChunkElems = 16384;

// One work item: chunk `chunk` (elements [chunk·kChunkElems, ...)) of tensor `tensor`.
struct ChunkRef {
  int32_t tensor;
  int32_t chunk;
};

// The chunk table for tensors of the given sizes (empty tensors get no chunk): every whole chunk
// (chunk_elems elements) in tensor order, then the partial ones (each tensor's end, tensors
// smaller than a chunk). The kernels hand chunks to CTAs in rounds, so a partial chunk in a
// round left its CTA idle for most of a chunk's time; listed last, they fall into the final
// round, which the 8-bit Adam kernel spreads over every warp (GPT-2 small: 98 tensors under
// 4,096 elements among 7,686 chunks).
std::vector<ChunkRef> make_chunks(const std::vector<int64_t>& numels,
                                  int64_t chunk_elems = kChunkElems);

// Per-step scalars of the Adam update (AdamW and 8-bit Adam), computed on the host in double
// and rounded once.
struct AdamScalars {
  float beta1, one_minus_beta1;
  float beta2, one_minus_beta2;
  float decay;         // 1 − lr·weight_decay
  float step_size;     // lr / (1 − beta1^t)
  float inv_sqrt_bc2;  // 1 / sqrt(1 − beta2^t)
  float eps;
};

// The scalars of step t (1 on the first step).
AdamScalars adam_scalars(double lr, double beta1, double beta2, double eps, double weight_decay,
                         int64_t t);

// True when every pointer is aligned to `bytes` (null pointers count as aligned).
bool all_aligned(std::initializer_list<const void*> ptrs, uintptr_t bytes);

// True when the vector path's 4-element accesses are aligned: every fp32 array to 16 bytes and
// the gradient g (of type `grad`) to 16 bytes (fp32) or 8 (bf16).
bool vec_aligned(ElemType grad, const void* g, std::initializer_list<const void*> fp32);

}  // namespace optim
}  // namespace gptbench
