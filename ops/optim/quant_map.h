#pragma once
// The 8-bit dynamic quantisation maps of Dettmers et al. 2022 ("8-bit Optimizers via Block-wise
// Quantization", §2; bitsandbytes' create_dynamic_map with max_exponent_bits = 7): 256 sorted
// fp32 code values in [-1, 1] (signed, first moment) or [0, 1] (unsigned, second moment).
// Decade i = 0..6 covers magnitudes 10^(i−6)·[0.1, 1] with the midpoints of a uniform
// partition of [0.1, 1] into 2^i (signed, each with both signs) or 2^(i+1) (unsigned) pieces;
// 0 and 1 complete the 256 codes. Torch-free: used by the CPU reference and uploaded for the
// kernels, so both quantise with the same table.
#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>

namespace gptbench {
namespace optim {

constexpr int64_t kQuantBlock = 256;        // elements per absmax block
constexpr int64_t kMinQuantNumel = 4096;    // smaller tensors keep fp32 states (as in the paper)

struct QuantMap {
  std::array<float, 256> code;  // sorted ascending
  std::array<float, 256> mid;   // mid[k] = (code[k] + code[k+1]) / 2 for k < 255; mid[255] = +inf
};

const QuantMap& signed_dynamic_map();
const QuantMap& unsigned_dynamic_map();

// Nearest code of x (already divided by the block's absmax): the number of midpoints < x,
// so a tie goes to the lower code. The kernels use the same comparison.
uint8_t quantize_nearest(const QuantMap& map, float x);

// ---- Exact quantisation by bucket lookup (what the kernel does) ----------------------------
// quantize_nearest is a count of midpoints below x. The kernel gets the same count in two
// table reads instead of an 8-step binary search: floats are grouped into buckets by their
// sign, exponent and top 7 mantissa bits (bits 30..16 of |x|, clamped below to one bucket
// [0, 2^-23·(1+1/128)) and above to one bucket [2, inf]); lo[b] = count(mid < smallest float of
// bucket b). The table is only built when every bucket holds at most one midpoint (checked,
// else it throws), so for x in bucket b: count(mid < x) = lo + (mid[lo] < x) — the same strict
// fp32 comparisons as the search, hence bit-identical codes for every x (NaN: the search gives
// 0; quantize_bucketed first maps NaN to −4, which also gives 0). The kernel uses the two
// quantize_unit_* forms below, this count on the domain of x / absmax with lo and mid[lo]
// folded into one 4-byte entry per bucket (bucket_entry).
constexpr uint32_t kBucketMinKey = (127 - 23) << 7;  // |x| < 2^-23·(1 + 1/128): one bucket
constexpr uint32_t kBucketMaxKey = 128 << 7;         // |x| ≥ 2 (and inf): one bucket
constexpr int kBucketsPerSign = static_cast<int>(kBucketMaxKey - kBucketMinKey) + 1;  // 3073
constexpr int kBuckets = 2 * kBucketsPerSign;                                         // 6146

#if defined(__CUDACC__)
#define GPTBENCH_QUANT_HD __host__ __device__ __forceinline__
#else
#define GPTBENCH_QUANT_HD inline
#endif
// Bucket of the float with bit pattern `bits` (x not NaN).
GPTBENCH_QUANT_HD uint32_t quant_bucket(uint32_t bits) {
  uint32_t k = (bits >> 16) & 0x7fffu;  // exponent and top 7 mantissa bits of |x|
  k = k < kBucketMinKey ? kBucketMinKey : (k > kBucketMaxKey ? kBucketMaxKey : k);
  return (bits >> 31) * static_cast<uint32_t>(kBucketsPerSign) + (k - kBucketMinKey);
}

// x / a correctly rounded (= IEEE x / a) from r = RN(1/a) by one Markstein correction:
// q0 = RN(x·r), e = x − a·q0 (exact by FMA unless it underflows), q = RN(q0 + e·r). For
// |x| ≤ a (the requantisation's x / absmax) with a in [2^-60, 2^100] (quant_div_ok): nothing
// overflows, and e is exact whenever |x| ≥ 2^-100; below that |x/a| < 2^-40, far under the
// smallest midpoint (~5e-8), where the quotient may be off by an ulp but keeps its sign, so the
// code is the same. The "fast" 8-bit Adam kernels use it (one reciprocal per block instead of a
// full-range division per element); a host test checks it against x / a over millions of pairs.
GPTBENCH_QUANT_HD bool quant_div_ok(float a) { return a >= 0x1p-60f && a <= 0x1p100f; }
GPTBENCH_QUANT_HD float quant_div(float x, float a, float r) {
#if defined(__CUDA_ARCH__)
  const float q0 = __fmul_rn(x, r);
  const float e = __fmaf_rn(-q0, a, x);
  return __fmaf_rn(e, r, q0);
#else
  volatile float q0v = x * r;  // rounded product, never contracted
  const float q0 = q0v;
  const float e = std::fma(-q0, a, x);
  return std::fma(e, r, q0);
#endif
}
GPTBENCH_QUANT_HD uint32_t quant_float_bits(float x) {
#if defined(__CUDA_ARCH__)
  return __float_as_uint(x);
#else
  uint32_t b;
  std::memcpy(&b, &x, sizeof b);
  return b;
#endif
}
// The kernel reads one 4-byte entry per code instead of lo[b] and then mid[lo]: a bucket holds
// at most one midpoint and, away from the two clamped buckets, all its floats share bits 31..16,
// so "mid < x" inside the bucket compares bits 15..0 (the other way round for negative floats).
// Entry = lo << 16 | (0xffff − t), t the midpoint's bits 15..0 (complemented in a negative
// bucket), or lo << 16 when no midpoint lies in the bucket; adding x's bits 15..0 (complemented
// when x < 0) carries into bit 16 exactly when mid < x, so the code is (entry + low) >> 16. No
// midpoint of either map lies in a clamped bucket, where bits 15..0 would not order the floats
// (checked by the host test). `mid`: the map's midpoints; l = lo[b] of bucket b.
GPTBENCH_QUANT_HD uint32_t bucket_entry(const float* mid, uint32_t l, uint32_t b) {
  const uint32_t mb = quant_float_bits(mid[l]);
  if (l == 255 || quant_bucket(mb) != b) return l << 16;  // no midpoint in the bucket
  return l << 16 | (0xffffu - ((mb ^ (0u - (mb >> 31))) & 0xffffu));
}
// The kernel's two quantisers, for values already divided by their block's absmax: |x| ≤ 1
// (x / absmax with |x| ≤ absmax, by quant_div or IEEE division, never leaves [-1, 1]) and x ≥ 0
// for the unsigned map; NaN allowed. On that domain the bucketed count needs no upper clamp
// (|x| ≤ 1 < 2) and the unsigned one only the positive half of its table (buckets
// [0, kBucketsPerSign)); NaN goes to −1 (signed) or 0 (unsigned), both code 0, as the search
// gives NaN. `ent`: bucket_entry of every bucket of the map (signed_buckets() /
// unsigned_buckets()); equal to quantize_nearest on the domain (host test
// `UnitQuantisersEqualNearestSearchOnTheirDomain`).
// quant_sum_*: entry + low bits, the code in bits 23..16 (bits 31..24 are 0), so the kernel
// packs four codes by byte permutes without a shift each; quantize_unit_* is that sum >> 16.
GPTBENCH_QUANT_HD uint32_t quant_sum_signed(const uint32_t* ent, float x) {
  x = fmaxf(x, -1.f);
  const uint32_t bits = quant_float_bits(x);
  uint32_t key = (bits >> 16) & 0x7fffu;
  key = key < kBucketMinKey ? kBucketMinKey : key;
  const uint32_t e = ent[(bits >> 31) * static_cast<uint32_t>(kBucketsPerSign) + (key - kBucketMinKey)];
  return e + ((bits ^ (0u - (bits >> 31))) & 0xffffu);
}
GPTBENCH_QUANT_HD uint32_t quant_sum_unsigned(const uint32_t* ent, float x) {
  x = fmaxf(x, 0.f);
  const uint32_t bits = quant_float_bits(x);
  uint32_t key = (bits >> 16) & 0x7fffu;  // −0 → the bucket of +0 (its low bits are 0)
  key = key < kBucketMinKey ? kBucketMinKey : key;
  return ent[key - kBucketMinKey] + (bits & 0xffffu);
}
GPTBENCH_QUANT_HD int quantize_unit_signed(const uint32_t* ent, float x) {
  return static_cast<int>(quant_sum_signed(ent, x) >> 16);
}
GPTBENCH_QUANT_HD int quantize_unit_unsigned(const uint32_t* ent, float x) {
  return static_cast<int>(quant_sum_unsigned(ent, x) >> 16);
}
#undef GPTBENCH_QUANT_HD

using QuantBuckets = std::array<uint8_t, kBuckets>;
const QuantBuckets& signed_buckets();
const QuantBuckets& unsigned_buckets();

// The 8-bit Adam kernel's shared-memory tables as one image, built here once and uploaded;
// each CTA copies it into shared memory as it is (building the entries in every CTA from the
// byte tables cost ~10 us of a 600 us step on GPT-2 small, H200 2026-11-24). Words:
// [0, 256) the signed map's codes, [256, 512) the unsigned map's codes (fp32 bit patterns, for
// dequantisation); then bucket_entry of every signed bucket (kQuantSignedEntries, zero
// padding) and of the unsigned map's positive half (kQuantUnsignedEntries: the unsigned
// quantiser sees only x >= 0).
constexpr int kQuantSignedEntries = (kBuckets + 15) / 16 * 16;
constexpr int kQuantUnsignedEntries = (kBucketsPerSign + 15) / 16 * 16;
constexpr int kQuantTableWords = 512 + kQuantSignedEntries + kQuantUnsignedEntries;
using QuantKernelTable = std::array<uint32_t, kQuantTableWords>;
const QuantKernelTable& quant_kernel_table();
// The bucketed count for any float (the table's specification; the kernel's quantize_unit_*
// are this count on [-1, 1]); equals quantize_nearest for every x.
uint8_t quantize_bucketed(const QuantMap& map, const QuantBuckets& lo, float x);

}  // namespace optim
}  // namespace gptbench
