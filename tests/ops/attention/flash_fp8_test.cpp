// Tests of ops/attention/flash_fp8.*: the FP8 (e4m3) attention forward with per-block scaling.
//   CPU (always run): the key order of FlashFp8Inputs::vt (flash_fp8_v_key) against the formula
//   and against the wgmma register layouts it comes from; the error paths (head dim 64, fp32,
//   mismatched shapes, mixed bf16/fp16, 3-D and CPU tensors: a reason from flash_fp8_unsupported,
//   c10::Error from flash_attention_quantize_fp8).
//   GPU (skipped without a GPU on which the FP8 forward runs, with flash_fp8_unsupported's
//   reason): the quantizer for bf16 and fp16, L in {1, 17, 130, 300}, inputs whose magnitude
//   changes every 64 rows over 2^±4 — shapes and dtypes of FlashFp8Inputs, every block scale
//   against amax / 448 computed on the host (q's blocks ending at row L, k's and v's starting
//   at key 0), every stored element (vt read back through flash_fp8_v_key on the host) within
//   e4m3 rounding of its input, flash_attention_dequantize_fp8 equal to the stored operands, vt
//   zero beyond key L; the forward for bf16 and fp16, causal and not, L in {1, 17, 130, 1000,
//   4097}, o and lse against the float64 reference of the dequantized inputs (so only the
//   kernel's own roundings count), the error also far below a wrong key order's; at L = 1024
//   causal, the FP8 output against our bf16 Hopper kernel on the unquantized inputs.
// Sanitizer run (small shapes only):
//   compute-sanitizer --tool memcheck build/gptbench_tests --gtest_filter='*FlashFp8Gpu.QuantizeRoundTrips:*FlashFp8Gpu.ForwardMatchesReference/*_L17_*:*FlashFp8Gpu.ForwardMatchesReference/*_L130_*'
#include "ops/attention/flash_fp8.h"

#include <ATen/ATen.h>
#include <c10/util/Exception.h>
#include <gtest/gtest.h>
#include <torch/cuda.h>

#include <cmath>
#include <cstdint>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "fixtures/verify.h"
#include "ops/attention/flash.h"

