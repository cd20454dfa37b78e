// Fused 8-bit Adam (blockwise dynamic quantisation, Dettmers et al. 2022): one launch over the
// chunk table of all tensors. A chunk (16,384 elements) is 64 quantisation blocks of 256; each
// warp takes one block at a time: every lane holds 8 elements (two float4 of p and g, two
// 4-byte words of each code array), dequantises through the maps in shared memory, updates in
// fp32, writes p, reduces the block's absmax by redux.sync and requantises with one shared-memory
// read per code (a 4-byte bucket entry of quant_map.h: the bucket's count of midpoints below it
// and its midpoint's low bits, so one integer add gives the same count of midpoints below x as
// the reference's search, code for code). Bytes per element: p 4+4, g 4 (bf16: 2), codes 1+1
// read and written, absmax 2·4/256 read and written — 16.06 B/param with fp32 gradients.
// Latency: one CTA of 1,024 threads per SM (64 registers each; one copy of the 39 KB tables,
// quant_kernel_table, per SM) and every warp stages its next block's bytes in shared memory by
// cp.async while it computes this one, so a block's loads no longer wait in its warp's path
// (H200 2026-11-24, harness: GPT-2 small fp32 581.8 -> 555.3 us; the kernel before, four CTAs
// of 256 threads loading each block into registers, was latency-bound at 64 registers).
// Work split: the CTAs take whole chunks in grid-stride rounds; the last, partial round (fewer
// chunks than CTAs) is spread over every warp of the grid one quantisation block at a time, so
// the step does not end with most CTAs idle for a chunk's time. make_chunks lists whole chunks
// first, so the rounds hold whole chunks and the small tensors' and tensor ends' partial chunks
// fall into the spread last round.
// Tensors under 4,096 elements keep fp32 states and take an AdamW-like loop (256 elements per
// warp) in the same launch; so do unaligned tensors' blocks and partial blocks (not staged).
#include "ops/device/cp_async.cuh"
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
// as one image (quant_kernel_table) into shared memory at the start of every CTA (39 KB).
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

// Codes of a whole block's 8 elements per lane (update_block's layout).
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

