#pragma once
// Per-tensor FP8 quantization with a transposed copy, for the FP8 linear layer (ops/fp8/linear.h):
// bf16 x (rows, cols) → e4m3 or e5m2 values e(x · scale), written as they are (rows, cols)
// and/or transposed (cols, rows), with one scale for the whole tensor from its current amax.
// cuBLASLt takes FP8 operands K-major only (ops/fp8/gemm.h), so a layer's backward needs Ŵᵀ
// (dgrad) and dŶᵀ, X̂ᵀ (wgrad): the quantizer writes them in the pass that reads x, as FP8
// training recipes do, instead of a transpose of the FP8 tensor afterwards.
//
// The scale follows ops/fp8/scaling.h with the format's largest finite value, 448 (e4m3) or
// 57,344 (e5m2, 5 exponent bits: the gradients' range): scale = max / amax, one correctly
// rounded fp32 division (1 when amax is 0 or not finite, FLT_MAX on overflow); stored value
// e(x · scale), the fp32 product rounded to nearest even and saturated at ±max; scale_inv =
// 1 / scale. For e4m3 this is quantize_fp8's kTensor scaling (ops/fp8/quantize.h) bit for bit.
//
// Three implementations, equal bit for bit (the same correctly rounded fp32 operations):
//   ours       fp8_tensor_scale: the amax in two kernels (per-block maxima, then one block
//              reduces them and writes scale and scale_inv: no atomics, deterministic);
//              quantize_transpose_fp8: one kernel for a given scale, each thread converting an
//              8 × 8 block and transposing its bytes in registers (ops/fp8/quantize_transpose.cu).
//              CUDA tensors only; CPU tensors take the reference.
//   _reference a scalar fp32 loop on the CPU (c10's float8 rounding).
//   _torch     the eager LibTorch composition a user writes (abs, amax, max / amax, multiply,
//              clamp, to(float8), t().contiguous()), on x's device.
// This header has three parts: the scale rule (host and device), the launchers (CUDA builds;
// torch-free, included by the .cu file), and the LibTorch-facing functions (host code only).
#include <cfloat>
#include <cstdint>

#include "ops/fp8/scaling.h"

namespace gptbench {

constexpr float kE5m2Max = 57344.f;  // largest finite float8_e5m2 value

// The values are stored in launch arguments: fixed, never reordered.
enum class Fp8Format : int32_t { kE4m3 = 0, kE5m2 = 1 };

constexpr const char* fp8_format_name(Fp8Format f) { return f == Fp8Format::kE4m3 ? "e4m3" : "e5m2"; }
constexpr float fp8_format_max(Fp8Format f) { return f == Fp8Format::kE4m3 ? kE4m3Max : kE5m2Max; }

// The quantization multiplier of a tensor of format f whose largest magnitude is `amax`:
// fp8_scale_from_amax's rule with f's largest value (the same function for e4m3).
GPTBENCH_FP8_HD float fp8_scale_from_amax(float amax, Fp8Format f) {
  if (!(amax > 0.f) || !(amax <= FLT_MAX)) return 1.f;  // zero, negative, NaN or infinite
  const float s = fp8_format_max(f) / amax;
  return s <= FLT_MAX ? s : FLT_MAX;
}

// Delayed scaling (Fp8DelayedScale below): the amax history's default and largest lengths.
constexpr int64_t kFp8AmaxHistory = 16;
constexpr int64_t kFp8MaxAmaxHistory = 1024;

// Which copies a quantization writes: the values as they are, transposed, or both.
enum class Fp8Copies : int32_t { kPlain = 1, kTransposed = 2, kBoth = 3 };
constexpr bool fp8_writes_plain(Fp8Copies c) { return (static_cast<int32_t>(c) & 1) != 0; }
constexpr bool fp8_writes_transposed(Fp8Copies c) { return (static_cast<int32_t>(c) & 2) != 0; }

}  // namespace gptbench

#ifdef GPTBENCH_WITH_CUDA
#include <cuda_runtime_api.h>

namespace gptbench {

// Raw device pointers of a row-major (rows, cols) bf16 input, rows and cols multiples of 8,
// x 16-byte aligned, q and qt 8-byte aligned.
// With `gelu` the values are GELU's output, GELU(bf16(x + gelu_bias)) in bf16 (the tanh form,
// ops/fp8/gelu_fp8.h), x being the MLP-up GEMM's output before its bias (gelu_bias: (cols) bf16,
// 16-byte aligned, or null for none): the activation is quantized without being written.
struct Fp8TensorScaleArgs {
  const void* x = nullptr;      // (rows, cols) bf16
  const void* gelu_bias = nullptr;
  bool gelu = false;
  float* partial = nullptr;     // fp8_quantize_partials(rows, cols) floats of scratch
  float* scale = nullptr;       // 1 float: written
  float* scale_inv = nullptr;   // 1 float: written
  int64_t rows = 0, cols = 0;
  Fp8Format format = Fp8Format::kE4m3;
};
void launch_fp8_tensor_scale(const Fp8TensorScaleArgs& a, cudaStream_t stream);

struct Fp8QuantizeTransposeArgs {
  const void* x = nullptr;      // (rows, cols) bf16
  const void* gelu_bias = nullptr;  // with `gelu`, as Fp8TensorScaleArgs
  bool gelu = false;
  const float* scale = nullptr; // 1 float on the device: the multiplier
  uint8_t* q = nullptr;         // (rows, cols) in `format`, or null: no plain copy
  uint8_t* qt = nullptr;        // (cols, rows) in `format`, or null: no transposed copy
  int64_t rows = 0, cols = 0;
  Fp8Format format = Fp8Format::kE4m3;
  // Delayed scaling: per-block maxima of |value| (fp8_quantize_transpose_blocks(rows, cols)
  // floats), and the multiplier used and its inverse (1 float each); all null, or all set.
  float* amax_partial = nullptr;
  float* scale_out = nullptr;
  float* scale_inv_out = nullptr;
};
void launch_fp8_quantize_transpose(const Fp8QuantizeTransposeArgs& a, cudaStream_t stream);

// The CUDA blocks of that cast (its amax_partial's length).
int64_t fp8_quantize_transpose_blocks(int64_t rows, int64_t cols);

// Delayed scaling's update after a cast, one block: state (1 + history floats: [0] the
// multiplier, then the amax history, newest first) takes max(partial[0 .. partials)) as its newest
// amax, drops the oldest, and state[0] = fp8_scale_from_amax(largest amax of the history).
void launch_fp8_delayed_update(const float* partial, int64_t partials, float* state, int64_t history,
                               Fp8Format format, cudaStream_t stream);

}  // namespace gptbench
#endif  // GPTBENCH_WITH_CUDA

