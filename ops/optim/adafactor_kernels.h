#pragma once
// Fused Adafactor step (torch-free; see adafactor.h): a fixed sequence of three launches over all
// 1-D and 2-D tensors, whatever their number.
#include <cuda_runtime_api.h>

#include <cstdint>

#include "ops/optim/multi_tensor.h"

namespace gptbench {
namespace optim {

// Per-tensor reductions of one step (scratch; two per tensor, used by alternate steps).
struct AdafactorStats {
  double p_sq;     // Σ p² (before the step)
  double u_sq;     // Σ u², u the unclipped update
  double row_sum_r; // Σ of the new row factor R (factored tensors; mean R = row_sum_r/rows)
  uint32_t bands_done;  // row bands whose rows of R are final (factored)
  uint32_t pad;
};

struct AdafactorTensor {
  float* p;          // (rows, cols) or (n) parameter
  const void* g;     // gradient, fp32 or bf16
  float* row;        // (rows) row factor R (factored) — state
  float* col;        // (cols) column factor C (factored) — state
  float* v;          // (n) second moment (unfactored) — state
  float* row_sum;    // (rows) scratch: Σ_j g²
  float* col_sum;    // (cols) scratch: Σ_i g²
  uint32_t* band_done;    // (num_bands) scratch: column pieces of each row band done (factored)
  AdafactorStats* stats;  // scratch: two, stats[parity] used by this step
  int64_t n, rows, cols;  // unfactored: rows = 1, cols = n
  int32_t factored;
  int32_t vec;       // 1: 16-byte vector path (cols % 4 == 0 and pointers aligned)
  int32_t pieces;    // factored: column pieces per row band (tiles per band)
  int32_t num_bands; // factored: row bands
};

// A tile: rows [row0, row0+nrows) × columns [col0, col0+ncols) of a factored tensor
// (ncols ≤ 1024, a multiple of 4 unless it ends the row), or elements [col0, col0+ncols) of an
// unfactored one (row0 = 0, nrows = 1); band: the tile's row band (factored).
struct AdafactorTile {
  int64_t row0, col0;
  int32_t tensor, nrows, ncols, band;
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
  int32_t parity;           // step count mod 2: which of a tensor's two stats this step uses
};

// Scratch (the stats pairs, row_sum, col_sum and band_done arrays the tensors point into): zero
// before the first step, then kept zero by the steps themselves (each consumer zeroes what it
// read; the stats pair not used by a step is zeroed by it), so no memset per step — call with
// s.parity alternating (step count mod 2). Launches: stats (p², row/column sums of g²; v and
// Σu² for unfactored; then R, C, Σ R by the last tile of each band / tensor), norm (Σu² for
// factored), apply (p ← p·decay − α/max(1, RMS(u)/d)·u).
void adafactor_step_cuda(const AdafactorTensor* tensors, int64_t num_tensors,
                         const AdafactorTile* tiles, int64_t num_tiles, ElemType grad_type,
                         const AdafactorScalars& s, cudaStream_t stream);

}  // namespace optim
}  // namespace gptbench