// One quantisation block that is not staged (up to 256 elements starting at element `b0` of
// tensor t: a partial block, or any block of an unaligned tensor), one warp, from global memory.
template <typename G>
__device__ void quant_block(const Adam8bitTensor& t, int64_t b0, const SharedMaps& sm,
                            const AdamScalars& s) {
  const int64_t len = min(static_cast<int64_t>(kBlock), t.n - b0);
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

// One CTA of kA8Threads per SM (__launch_bounds__(1024, 1): 64 registers, 32 warps).
constexpr int kA8Threads = 1024;
constexpr int kA8Warps = kA8Threads / 32;
// A warp's staging slots for one whole quantisation block, by cp.async (2.75 KB).
struct WarpStage {           // lane-private slots: lane l uses index [k][l]
  float4 p[2][32];
  float4 g[2][32];           // fp32: 16 bytes per lane and k; bf16: the first 8 bytes
  uint32_t cm[2][32], cv[2][32];
  float am[32], av[32];
};
struct A8Shared {
  SharedMaps maps;
  WarpStage stage[kA8Warps];
};

// Issue the copies of a whole quantised block's bytes into this lane's slots.
template <typename G>
__device__ __forceinline__ void stage_issue(WarpStage& st, const Adam8bitTensor& t, int64_t b0) {
  const int ln = threadIdx.x % 32;
  const int64_t blk = b0 / kBlock;
  assume_global(t);
  cp_async<4>(smem_u32(&st.am[ln]), t.m_absmax + blk);
  cp_async<4>(smem_u32(&st.av[ln]), t.v_absmax + blk);
#pragma unroll
  for (int k = 0; k < 2; ++k) {
    const int64_t e = b0 + 4 * ln + 128 * k;
    cp_async<16>(smem_u32(&st.p[k][ln]), t.p + e);
    cp_async<sizeof(G) * 4>(smem_u32(&st.g[k][ln]), static_cast<const G*>(t.g) + e);
    cp_async<4>(smem_u32(&st.cm[k][ln]), static_cast<const uint8_t*>(t.m) + e);
    cp_async<4>(smem_u32(&st.cv[k][ln]), static_cast<const uint8_t*>(t.v) + e);
  }
  cp_async_commit();
}
template <typename G>
__device__ __forceinline__ float4 staged_grad4(const float4& raw);
template <>
__device__ __forceinline__ float4 staged_grad4<float>(const float4& raw) { return raw; }
template <>
__device__ __forceinline__ float4 staged_grad4<__nv_bfloat16>(const float4& raw) {
  const uint32_t x = __float_as_uint(raw.x), y = __float_as_uint(raw.y);
  const float2 a = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(&x));
  const float2 b = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(&y));
  return make_float4(a.x, a.y, b.x, b.y);
}
// The staged block's bytes into registers (after the wait).
template <typename G>
__device__ __forceinline__ void stage_read(const WarpStage& st, float4* pp, float4* gg, uchar4* cm,
                                           uchar4* cv, float& am_old, float& av_old) {
  const int ln = threadIdx.x % 32;
  am_old = st.am[ln];
  av_old = st.av[ln];
#pragma unroll
  for (int k = 0; k < 2; ++k) {
    pp[k] = st.p[k][ln];
    gg[k] = staged_grad4<G>(st.g[k][ln]);
    const uint32_t a = st.cm[k][ln], b = st.cv[k][ln];
    cm[k] = *reinterpret_cast<const uchar4*>(&a);
    cv[k] = *reinterpret_cast<const uchar4*>(&b);
  }
}
// One whole quantisation block from its staged bytes, one warp: dequantise, update, write p,
// block absmax, requantise. Lane owns elements 4·lane + 128·k + j, k < 2, j < 4.
template <typename G>
__device__ __forceinline__ void update_block(const Adam8bitTensor& t, int64_t b0, const SharedMaps& sm,
                                             const AdamScalars& s, float4* pp, float4* gg,
                                             const uchar4* cm, const uchar4* cv, float am_old,
                                             float av_old) {
  const int ln = threadIdx.x % 32;
  const int64_t blk = b0 / kBlock;
  assume_global(t);
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
__device__ __forceinline__ bool whole_quant(const Adam8bitTensor& t, int64_t b0) {
  return t.quantized && t.vec && b0 < t.n && t.n - b0 >= kBlock;
}
// A warp's items, pipelined: item(i, ref, b) gives the chunk and block of item i. A whole,
// aligned, quantised block is staged: block i+1's copies are issued once block i's bytes are in
// registers, before its update; any other block goes through chunk_block from global memory.
template <typename G, typename Item>
__device__ __forceinline__ void run_items(int64_t n_items, Item item, const Adam8bitTensor* tensors,
                                          const SharedMaps& sm, WarpStage& st, const AdamScalars& s) {
  bool staged = false;  // the stage holds item i's bytes
  for (int64_t i = 0; i < n_items; ++i) {
    ChunkRef ref;
    int b;
    item(i, ref, b);
    const Adam8bitTensor& t = tensors[ref.tensor];
    const int64_t b0 = static_cast<int64_t>(ref.chunk) * kChunkElems + static_cast<int64_t>(b) * kBlock;
    if (!whole_quant(t, b0)) {
      chunk_block<G>(t, ref, b, sm, s);
      continue;
    }
    if (!staged) stage_issue<G>(st, t, b0);
    cp_async_wait<0>();
    float4 pp[2], gg[2];
    uchar4 cm[2], cv[2];
    float am_old, av_old;
    stage_read<G>(st, pp, gg, cm, cv, am_old, av_old);
    staged = false;
    if (i + 1 < n_items) {
      ChunkRef r1;
      int b1;
      item(i + 1, r1, b1);
      const Adam8bitTensor& t1 = tensors[r1.tensor];
      const int64_t b01 = static_cast<int64_t>(r1.chunk) * kChunkElems + static_cast<int64_t>(b1) * kBlock;
      if (whole_quant(t1, b01)) {
        stage_issue<G>(st, t1, b01);
        staged = true;
      }
    }
    update_block<G>(t, b0, sm, s, pp, gg, cm, cv, am_old, av_old);
  }
  cp_async_wait<0>();
}

template <typename G>
__global__ void __launch_bounds__(kA8Threads, 1)
    adam8bit_kernel(const Adam8bitTensor* __restrict__ tensors,
                    const ChunkRef* __restrict__ chunks, int64_t num_chunks, AdamScalars s,
                    const uint32_t* __restrict__ table) {
  extern __shared__ uint4 a8_smem[];
  A8Shared& sh = *reinterpret_cast<A8Shared*>(a8_smem);
  {
    constexpr int kWords = static_cast<int>(sizeof(SharedMaps) / 16);
    const uint4* src = reinterpret_cast<const uint4*>(table);
    uint4* dst = reinterpret_cast<uint4*>(&sh.maps);
    for (int i = threadIdx.x; i < kWords; i += kA8Threads) dst[i] = src[i];
  }
  __syncthreads();
  const int warp = threadIdx.x / 32;
  WarpStage& st = sh.stage[warp];
  // Whole rounds: a chunk per CTA, its blocks over the CTA's warps (kPerWarp each).
  const int64_t rounds_end = num_chunks / gridDim.x * gridDim.x;
  constexpr int kPerWarp = kBlocksPerChunk / kA8Warps;
  static_assert(kBlocksPerChunk % kA8Warps == 0, "a chunk's blocks must split evenly over warps");
  const int64_t items = (rounds_end / gridDim.x) * kPerWarp;
  run_items<G>(items, [&](int64_t k, ChunkRef& ref, int& b) {
    ref = chunks[blockIdx.x + (k / kPerWarp) * gridDim.x];
    b = warp + kA8Warps * static_cast<int>(k % kPerWarp);
  }, tensors, sh.maps, st, s);
  // The last, partial round: its blocks over all warps of the grid.
  const int64_t tail_blocks = (num_chunks - rounds_end) * kBlocksPerChunk;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * kA8Warps;
  const int64_t first = static_cast<int64_t>(blockIdx.x) * kA8Warps + warp;
  const int64_t n_tail = first < tail_blocks ? (tail_blocks - first + stride - 1) / stride : 0;
  run_items<G>(n_tail, [&](int64_t k, ChunkRef& ref, int& b) {
    const int64_t i = first + k * stride;
    ref = chunks[rounds_end + i / kBlocksPerChunk];
    b = static_cast<int>(i % kBlocksPerChunk);
  }, tensors, sh.maps, st, s);
}

template <typename G>
void launch(const Adam8bitTensor* tensors, const ChunkRef* chunks, int64_t num_chunks,
            const AdamScalars& s, const uint32_t* table, cudaStream_t stream) {
  const int grid = grid_for(adam8bit_kernel<G>, num_chunks, sizeof(A8Shared), kA8Threads);
  adam8bit_kernel<G><<<grid, kA8Threads, sizeof(A8Shared), stream>>>(tensors, chunks, num_chunks,
                                                                      s, table);
  CUDA_CHECK_LAUNCH();
}

}  // namespace

void adam8bit_step_cuda(const Adam8bitTensor* tensors, const ChunkRef* chunks,
                        int64_t num_chunks, ElemType grad_type, const AdamScalars& s,
                        const uint32_t* table, cudaStream_t stream) {
  if (num_chunks == 0) return;
  with_grad_type(grad_type, [&](auto g) {
    launch<decltype(g)>(tensors, chunks, num_chunks, s, table, stream);
  });
}

}  // namespace optim
}  // namespace gptbench
