// Fused 8-bit Adam (blockwise dynamic quantisation, Dettmers et al. 2022): one launch over the
// chunk table of all tensors. A chunk (16,384 elements) is 64 quantisation blocks of 256; each
// warp takes one block at a time: every lane holds 8 elements (two float4 of p and g, two
// 4-byte words of each code array), dequantises through the maps in shared memory, updates in
// fp32, writes p, reduces the block's absmax with shuffles and requantises with two shared-memory
// reads per code (the bucket table of quant_map.h, then one midpoint comparison: the same count
// of midpoints below x as the reference's search, code for code). Bytes per element: p 4+4,
// g 4 (bf16: 2), codes 1+1 read and written, absmax 2·4/256 read and written — 16.06 B/param
// with fp32 gradients.
// Tensors under 4,096 elements keep fp32 states and take an AdamW-like loop in the same launch.
#include "ops/optim/adam8bit_kernels.h"
#include "ops/optim/optim_device.cuh"
#include "ops/optim/quant_map.h"

namespace gptbench {
namespace optim {
namespace {

constexpr int kBlock = 256;                          // quantisation block
static_assert(kChunkElems % kBlock == 0, "chunks must hold whole quantisation blocks");

// Bucket tables padded to whole 16-byte words.
constexpr int kBucketBytes = kAdam8bitBucketBytes;

struct SharedMaps {
  float code_m[256], mid_m[256], code_v[256], mid_v[256];
  alignas(16) uint8_t lo_m[kBucketBytes];
  alignas(16) uint8_t lo_v[kBucketBytes];
};

// Count of midpoints below x (quantize_nearest / quantize_bucketed in quant_map.h): one read of
// the bucket table, one midpoint comparison. NaN → −4 (code 0, as the search).
__device__ __forceinline__ int quantize(const float* mid, const uint8_t* lo_tab, float x) {
  x = x >= -4.f ? x : -4.f;
  const int lo = lo_tab[quant_bucket(__float_as_uint(x))];
  return lo + (mid[lo] < x ? 1 : 0);
}

// Approximate sqrt and division in the parameter step (not in the moments: the codes must stay
// those of the reference) and the requantisation's x / absmax by quant_div (one reciprocal per
// block; bit-identical to IEEE division, quant_map.h).
__device__ __forceinline__ float sqrt_approx(float x) {
  float y;
  asm("sqrt.approx.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}

// New moments (rounded products and sums, no FMA: the requantisation must match the reference)
// and the parameter update.
__device__ __forceinline__ void adam_elem(float& p, float g, float& m, float& v,
                                          const Adam8bitScalars& s) {
  m = __fadd_rn(__fmul_rn(s.beta1, m), __fmul_rn(s.one_minus_beta1, g));
  v = __fadd_rn(__fmul_rn(s.beta2, v), __fmul_rn(s.one_minus_beta2, __fmul_rn(g, g)));
  const float denom = fmaf(sqrt_approx(v), s.inv_sqrt_bc2, s.eps);
  p = fmaf(p, s.decay, -s.step_size * __fdividef(m, denom));
}

// x / a as the reference forms it (0 where a is 0); r = 1/a, used where quant_div_ok(a).
__device__ __forceinline__ float normed(float x, float a, float r, bool fast_ok) {
  if (fast_ok) return quant_div(x, a, r);
  return a > 0.f ? x / a : 0.f;
}

// One whole quantisation block (256 elements at b0, vector-aligned tensor), one warp.
// Lane owns elements 4·lane + 128·k + j, k < 2, j < 4: coalesced 16-byte loads.
template <typename G>
__device__ __forceinline__ void quant_full(const Adam8bitTensor& t, int64_t b0,
                                           const SharedMaps& sm, const Adam8bitScalars& s) {
  const int ln = threadIdx.x % 32;
  const int64_t blk = b0 / kBlock;
  float4 pp[2], gg[2];
  uchar4 cm[2], cv[2];
  const float am_old = t.m_absmax[blk], av_old = t.v_absmax[blk];
#pragma unroll
  for (int k = 0; k < 2; ++k) {
    const int64_t e = b0 + 4 * ln + 128 * k;
    pp[k] = load4(t.p + e);
    gg[k] = load_grad4(static_cast<const G*>(t.g) + e);
    cm[k] = *reinterpret_cast<const uchar4*>(static_cast<const uint8_t*>(t.m) + e);
    cv[k] = *reinterpret_cast<const uchar4*>(static_cast<const uint8_t*>(t.v) + e);
  }
  float m[8], v[8], am = 0.f, av = 0.f;
#pragma unroll
  for (int k = 0; k < 2; ++k) {
    const unsigned char cms[4] = {cm[k].x, cm[k].y, cm[k].z, cm[k].w};
    const unsigned char cvs[4] = {cv[k].x, cv[k].y, cv[k].z, cv[k].w};
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      float& mm = m[4 * k + j];
      float& vv = v[4 * k + j];
      mm = sm.code_m[cms[j]] * am_old;
      vv = sm.code_v[cvs[j]] * av_old;
      adam_elem(lane(pp[k], j), lane(gg[k], j), mm, vv, s);
      am = fmaxf(am, fabsf(mm));
      av = fmaxf(av, vv);
    }
    store4(t.p + b0 + 4 * ln + 128 * k, pp[k]);
  }
  am = warp_max(am);
  av = warp_max(av);
  if (ln == 0) {
    t.m_absmax[blk] = am;
    t.v_absmax[blk] = av;
  }
  const bool okm = quant_div_ok(am), okv = quant_div_ok(av);
  const float rm = __frcp_rn(am), rv = __frcp_rn(av);
#pragma unroll
  for (int k = 0; k < 2; ++k) {
    unsigned char qm[4], qv[4];
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      qm[j] = static_cast<unsigned char>(
          quantize(sm.mid_m, sm.lo_m, normed(m[4 * k + j], am, rm, okm)));
      qv[j] = static_cast<unsigned char>(
          quantize(sm.mid_v, sm.lo_v, normed(v[4 * k + j], av, rv, okv)));
    }
    const int64_t e = b0 + 4 * ln + 128 * k;
    *reinterpret_cast<uchar4*>(static_cast<uint8_t*>(t.m) + e) = make_uchar4(qm[0], qm[1], qm[2], qm[3]);
    *reinterpret_cast<uchar4*>(static_cast<uint8_t*>(t.v) + e) = make_uchar4(qv[0], qv[1], qv[2], qv[3]);
  }
}

// One quantisation block (up to 256 elements starting at element `b0` of tensor t), one warp.
template <typename G>
__device__ void quant_block(const Adam8bitTensor& t, int64_t b0, const SharedMaps& sm,
                            const Adam8bitScalars& s) {
  const int64_t len = min(static_cast<int64_t>(kBlock), t.n - b0);
  if (t.vec && len == kBlock) {
    quant_full<G>(t, b0, sm, s);
    return;
  }
  // Lane owns elements lane + 32·j, j < 8 (bounded).
  const int ln = threadIdx.x % 32;
  const int64_t blk = b0 / kBlock;
  const float am_old = t.m_absmax[blk], av_old = t.v_absmax[blk];
  float* __restrict__ p = t.p + b0;
  const G* __restrict__ g = static_cast<const G*>(t.g) + b0;
  uint8_t* __restrict__ qm = static_cast<uint8_t*>(t.m) + b0;
  uint8_t* __restrict__ qv = static_cast<uint8_t*>(t.v) + b0;
  float m[8], v[8];
  float am = 0.f, av = 0.f;
#pragma unroll
  for (int j = 0; j < 8; ++j) {
    const int e = ln + 32 * j;
    m[j] = 0.f;
    v[j] = 0.f;
    if (e < len) {
      float pp = p[e];
      m[j] = sm.code_m[qm[e]] * am_old;
      v[j] = sm.code_v[qv[e]] * av_old;
      adam_elem(pp, load_grad(g + e), m[j], v[j], s);
      p[e] = pp;
      am = fmaxf(am, fabsf(m[j]));
      av = fmaxf(av, v[j]);
    }
  }
  am = warp_max(am);
  av = warp_max(av);
  if (ln == 0) {
    t.m_absmax[blk] = am;
    t.v_absmax[blk] = av;
  }
  const bool okm = quant_div_ok(am), okv = quant_div_ok(av);
  const float rm = __frcp_rn(am), rv = __frcp_rn(av);
#pragma unroll
  for (int j = 0; j < 8; ++j) {
    const int e = ln + 32 * j;
    if (e < len) {
      qm[e] = static_cast<uint8_t>(quantize(sm.mid_m, sm.lo_m, normed(m[j], am, rm, okm)));
      qv[e] = static_cast<uint8_t>(quantize(sm.mid_v, sm.lo_v, normed(v[j], av, rv, okv)));
    }
  }
}

// A chunk of a tensor with fp32 states: the whole block walks it, float4 where aligned.
template <typename G>
__device__ void fp32_chunk(const Adam8bitTensor& t, int64_t begin, int64_t len,
                           const Adam8bitScalars& s) {
  float* __restrict__ p = t.p + begin;
  const G* __restrict__ g = static_cast<const G*>(t.g) + begin;
  float* __restrict__ m = static_cast<float*>(t.m) + begin;
  float* __restrict__ v = static_cast<float*>(t.v) + begin;
  int64_t done = 0;
  if (t.vec) {
    const int64_t nv = len / 4;
    for (int64_t i = threadIdx.x; i < nv; i += kThreads) {
      float4 pp = load4(p + 4 * i), mm = load4(m + 4 * i), vv = load4(v + 4 * i);
      float4 gg = load_grad4(g + 4 * i);
#pragma unroll
      for (int k = 0; k < 4; ++k) adam_elem(lane(pp, k), lane(gg, k), lane(mm, k), lane(vv, k), s);
      store4(p + 4 * i, pp);
      store4(m + 4 * i, mm);
      store4(v + 4 * i, vv);
    }
    done = nv * 4;
  }
  for (int64_t i = done + threadIdx.x; i < len; i += kThreads) {
    float pp = p[i], mm = m[i], vv = v[i];
    adam_elem(pp, load_grad(g + i), mm, vv, s);
    p[i] = pp;
    m[i] = mm;
    v[i] = vv;
  }
}

// __launch_bounds__(256, 4): at most 64 registers, 4 blocks (32 warps) per SM.
constexpr int kMinBlocks = 4;

template <typename G>
__global__ void __launch_bounds__(kThreads, kMinBlocks)
    adam8bit_kernel(const Adam8bitTensor* __restrict__ tensors,
                    const ChunkRef* __restrict__ chunks, int64_t num_chunks, Adam8bitScalars s,
                    const float* __restrict__ maps, const uint8_t* __restrict__ buckets) {
  __shared__ SharedMaps sm;
  static_assert(sizeof(SharedMaps) == 4096 + 2 * kBucketBytes, "unexpected padding");
  // The four float tables (4 KB) and the two bucket tables, as 16-byte words.
  {
    uint4* dst = reinterpret_cast<uint4*>(&sm);
    const uint4* fsrc = reinterpret_cast<const uint4*>(maps);
    const uint4* bsrc = reinterpret_cast<const uint4*>(buckets);
    constexpr int kF = 4096 / 16, kB = 2 * kBucketBytes / 16;
    for (int i = threadIdx.x; i < kF + kB; i += kThreads) dst[i] = i < kF ? fsrc[i] : bsrc[i - kF];
  }
  __syncthreads();
  const int warp = threadIdx.x / 32;
  for (int64_t c = blockIdx.x; c < num_chunks; c += gridDim.x) {
    const ChunkRef ref = chunks[c];
    const Adam8bitTensor t = tensors[ref.tensor];
    const int64_t begin = static_cast<int64_t>(ref.chunk) * kChunkElems;
    const int64_t len = min(kChunkElems, t.n - begin);
    if (t.quantized) {
      const int64_t nblocks = (len + kBlock - 1) / kBlock;
      for (int64_t b = warp; b < nblocks; b += kWarps)
        quant_block<G>(t, begin + b * kBlock, sm, s);
    } else {
      fp32_chunk<G>(t, begin, len, s);
    }
  }
}

template <typename G>
void launch(const Adam8bitTensor* tensors, const ChunkRef* chunks, int64_t num_chunks,
            const Adam8bitScalars& s, const float* maps, const uint8_t* buckets,
            cudaStream_t stream) {
  const int grid = grid_for(adam8bit_kernel<G>, num_chunks);
  adam8bit_kernel<G><<<grid, kThreads, 0, stream>>>(tensors, chunks, num_chunks, s, maps,
                                                   buckets);
  CUDA_CHECK_LAUNCH();
}

}  // namespace

void adam8bit_step_cuda(const Adam8bitTensor* tensors, const ChunkRef* chunks,
                        int64_t num_chunks, GradType grad_type, const Adam8bitScalars& s,
                        const float* maps, const uint8_t* buckets, cudaStream_t stream) {
  if (num_chunks == 0) return;
  if (grad_type == GradType::kBF16)
    launch<__nv_bfloat16>(tensors, chunks, num_chunks, s, maps, buckets, stream);
  else
    launch<float>(tensors, chunks, num_chunks, s, maps, buckets, stream);
}

}  // namespace optim
}  // namespace gptbench
