// Fused softmax over the last dimension, forward and backward, fp32 and bf16 storage with fp32
// arithmetic. Memory-bound: the goal is one read and one write of every element (forward: x in,
// y out; backward: y and dy in, dx out), with enough bytes in flight that DRAM never waits for
// the arithmetic. softmax_plan picks one path per shape (the tests pin the choice); each path
// lives in its own header under ops/softmax/, and docs/softmax.md has the measurements behind
// each choice:
//
//   cols <= 1024 (kWarpVec / kWarpScalar, warp_rows.cuh): a row per group of 1-32 lanes (a power
//       of two; 32 / lanes rows per warp); each lane holds its share of the row in registers
//       (<= 32 values): row max and sum by butterflies within the group, exponentials kept in
//       fp32 registers; the grid covers every row.
//   cols > 1024, forward, 16-byte aligned (kBlockRegs, register_rows.cuh): the row on chip, one
//       read and one write per element: in registers across the warps of one block (32 values
//       per thread, 64 for long bf16 rows, recomputing the exponentials), longer rows with the
//       rest of each thread's share copied by cp.async into its own slots of shared memory, one
//       block per row or a thread-block cluster whose partial (max, sum) pairs meet in
//       distributed shared memory. Without clusters (before sm_90): one block per row.
//   cols > 1024, 16-byte aligned, backward, y and dy fit shared memory (kBlockVec,
//       staged_backward.cuh): block per row, persistent; rows copied into shared memory by
//       cp.async, the next row's copy issued as each pack's output is stored.
//   anything else (kBlockPartial, kBlockScalar, block_rows.cuh): online (max, sum) while staging
//       what fits in shared memory, then an output pass; the rest of the row is read twice.
//
// Loads and stores are 16 bytes wide (4 fp32 or 8 bf16) when every pointer is 16-byte aligned
// and cols is a multiple of the vector width; otherwise one element at a time.
//
// exp is ex2.approx.ftz of (x − m)·log2(e): one MUFU instruction (max relative error ~2^-22;
// results below 2^-126 flush to 0, i.e. terms < 1.2e-38 of the row maximum). The online
// (max, sum) (Milakov & Gimelshein, 2018): each thread keeps a running maximum m and a sum s
// of exp(x − m), rescaling s when m grows; partial pairs merge as M = max(m1, m2),
// S = s1·e^(m1−M) + s2·e^(m2−M). Non-finite inputs behave as in torch::softmax: a row of all
// −inf gives NaN ((−inf) − (−inf)), a +inf or NaN anywhere in a row makes the whole row NaN,
// and −inf entries of an otherwise finite row give 0.
//
// Backward: dx = y·(dy − Σ y·dy), the dot product accumulated in fp32.
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

#include "ops/device/convert.cuh"
#include "ops/softmax/launch.cuh"
#include "ops/softmax_kernels.h"