namespace gptbench {
namespace {

constexpr int64_t kHeadDim = 128;  // the only head dim of the FP8 forward
constexpr int64_t kBlock = 128;    // rows per scale block
constexpr int64_t kVGroup = 32;    // keys per group of flash_fp8_v_key
constexpr double kE4m3Max = 448;   // largest finite e4m3 value: scale = amax / 448

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

at::Tensor to_cpu_double(const at::Tensor& t) {
  // float8 → fp32 on the tensor's device first: every device converts float8 to fp32.
  return t.detach().to(at::kFloat).to(at::kCPU, at::kDouble);
}

// ---- The key order of vt (CPU) ------------------------------------------------------------------

// P·V runs as wgmma m64n128k32 e4m3 with P, the A operand, in registers (ops/device/wgmma.cuh).
// Thread t of a quad (lane = 4g + t) must hold A's columns 4t .. 4t+3 (a[0], a[1]) and
// 16+4t .. 16+4t+3 (a[2], a[3]) of the 32 keys of a k-step, four 8-bit values per register,
// lower column low. The fp32 accumulator of S = Q Kᵀ leaves thread t columns 2t, 2t+1 of each
// 8-column chunk j: keys 8j + 2t, 8j + 2t + 1, i.e. 2t, 2t+1, 8+2t, 9+2t (chunks 0, 1) and the
// same plus 16 (chunks 2, 3). Packing those in that order into the A registers, without moving
// values between threads, makes A's column (position) p stand for key
//   16·(p/16) + 8·((p%4)/2) + 2·((p%16)/4) + p%2;
// V's keys are stored in vt in that order too, so that P's column p meets the value of its key.
TEST(FlashFp8, VKeyOrder) {
  std::set<int> keys;
  for (int p = 0; p < kVGroup; ++p) {
    const int key = flash_fp8_v_key(p);
    EXPECT_EQ(key, 16 * (p / 16) + 8 * ((p % 4) / 2) + 2 * ((p % 16) / 4) + p % 2) << "p = " << p;
    EXPECT_GE(key, 0) << "p = " << p;
    EXPECT_LT(key, kVGroup) << "p = " << p;
    keys.insert(key);
  }
  EXPECT_EQ(keys.size(), static_cast<size_t>(kVGroup)) << "not a permutation of 0 .. 31";
  // The same order from the register layouts: thread t's accumulator keys, in register order,
  // are its A positions 4t .. 4t+3, then 16+4t .. 16+4t+3.
  for (int t = 0; t < 4; ++t) {
    const int acc_keys[8] = {2 * t, 2 * t + 1, 8 + 2 * t, 9 + 2 * t,
                             16 + 2 * t, 17 + 2 * t, 24 + 2 * t, 25 + 2 * t};
    for (int i = 0; i < 8; ++i) {
      const int p = (i < 4 ? 4 * t : 16 + 4 * t) + i % 4;
      EXPECT_EQ(flash_fp8_v_key(p), acc_keys[i]) << "thread " << t << ", position " << p;
    }
  }
}

// ---- Error paths (CPU) --------------------------------------------------------------------------

// Each input the FP8 forward does not take: flash_fp8_unsupported says why (without throwing)
// and the quantizer throws c10::Error. Where a GPU is present the tensors other than the CPU
// ones live on it, so that the reason is the shape or dtype, not the device.
TEST(FlashFp8, RejectsBadInputs) {
  const at::Device dev = torch::cuda::is_available() ? at::Device(at::kCUDA) : at::Device(at::kCPU);
  const auto bf = at::TensorOptions().dtype(at::kBFloat16).device(dev);
  const auto good = at::randn({1, 2, 8, kHeadDim}, bf);
  const auto d64 = at::randn({1, 2, 8, 64}, bf);
  const auto f32 = at::randn({1, 2, 8, kHeadDim}, bf.dtype(at::kFloat));
  const auto longer = at::randn({1, 2, 9, kHeadDim}, bf);
  const auto three_d = at::randn({2, 8, kHeadDim}, bf);
  const auto fp16 = good.to(at::kHalf);
  const auto cpu = good.to(at::kCPU);
  struct Bad {
    const char* what;
    at::Tensor q, k, v;
  };
  const Bad bad[] = {{"head dim 64", d64, d64, d64},
                     {"fp32", f32, f32, f32},
                     {"k longer than q", good, longer, good},
                     {"v longer than q", good, good, longer},
                     {"bf16 q, fp16 k and v", good, fp16, fp16},
                     {"3-D", three_d, three_d, three_d},
                     {"CPU tensors", cpu, cpu, cpu}};
  for (const Bad& b : bad) {
    std::string why;
    EXPECT_NO_THROW(why = flash_fp8_unsupported(b.q, b.k, b.v)) << b.what;
    EXPECT_NE(why, "") << b.what;
    EXPECT_THROW(flash_attention_quantize_fp8(b.q, b.k, b.v), c10::Error) << b.what;
  }
}

// ---- GPU ----------------------------------------------------------------------------------------

// Why the FP8 forward cannot run here, or "" when it can.
std::string fp8_skip_reason() {
  if (!torch::cuda::is_available()) return "no CUDA GPU";
  const auto x =
      at::zeros({1, 1, 8, kHeadDim}, at::TensorOptions().dtype(at::kBFloat16).device(at::kCUDA));
  return flash_fp8_unsupported(x, x, x);
}

// randn (B, H, L, 128) of type t on the GPU, times 2^u with u uniform in [lo, hi) drawn afresh
// every 64 rows of each head: neighbouring 128-row blocks get different scales, and rows far
// below their block's amax land in e4m3's subnormals.
at::Tensor scaled_randn(int64_t B, int64_t H, int64_t L, double lo, double hi, at::ScalarType t) {
  const auto f = at::TensorOptions().dtype(at::kFloat).device(at::kCUDA);
  const auto mag = at::exp2(at::rand({B, H, ceil_div(L, 64), 1}, f) * (hi - lo) + lo)
                       .repeat_interleave(64, 2)
                       .narrow(2, 0, L);
  return (at::randn({B, H, L, kHeadDim}, f) * mag).to(t);
}

// Pads (B, H, L) per-row values with zeros to whole 128-row blocks — in front when the blocks
// end at row L (q's), behind when they start at row 0 (k's, v's) — as (B, H, n, 128).
at::Tensor rows_in_blocks(const at::Tensor& rows, bool end_at_l) {
  const int64_t B = rows.size(0), H = rows.size(1), L = rows.size(2), n = ceil_div(L, kBlock);
  const auto pad = at::zeros({B, H, n * kBlock - L}, rows.options());
  return (end_at_l ? at::cat({pad, rows}, 2) : at::cat({rows, pad}, 2)).view({B, H, n, kBlock});
}

// The scale each block of x (B, H, L, 128) should get: amax |x| / 448, (B, H, n) float64.
at::Tensor expected_scales(const at::Tensor& x, bool end_at_l) {
  return rows_in_blocks(to_cpu_double(x).abs().amax(-1), end_at_l).amax(-1) / kE4m3Max;
}

// A block scale tensor (B, H, n) as the scale of each row, (B, H, L, 1) float64.
at::Tensor row_scales(const at::Tensor& scale, int64_t L, bool end_at_l) {
  const auto s = to_cpu_double(scale).repeat_interleave(kBlock, 2);  // (B, H, n·128)
  return s.narrow(2, end_at_l ? s.size(2) - L : 0, L).unsqueeze(-1);
}

// The key stored at each column of vt (Lv columns): 32·g + flash_fp8_v_key(p) at column 32·g + p.
at::Tensor key_at_column(int64_t Lv) {
  std::vector<int64_t> keys(Lv);
  for (int64_t c = 0; c < Lv; ++c)
    keys[c] = kVGroup * (c / kVGroup) + flash_fp8_v_key(static_cast<int>(c % kVGroup));
  return at::tensor(keys, at::kLong);
}

// vt (B, H, 128, Lv) read back in key order: (B, H, Lv, 128) float64 e4m3 values, unscaled.
at::Tensor vt_by_key(const at::Tensor& vt) {
  const int64_t Lv = vt.size(3);
  const auto key = key_at_column(Lv);
  auto column = at::empty({Lv}, at::kLong);  // the inverse permutation
  column.index_put_({key}, at::arange(Lv, at::kLong));
  return to_cpu_double(vt).index_select(3, column).transpose(2, 3);
}

// v (B, H, L, d) with the keys of each group of 32 in vt's storage order (keys beyond L zero):
// what P·V computes if P's columns were taken for keys in natural order — a wrong key order.
at::Tensor keys_in_vt_order(const at::Tensor& v) {
  const int64_t L = v.size(2), Lv = ceil_div(L, kVGroup) * kVGroup;
  const auto x = to_cpu_double(v);
  const auto pad = at::zeros({x.size(0), x.size(1), Lv - L, x.size(3)}, x.options());
  const auto padded = at::cat({x, pad}, 2);
  return padded.index_select(2, key_at_column(Lv)).narrow(2, 0, L);
}

// Max over elements of |deq − x| / (2^-4·|x| + 2^-10·s), s the element's block scale: at most 1
// when deq is x rounded to nearest e4m3 in units of s. e4m3 keeps 3 mantissa bits: a normal
// value y = x/s in [2^e, 2^(e+1)) (|y| ≥ 2^-6) lies on a grid of step 2^(e-3), so rounding moves
// it by at most half a step, 2^(e-4) ≤ 2^-4·|y|; below 2^-6 the subnormals' step is 2^-9, and
// rounding moves y by at most 2^-10. Times s: |deq − x| ≤ 2^-4·|x| + 2^-10·s. The bound is met
// with equality nowhere (the worst normal case is 2^-4/1.0625·|x|: a ratio of 0.941, which an
// emulation of the quantizer reaches), leaving room for the fp32 division by s and product with
// s (2^-24 relative each).
double rounding_ratio(const at::Tensor& deq, const at::Tensor& x, const at::Tensor& s_rows) {
  const auto xd = to_cpu_double(x);
  const auto err = (to_cpu_double(deq) - xd).abs();
  const auto bound = std::ldexp(1.0, -4) * xd.abs() + std::ldexp(1.0, -10) * s_rows;
  return (err / bound).max().item<double>();
}

// Checks t's dtype, shape and device; true when all three are right.
bool expect_layout(const at::Tensor& t, at::ScalarType dtype, at::IntArrayRef sizes,
                   const char* what) {
  EXPECT_EQ(t.scalar_type(), dtype) << what;
  EXPECT_EQ(t.sizes(), sizes) << what;
  EXPECT_TRUE(t.is_cuda()) << what;
  return t.scalar_type() == dtype && t.sizes() == sizes && t.is_cuda();
}

// dtype name, L, causal.
using ForwardParam = std::tuple<std::string, int, bool>;

// Skips every test without a GPU on which the FP8 forward runs. The parameterised forward test
// uses this fixture too (its parameter is ignored by the others).
class FlashFp8Gpu : public ::testing::TestWithParam<ForwardParam> {
 protected:
  void SetUp() override {
    const std::string why = fp8_skip_reason();
    if (!why.empty()) GTEST_SKIP() << why;
  }
};

TEST_F(FlashFp8Gpu, QuantizeRoundTrips) {
  const int64_t B = 2, H = 3;
  for (at::ScalarType dtype : {at::kBFloat16, at::kHalf}) {
    for (int64_t L : {1, 17, 130, 300}) {
      SCOPED_TRACE(std::string(c10::toString(dtype)) + " L=" + std::to_string(L));
      at::manual_seed(100 + L + (dtype == at::kHalf ? 1000 : 0));
      const int64_t n = ceil_div(L, kBlock), Lv = ceil_div(L, kVGroup) * kVGroup;
      const at::Tensor x[3] = {scaled_randn(B, H, L, -4, 4, dtype),
                               scaled_randn(B, H, L, -4, 4, dtype),
                               scaled_randn(B, H, L, -4, 4, dtype)};
      const FlashFp8Inputs in = flash_attention_quantize_fp8(x[0], x[1], x[2]);
      const FlashFp8Dequantized deq = flash_attention_dequantize_fp8(in);
      ASSERT_NO_THROW(torch::cuda::synchronize());  // surfaces an asynchronous kernel fault here

      EXPECT_TRUE(in.q.is_contiguous());
      EXPECT_TRUE(in.k.is_contiguous());
      // The checks below index by these shapes: all are checked, then a wrong one ends this L.
      const bool laid_out = expect_layout(in.q, at::kFloat8_e4m3fn, {B, H, L, kHeadDim}, "q") &
                            expect_layout(in.k, at::kFloat8_e4m3fn, {B, H, L, kHeadDim}, "k") &
                            expect_layout(in.vt, at::kFloat8_e4m3fn, {B, H, kHeadDim, Lv}, "vt") &
                            expect_layout(in.q_scale, at::kFloat, {B, H, n}, "q_scale") &
                            expect_layout(in.k_scale, at::kFloat, {B, H, n}, "k_scale") &
                            expect_layout(in.v_scale, at::kFloat, {B, H, n}, "v_scale") &
                            expect_layout(deq.q, at::kFloat, {B, H, L, kHeadDim}, "deq. q") &
                            expect_layout(deq.k, at::kFloat, {B, H, L, kHeadDim}, "deq. k") &
                            expect_layout(deq.v, at::kFloat, {B, H, L, kHeadDim}, "deq. v");
      if (!laid_out) continue;

      const auto v_keys = vt_by_key(in.vt);  // (B, H, Lv, 128)
      if (Lv > L) {
        EXPECT_EQ(v_keys.narrow(2, L, Lv - L).abs().max().item<double>(), 0.0)
            << "vt not zero beyond key L";
      }
      struct Operand {
        const char* name;
        const at::Tensor& x;
        at::Tensor stored;  // e4m3 values in (B, H, L, 128), float64, unscaled
        const at::Tensor& scale;
        const at::Tensor& dequantized;
        bool end_at_l;  // q's blocks end at row L, k's and v's start at 0
      };
      const Operand ops[] = {
          {"q", x[0], to_cpu_double(in.q), in.q_scale, deq.q, true},
          {"k", x[1], to_cpu_double(in.k), in.k_scale, deq.k, false},
          {"v", x[2], v_keys.narrow(2, 0, L), in.v_scale, deq.v, false}};
      for (const Operand& op : ops) {
        // amax is exact and one fp32 division by 448 rounds by 2^-24 relative: 1e-6.
        const auto want = expected_scales(op.x, op.end_at_l);
        EXPECT_LE(((to_cpu_double(op.scale) - want).abs() / want).max().item<double>(), 1e-6)
            << op.name << " scale";
        const auto s_rows = row_scales(op.scale, L, op.end_at_l);
        const auto stored = op.stored * s_rows;  // exact in float64
        EXPECT_LE(rounding_ratio(stored, op.x, s_rows), 1.0) << op.name << " not rounded to e4m3";
        // The dequantizer's fp32 product of the same two factors: 2^-24 relative.
        EXPECT_LE(relative_error(op.dequantized, stored), 1e-6) << op.name << " dequantized";
      }
    }
  }
}

// Relative Frobenius error of o against the float64 reference of the dequantized inputs (the
// values the kernel multiplies, so only its own roundings count):
//   P = exp(S − m) is rounded to e4m3 before P·V: relative error ≤ 2^-4 per entry (3 mantissa
//   bits), spread evenly over that interval, RMS ≤ 2^-4/√3 ≈ 3.6e-2 (less for values inside
//   their binade); o = Σ_j P̃_j v_j / l is the P-weighted mean of those errors over the keys,
//   and o itself a random sum of the same v_j, so the ratio stays near the RMS of the rounding,
//   plus bf16 output rounding (2^-9) and fp32 accumulation (~2^-14 relative on Hopper's FP8
//   MMAs). An emulation of these roundings (e4m3 P, bf16 o) through this test on these inputs
//   gives 1.4–2.7e-2 for L = 17 … 4,097; allowed 4e-2. A wrong key order in vt pairs P's keys
//   with other keys' values: 0.5–0.7 on these inputs (0.8–1.0 on plain randn); the test computes
//   that error from the reference and requires ours to stay below a quarter of it.
constexpr double kTolO = 4e-2;
// lse (fp32) sees the scores but not the rounding of P: the scores are sums of exact products of
// e4m3 values (accumulated in the MMA with ~2^-14 relative precision, ≲ 4e-4 absolute on these
// inputs, whose scores are those of randn or smaller) times the fp32 product of two scales, then
// fp32 exp2/log: 1e-3 absolute. One missing 128-key tile of a 4,097-key row moves lse by ~3e-2.
constexpr double kTolLse = 1e-3;

TEST_P(FlashFp8Gpu, ForwardMatchesReference) {
  const auto& [dtype_name, L, causal] = GetParam();
  const at::ScalarType dtype = dtype_name == "bf16" ? at::kBFloat16 : at::kHalf;
  const int64_t B = 2, H = 3;  // B != H, so that a swapped batch/head index shows
  at::manual_seed(L + (causal ? 7 : 0) + (dtype == at::kHalf ? 10000 : 0));
  // q and k at magnitudes 2^[-1, 0) (scores no larger than randn's), v at 2^[-3, 3): a wrong
  // block scale moves the output by far more than the tolerance.
  const auto q = scaled_randn(B, H, L, -1, 0, dtype), k = scaled_randn(B, H, L, -1, 0, dtype);
  const auto v = scaled_randn(B, H, L, -3, 3, dtype);
  const FlashFp8Inputs in = flash_attention_quantize_fp8(q, k, v);
  const FlashFp8Output out = flash_attention_forward_fp8(in, causal);
  ASSERT_NO_THROW(torch::cuda::synchronize());  // surfaces an asynchronous kernel fault here

  const bool laid_out = expect_layout(out.o, at::kBFloat16, {B, H, L, kHeadDim}, "o") &
                        expect_layout(out.lse, at::kFloat, {B, H, L}, "lse");
  if (!laid_out) return;
  EXPECT_FALSE(at::isnan(out.o).any().item<bool>()) << "NaN in o";
  EXPECT_FALSE(at::isnan(out.lse).any().item<bool>()) << "NaN in lse";

  // float64 on the CPU; at L = 4,097 on the first batch element's first head only.
  const FlashFp8Dequantized x = flash_attention_dequantize_fp8(in);
  auto part = [big = L > 2000](const at::Tensor& t) {
    return big ? t.narrow(0, 0, 1).narrow(1, 0, 1) : t;
  };
  const FlashOutput ref = flash_attention_reference(part(x.q), part(x.k), part(x.v), causal);
  const double err = relative_error(part(out.o), ref.o);
  EXPECT_LE(err, kTolO) << "o";
  EXPECT_LE(max_abs_error(part(out.lse), ref.lse), kTolLse) << "lse";

  // A wrong key order gives an error far above ours (at L = 1 there is one key: nothing to move).
  if (L > 1) {
    const auto wrong =
        flash_attention_reference(part(x.q), part(x.k), keys_in_vt_order(part(x.v)), causal);
    const double wrong_err = relative_error(wrong.o, ref.o);
    EXPECT_GT(wrong_err, kTolO) << "the tolerance cannot tell a wrong key order";
    EXPECT_LT(err, wrong_err / 4) << "o, against a wrong key order's error " << wrong_err;
  }
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, FlashFp8Gpu,
    ::testing::Combine(::testing::Values("bf16", "fp16"), ::testing::Values(1, 17, 130, 1000, 4097),
                       ::testing::Bool()),
    [](const ::testing::TestParamInfo<ForwardParam>& info) {
      return std::get<0>(info.param) + "_L" + std::to_string(std::get<1>(info.param)) + "_" +
             (std::get<2>(info.param) ? "causal" : "noncausal");
    });

// What FP8 costs against our bf16 Hopper kernel on the unquantized bf16 inputs, at L = 1,024
// causal. Quantizing q, k and v rounds each element by ≤ 2^-4 relative (RMS at most 2^-4/√3 ≈
// 3.6e-2, reached at the bottom of a binade where the relative step is largest; 2.6e-2 in a
// float64 emulation on randn blocks): v's error reaches o directly, q's and k's perturb the
// scores (and so P) by the same relative amount, and P's rounding adds ~2e-2 (see kTolO).
// Independent, they add in quadrature to ~4.5e-2 (an emulation of the FP8 roundings through this
// test: 4.7e-2); the bf16 kernel's own error (~2e-3) is negligible. Allowed 8e-2. Below 5e-3 the
// FP8 path would not be quantizing at all.
TEST_F(FlashFp8Gpu, ErrorAgainstBf16IsSmall) {
  const int64_t B = 1, H = 2, L = 1024;
  at::manual_seed(21);
  const auto opts = at::TensorOptions().dtype(at::kBFloat16).device(at::kCUDA);
  const auto q = at::randn({B, H, L, kHeadDim}, opts), k = at::randn({B, H, L, kHeadDim}, opts);
  const auto v = at::randn({B, H, L, kHeadDim}, opts);
  if (const std::string why = flash_sm90_unsupported(q, k, v); !why.empty()) GTEST_SKIP() << why;
  const auto fp8 = flash_attention_forward_fp8(flash_attention_quantize_fp8(q, k, v), true).o;
  const auto bf16 = flash_attention_forward(q, k, v, true, FlashKernel::kSm90).o;
  const double err = relative_error(fp8, bf16);
  EXPECT_LE(err, 8e-2);
  EXPECT_GT(err, 5e-3) << "the FP8 output is as close as bf16's: is anything quantized?";
}

}  // namespace
}  // namespace gptbench
