#pragma once
// Fused Adafactor step (torch-free; see adafactor.h): a fixed sequence of four launches over all
// 1-D and 2-D tensors, whatever their number.
#include <cuda_runtime_api.h>

#include <cstdint>

#include "ops/optim/multi_tensor.h"

namespace gptbench {
namespace optim {

// Per-tensor reductions of one step (scratch, zeroed at the start of the step).
struct AdafactorStats {
  double p_sq;     // Σ p² (before the step)
  double u_sq;     // Σ u², u the unclipped update
  double row_sum_r; // Σ of the new row factor R (factored tensors; mean R = row_sum_r/rows)
  double pad;
};

struct AdafactorTensor {
  float* p;          // (rows, cols) or (n) parameter
  const void* g;     // gradient, fp32 or bf16
  float* row;        // (rows) row factor R (factored) — state
  float* col;        // (cols) column factor C (factored) — state
  float* v;          // (n) second moment (unfactored) — state
  float* row_sum;    // (rows) scratch: Σ_j g²
  float* col_sum;    // (cols) scratch: Σ_i g²
  AdafactorStats* stats;  // scratch
  int64_t n, rows, cols;  // unfactored: rows = 1, cols = n
  int32_t factored;
  int32_t vec;       // 1: 16-byte vector path (cols % 4 == 0 and pointers aligned)
};

// A tile: rows [row0, row0+nrows) × columns [col0, col0+ncols) of a factored tensor
// (ncols ≤ 1024, a multiple of 4 unless it ends the row), or elements [col0, col0+ncols) of an
// unfactored one (row0 = 0, nrows = 1).
struct AdafactorTile {
  int64_t row0, col0;
  int32_t tensor, nrows, ncols, pad;
};
constexpr int kAdafactorMaxTileCols = 1024;
constexpr int64_t kAdafactorTileElems = 65536;  // target elements per factored tile

struct AdafactorScalars {
  float w;          // 1 − β2_t = t^beta2_decay (the lerp weight)
  float eps1;       // floor of mean(R)
  float eps1_sq;    // floor of the variance estimate
  float eps2;       // floor of RMS(p)
  float rho;        // min(lr, 1/sqrt(t))
  float d;          // clipping threshold
  float decay;      // 1 − lr·weight_decay
  int32_t scale_parameter;  // 1: step α = max(eps2, RMS(p))·ρ; 0: α = ρ
};

// scratch: `scratch_bytes` bytes (the stats, row_sum and col_sum arrays live in it), zeroed
// here. Launches: stats (p², row/column sums of g²; v and Σu² for unfactored), factors (R, C,
// Σ R; over the tiles), norm (Σu² for factored), apply (p ← p·decay − α/max(1,
// RMS(u)/d)·u).
void adafactor_step_cuda(const AdafactorTensor* tensors, int64_t num_tensors,
                         const AdafactorTile* tiles, int64_t num_tiles, GradType grad_type,
                         const AdafactorScalars& s, void* scratch, size_t scratch_bytes,
                         cudaStream_t stream);

}  // namespace optim
}  // namespace gptbench
