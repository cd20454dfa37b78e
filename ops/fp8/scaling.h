#pragma once
// FP8 (e4m3) amax scaling, the one definition every quantizer (ours on the GPU, the CPU
// reference, the LibTorch composition) and every FP8 GEMM of the suite follows (docs/fp8.md):
//   scale     = 448 / amax   (448: the largest finite e4m3 value), fp32, correctly rounded;
//               1 when amax is 0 (an all-zero group stays 0) or not finite; FLT_MAX when
//               448 / amax overflows (amax below 448 / FLT_MAX ≈ 1.3e-36)
//   stored    = e4m3(x · scale): fp32 product, rounded to nearest even, saturating at ±448
//   scale_inv = 1 / scale (fp32): what the GEMMs multiply by (the dequantization scale)
// over groups of one of four granularities, with the scale_inv layouts cuBLASLt reads (an
// operand (rows, cols) is row-major, cols the GEMM's K):
//   kTensor       one group;                scale_inv (1, 1)
//   kRow          a row;                    scale_inv (rows, 1)   (cuBLASLt OUTER_VEC_32F)
//   kBlock1x128   128 columns of a row;     scale_inv (ceil(cols/128), rows), rows fastest
//                                           (cuBLASLt VEC128_32F)
//   kBlock128x128 128 × 128 elements;       scale_inv (ceil(rows/128), ld), ld = ceil(cols/128)
//                                           rounded up to 4 (16 bytes), padding entries 1
//                                           (cuBLASLt BLK128x128_32F)
// No CUDA or LibTorch headers: the kernels (ops/fp8/quantize.cu) and host code share it.
#include <cfloat>
#include <cstdint>

#ifdef __CUDACC__
#define GPTBENCH_FP8_HD __host__ __device__ __forceinline__
#else
#define GPTBENCH_FP8_HD inline
#endif

namespace gptbench {

constexpr float kE4m3Max = 448.f;   // largest finite float8_e4m3fn value
constexpr int64_t kFp8Block = 128;  // block edge of the block granularities

// The values are stored in launch arguments: fixed, never reordered.
enum class Fp8Granularity : int32_t { kTensor = 0, kRow = 1, kBlock1x128 = 2, kBlock128x128 = 3 };

// "tensor", "row", "block1x128", "block128x128": the names benchmark rows and messages use.
constexpr const char* fp8_granularity_name(Fp8Granularity g) {
  switch (g) {
    case Fp8Granularity::kTensor: return "tensor";
    case Fp8Granularity::kRow: return "row";
    case Fp8Granularity::kBlock1x128: return "block1x128";
    case Fp8Granularity::kBlock128x128: return "block128x128";
  }
  return "unknown";
}

// The quantization multiplier of a group whose largest magnitude is `amax` (see the top).
GPTBENCH_FP8_HD float fp8_scale_from_amax(float amax) {
  if (!(amax > 0.f) || !(amax <= FLT_MAX)) return 1.f;  // zero, negative, NaN or infinite
  const float s = kE4m3Max / amax;
  return s <= FLT_MAX ? s : FLT_MAX;
}

constexpr int64_t fp8_blocks(int64_t n) { return (n + kFp8Block - 1) / kFp8Block; }
// The leading dimension of a 128 × 128 scale_inv: blocks per row rounded up to 4 floats.
constexpr int64_t fp8_block_ld(int64_t cols) { return (fp8_blocks(cols) + 3) / 4 * 4; }

struct Fp8ScaleShape {
  int64_t dim0, dim1;  // scale_inv is a contiguous fp32 (dim0, dim1) tensor
};
constexpr Fp8ScaleShape fp8_scale_shape(Fp8Granularity g, int64_t rows, int64_t cols) {
  switch (g) {
    case Fp8Granularity::kTensor: return {1, 1};
    case Fp8Granularity::kRow: return {rows, 1};
    case Fp8Granularity::kBlock1x128: return {fp8_blocks(cols), rows};
    case Fp8Granularity::kBlock128x128: return {fp8_blocks(rows), fp8_block_ld(cols)};
  }
  return {0, 0};
}

// The offset in scale_inv of the scale of element (r, c) of a (rows, cols) operand.
GPTBENCH_FP8_HD int64_t fp8_scale_index(Fp8Granularity g, int64_t r, int64_t c, int64_t rows,
                                        int64_t cols) {
  switch (g) {
    case Fp8Granularity::kTensor: return 0;
    case Fp8Granularity::kRow: return r;
    case Fp8Granularity::kBlock1x128: return (c / kFp8Block) * rows + r;
    case Fp8Granularity::kBlock128x128: return (r / kFp8Block) * fp8_block_ld(cols) + c / kFp8Block;
  }
  return 0;
}

// How an FP8 GEMM C = A·Bᵀ scales its operands (A (M, K) activations, B (N, K) weights, both
// K-major): the granularity of each operand's scales.
enum class Fp8GemmScaling : int32_t { kTensor = 0, kRow = 1, kBlock = 2 };

// "tensor", "row", "block" (1×128 activations × 128×128 weights, as DeepSeek-V3 trains).
constexpr const char* fp8_gemm_scaling_name(Fp8GemmScaling s) {
  return s == Fp8GemmScaling::kTensor ? "tensor" : s == Fp8GemmScaling::kRow ? "row" : "block";
}
constexpr Fp8Granularity fp8_a_granularity(Fp8GemmScaling s) {
  return s == Fp8GemmScaling::kTensor ? Fp8Granularity::kTensor
         : s == Fp8GemmScaling::kRow  ? Fp8Granularity::kRow
                                      : Fp8Granularity::kBlock1x128;
}
constexpr Fp8Granularity fp8_b_granularity(Fp8GemmScaling s) {
  return s == Fp8GemmScaling::kTensor ? Fp8Granularity::kTensor
         : s == Fp8GemmScaling::kRow  ? Fp8Granularity::kRow
                                      : Fp8Granularity::kBlock128x128;
}

}  // namespace gptbench
