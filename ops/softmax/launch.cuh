#pragma once
// Host side of the fused softmax: device queries, grid shapes and the launch of each path.
// Part of the fused softmax: ops/softmax.cu includes it, nothing else does.
#include <algorithm>
#include <climits>
#include <map>
#include <mutex>
#include <set>
#include <stdexcept>
#include <string>
#include <tuple>

#include "ops/cuda_check.h"
#include "ops/softmax_kernels.h"
#include "ops/softmax/block_rows.cuh"
#include "ops/softmax/register_rows.cuh"
#include "ops/softmax/staged_backward.cuh"
#include "ops/softmax/warp_rows.cuh"

namespace gptbench {
namespace {

// ---- host side -------------------------------------------------------------------------------

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

int current_device() {
  int dev = 0;
  CUDA_CHECK(cudaGetDevice(&dev));
  return dev;
}

bool has_clusters(int dev) {  // thread-block clusters: compute capability 9.0 and later
  int major = 0;
  CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev));
  return major >= 9;
}

int64_t smem_optin_of(int dev) {
  int v = 0;
  CUDA_CHECK(cudaDeviceGetAttribute(&v, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev));
  return v;
}

bool aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

void check_shape(int64_t rows, int64_t cols) {
  if (rows < 0 || cols < 0 || cols > INT_MAX / 2)
    throw std::invalid_argument("softmax: unsupported shape rows=" + std::to_string(rows) +
                                " cols=" + std::to_string(cols));
}

int pow2_ceil(int64_t v) {
  int p = 1;
  while (p < v) p *= 2;
  return p;
}

// Lanes per row (a power of two <= 32) and packs per lane (a power of two) of the warp paths,
// for a row of `cols` columns in packs of `vec` elements: the fewest lanes that hold the row at
// `per_lane` packs each (a power of two; at most per_lane packs then), or 32 lanes with as many
// packs as the row needs.
std::pair<int, int> warp_shape(int64_t cols, int vec, int per_lane) {
  const int64_t packs = ceil_div(cols, vec);
  const int lanes = std::min(kWarp, pow2_ceil(ceil_div(packs, per_lane)));
  return {lanes, pow2_ceil(ceil_div(packs, lanes))};
}

template <int LANES>
dim3 warp_grid(int64_t rows) {
  const int64_t blocks = ceil_div(rows, warp_block_rows<LANES>());
  if (blocks > INT_MAX) throw std::invalid_argument("softmax: too many rows for one launch");
  return dim3(static_cast<unsigned>(blocks));
}

dim3 block_grid(int64_t rows) {  // the block kernels loop over rows beyond the grid
  return dim3(static_cast<unsigned>(rows < (int64_t{1} << 30) ? rows : (int64_t{1} << 30)));
}

// Lets `kernel` use all of the device's opt-in shared memory: its dynamic limit becomes the
// opt-in less its static shared memory (once per kernel and device; always the same value, so
// the order of calls is immaterial). Done for every kernel launched with dynamic shared memory,
// not only above 48 KiB: without the opt-in, static + dynamic must stay within 48 KiB, so a
// 49,152-byte row (fp32 12,288 columns forward; and bf16 12,288 backward) plus
// the block kernels' static bytes failed to launch with "invalid argument".
template <typename Kernel>
void allow_smem(Kernel kernel) {
  static std::mutex mu;
  static std::set<std::pair<const void*, int>> done;
  const int dev = current_device();
  const auto key = std::make_pair(reinterpret_cast<const void*>(kernel), dev);
  std::lock_guard<std::mutex> lock(mu);
  if (done.count(key)) return;
  cudaFuncAttributes attr{};
  CUDA_CHECK(cudaFuncGetAttributes(&attr, kernel));
  CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                  static_cast<int>(smem_optin_of(dev) - attr.sharedSizeBytes)));
  done.insert(key);
}