#ifndef __CUDACC__
#include <ATen/ATen.h>

#include <string>

namespace gptbench {

// Delayed scaling of one tensor a step quantizes again and again (a layer's input, weight or
// output gradient): the multiplier comes from the largest amax of its last `history` casts, and
// each cast records the amax of what it casts in the same pass, so the tensor is read once
// instead of twice (amax, then cast). The first cast has no history: it takes the current amax
// (it is a current-scaling cast) and starts the history. A value above max / multiplier (a tensor
// grown since the history was recorded) saturates at ±max.
struct Fp8DelayedScale {
  explicit Fp8DelayedScale(Fp8Format f, int64_t history = kFp8AmaxHistory);
  Fp8Format format;
  int64_t history;
  // (1 + history) fp32 on the tensor's device, made by the first cast: [0] the next cast's
  // multiplier, then the amaxes of the casts so far, newest first (zeros before).
  at::Tensor state;
  int64_t casts = 0;  // casts so far (host side: the first primes the state)
};

// x quantized per tensor: the copies asked for (undefined otherwise) and the scales.
struct Fp8PerTensor {
  at::Tensor data;       // (rows, cols) of fp8_scalar_type(format), contiguous
  at::Tensor data_t;     // (cols, rows): the transposed copy, contiguous
  at::Tensor scale;      // (1, 1) fp32: the multiplier
  at::Tensor scale_inv;  // (1, 1) fp32: 1 / scale, what the GEMMs multiply by
  Fp8Format format = Fp8Format::kE4m3;
};

// at::kFloat8_e4m3fn or at::kFloat8_e5m2.
at::ScalarType fp8_scalar_type(Fp8Format f);

// The scales of x (2-D, any floating dtype; its current amax) on x's device: scale and
// scale_inv set, no copies.
Fp8PerTensor fp8_tensor_scale(const at::Tensor& x, Fp8Format f);
Fp8PerTensor fp8_tensor_scale_reference(const at::Tensor& x, Fp8Format f);

// Writes q.data and/or q.data_t from x with the given scale q.scale (of format q.format), on
// x's device (the reference: on the CPU, whatever q.scale's device).
void quantize_transpose_fp8(const at::Tensor& x, Fp8PerTensor& q, Fp8Copies copies);
void quantize_transpose_fp8_reference(const at::Tensor& x, Fp8PerTensor& q, Fp8Copies copies);

// Scale, then copies: fp8_tensor_scale + quantize_transpose_fp8 (ours), their references, and
// the LibTorch composition.
// With `delayed` (its format must be f), delayed scaling instead: q.scale is the state's multiplier
// before the cast (after a first cast's priming), q.scale_inv its inverse, and the state is
// updated. Ours on CUDA: the cast kernel records the amax, one more block updates the state (two
// kernels; three on the first cast). On the CPU the reference: the same operations in fp32, bit
// for bit.
Fp8PerTensor quantize_per_tensor_fp8(const at::Tensor& x, Fp8Format f, Fp8Copies copies,
                                     Fp8DelayedScale* delayed = nullptr);
Fp8PerTensor quantize_per_tensor_fp8_reference(const at::Tensor& x, Fp8Format f, Fp8Copies copies);
Fp8PerTensor quantize_per_tensor_fp8_torch(const at::Tensor& x, Fp8Format f, Fp8Copies copies);

// GELU's output GELU(bf16(u + bias)) (tanh form, bf16; ops/fp8/gelu_fp8.h's gelu_bf16_torch)
// quantized per tensor: on CUDA our two passes compute it from u, the MLP-up GEMM's output
// before its bias, so the activation is never written in bf16 (bias: (cols) bf16 or undefined);
// elsewhere quantize_per_tensor_fp8 of gelu_bf16_torch(u, bias). `delayed` as there.
Fp8PerTensor quantize_per_tensor_gelu_fp8(const at::Tensor& u, const at::Tensor& bias, Fp8Format f,
                                          Fp8Copies copies, Fp8DelayedScale* delayed = nullptr);

// Why our kernels cannot take x ("" when they can, or when x is on the CPU).
std::string quantize_transpose_fp8_unsupported(const at::Tensor& x);

// The values q.data stands for, data · scale_inv, as a float64 (rows, cols) tensor on its
// device: exactly what an FP8 GEMM multiplies.
at::Tensor dequantize_per_tensor_fp8(const Fp8PerTensor& q);

}  // namespace gptbench
#endif  // __CUDACC__
