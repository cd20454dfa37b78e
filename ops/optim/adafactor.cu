// Fused Adafactor (torch.optim.Adafactor's algorithm) in three launches over tile tables of all
// tensors, and no memset: the scratch cleans up after itself (sums and counters are zeroed by
// their consumer, the per-tensor stats alternate by step parity and each step zeroes the pair
// it does not use). A factored tensor (rows, cols) is cut into tiles of up to 1,024 columns × a
// few rows; in a tile each warp takes whole row segments, each lane 4 columns per 128 (16-byte loads),
// row sums of g² reduce by warp shuffles into one atomic per row and tile, column sums
// accumulate in registers, then in shared memory, then one atomic per column and tile.
//   1. stats:   read p, g (8 B/param): Σp², row sums and column sums of g².
//               Unfactored (1-D): read p, g, v, write v (16 B/param): v ← lerp(v, g², w), Σu².
//   2. factors, at the end of the stats launch (finish_band): the last tile of each row band
//               updates the band's rows, the last band of a tensor its columns:
//               R ← lerp(R, rowsum/cols, w), C ← lerp(C, colsum/rows, w), Σ R  (rows + cols
//               values; it used to be a launch of its own, ~12 µs of GPT-2 small's step, and a
//               memset of the scratch another ~6 µs).
//   3. norm:    read g (4 B/param): Σu², u = g / sqrt(max(R_i·C_j / max(mean R, eps1), eps1²)).
//   4. apply:   read p, g (+ v), write p (12 B/param; 16 unfactored):
//               p ← p·decay − α/max(1, RMS(u)/d) · u,  α = max(eps2, RMS(p))·ρ.
// Factored tensors: 24 B/param with fp32 gradients (18 with bf16); unfactored: 32 (28).
#include "ops/optim/adafactor_kernels.h"
#include "ops/optim/optim_device.cuh"