// How many blocks of `threads` threads and `smem` dynamic bytes are resident on the whole device
// at once (cached): the size of a persistent grid. 0 where not even one block fits an SM (more
// threads than the kernel allows, or too much shared memory): no such launch would succeed.
template <typename Kernel>
int64_t resident_blocks_or_zero(Kernel kernel, int threads, int64_t smem) {
  static std::mutex mu;
  static std::map<std::tuple<const void*, int, int, int64_t>, int64_t> cache;
  const int dev = current_device();
  const auto key = std::make_tuple(reinterpret_cast<const void*>(kernel), dev, threads, smem);
  {
    std::lock_guard<std::mutex> lock(mu);
    const auto it = cache.find(key);
    if (it != cache.end()) return it->second;
  }
  if (smem > 0) allow_smem(kernel);
  cudaFuncAttributes attr{};
  CUDA_CHECK(cudaFuncGetAttributes(&attr, kernel));
  int per_sm = 0, sms = 0;
  if (threads <= attr.maxThreadsPerBlock &&
      smem + static_cast<int64_t>(attr.sharedSizeBytes) <= smem_optin_of(dev))
    CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, threads,
                                                             static_cast<size_t>(smem)));
  CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
  const int64_t blocks = int64_t{per_sm} * sms;
  std::lock_guard<std::mutex> lock(mu);
  cache.emplace(key, blocks);
  return blocks;
}

template <typename Kernel>
int64_t resident_blocks(Kernel kernel, int threads, int64_t smem) {
  const int64_t blocks = resident_blocks_or_zero(kernel, threads, smem);
  if (blocks <= 0)
    throw std::logic_error("softmax: no block of " + std::to_string(threads) + " threads and " +
                           std::to_string(smem) + " bytes of shared memory fits an SM");
  return blocks;
}

// The warp-path shapes softmax_plan makes (the launchers instantiate only these): 32 lanes with
// up to 32 values per lane; fewer lanes with one 16-byte pack, or up to kGroupPacksScalar
// elements, per lane.
template <int VEC, int NV, int LANES>
constexpr bool warp_shape_ok() {
  return NV * VEC <= kMaxWarpCols / kWarp &&
         (LANES == kWarp || NV <= (VEC > 1 ? kGroupPacksVec : kGroupPacksScalar));
}

template <typename T, int VEC, int NV, int LANES>
void fwd_warp(const T* x, T* y, int64_t rows, int cols, cudaStream_t st) {
  if constexpr (warp_shape_ok<VEC, NV, LANES>()) {
    softmax_fwd_warp<T, VEC, NV, LANES>
        <<<warp_grid<LANES>(rows), kWarp * kWarpRowsPerBlock, 0, st>>>(x, y, rows, cols);
    CUDA_CHECK_LAUNCH();
  } else {
    throw std::logic_error("softmax: unexpected warp-path shape");
  }
}

// K blocks per row (a cluster when > 1); STAGED: `ns` packs per lane beyond the NV in registers
// staged in `smem` bytes of dynamic shared memory.
template <typename T, int NV, int WPR, int K, bool STAGED = false>
void fwd_regs(const T* x, T* y, int64_t rows, int cols, cudaStream_t st, int ns = 0,
              int64_t smem = 0) {
  constexpr int kWarps = regs_block_warps<WPR>();
  const int64_t blocks = ceil_div(rows, kWarps / WPR) * K;
  if (blocks > INT_MAX) throw std::invalid_argument("softmax: too many rows for one launch");
  auto kernel = softmax_fwd_regs<T, NV, WPR, K, STAGED>;
  if (smem > 0) allow_smem(kernel);
  cudaLaunchConfig_t cfg{};
  cfg.gridDim = dim3(static_cast<unsigned>(blocks));
  cfg.blockDim = dim3(kWarp * kWarps);
  cfg.dynamicSmemBytes = static_cast<size_t>(smem);
  cfg.stream = st;
  cudaLaunchAttribute attr{};
  attr.id = cudaLaunchAttributeClusterDimension;
  attr.val.clusterDim.x = K;
  attr.val.clusterDim.y = 1;
  attr.val.clusterDim.z = 1;
  cfg.attrs = &attr;
  cfg.numAttrs = 1;
  CUDA_CHECK(cudaLaunchKernelEx(&cfg, kernel, x, y, rows, cols, ns));
}

