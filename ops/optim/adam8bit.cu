// Fused 8-bit Adam (blockwise dynamic quantisation, Dettmers et al. 2022): one launch over the
// chunk table of all tensors. A chunk (16,384 elements) is 64 quantisation blocks of 256; each
// warp takes one block at a time: every lane holds 8 elements (two float4 of p and g, two
// 4-byte words of each code array), dequantises through the maps in shared memory, updates in
// fp32, writes p, reduces the block's absmax by redux.sync and requantises with one shared-memory
// read per code (a 4-byte bucket entry of quant_map.h: the bucket's count of midpoints below it
// and its midpoint's low bits, so one integer add gives the same count of midpoints below x as
// the reference's search, code for code; each CTA copies the tables, built once on the host
// (quant_kernel_table), into shared memory when it starts). Bytes per element: p 4+4,
// g 4 (bf16: 2), codes 1+1 read and written, absmax 2·4/256 read and written — 16.06 B/param
// with fp32 gradients.
// Work split: the CTAs take whole chunks in grid-stride rounds; the last, partial round (fewer
// chunks than CTAs) is spread over every warp of the grid one quantisation block at a time, so
// the step does not end with half the CTAs idle for a chunk's time (GPT-2 small: 7,686 chunks
// on 528 CTAs, 14.6 rounds; the split took it from 73% to 78% of copy bandwidth). make_chunks
// lists whole chunks first, so the rounds hold whole chunks and the small tensors' and tensor
// ends' partial chunks fall into the spread last round.
// Tensors under 4,096 elements keep fp32 states and take an AdamW-like loop (256 elements per
// warp) in the same launch.
#include "ops/optim/adam8bit_kernels.h"
#include "ops/optim/optim_device.cuh"
#include "ops/optim/quant_map.h"