namespace gptbench {
namespace optim {
namespace {

// torch.lerp's formula: self + w·(end − self) for w < 0.5, else end − (end − self)·(1 − w).
__device__ __forceinline__ float lerp_torch(float self, float end, float w) {
  const float diff = end - self;
  return w < 0.5f ? self + w * diff : end - diff * (1.f - w);
}

// Column of accumulator slot s (0..31) for a lane: vector layout (4 per lane per 128) or
// scalar layout (one per lane per 32).
template <bool kVec>
__device__ __forceinline__ int slot_col(int ln, int s) {
  return kVec ? 4 * ln + 128 * (s / 4) + s % 4 : ln + 32 * s;
}

// This step's stats of a tensor (two per tensor, alternating by step: a step zeroes the pair it
// does not use, so no memset is needed).
__device__ __forceinline__ AdafactorStats* stats_of(const AdafactorTensor& t,
                                                    const AdafactorScalars& s) {
  return t.stats + s.parity;
}

// ---- 1. stats ---------------------------------------------------------------------------

template <typename G, bool kVec>
__device__ void stats_factored(const AdafactorTensor& t, const AdafactorTile& tile,
                               const AdafactorScalars& s, float* col_acc, float* red) {
  const int wp = threadIdx.x / 32, ln = threadIdx.x % 32;
  for (int c = threadIdx.x; c < tile.ncols; c += kThreads) col_acc[c] = 0.f;
  __syncthreads();
  const G* __restrict__ g = static_cast<const G*>(t.g);
  const float* __restrict__ p = t.p;
  float acc[32];
#pragma unroll
  for (int s = 0; s < 32; ++s) acc[s] = 0.f;
  float psq = 0.f;
  for (int r = wp; r < tile.nrows; r += kWarps) {
    const int64_t row = tile.row0 + r;
    const int64_t base = row * t.cols + tile.col0;
    float rs = 0.f;
    if (kVec) {
#pragma unroll
      for (int k = 0; k < 8; ++k) {
        const int c = 4 * ln + 128 * k;
        if (c < tile.ncols) {
          float4 gg = load_grad4(g + base + c);
          float4 pp = load4(p + base + c);
#pragma unroll
          for (int j = 0; j < 4; ++j) {
            const float sq = lane(gg, j) * lane(gg, j);
            rs += sq;
            acc[4 * k + j] += sq;
            psq += lane(pp, j) * lane(pp, j);
          }
        }
      }
    } else {
#pragma unroll
      for (int k = 0; k < 32; ++k) {
        const int c = ln + 32 * k;
        if (c < tile.ncols) {
          const float gv = load_grad(g + base + c), pv = p[base + c];
          rs += gv * gv;
          acc[k] += gv * gv;
          psq += pv * pv;
        }
      }
    }
    rs = warp_sum(rs);
    if (ln == 0) atomicAdd(&t.row_sum[row], rs);
  }
#pragma unroll
  for (int s = 0; s < 32; ++s) {
    const int c = slot_col<kVec>(ln, s);
    if (c < tile.ncols) atomicAdd(&col_acc[c], acc[s]);
  }
  __syncthreads();
  for (int c = threadIdx.x; c < tile.ncols; c += kThreads)
    atomicAdd(&t.col_sum[tile.col0 + c], col_acc[c]);
  psq = block_sum(psq, red);  // synchronises: col_acc is free for the next tile afterwards
  if (threadIdx.x == 0) atomicAdd(&stats_of(t, s)->p_sq, static_cast<double>(psq));
}

__device__ __forceinline__ void vector_elem(float pv, float gv, float& vv, float& psq, float& usq,
                                            const AdafactorScalars& s) {
  vv = lerp_torch(vv, gv * gv, s.w);
  const float u = gv * rsqrtf(fmaxf(vv, s.eps1_sq));
  usq += u * u;
  psq += pv * pv;
}

template <typename G>
__device__ void stats_vector(const AdafactorTensor& t, const AdafactorTile& tile,
                             const AdafactorScalars& s, float* red) {
  const float* __restrict__ p = t.p + tile.col0;
  const G* __restrict__ g = static_cast<const G*>(t.g) + tile.col0;
  float* __restrict__ v = t.v + tile.col0;
  const int64_t len = tile.ncols;
  float psq = 0.f, usq = 0.f;
  int64_t done = 0;
  if (t.vec) {
    const int64_t nv = len / 4;
    for (int64_t i = threadIdx.x; i < nv; i += kThreads) {
      float4 pp = load4(p + 4 * i), vv = load4(v + 4 * i), gg = load_grad4(g + 4 * i);
#pragma unroll
      for (int k = 0; k < 4; ++k) vector_elem(lane(pp, k), lane(gg, k), lane(vv, k), psq, usq, s);
      store4(v + 4 * i, vv);
    }
    done = nv * 4;
  }
  for (int64_t i = done + threadIdx.x; i < len; i += kThreads) {
    float vv = v[i];
    vector_elem(p[i], load_grad(g + i), vv, psq, usq, s);
    v[i] = vv;
  }
  psq = block_sum(psq, red);
  usq = block_sum(usq, red);
  if (threadIdx.x == 0) {
    atomicAdd(&stats_of(t, s)->p_sq, static_cast<double>(psq));
    atomicAdd(&stats_of(t, s)->u_sq, static_cast<double>(usq));
  }
}

// The factors, without a pass of their own: after a factored tile's sums (its atomics fenced),
// the last tile of its row band (all the band's column pieces counted) updates the band's rows
// of R and adds their sum to Σ R, and the tensor's last band updates C. Consumed sums and
// counters are zeroed for the next step.
//   R ← lerp(R, rowsum/cols, w),  C ← lerp(C, colsum/rows, w).
__device__ void finish_band(const AdafactorTensor& t, const AdafactorTile& tile,
                            const AdafactorScalars& s, float* red, int* last) {
  __threadfence();
  __syncthreads();
  if (threadIdx.x == 0)
    *last = t.pieces == 1 ||
            atomicAdd(&t.band_done[tile.band], 1u) == static_cast<uint32_t>(t.pieces - 1);
  __syncthreads();
  if (!*last) return;  // uniform over the block
  __threadfence();
  if (threadIdx.x == 0 && t.pieces > 1) t.band_done[tile.band] = 0;  // for the next step
  float rsum = 0.f;
  for (int r = threadIdx.x; r < tile.nrows; r += kThreads) {
    const int64_t row = tile.row0 + r;
    const float v =
        lerp_torch(t.row[row], __ldcg(&t.row_sum[row]) / static_cast<float>(t.cols), s.w);
    t.row_sum[row] = 0.f;  // consumed: zero for the next step
    t.row[row] = v;
    rsum += v;
  }
  rsum = block_sum(rsum, red);
  if (threadIdx.x == 0) {
    atomicAdd(&stats_of(t, s)->row_sum_r, static_cast<double>(rsum));
    __threadfence();
    *last = atomicAdd(&stats_of(t, s)->bands_done, 1u) == static_cast<uint32_t>(t.num_bands - 1);
  }
  __syncthreads();
  if (!*last) return;
  __threadfence();
  for (int64_t c = threadIdx.x; c < t.cols; c += kThreads) {
    t.col[c] = lerp_torch(t.col[c], __ldcg(&t.col_sum[c]) / static_cast<float>(t.rows), s.w);
    t.col_sum[c] = 0.f;
  }
}

// Programmatic dependent launch: the norm and apply passes are launched while the previous pass
// drains (launch_dependent below) and wait for its completion and memory before their first read.
__device__ __forceinline__ void grid_dep_wait() {
  asm volatile("griddepcontrol.wait;" ::: "memory");
}
__device__ __forceinline__ void grid_dep_launch() {
  asm volatile("griddepcontrol.launch_dependents;" :::);
}

// The band finishes run in a second walk over the block's tiles, after all of them: inlined into
// the tile loop they raised the kernel from 80 to 128 registers (2 blocks per SM instead of 3).
// Minimum blocks 1: ptxas then gives the tile loop 128 registers and issues more of a tile's
// loads before their use; at 80 registers (3 blocks per SM) ncu showed 30 of 40 cycles per
// instruction waiting on global loads. H200 2026-11-24, the suite's optim/adafactor/fp32:
// small 872 -> 845 us (80.3 -> 83.0% of copy bandwidth), xl 10,634 -> 10,559 us (82.4 -> 83.0%).
template <typename G>
__global__ void __launch_bounds__(kThreads, 1)
    stats_kernel(const AdafactorTensor* __restrict__ tensors, int64_t num_tensors,
                 const AdafactorTile* __restrict__ tiles, int64_t num_tiles, AdafactorScalars s) {
  __shared__ float col_acc[kAdafactorMaxTileCols];
  __shared__ float red[kWarps];
  __shared__ int last;
  grid_dep_launch();
  if (blockIdx.x == 0)  // the other parity's stats (last used by the previous step): zero
    for (int64_t i = threadIdx.x; i < num_tensors; i += kThreads)
      tensors[i].stats[s.parity ^ 1] = AdafactorStats{};
  for (int64_t i = blockIdx.x; i < num_tiles; i += gridDim.x) {
    const AdafactorTile tile = tiles[i];
    const AdafactorTensor t = tensors[tile.tensor];
    if (!t.factored) {
      stats_vector<G>(t, tile, s, red);
      continue;
    }
    if (t.vec)
      stats_factored<G, true>(t, tile, s, col_acc, red);
    else
      stats_factored<G, false>(t, tile, s, col_acc, red);
  }
  for (int64_t i = blockIdx.x; i < num_tiles; i += gridDim.x) {
    const AdafactorTile tile = tiles[i];
    const AdafactorTensor t = tensors[tile.tensor];
    if (t.factored) finish_band(t, tile, s, red, &last);
  }
}

// ---- 3. norm and 4. apply (factored tiles share the walk) --------------------------------

// u = g / sqrt(max(R_i·C_j / max(mean R, eps1), eps1²)), with rs = R_i · (1 / max(mean R, eps1))
// formed once per row: (R_i·(1/m))·C_j instead of (R_i·C_j)/m, within 2 ulp of each other, and
// no division in the loops.
__device__ __forceinline__ float factored_u(float g, float rs, float c, const AdafactorScalars& s) {
  return g * rsqrtf(fmaxf(rs * c, s.eps1_sq));
}

// Per-tensor step scale α / max(1, RMS(u)/d) from the stats of this step.
__device__ __forceinline__ float step_scale(const AdafactorTensor& t, const AdafactorScalars& s) {
  const double n = static_cast<double>(t.n);
  const double rms_p = sqrt(stats_of(t, s)->p_sq / n);
  const double alpha = (s.scale_parameter ? fmax(static_cast<double>(s.eps2), rms_p) : 1.0) * s.rho;
  const double denom = fmax(1.0, sqrt(stats_of(t, s)->u_sq / n) / s.d);
  return static_cast<float>(alpha / denom);
}

// kApply = false: accumulate Σu² (norm); true: update p.
template <typename G, bool kVec, bool kApply>
__device__ void walk_factored(const AdafactorTensor& t, const AdafactorTile& tile,
                              const AdafactorScalars& s, float* red) {
  const int wp = threadIdx.x / 32, ln = threadIdx.x % 32;
  const G* __restrict__ g = static_cast<const G*>(t.g);
  float* __restrict__ p = t.p;
  const float* __restrict__ col = t.col + tile.col0;
  const float inv_mr = __frcp_rn(fmaxf(
      static_cast<float>(stats_of(t, s)->row_sum_r / static_cast<double>(t.rows)), s.eps1));
  const float scale = kApply ? step_scale(t, s) : 0.f;
  float usq = 0.f;
  for (int r = wp; r < tile.nrows; r += kWarps) {
    const int64_t row = tile.row0 + r;
    const int64_t base = row * t.cols + tile.col0;
    const float rs = t.row[row] * inv_mr;
    if (kVec) {
#pragma unroll
      for (int k = 0; k < 8; ++k) {
        const int c = 4 * ln + 128 * k;
        if (c < tile.ncols) {
          float4 gg = load_grad4(g + base + c);
          float4 cc = load4(col + c);
          float4 pp = make_float4(0.f, 0.f, 0.f, 0.f);
          if (kApply) pp = load4(p + base + c);
#pragma unroll
          for (int j = 0; j < 4; ++j) {
            const float u = factored_u(lane(gg, j), rs, lane(cc, j), s);
            if (kApply)
              lane(pp, j) = lane(pp, j) * s.decay - scale * u;
            else
              usq += u * u;
          }
          if (kApply) store4(p + base + c, pp);
        }
      }
    } else {
#pragma unroll 4
      for (int k = 0; k < 32; ++k) {
        const int c = ln + 32 * k;
        if (c < tile.ncols) {
          const float u = factored_u(load_grad(g + base + c), rs, col[c], s);
          if (kApply)
            p[base + c] = p[base + c] * s.decay - scale * u;
          else
            usq += u * u;
        }
      }
    }
  }
  if (!kApply) {
    usq = block_sum(usq, red);
    if (threadIdx.x == 0) atomicAdd(&stats_of(t, s)->u_sq, static_cast<double>(usq));
  }
}

template <typename G>
__global__ void __launch_bounds__(kThreads)
    norm_kernel(const AdafactorTensor* __restrict__ tensors,
                const AdafactorTile* __restrict__ tiles, int64_t num_tiles, AdafactorScalars s) {
  __shared__ float red[kWarps];
  grid_dep_wait();
  grid_dep_launch();
  for (int64_t i = blockIdx.x; i < num_tiles; i += gridDim.x) {
    const AdafactorTile tile = tiles[i];
    const AdafactorTensor t = tensors[tile.tensor];
    if (!t.factored) continue;  // Σu² of unfactored tensors came with the stats pass
    if (t.vec)
      walk_factored<G, true, false>(t, tile, s, red);
    else
      walk_factored<G, false, false>(t, tile, s, red);
  }
}

template <typename G>
__device__ void apply_vector(const AdafactorTensor& t, const AdafactorTile& tile,
                             const AdafactorScalars& s) {
  float* __restrict__ p = t.p + tile.col0;
  const G* __restrict__ g = static_cast<const G*>(t.g) + tile.col0;
  const float* __restrict__ v = t.v + tile.col0;
  const int64_t len = tile.ncols;
  const float scale = step_scale(t, s);
  int64_t done = 0;
  if (t.vec) {
    const int64_t nv = len / 4;
    for (int64_t i = threadIdx.x; i < nv; i += kThreads) {
      float4 pp = load4(p + 4 * i), vv = load4(v + 4 * i), gg = load_grad4(g + 4 * i);
#pragma unroll
      for (int k = 0; k < 4; ++k)
        lane(pp, k) = lane(pp, k) * s.decay -
                      scale * (lane(gg, k) * rsqrtf(fmaxf(lane(vv, k), s.eps1_sq)));
      store4(p + 4 * i, pp);
    }
    done = nv * 4;
  }
  for (int64_t i = done + threadIdx.x; i < len; i += kThreads)
    p[i] = p[i] * s.decay - scale * (load_grad(g + i) * rsqrtf(fmaxf(v[i], s.eps1_sq)));
}

template <typename G>
__global__ void __launch_bounds__(kThreads)
    apply_kernel(const AdafactorTensor* __restrict__ tensors,
                 const AdafactorTile* __restrict__ tiles, int64_t num_tiles, AdafactorScalars s) {
  __shared__ float red[kWarps];
  grid_dep_wait();
  for (int64_t i = blockIdx.x; i < num_tiles; i += gridDim.x) {
    const AdafactorTile tile = tiles[i];
    const AdafactorTensor t = tensors[tile.tensor];
    if (!t.factored)
      apply_vector<G>(t, tile, s);
    else if (t.vec)
      walk_factored<G, true, true>(t, tile, s, red);
    else
      walk_factored<G, false, true>(t, tile, s, red);
  }
}

// A pass that waits for the previous one inside the kernel (griddepcontrol.wait): launched with
// programmatic stream serialisation, so its blocks are scheduled while the previous pass drains.
template <typename... Args>
void launch_dependent(void (*kernel)(Args...), int64_t work, cudaStream_t stream,
                      Args... args) {
  cudaLaunchConfig_t cfg{};
  cfg.gridDim = dim3(static_cast<unsigned>(grid_for(kernel, work)));
  cfg.blockDim = dim3(kThreads);
  cfg.dynamicSmemBytes = 0;
  cfg.stream = stream;
  cudaLaunchAttribute attr[1];
  attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attr[0].val.programmaticStreamSerializationAllowed = 1;
  cfg.attrs = attr;
  cfg.numAttrs = 1;
  CUDA_CHECK(cudaLaunchKernelEx(&cfg, kernel, args...));
}

template <typename G>
void launch(const AdafactorTensor* tensors, int64_t num_tensors, const AdafactorTile* tiles,
            int64_t num_tiles, const AdafactorScalars& s, cudaStream_t stream) {
  stats_kernel<G><<<grid_for(stats_kernel<G>, num_tiles), kThreads, 0, stream>>>(
      tensors, num_tensors, tiles, num_tiles, s);
  CUDA_CHECK_LAUNCH();
  launch_dependent(norm_kernel<G>, num_tiles, stream, tensors, tiles, num_tiles, s);
  launch_dependent(apply_kernel<G>, num_tiles, stream, tensors, tiles, num_tiles, s);
}

}  // namespace

void adafactor_step_cuda(const AdafactorTensor* tensors, int64_t num_tensors,
                         const AdafactorTile* tiles, int64_t num_tiles, ElemType grad_type,
                         const AdafactorScalars& s, cudaStream_t stream) {
  if (num_tiles == 0) return;
  with_grad_type(grad_type, [&](auto g) {
    launch<decltype(g)>(tensors, num_tensors, tiles, num_tiles, s, stream);
  });
}

}  // namespace optim
}  // namespace gptbench