template <typename T, int VEC, int NV, int LANES>
void bwd_warp(const T* y, const T* dy, T* dx, int64_t rows, int cols, cudaStream_t st) {
  if constexpr (warp_shape_ok<VEC, NV, LANES>()) {
    softmax_bwd_warp<T, VEC, NV, LANES>
        <<<warp_grid<LANES>(rows), kWarp * kWarpRowsPerBlock, 0, st>>>(y, dy, dx, rows, cols);
    CUDA_CHECK_LAUNCH();
  } else {
    throw std::logic_error("softmax: unexpected warp-path shape");
  }
}

// Calls f(v) with v = std::integral_constant<int, n> for n a power of two in [1, 32].
template <typename F>
void with_pow2(int n, F&& f) {
  switch (n) {
    case 1: f(std::integral_constant<int, 1>{}); break;
    case 2: f(std::integral_constant<int, 2>{}); break;
    case 4: f(std::integral_constant<int, 4>{}); break;
    case 8: f(std::integral_constant<int, 8>{}); break;
    case 16: f(std::integral_constant<int, 16>{}); break;
    case 32: f(std::integral_constant<int, 32>{}); break;
    default: throw std::logic_error("softmax: unexpected warp-path shape " + std::to_string(n));
  }
}

// Calls f(lanes, packs per lane) (integral constants) for the warp-path shape of `plan`.
template <int VEC, typename F>
void with_warp_shape(const SoftmaxPlan& plan, F&& f) {
  with_pow2(plan.lanes, [&](auto lanes) {
    with_pow2(plan.values / VEC, [&](auto nv) { f(lanes, nv); });
  });
}

// Calls f(row_warps, cluster) (integral constants) for the kBlockRegs shapes softmax_plan makes:
// 2..32 warps of one block per row, or a cluster of 2, 4 or 8 blocks of 16 or 32 warps.
template <typename F>
void with_regs_shape(int row_warps, int cluster, F&& f) {
  using K1 = std::integral_constant<int, 1>;
  auto clustered = [&](auto w) {
    switch (cluster) {
      case 2: return f(w, std::integral_constant<int, 2>{});
      case 4: return f(w, std::integral_constant<int, 4>{});
      case 8: return f(w, std::integral_constant<int, 8>{});
    }
    throw std::logic_error("softmax: unexpected cluster of " + std::to_string(cluster));
  };
  if (cluster == 1) {
    switch (row_warps) {
      case 2: return f(std::integral_constant<int, 2>{}, K1{});
      case 4: return f(std::integral_constant<int, 4>{}, K1{});
      case 8: return f(std::integral_constant<int, 8>{}, K1{});
      case 16: return f(std::integral_constant<int, 16>{}, K1{});
      case 32: return f(std::integral_constant<int, 32>{}, K1{});
    }
  } else if (row_warps == 16) {
    return clustered(std::integral_constant<int, 16>{});
  } else if (row_warps == 32) {
    return clustered(std::integral_constant<int, 32>{});
  }
  throw std::logic_error("softmax: unexpected register-path shape " + std::to_string(row_warps) +
                         " warps x " + std::to_string(cluster) + " blocks");
}