namespace gptbench {
namespace {

template <typename T>
void forward_typed(const void* x, void* y, int64_t rows, int64_t cols, cudaStream_t st) {
  constexpr ElemType dt = elem_type_v<T>;
  const int dev = current_device();
  const SoftmaxPlan plan = softmax_plan(cols, dt, /*backward=*/false, aligned16(x) && aligned16(y),
                                        smem_optin_of(dev), has_clusters(dev));
  const auto* xt = static_cast<const T*>(x);
  auto* yt = static_cast<T*>(y);
  const int c = static_cast<int>(cols);
  if (plan.vec == 1)
    forward_vec<T, 1>(xt, yt, rows, c, plan, st);
  else
    forward_vec<T, 16 / sizeof(T)>(xt, yt, rows, c, plan, st);
}

template <typename T>
void backward_typed(const void* y, const void* dy, void* dx, int64_t rows, int64_t cols,
                    cudaStream_t st) {
  constexpr ElemType dt = elem_type_v<T>;
  const SoftmaxPlan plan =
      softmax_plan(cols, dt, /*backward=*/true, aligned16(y) && aligned16(dy) && aligned16(dx),
                   smem_optin_of(current_device()));
  const auto* yt = static_cast<const T*>(y);
  const auto* gt = static_cast<const T*>(dy);
  auto* dxt = static_cast<T*>(dx);
  const int c = static_cast<int>(cols);
  if (plan.vec == 1)
    backward_vec<T, 1>(yt, gt, dxt, rows, c, plan, st);
  else
    backward_vec<T, 16 / sizeof(T)>(yt, gt, dxt, rows, c, plan, st);
}

}  // namespace

SoftmaxPlan softmax_plan(int64_t cols, ElemType dtype, bool backward, bool aligned,
                         int64_t smem_optin, bool clusters) {
  const int64_t elem = elem_bytes(dtype);
  const int vec16 = static_cast<int>(16 / elem);
  const int vec = (aligned && cols % vec16 == 0) ? vec16 : 1;
  if (cols <= kMaxWarpCols) {
    // A group of lanes per row, one 16-byte pack (or 4 elements) per lane where the row is that
    // short: enough rows per warp to keep every lane loading (H200, 2026-11-24: 99-106% of copy
    // bandwidth for 16-1024 columns in 16-byte packs, forward and backward, vs 9-35% for bf16
    // 16-64 columns in one row per warp).
    const auto [lanes, packs] =
        warp_shape(cols, vec, vec > 1 ? kGroupPacksVec : kGroupPacksScalar);
    SoftmaxPlan p{vec > 1 ? SoftmaxPath::kWarpVec : SoftmaxPath::kWarpScalar, vec,
                  kWarp * kWarpRowsPerBlock, 0};
    p.lanes = lanes;
    p.values = packs * vec;
    return p;
  }
  if (!backward && vec > 1) {
    // The row in registers: the fewest warps (a power of two) whose threads hold it at `values`
    // each, one block of up to 32 warps (bf16 16).
    const bool bf16 = dtype == ElemType::kBF16;
    const int values = bf16 && cols > kRegsLongBf16 ? 2 * kRegsValues : kRegsValues;
    const int64_t max_warps = bf16 ? kRegsMaxWarpsBf16 : kMaxBlockThreads / kWarp;
    int64_t warps = 1;
    while (warps * kWarp * values < cols) warps *= 2;
    if (warps <= max_warps) {
      const int row_warps = static_cast<int>(warps);
      return {SoftmaxPath::kBlockRegs, vec, kWarp * std::max(row_warps, kWarpRowsPerBlock), 0, 1,
              row_warps, values};
    }
    // Longer rows: kRegsPacks packs per thread in registers and the rest of the thread's share in
    // shared memory. 16-warp blocks two per SM, one per row or a cluster of two; else 32-warp
    // blocks (one per SM), the fewest per cluster whose shared memory fits. (H200, 2026-11-24,
    // % of copy bandwidth: bf16 131,072 columns 93.1 in 2 x 16 warps vs 93.8 in one 32-warp
    // block vs 88.0 in one 16-warp block holding 3/4 of its row in shared memory; bf16 262,144
    // 90.8 in 2 x 32 warps vs 86.5 in 4 x 16; fp32 262,144 94.5 in 4 x 32 vs 92.5 in 8 x 16.)
    const int64_t packs = cols / vec;
    const int64_t max_cluster = clusters ? kMaxCluster : 1;
    // Two blocks per SM: an SM has the opt-in plus 1 KiB; each block takes its dynamic and
    // static bytes and 1 KiB for the system (both within 2 kSmemReserve).
    const int64_t two_per_sm = (smem_optin + kSmemReserve) / 2 - 2 * kSmemReserve;
    for (const int64_t row_warps : {kRegsPairWarps, kMaxBlockThreads / kWarp}) {
      const int64_t threads = row_warps * kWarp;
      const bool paired = row_warps == kRegsPairWarps;
      for (int64_t k = 1; k <= std::min<int64_t>(paired ? 2 : kMaxCluster, max_cluster); k *= 2) {
        const int64_t per_thread = ceil_div(packs, k * threads);
        const int64_t smem = std::max<int64_t>(0, per_thread - kRegsPacks) * threads * 16;
        if (smem <= (paired ? two_per_sm : smem_optin - kSmemReserve))
          return {SoftmaxPath::kBlockRegs, vec, static_cast<int>(threads), smem,
                  static_cast<int>(k), static_cast<int>(row_warps),
                  static_cast<int>(per_thread * vec)};
      }
    }
  }
  const int64_t packs = cols / vec;
  const int64_t rows_staged = backward ? 2 : 1;  // y and dy, or x
  const int64_t pack_bytes = vec * elem;
  const int64_t bytes = packs * pack_bytes * rows_staged;
  // About kPacksPerThread packs per thread, 128 to 1024 threads. Where shared memory lets two or
  // more rows share an SM, blocks stop at 512 threads so that registers (≤ 64 per thread under
  // __launch_bounds__(1024)) let two blocks be resident too, and one row's reduction overlaps
  // another's loads; an SM's shared memory is taken as the opt-in per block plus the reserve.
  const bool two_rows_fit = 2 * (bytes + kSmemReserve) <= smem_optin + kSmemReserve;
  const int max_threads = two_rows_fit ? kMaxBlockThreads / 2 : kMaxBlockThreads;
  int threads = 128;
  while (threads < max_threads && packs > int64_t{threads} * kPacksPerThread) threads *= 2;
  // (The forward's 16-byte rows that fit shared memory took kBlockRegs above.)
  if (bytes + kSmemReserve <= smem_optin && (backward || vec == 1))
    return {vec > 1 ? SoftmaxPath::kBlockVec : SoftmaxPath::kBlockScalar, vec, threads, bytes};
  // As many packs as fit; the rest of the row is read twice.
  const int64_t fit = std::max<int64_t>(0, (smem_optin - kSmemReserve) / (pack_bytes * rows_staged));
  return {SoftmaxPath::kBlockPartial, vec, threads, fit * pack_bytes * rows_staged};
}

void launch_softmax_forward(const void* x, void* y, int64_t rows, int64_t cols,
                            ElemType dtype, cudaStream_t stream) {
  check_shape(rows, cols);
  if (rows == 0 || cols == 0) return;
  with_elem_type<float, __nv_bfloat16>(dtype, "softmax", [&](auto t) {
    forward_typed<decltype(t)>(x, y, rows, cols, stream);
  });
}

void launch_softmax_backward(const void* y, const void* dy, void* dx, int64_t rows, int64_t cols,
                             ElemType dtype, cudaStream_t stream) {
  check_shape(rows, cols);
  if (rows == 0 || cols == 0) return;
  with_elem_type<float, __nv_bfloat16>(dtype, "softmax", [&](auto t) {
    backward_typed<decltype(t)>(y, dy, dx, rows, cols, stream);
  });
}

}  // namespace gptbench
