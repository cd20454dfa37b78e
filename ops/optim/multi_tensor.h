#pragma once
// Multi-tensor launch tables shared by the fused optimizer kernels (torch-free: included by
// .cu files). Every parameter tensor is cut into chunks of kChunkElems elements; one launch
// walks the chunk table of all tensors with a grid-stride loop, so a step over ~150 GPT-2
// tensors is a single kernel however small or large each tensor is.
#include <cstdint>
#include <vector>

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

// The chunk table for tensors of the given sizes (empty tensors get no chunk).
std::vector<ChunkRef> make_chunks(const std::vector<int64_t>& numels,
                                  int64_t chunk_elems = kChunkElems);

// Gradient element type of a launch: fp32 or bf16 (parameters and states stay fp32).
enum class GradType : int32_t { kF32 = 0, kBF16 = 1 };

// True when every pointer is aligned to `bytes` (null pointers count as aligned).
bool all_aligned(std::initializer_list<const void*> ptrs, uintptr_t bytes);

}  // namespace optim
}  // namespace gptbench