namespace gptbench {
namespace optim {
namespace {

constexpr int kBlock = 256;                          // quantisation block
static_assert(kChunkElems % kBlock == 0, "chunks must hold whole quantisation blocks");
constexpr int kBlocksPerChunk = static_cast<int>(kChunkElems / kBlock);

// The maps' codes and the 4-byte bucket entries (quant_map.h: one shared read per code), copied
// as one image (quant_kernel_table) into shared memory at the start of every CTA: 39 KB per
// CTA, 4 CTAs per SM.
struct SharedMaps {
  float code_m[256], code_v[256];
  uint32_t ent_m[kQuantSignedEntries];    // bucket_entry of every signed bucket (and the padding)
  uint32_t ent_v[kQuantUnsignedEntries];  // the unsigned map's positive half
};
static_assert(sizeof(SharedMaps) == 4 * kQuantTableWords, "SharedMaps must be the table's image");

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
                                          const AdamScalars& s) {
  m = __fadd_rn(__fmul_rn(s.beta1, m), __fmul_rn(s.one_minus_beta1, g));
  v = __fadd_rn(__fmul_rn(s.beta2, v), __fmul_rn(s.one_minus_beta2, __fmul_rn(g, g)));
  const float denom = fmaf(sqrt_approx(v), s.inv_sqrt_bc2, s.eps);
  p = fmaf(p, s.decay, -s.step_size * __fdividef(m, denom));
}

// A block's new absmax of both moments (warp-reduced; stored by lane 0) and x / absmax as the
// reference forms it (0 where absmax is 0): quant_div with one reciprocal where quant_div_ok.
// kFast: both absmax are in quant_div's range (tested once per block, not per element).
struct BlockScales {
  float am, av, rm, rv;
  bool okm, okv;
  template <bool kFast>
  __device__ __forceinline__ float norm_m(float x) const {
    return kFast || okm ? quant_div(x, am, rm) : (am > 0.f ? x / am : 0.f);
  }
  template <bool kFast>
  __device__ __forceinline__ float norm_v(float x) const {
    return kFast || okv ? quant_div(x, av, rv) : (av > 0.f ? x / av : 0.f);
  }
};
__device__ __forceinline__ BlockScales block_scales(float am, float av, const Adam8bitTensor& t,
                                                    int64_t blk) {
  // Both are non-negative and never NaN (fmaxf drops NaN; v ≥ 0 and never −0), so their bit
  // patterns order as the floats do: one redux.sync each instead of five shuffles and maxima.
  am = __uint_as_float(__reduce_max_sync(0xffffffffu, __float_as_uint(am)));
  av = __uint_as_float(__reduce_max_sync(0xffffffffu, __float_as_uint(av)));
  if (threadIdx.x % 32 == 0) {
    t.m_absmax[blk] = am;
    t.v_absmax[blk] = av;
  }
  return {am, av, __frcp_rn(am), __frcp_rn(av), quant_div_ok(am), quant_div_ok(av)};
}

__device__ __forceinline__ uint8_t code_m(const SharedMaps& sm, float x) {
  return static_cast<uint8_t>(quantize_unit_signed(sm.ent_m, x));
}
__device__ __forceinline__ uint8_t code_v(const SharedMaps& sm, float x) {
  return static_cast<uint8_t>(quantize_unit_unsigned(sm.ent_v, x));
}

// The row's pointers are global memory (cudaMalloc'd tensors; quantised rows only: m_absmax and
// v_absmax are null otherwise, and null is not global). Loaded from the table, they
// would otherwise be generic pointers: the assumption turns the generic loads and stores
// (LD/ST) into global ones (LDG/STG) — H200 2026-11-24, harness: GPT-2 small fp32 589.3 ->
// 582.4 us, xl 7437 -> 7250 us, codes unchanged.
__device__ __forceinline__ void assume_global(const Adam8bitTensor& t) {
  __builtin_assume(__isGlobal(t.p));
  __builtin_assume(__isGlobal(t.g));
  __builtin_assume(__isGlobal(t.m));
  __builtin_assume(__isGlobal(t.v));
  __builtin_assume(__isGlobal(t.m_absmax));
  __builtin_assume(__isGlobal(t.v_absmax));
}

// Four codes from their quant_sum_* (each code in bits 23..16) packed by three byte permutes.
__device__ __forceinline__ uint32_t pack_codes(uint32_t s0, uint32_t s1, uint32_t s2, uint32_t s3) {
  return __byte_perm(__byte_perm(s0, s1, 0x0062), __byte_perm(s2, s3, 0x0062), 0x5410);
}

// Codes of a whole block's 8 elements per lane (quant_full's layout).
template <bool kFast>
__device__ __forceinline__ void requant_full(const Adam8bitTensor& t, int64_t b0,
                                             const SharedMaps& sm, const BlockScales& bs,
                                             const float* m, const float* v) {
  const int ln = threadIdx.x % 32;
#pragma unroll
  for (int k = 0; k < 2; ++k) {
    const int64_t e = b0 + 4 * ln + 128 * k;
    const float* mk = m + 4 * k;
    const float* vk = v + 4 * k;
    const auto sm_ = [&](int j) { return quant_sum_signed(sm.ent_m, bs.norm_m<kFast>(mk[j])); };
    const auto sv_ = [&](int j) { return quant_sum_unsigned(sm.ent_v, bs.norm_v<kFast>(vk[j])); };
    *reinterpret_cast<uint32_t*>(static_cast<uint8_t*>(t.m) + e) =
        pack_codes(sm_(0), sm_(1), sm_(2), sm_(3));
    *reinterpret_cast<uint32_t*>(static_cast<uint8_t*>(t.v) + e) =
        pack_codes(sv_(0), sv_(1), sv_(2), sv_(3));
  }
}
// Codes of a partial or unaligned block (quant_block's layout: element lane + 32·j; rare, so
// the quant_div test stays per element).
__device__ __forceinline__ void requant_part(uint8_t* qm, uint8_t* qv, int64_t len,
                                             const SharedMaps& sm, const BlockScales& bs,
                                             const float* m, const float* v) {
  const int ln = threadIdx.x % 32;
#pragma unroll
  for (int j = 0; j < 8; ++j) {
    const int e = ln + 32 * j;
    if (e < len) {
      qm[e] = code_m(sm, bs.norm_m<false>(m[j]));
      qv[e] = code_v(sm, bs.norm_v<false>(v[j]));
    }
  }
}

// One whole quantisation block (256 elements at b0, vector-aligned tensor), one warp.
// Lane owns elements 4·lane + 128·k + j, k < 2, j < 4: coalesced 16-byte loads.
template <typename G>
__device__ __forceinline__ void quant_full(const Adam8bitTensor& t, int64_t b0,
                                           const SharedMaps& sm, const AdamScalars& s) {
  const int ln = threadIdx.x % 32;
  const int64_t blk = b0 / kBlock;
  assume_global(t);
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
  const BlockScales bs = block_scales(am, av, t, blk);
  // One warp-uniform test per block, not a branch per element (H200 2026-11-24, GPT-2 small
  // fp32 627.0 -> 611.6 us with the entries).
  if (bs.okm && bs.okv)
    requant_full<true>(t, b0, sm, bs, m, v);
  else
    requant_full<false>(t, b0, sm, bs, m, v);
}

// One quantisation block (up to 256 elements starting at element `b0` of tensor t), one warp.
template <typename G>
__device__ void quant_block(const Adam8bitTensor& t, int64_t b0, const SharedMaps& sm,
                            const AdamScalars& s) {
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
  const BlockScales bs = block_scales(am, av, t, blk);
  requant_part(qm, qv, len, sm, bs, m, v);
}

// Up to 256 elements at b0 of a tensor with fp32 states, one warp.
template <typename G>
__device__ void fp32_block(const Adam8bitTensor& t, int64_t b0, const AdamScalars& s) {
  const int64_t len = min(static_cast<int64_t>(kBlock), t.n - b0);
  float* __restrict__ p = t.p + b0;
  const G* __restrict__ g = static_cast<const G*>(t.g) + b0;
  float* __restrict__ m = static_cast<float*>(t.m) + b0;
  float* __restrict__ v = static_cast<float*>(t.v) + b0;
  for (int i = threadIdx.x % 32; i < len; i += 32) {
    float pp = p[i], mm = m[i], vv = v[i];
    adam_elem(pp, load_grad(g + i), mm, vv, s);
    p[i] = pp;
    m[i] = mm;
    v[i] = vv;
  }
}

// Block b (< kBlocksPerChunk) of a chunk, one warp; blocks past the tensor's end are skipped.
template <typename G>
__device__ __forceinline__ void chunk_block(const Adam8bitTensor& t, const ChunkRef& ref, int b,
                                            const SharedMaps& sm, const AdamScalars& s) {
  const int64_t b0 = static_cast<int64_t>(ref.chunk) * kChunkElems + static_cast<int64_t>(b) * kBlock;
  if (b0 >= t.n) return;
  if (t.quantized)
    quant_block<G>(t, b0, sm, s);
  else
    fp32_block<G>(t, b0, s);
}

// __launch_bounds__(256, 4): at most 64 registers, 4 blocks (32 warps) per SM.
constexpr int kMinBlocks = 4;

template <typename G>
__global__ void __launch_bounds__(kThreads, kMinBlocks)
    adam8bit_kernel(const Adam8bitTensor* __restrict__ tensors,
                    const ChunkRef* __restrict__ chunks, int64_t num_chunks, AdamScalars s,
                    const uint32_t* __restrict__ table) {
  __shared__ SharedMaps sm;
  {
    constexpr int kWords = static_cast<int>(sizeof(SharedMaps) / 16);
    const uint4* src = reinterpret_cast<const uint4*>(table);
    uint4* dst = reinterpret_cast<uint4*>(&sm);
#pragma unroll
    for (int j = 0; j < (kWords + kThreads - 1) / kThreads; ++j) {
      const int i = threadIdx.x + j * kThreads;
      if (i < kWords) dst[i] = src[i];
    }
  }
  __syncthreads();
  const int warp = threadIdx.x / 32;
  // Whole rounds: a chunk per CTA, its blocks over the CTA's warps.
  const int64_t rounds_end = num_chunks / gridDim.x * gridDim.x;
  // One loop over (chunk, block) that reads the tensor's row for every block (L1 hits) instead
  // of holding its 12 registers across the chunk: no spills at 64 registers (28–32 bytes before).
  constexpr int kPerWarp = kBlocksPerChunk / kWarps;
  const int64_t items = (rounds_end / gridDim.x) * kPerWarp;
  for (int64_t k = 0; k < items; ++k) {
    const ChunkRef ref = chunks[blockIdx.x + (k / kPerWarp) * gridDim.x];
    chunk_block<G>(tensors[ref.tensor], ref, warp + kWarps * static_cast<int>(k % kPerWarp), sm, s);
  }
  // The last, partial round: its blocks over all warps of the grid.
  const int64_t tail_blocks = (num_chunks - rounds_end) * kBlocksPerChunk;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * kWarps;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * kWarps + warp; i < tail_blocks; i += stride) {
    const ChunkRef ref = chunks[rounds_end + i / kBlocksPerChunk];
    chunk_block<G>(tensors[ref.tensor], ref, static_cast<int>(i % kBlocksPerChunk), sm, s);
  }
}

template <typename G>
void launch(const Adam8bitTensor* tensors, const ChunkRef* chunks, int64_t num_chunks,
            const AdamScalars& s, const uint32_t* table, cudaStream_t stream) {
  const int grid = grid_for(adam8bit_kernel<G>, num_chunks);
  adam8bit_kernel<G><<<grid, kThreads, 0, stream>>>(tensors, chunks, num_chunks, s, table);
  CUDA_CHECK_LAUNCH();
}

}  // namespace

void adam8bit_step_cuda(const Adam8bitTensor* tensors, const ChunkRef* chunks,
                        int64_t num_chunks, GradType grad_type, const AdamScalars& s,
                        const uint32_t* table, cudaStream_t stream) {
  if (num_chunks == 0) return;
  if (grad_type == GradType::kBF16)
    launch<__nv_bfloat16>(tensors, chunks, num_chunks, s, table, stream);
  else
    launch<float>(tensors, chunks, num_chunks, s, table, stream);
}

}  // namespace optim
}  // namespace gptbench
