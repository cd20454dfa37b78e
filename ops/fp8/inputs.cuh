#pragma once
// What the FP8 quantizing kernels read (ops/fp8/quantize.cu, ops/fp8/quantize_transpose.cu):
// 8 consecutive values of a row-major (rows, cols) matrix as fp32, through an input type with
//   Vec8 load(row, col, cols)          the values at row, columns col .. col + 7;
//   void keep(row, col, cols, values) a place to write the values the kernel quantized (or none).
// PlainInput is a bf16 tensor; BiasGeluInput is GELU's output computed from the MLP-up GEMM's
// bf16 output and bias, so a producer's bf16 activation is quantized without being written and
// read back (ops/fp8/gelu_fp8.h).
#include <cuda_bf16.h>

#include <cstdint>

namespace gptbench::fp8dev {

constexpr int kVec = 8;  // elements per access: one 16-byte bf16 load

struct Vec8 {
  float v[kVec];
};

__device__ __forceinline__ Vec8 load8(const __nv_bfloat16* p) {
  const uint4 raw = *reinterpret_cast<const uint4*>(p);
  const uint32_t w[4] = {raw.x, raw.y, raw.z, raw.w};
  Vec8 r;
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    __nv_bfloat162 h;
    *reinterpret_cast<uint32_t*>(&h) = w[i];
    const float2 f = __bfloat1622float2(h);
    r.v[2 * i] = f.x;
    r.v[2 * i + 1] = f.y;
  }
  return r;
}

__device__ __forceinline__ float amax8(const Vec8& x) {
  float m = 0.f;
#pragma unroll
  for (int i = 0; i < kVec; ++i) m = fmaxf(m, fabsf(x.v[i]));
  return m;
}

__device__ __forceinline__ float round_bf16(float v) { return __bfloat162float(__float2bfloat16_rn(v)); }

__device__ __forceinline__ void store8_bf16(__nv_bfloat16* p, const Vec8& v) {
  uint32_t w[4];
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const __nv_bfloat162 h = __floats2bfloat162_rn(v.v[2 * i], v.v[2 * i + 1]);
    w[i] = *reinterpret_cast<const uint32_t*>(&h);
  }
  *reinterpret_cast<uint4*>(p) = make_uint4(w[0], w[1], w[2], w[3]);
}

// The values a kernel quantizes: the bf16 tensor x.
struct PlainInput {
  const __nv_bfloat16* __restrict__ x;
  __device__ Vec8 load(int64_t row, int64_t col, int64_t cols) const { return load8(x + row * cols + col); }
  __device__ void keep(int64_t, int64_t, int64_t, const Vec8&) const {}
};

// GELU's output as the bf16 composition computes it: h = bf16(u + bias) (no bias: h = u), then
// bf16(0.5 h (1 + tanh(sqrt(2/pi) (h + 0.044715 h^3)))) in fp32, LibTorch's tanh form; y, when
// set, receives those bf16 values.
struct BiasGeluInput {
  const __nv_bfloat16* __restrict__ u;
  const __nv_bfloat16* __restrict__ bias;  // (cols) or nullptr
  __nv_bfloat16* __restrict__ y;           // (rows, cols) or nullptr
  __device__ Vec8 load(int64_t row, int64_t col, int64_t cols) const {
    Vec8 v = load8(u + row * cols + col);
    const Vec8 b = bias != nullptr ? load8(bias + col) : Vec8{};
#pragma unroll
    for (int i = 0; i < kVec; ++i) {
      const float h = bias != nullptr ? round_bf16(v.v[i] + b.v[i]) : v.v[i];
      const float cube = h * h * h;
      const float inner = 0.7978845608028654f * (h + 0.044715f * cube);
      v.v[i] = round_bf16(0.5f * h * (1.f + tanhf(inner)));
    }
    return v;
  }
  __device__ void keep(int64_t row, int64_t col, int64_t cols, const Vec8& v) const {
    if (y != nullptr) store8_bf16(y + row * cols + col, v);
  }
};

}  // namespace gptbench::fp8dev