template <typename T, int VEC>
void forward_vec(const T* x, T* y, int64_t rows, int cols, const SoftmaxPlan& plan,
                 cudaStream_t st) {
  switch (plan.path) {
    case SoftmaxPath::kWarpVec:
    case SoftmaxPath::kWarpScalar:
      with_warp_shape<VEC>(plan, [&](auto lanes, auto nv) {
        fwd_warp<T, VEC, decltype(nv)::value, decltype(lanes)::value>(x, y, rows, cols, st);
      });
      return;
    case SoftmaxPath::kBlockRegs:
      if constexpr (VEC * sizeof(T) == 16) {
        with_regs_shape(plan.row_warps, plan.cluster, [&](auto w, auto k) {
          constexpr int W = decltype(w)::value, K = decltype(k)::value;
          // Only the shapes the plan makes. One block, the row in registers: fp32 32 values per
          // thread; bf16 32 in up to 8 warps (<= 8,192 columns), 64 in 8 or 16 warps. Longer
          // rows: kRegsPacks packs in registers, the rest staged, in 16-warp blocks (one, or a
          // cluster of two) or 32-warp blocks (one, or a cluster of up to 8).
          if (plan.values > kRegsPacks * VEC) {
            if constexpr (W == 32 || (W == kRegsPairWarps && K <= 2))
              return fwd_regs<T, kRegsPacks, W, K, true>(x, y, rows, cols, st,
                                                         plan.values / VEC - kRegsPacks,
                                                         plan.smem_bytes);
          } else if constexpr (K == 1) {
            if constexpr (std::is_same_v<T, float>) {
              if (plan.values == kRegsValues)
                return fwd_regs<T, kRegsValues / VEC, W, 1>(x, y, rows, cols, st);
            } else {
              if constexpr (W <= 8)
                if (plan.values == kRegsValues)
                  return fwd_regs<T, kRegsValues / VEC, W, 1>(x, y, rows, cols, st);
              if constexpr (W >= 8 && W <= kRegsMaxWarpsBf16)
                if (plan.values == 2 * kRegsValues)
                  return fwd_regs<T, 2 * kRegsValues / VEC, W, 1>(x, y, rows, cols, st);
            }
          }
          throw std::logic_error("softmax: unexpected register-path plan: " +
                                 std::to_string(plan.values) + " values per thread, " +
                                 std::to_string(W) + " warps x " + std::to_string(K) + " blocks");
        });
        return;
      }
      throw std::logic_error("softmax: register block path needs 16-byte packs");
    case SoftmaxPath::kBlockVec:
      throw std::logic_error("softmax: the staged block path is backward only");
    case SoftmaxPath::kBlockScalar:
    case SoftmaxPath::kBlockPartial: {
      auto kernel = softmax_fwd_block<T, VEC>;
      if (plan.smem_bytes > 0) allow_smem(kernel);
      const int staged = static_cast<int>(plan.smem_bytes / (VEC * sizeof(T)));
      kernel<<<block_grid(rows), plan.threads, plan.smem_bytes, st>>>(x, y, rows, cols, staged);
      CUDA_CHECK_LAUNCH();
      return;
    }
  }
}

template <typename T, int VEC>
void backward_vec(const T* y, const T* dy, T* dx, int64_t rows, int cols, const SoftmaxPlan& plan,
                  cudaStream_t st) {
  switch (plan.path) {
    case SoftmaxPath::kWarpVec:
    case SoftmaxPath::kWarpScalar:
      with_warp_shape<VEC>(plan, [&](auto lanes, auto nv) {
        bwd_warp<T, VEC, decltype(nv)::value, decltype(lanes)::value>(y, dy, dx, rows, cols, st);
      });
      return;
    case SoftmaxPath::kBlockRegs:
      throw std::logic_error("softmax: the register block path is forward only");
    case SoftmaxPath::kBlockVec:
      if constexpr (VEC * sizeof(T) == 16) {
        auto kernel = softmax_bwd_staged<T>;
        const int64_t blocks =
            std::min(rows, resident_blocks(kernel, plan.threads, plan.smem_bytes));
        kernel<<<static_cast<unsigned>(blocks), plan.threads, plan.smem_bytes, st>>>(
            y, dy, dx, rows, cols);
        CUDA_CHECK_LAUNCH();
        return;
      }
      throw std::logic_error("softmax: staged block path needs 16-byte packs");
    case SoftmaxPath::kBlockScalar:
    case SoftmaxPath::kBlockPartial: {
      auto kernel = softmax_bwd_block<T, VEC>;
      if (plan.smem_bytes > 0) allow_smem(kernel);
      const int staged = static_cast<int>(plan.smem_bytes / (2 * VEC * sizeof(T)));
      kernel<<<block_grid(rows), plan.threads, plan.smem_bytes, st>>>(y, dy, dx, rows, cols,
                                                                       staged);
      CUDA_CHECK_LAUNCH();
      return;
    }
  }
}


}  // namespace
}  // namespace gptbench
