// Tests of ops/softmax.*: the naive and torch forms and the float64 references on the CPU, the
// fused kernels' launch plans (host code), and the fused kernels on a GPU (skipped without one)
// against the float64 reference on fresh random data at odd sizes.
#include "ops/softmax.h"

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <gtest/gtest.h>
#include <torch/cuda.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#ifdef GPTBENCH_WITH_CUDA
#include "ops/softmax_kernels.h"
#endif

namespace gptbench {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// Elementwise check |out − ref| <= bound, where bound is a tensor of per-element allowances;
// NaN must appear in both or neither. Reports the worst element.
void expect_within(const at::Tensor& out, const at::Tensor& ref, const at::Tensor& bound,
                   const std::string& what) {
  auto o = out.detach().to(at::kCPU, at::kDouble);
  auto r = ref.detach().to(at::kCPU, at::kDouble);
  ASSERT_EQ(o.sizes(), r.sizes()) << what;
  ASSERT_TRUE(at::equal(o.isnan(), r.isnan())) << what << ": NaN pattern differs";
  auto finite = r.isfinite();
  auto excess = at::where(finite, (o - r).abs() - bound.to(at::kDouble), at::zeros_like(r));
  const double worst = excess.max().item<double>();
  if (worst > 0) {
    const int64_t i = excess.flatten().argmax().item<int64_t>();
    ADD_FAILURE() << what << ": element " << i << " = " << o.flatten()[i].item<double>()
                  << ", reference " << r.flatten()[i].item<double>() << ", allowed error "
                  << bound.flatten()[i].item<double>();
  }
}

// Forward allowance: rtol·|ref| + atol.
at::Tensor forward_bound(const at::Tensor& ref, double rtol, double atol) {
  return ref.abs().nan_to_num(0) * rtol + atol;
}

// Backward allowance for dx = y·(dy − Σ y·dy): the output rounding (rtol·|dx|) plus the error
// of the fp32 dot product and subtraction, both scaled by y:  y·(|dy| + Σ|y·dy|)·rtol.
at::Tensor backward_bound(const at::Tensor& y, const at::Tensor& dy, const at::Tensor& ref,
                          double rtol, double atol) {
  auto yd = y.to(at::kCPU, at::kDouble), gd = dy.to(at::kCPU, at::kDouble);
  auto scale = yd.abs() * (gd.abs() + (yd * gd).abs().sum(-1, true));
  return (ref.abs() + scale) * rtol + atol;
}

at::Tensor random_rows(int64_t rows, int64_t cols, uint64_t seed, at::ScalarType dtype,
                       c10::Device device, double spread = 3.0) {
  auto gen = at::make_generator<at::CPUGeneratorImpl>(seed);
  auto x = at::randn({rows, cols}, gen, at::TensorOptions().dtype(at::kFloat)) * spread;
  return x.to(device, dtype);
}

// ---- CPU: references, naive and torch ---------------------------------------------------

TEST(SoftmaxReference, RowsSumToOneAndMatchDefinition) {
  auto x = random_rows(5, 7, 1, at::kDouble, at::kCPU);
  auto y = softmax_reference(x);
  EXPECT_LT((y.sum(-1) - 1).abs().max().item<double>(), 1e-15);
  // The definition exp(x)/Σexp(x) without the shift, safe for these small values.
  auto direct = x.exp() / x.exp().sum(-1, true);
  EXPECT_LT((y - direct).abs().max().item<double>(), 1e-15);
}

TEST(SoftmaxReference, NonFiniteRowsLikeTorch) {
  auto x = random_rows(4, 9, 2, at::kDouble, at::kCPU);
  x[0].fill_(-kInf);                  // all -inf: NaN (0/0), as torch::softmax
  x[1].slice(0, 0, 4).fill_(-kInf);   // some -inf: those entries are 0
  x[2] += 1e4;                        // large values: shifted by the max, no overflow
  auto y = softmax_reference(x);
  auto t = at::softmax(x, -1);
  EXPECT_TRUE(y[0].isnan().all().item<bool>());
  EXPECT_TRUE(at::equal(y.isnan(), t.isnan()));
  EXPECT_EQ(y[1].slice(0, 0, 4).abs().max().item<double>(), 0.0);
  EXPECT_LT((y[2] - softmax_reference(x[2] - 1e4)).abs().max().item<double>(), 1e-12);
  EXPECT_LT((y.nan_to_num(0) - t.nan_to_num(0)).abs().max().item<double>(), 1e-15);
}

// float64 autograd of at::softmax gives the same gradient as the closed form.
TEST(SoftmaxReference, BackwardMatchesAutograd) {
  auto x = random_rows(6, 33, 3, at::kDouble, at::kCPU).requires_grad_(true);
  auto dy = random_rows(6, 33, 4, at::kDouble, at::kCPU);
  auto y = at::softmax(x, -1);
  y.backward(dy);
  auto ref = softmax_backward_reference(y.detach(), dy);
  EXPECT_LT((x.grad() - ref).abs().max().item<double>(), 1e-14);
}

// naive and torch on the CPU against float64, in fp32 and fp64, at odd sizes.
// fp32 tolerance: inputs are exact in both; exp and the row sum in fp32 carry a few ulps
// (relative 6e-8 each) plus the sum's accumulation over ≤ 50,304 terms, well inside 2e-5.
TEST(SoftmaxCpu, NaiveAndTorchMatchReference) {
  for (auto dtype : {at::kFloat, at::kDouble}) {
    const double rtol = dtype == at::kFloat ? 2e-5 : 1e-12;
    for (int64_t cols : {1, 31, 1023, 50304}) {
      const int64_t rows = cols > 1000 ? 3 : 17;
      auto x = random_rows(rows, cols, 10 + cols, dtype, at::kCPU);
      auto ref = softmax_reference(x);
      const std::string tag = std::string(c10::toString(dtype)) + " cols=" + std::to_string(cols);
      expect_within(softmax_naive(x), ref, forward_bound(ref, rtol, 1e-30), "naive " + tag);
      expect_within(softmax_torch(x), ref, forward_bound(ref, rtol, 1e-30), "torch " + tag);

      auto y = ref.to(dtype);
      auto dy = random_rows(rows, cols, 20 + cols, dtype, at::kCPU);
      auto dref = softmax_backward_reference(y, dy);
      auto bound = backward_bound(y, dy, dref, rtol, 1e-30);
      expect_within(softmax_backward_naive(y, dy), dref, bound, "naive bwd " + tag);
      expect_within(softmax_backward_torch(y, dy), dref, bound, "torch bwd " + tag);
    }
  }
}

TEST(SoftmaxCpu, NaiveHandlesNonFiniteLikeTorch) {
  auto x = random_rows(3, 40, 5, at::kFloat, at::kCPU);
  x[0].fill_(-kInf);
  x[1].slice(0, 10, 30).fill_(-kInf);
  x[2] = x[2] * 100 + 3e4;
  auto ref = softmax_reference(x);
  expect_within(softmax_naive(x), ref, forward_bound(ref, 2e-5, 1e-30), "naive");
  expect_within(softmax_torch(x), ref, forward_bound(ref, 2e-5, 1e-30), "torch");
}

TEST(SoftmaxCpu, FusedNeedsCuda) {
  auto x = random_rows(2, 8, 6, at::kFloat, at::kCPU);
  EXPECT_THROW(softmax_fused(x), std::exception);  // CPU tensor, or no CUDA kernels built
}

#ifdef GPTBENCH_WITH_CUDA
// ---- launch plans (host code, no GPU needed) -----------------------------------------------

constexpr int64_t kH100SmemOptin = 227 * 1024;

TEST(SoftmaxPlan, PathsBySize) {
  using P = SoftmaxPath;
  auto plan = [](int64_t cols, ElemType dt, bool bwd = false, bool aligned = true) {
    return softmax_plan(cols, dt, bwd, aligned, kH100SmemOptin);
  };
  EXPECT_EQ(plan(1024, ElemType::kF32).path, P::kWarpVec);
  EXPECT_EQ(plan(1024, ElemType::kF32).vec, 4);
  EXPECT_EQ(plan(1024, ElemType::kBF16).vec, 8);
  EXPECT_EQ(plan(1024, ElemType::kBF16).path, P::kWarpVec);
  EXPECT_EQ(plan(1024, ElemType::kBF16).threads, 128);  // one row per warp, 4 per block
  EXPECT_EQ(plan(1024, ElemType::kBF16).smem_bytes, 0);
  EXPECT_EQ(plan(64, ElemType::kF32).path, P::kWarpVec);
  EXPECT_EQ(plan(32, ElemType::kF32).vec, 4);
  EXPECT_EQ(plan(8, ElemType::kF32).path, P::kWarpVec);
  EXPECT_EQ(plan(62, ElemType::kF32).path, P::kWarpScalar);  // 62 % 4 != 0
  EXPECT_EQ(plan(1023, ElemType::kF32).path, P::kWarpScalar);
  EXPECT_EQ(plan(1, ElemType::kBF16).path, P::kWarpScalar);
  EXPECT_EQ(plan(1024, ElemType::kF32, false, /*aligned=*/false).path, P::kWarpScalar);
  EXPECT_EQ(plan(1028, ElemType::kBF16).path, P::kBlockScalar);  // 1028 % 8 != 0
  // Forward rows of > 1024 columns in 16-byte packs: the row in registers, 32 values per thread,
  // the fewest warps (a power of two) that hold it; 2-warp rows share a 4-warp block.
  auto r1028 = plan(1028, ElemType::kF32);
  EXPECT_EQ(r1028.path, P::kBlockRegs);
  EXPECT_EQ(r1028.row_warps, 2);
  EXPECT_EQ(r1028.threads, 128);
  EXPECT_EQ(r1028.cluster, 1);
  EXPECT_EQ(r1028.values, 32);
  EXPECT_EQ(r1028.smem_bytes, 0);
  EXPECT_EQ(plan(2048, ElemType::kBF16).row_warps, 2);
  EXPECT_EQ(plan(2056, ElemType::kBF16).row_warps, 4);
  EXPECT_EQ(plan(8192, ElemType::kBF16).values, 32);
  EXPECT_EQ(plan(8192, ElemType::kBF16).threads, 256);
  EXPECT_EQ(plan(16384, ElemType::kF32).threads, 512);
  EXPECT_EQ(plan(32768, ElemType::kF32).threads, 1024);
  EXPECT_EQ(plan(32768, ElemType::kF32).cluster, 1);
  // Longer bf16 rows: 64 values per thread (the exponentials recomputed), 8 or 16 warps.
  auto r16k = plan(16384, ElemType::kBF16);
  EXPECT_EQ(r16k.path, P::kBlockRegs);
  EXPECT_EQ(r16k.values, 64);
  EXPECT_EQ(r16k.row_warps, 8);
  EXPECT_EQ(r16k.threads, 256);
  EXPECT_EQ(plan(8200, ElemType::kBF16).row_warps, 8);
  auto r32k = plan(32768, ElemType::kBF16);
  EXPECT_EQ(r32k.path, P::kBlockRegs);
  EXPECT_EQ(r32k.values, 64);
  EXPECT_EQ(r32k.row_warps, 16);
  EXPECT_EQ(r32k.threads, 512);
  // Longer rows: 8 packs per thread in registers, the rest of the thread's share in shared
  // memory. 16-warp blocks two per SM, one per row (bf16 <= 90,112 columns) or a cluster of two.
  auto regs = [&](int64_t cols, ElemType dt, int row_warps, int cluster, int64_t smem) {
    const auto r = plan(cols, dt);
    const std::string tag =
        std::to_string(cols) + (dt == ElemType::kF32 ? " fp32" : " bf16");
    EXPECT_EQ(r.path, P::kBlockRegs) << tag;
    EXPECT_EQ(r.row_warps, row_warps) << tag;
    EXPECT_EQ(r.threads, 32 * row_warps) << tag;
    EXPECT_EQ(r.cluster, cluster) << tag;
    EXPECT_EQ(r.smem_bytes, smem) << tag;
  };
  regs(32776, ElemType::kBF16, 16, 1, 1 * 512 * 16);
  EXPECT_EQ(plan(32776, ElemType::kBF16).values, 72);
  regs(50304, ElemType::kBF16, 16, 1, 5 * 512 * 16);  // vocabulary rows: 13 packs
  EXPECT_EQ(plan(50304, ElemType::kBF16).values, 104);
  regs(65536, ElemType::kBF16, 16, 1, 8 * 512 * 16);
  regs(90112, ElemType::kBF16, 16, 1, 14 * 512 * 16);  // the most two blocks per SM hold
  regs(90120, ElemType::kBF16, 16, 2, 4 * 512 * 16);
  regs(131072, ElemType::kBF16, 16, 2, 8 * 512 * 16);
  regs(180224, ElemType::kBF16, 16, 2, 14 * 512 * 16);
  regs(32772, ElemType::kF32, 16, 1, 9 * 512 * 16);
  regs(50304, ElemType::kF32, 16, 2, 5 * 512 * 16);
  regs(65536, ElemType::kF32, 16, 2, 8 * 512 * 16);
  // Else 32-warp blocks, one per SM, the fewest per cluster (up to 8) whose slots fit.
  regs(180232, ElemType::kBF16, 32, 2, 4 * 1024 * 16);
  regs(262144, ElemType::kBF16, 32, 2, 8 * 1024 * 16);
  regs(131072, ElemType::kF32, 32, 2, 8 * 1024 * 16);
  regs(262144, ElemType::kF32, 32, 4, 8 * 1024 * 16);
  regs(720896, ElemType::kF32, 32, 8, 14 * 1024 * 16);  // the limit: 8 x 1024 x 88
  EXPECT_EQ(plan(720900, ElemType::kF32).path, P::kBlockPartial);
  regs(1441792, ElemType::kBF16, 32, 8, 14 * 1024 * 16);
  EXPECT_EQ(plan(1441800, ElemType::kBF16).path, P::kBlockPartial);
  // Without thread-block clusters (before sm_90): one block, 16 warps then 32, else partial.
  auto nocl = [](int64_t cols, ElemType dt) {
    return softmax_plan(cols, dt, false, true, kH100SmemOptin, false);
  };
  EXPECT_EQ(nocl(32768, ElemType::kF32).path, P::kBlockRegs);
  EXPECT_EQ(nocl(50304, ElemType::kBF16).row_warps, 16);
  EXPECT_EQ(nocl(50304, ElemType::kF32).row_warps, 32);
  EXPECT_EQ(nocl(50304, ElemType::kF32).cluster, 1);
  EXPECT_EQ(nocl(50304, ElemType::kF32).smem_bytes, 5 * 1024 * 16);
  EXPECT_EQ(nocl(180224, ElemType::kBF16).cluster, 1);
  EXPECT_EQ(nocl(180232, ElemType::kBF16).path, P::kBlockPartial);
  EXPECT_EQ(nocl(90120, ElemType::kF32).path, P::kBlockPartial);
  // Unaligned or odd widths keep the block kernels; 65,536 fp32 (256 KiB) stages what fits.
  EXPECT_EQ(plan(65536, ElemType::kF32, false, false).path, P::kBlockPartial);
  EXPECT_EQ(plan(65536, ElemType::kF32, false, false).smem_bytes % 4, 0);
  EXPECT_EQ(plan(4100, ElemType::kBF16).path, P::kBlockScalar);  // 4100 % 8 != 0
  // Backward stages y and dy: bf16 vocabulary rows fit (196.5 KiB), fp32 (393 KiB) is read twice.
  auto b16 = plan(50304, ElemType::kBF16, true);
  EXPECT_EQ(b16.path, P::kBlockVec);
  EXPECT_EQ(b16.smem_bytes, 2 * 50304 * 2);
  EXPECT_EQ(b16.threads, 1024);
  EXPECT_EQ(plan(1028, ElemType::kF32, true).path, P::kBlockVec);
  auto b32 = plan(50304, ElemType::kF32, true);
  EXPECT_EQ(b32.path, P::kBlockPartial);
  EXPECT_LE(b32.smem_bytes + 1024, kH100SmemOptin);
  EXPECT_GT(b32.smem_bytes, kH100SmemOptin - 1024 - 2 * 16);
  EXPECT_EQ(b32.smem_bytes % 32, 0);  // whole packs of y and of dy
  // Backward block sizes aim at about 8 packs per thread, 128..1024 threads.
  EXPECT_EQ(plan(2048, ElemType::kF32, true).threads, 128);
  EXPECT_EQ(plan(16384, ElemType::kF32, true).threads, 512);
  // The single-read (staged) backward limits: y and dy plus the 1 KiB reserve within the opt-in.
  EXPECT_EQ(plan(28928, ElemType::kF32, true).path, P::kBlockVec);
  EXPECT_EQ(plan(28932, ElemType::kF32, true).path, P::kBlockPartial);
  EXPECT_EQ(plan(57856, ElemType::kBF16, true).path, P::kBlockVec);
  EXPECT_EQ(plan(57864, ElemType::kBF16, true).path, P::kBlockPartial);
  // The staged path's smem is the whole row (y and dy backward), so the kernel can index it.
  EXPECT_EQ(plan(4096, ElemType::kBF16, true).smem_bytes, 2 * 4096 * 2);
}

// Rows of <= 1024 columns: a group of lanes per row (a power of two <= 32), each lane holding
// one 16-byte pack where the row has at most 32 (so short rows share a warp), else 32 lanes with
// the packs the row needs; element loads likewise. The group covers the row with neither half its
// lanes nor half its values per lane enough; forward and backward alike.
TEST(SoftmaxPlan, ShortRowsShareWarps) {
  using P = SoftmaxPath;
  auto plan = [](int64_t cols, ElemType dt, bool bwd = false, bool aligned = true) {
    return softmax_plan(cols, dt, bwd, aligned, kH100SmemOptin);
  };
  for (bool bwd : {false, true}) {
    const auto bf = ElemType::kBF16, f32 = ElemType::kF32;
    EXPECT_EQ(plan(32, bf, bwd).lanes, 4);  // 8 rows per warp, one pack per lane
    EXPECT_EQ(plan(32, bf, bwd).values, 8);
    EXPECT_EQ(plan(32, f32, bwd).lanes, 8);
    EXPECT_EQ(plan(32, f32, bwd).values, 4);
    EXPECT_EQ(plan(16, bf, bwd).lanes, 2);
    EXPECT_EQ(plan(8, bf, bwd).lanes, 1);
    EXPECT_EQ(plan(128, f32, bwd).lanes, 32);
    EXPECT_EQ(plan(256, bf, bwd).lanes, 32);
    EXPECT_EQ(plan(256, bf, bwd).values, 8);
    EXPECT_EQ(plan(1024, bf, bwd).values, 32);
    EXPECT_EQ(plan(1024, f32, bwd).values, 32);
    EXPECT_EQ(plan(1023, f32, bwd).lanes, 32);  // element loads
    EXPECT_EQ(plan(1023, f32, bwd).values, 32);
    EXPECT_EQ(plan(1, bf, bwd).lanes, 1);
    EXPECT_EQ(plan(1, bf, bwd).values, 1);
    for (auto dt : {f32, bf})
      for (bool aligned : {true, false})
        for (int64_t cols = 1; cols <= 1024; ++cols) {
          const auto r = plan(cols, dt, bwd, aligned);
          const std::string tag = std::to_string(cols) + (aligned ? "" : " unaligned") +
                                  (bwd ? " bwd " : " fwd ") + std::to_string(int(dt));
          ASSERT_EQ(r.path, r.vec > 1 ? P::kWarpVec : P::kWarpScalar) << tag;
          EXPECT_EQ(r.vec > 1, aligned && cols % r.vec == 0 && r.vec * (dt == f32 ? 4 : 2) == 16)
              << tag;
          EXPECT_EQ(r.threads, 128) << tag;
          EXPECT_GE(r.lanes, 1) << tag;
          EXPECT_LE(r.lanes, 32) << tag;
          EXPECT_EQ(r.lanes & (r.lanes - 1), 0) << tag;
          const int packs = r.values / r.vec;
          EXPECT_EQ(r.values % r.vec, 0) << tag;
          EXPECT_EQ(packs & (packs - 1), 0) << tag;
          EXPECT_LE(r.values, 32) << tag;
          EXPECT_GE(int64_t{r.lanes} * r.values, cols) << tag;                  // covers the row
          EXPECT_TRUE(r.lanes == 1 || r.lanes / 2 * r.values < cols) << tag;     // no idle half
          EXPECT_TRUE(packs == 1 || r.lanes * (r.values / 2) < cols) << tag;
          if (r.vec > 1 && cols <= 32 * r.vec) {
            EXPECT_EQ(packs, 1) << tag;
          }
        }
  }
}

// Every forward register plan of a longer row holds the row with the fewest packs per thread
// (8 in registers, the rest in smem_bytes), fits shared memory (two 16-warp blocks per SM), and
// no forward row is staged by kBlockVec (a backward-only path).
TEST(SoftmaxPlan, LongRowsOnChip) {
  for (auto dt : {ElemType::kF32, ElemType::kBF16}) {
    for (int64_t cols = 1032; cols <= 1600000; cols = cols * 9 / 8 / 8 * 8 + 8) {
      for (bool clusters : {true, false}) {
        const auto r = softmax_plan(cols, dt, false, true, kH100SmemOptin, clusters);
        const std::string tag = std::to_string(cols) + (clusters ? "" : " no clusters");
        EXPECT_NE(r.path, SoftmaxPath::kBlockVec) << tag;
        if (r.path != SoftmaxPath::kBlockRegs || r.smem_bytes == 0) continue;
        const int64_t lanes = int64_t{r.cluster} * r.threads, packs = cols / r.vec;
        EXPECT_EQ(r.smem_bytes, (r.values / r.vec - 8) * int64_t{r.threads} * 16) << tag;
        EXPECT_GE(lanes * (r.values / r.vec), packs) << tag;
        EXPECT_LT(lanes * (r.values / r.vec - 1), packs) << tag;
        EXPECT_LE(r.smem_bytes + 1024, kH100SmemOptin) << tag;
        if (r.row_warps == 16) {
          EXPECT_LE(2 * (r.smem_bytes + 2048), kH100SmemOptin + 1024) << tag;
        }
        EXPECT_TRUE(clusters || r.cluster == 1) << tag;
      }
    }
  }
}

#endif

// ---- GPU: the fused kernels against float64 ----------------------------------------------

bool have_gpu() { return torch::cuda::is_available() && softmax_fused_available(); }

// fp32: ex2.approx is within ~2 ulp (and flushes results below 2⁻¹²⁶, i.e. terms below 1.2e-38
// of the row maximum, to 0: within the 1e-30 absolute allowance), its argument (x − m)·log2e carries |x − m|·2⁻²⁴ (terms that
// matter have |x − m| < ~30), and the row sum is accumulated serially over ≤ 64 values per
// thread then by a tree: together < 1e-5 relative; 2e-5 leaves room.
// bf16: the fp32 result is rounded once to 8 significant bits, relative error ≤ 2⁻⁸.
double kernel_rtol(at::ScalarType dtype) { return dtype == at::kFloat ? 2e-5 : 0x1p-8 + 2e-5; }

struct GpuSize {
  int64_t rows, cols;
};
// The odd sizes (1, 31, 1023, 50304 columns) and one size per launch path: 1024 and 512
// (warp, vector), 1025 and 50303 (block, scalar); forward in registers: 2048 (two rows per
// block; 5 rows leave the last block half empty), 2056 (ragged lanes), 4096, 20000 (bf16 64
// values per thread); forward longer rows, registers and shared memory: 32776 (one staged pack
// per thread in bf16), 50304, 65536, 115712, 131072 (bf16 a cluster of two 16-warp blocks),
// 57856 / 57860, 90120 (bf16 just past one block), 180232 (clusters of 32-warp blocks), 262144,
// 524296 and 720896 (fp32 8 blocks of 32 warps, its limit), 720900 (past it, and bf16 element
// loads: partial, the rest read twice); backward: 4096 (staged), 57856 (bf16 backward's staged
// limit), 57860 (fp32 past it: read twice), 65536 and 131072 (partial), 12288 (bf16 backward
// stages exactly 48 KiB: over the no-opt-in limit with the kernel's static shared memory, so the
// launcher must raise the kernel's limit).
const std::vector<GpuSize> kGpuSizes = {
    {37, 1},     {67, 31},    {33, 1023},   {9, 50304},  {45, 1024},  {7, 1025},
    {11, 4096},  {5, 50303},  {3, 65536},   {2, 131072}, {1000, 128}, {1, 1},
    {19, 512},   {3, 57856},  {3, 57860},   {2, 115712}, {3, 12288},  {5, 2048},
    {3, 2056},   {3, 20000},  {2, 262144},  {1, 524296}, {3, 32776},  {2, 90120},
    {1, 180232}, {1, 720896}, {1, 720900}};

// Many rows: backward, more than the staged block path's persistent grids have blocks (4096:
// ≤ ~1,700 blocks; bf16 50304: 132–264, forward too), so every block walks several rows and
// prefetches the next; the warp path (bf16 1024, fp32 512) over 5,003 blocks; forward in
// registers over thousands of blocks (2048: two rows per block, an odd count) and clusters (fp32
// 50304); short rows sharing a warp (32 columns: 4 or 8 lanes per row; 8: one lane per row in
// bf16). Row counts are not multiples of any grid.
const std::vector<GpuSize> kManyRows = {
    {20011, 1024}, {20011, 512}, {5003, 4096}, {601, 50304}, {2003, 2048}, {1001, 32}, {333, 8}};

TEST(SoftmaxFusedGpu, ForwardMatchesFloat64) {
  if (!have_gpu()) GTEST_SKIP() << "needs a CUDA GPU and a build with CUDA kernels";
  for (auto dtype : {at::kFloat, at::kBFloat16}) {
    for (const auto& s : kGpuSizes) {
      auto x = random_rows(s.rows, s.cols, 100 + s.cols, dtype, at::kCUDA);
      auto ref = softmax_reference(x);
      auto y = softmax_fused(x);
      expect_within(y, ref, forward_bound(ref, kernel_rtol(dtype), 1e-30),
                    std::string(c10::toString(dtype)) + " " + std::to_string(s.rows) + "x" +
                        std::to_string(s.cols));
    }
  }
}

TEST(SoftmaxFusedGpu, BackwardMatchesFloat64) {
  if (!have_gpu()) GTEST_SKIP() << "needs a CUDA GPU and a build with CUDA kernels";
  for (auto dtype : {at::kFloat, at::kBFloat16}) {
    for (const auto& s : kGpuSizes) {
      auto x = random_rows(s.rows, s.cols, 200 + s.cols, at::kFloat, at::kCUDA);
      auto y = at::softmax(x, -1).to(dtype);
      auto dy = random_rows(s.rows, s.cols, 300 + s.cols, dtype, at::kCUDA, 1.0);
      auto ref = softmax_backward_reference(y, dy);
      auto dx = softmax_backward_fused(y, dy);
      expect_within(dx, ref, backward_bound(y, dy, ref, kernel_rtol(dtype), 1e-30),
                    std::string(c10::toString(dtype)) + " bwd " + std::to_string(s.rows) + "x" +
                        std::to_string(s.cols));
    }
  }
}

TEST(SoftmaxFusedGpu, ManyRowsPersistentGrids) {
  if (!have_gpu()) GTEST_SKIP() << "needs a CUDA GPU and a build with CUDA kernels";
  for (auto dtype : {at::kFloat, at::kBFloat16}) {
    for (const auto& s : kManyRows) {
      const std::string tag = std::string(c10::toString(dtype)) + " " + std::to_string(s.rows) +
                              "x" + std::to_string(s.cols);
      auto x = random_rows(s.rows, s.cols, 600 + s.cols, dtype, at::kCUDA);
      auto ref = softmax_reference(x);
      expect_within(softmax_fused(x), ref, forward_bound(ref, kernel_rtol(dtype), 1e-30), tag);
      auto y = ref.to(at::kCUDA, dtype);
      auto dy = random_rows(s.rows, s.cols, 700 + s.cols, dtype, at::kCUDA, 1.0);
      auto dref = softmax_backward_reference(y, dy);
      expect_within(softmax_backward_fused(y, dy), dref,
                    backward_bound(y, dy, dref, kernel_rtol(dtype), 1e-30), "bwd " + tag);
    }
  }
}

// Pointers that are not 16-byte aligned take the element-by-element path.
TEST(SoftmaxFusedGpu, MisalignedInputs) {
  if (!have_gpu()) GTEST_SKIP() << "needs a CUDA GPU and a build with CUDA kernels";
  for (auto dtype : {at::kFloat, at::kBFloat16}) {
    for (int64_t cols : {256, 4096}) {
      const int64_t rows = 6;
      auto flat = random_rows(1, rows * cols + 1, 7 + cols, dtype, at::kCUDA).flatten();
      auto x = flat.narrow(0, 1, rows * cols).view({rows, cols});  // data 1 element off
      ASSERT_NE(reinterpret_cast<uintptr_t>(x.data_ptr()) % 16, 0u);
      auto ref = softmax_reference(x);
      expect_within(softmax_fused(x), ref, forward_bound(ref, kernel_rtol(dtype), 1e-30),
                    "misaligned " + std::to_string(cols));
      // Backward with y one element off and dy aligned: one misaligned pointer suffices.
      auto g = random_rows(rows, cols, 8 + cols, dtype, at::kCUDA, 1.0);
      auto yflat = at::empty({rows * cols + 1}, g.options());
      auto y_off = yflat.narrow(0, 1, rows * cols).view({rows, cols}).copy_(ref);
      auto dref = softmax_backward_reference(y_off, g);
      expect_within(softmax_backward_fused(y_off, g), dref,
                    backward_bound(y_off, g, dref, kernel_rtol(dtype), 1e-30),
                    "misaligned bwd " + std::to_string(cols));
    }
  }
}

// Non-finite inputs as torch::softmax handles them: a row of -inf is NaN, -inf entries of a
// finite row are 0, large values are shifted by the row maximum (no overflow), and a +inf or
// NaN anywhere makes the row NaN. One row layout per forward launch path (31 warp scalar, 512
// and 1024 warp vector, 4099 and 32769 block scalar; in registers: 2048 two rows per block,
// 4096 one block, 32768 bf16 64 values per thread; registers and shared memory: 32776, 50304
// and 65536 one block (fp32 65536 a cluster of 2), 90120 bf16 a cluster of 2, 131072 and
// 262144 clusters of 32-warp blocks (bf16 131072 of 16-warp blocks), 524296 clusters of 4
// and 8).
TEST(SoftmaxFusedGpu, NonFiniteRows) {
  if (!have_gpu()) GTEST_SKIP() << "needs a CUDA GPU and a build with CUDA kernels";
  for (auto dtype : {at::kFloat, at::kBFloat16}) {
    for (int64_t cols : {31, 512, 1024, 2048, 4096, 4099, 32768, 32769, 32776, 50304, 65536, 90120,
                         131072, 262144, 524296}) {
      auto x = random_rows(7, cols, 400 + cols, at::kFloat, at::kCPU);
      x[0].fill_(-kInf);
      x[1].slice(0, 0, (cols + 1) / 2).fill_(-kInf);
      x[2] = x[2] * 30 + 1e4;
      x[3] = x[3] * 1000;
      x[4][cols / 3] = kInf;
      x[5][cols - 1] = std::numeric_limits<double>::quiet_NaN();
      auto xd = x.to(at::kCUDA, dtype);
      auto ref = softmax_reference(xd);
      auto y = softmax_fused(xd);
      const std::string tag = std::string(c10::toString(dtype)) + " cols=" + std::to_string(cols);
      expect_within(y, ref, forward_bound(ref, kernel_rtol(dtype), 1e-30), tag);
      auto yc = y.to(at::kCPU, at::kDouble);
      EXPECT_TRUE(yc[0].isnan().all().item<bool>()) << tag;
      EXPECT_TRUE(yc[4].isnan().all().item<bool>()) << tag;
      EXPECT_TRUE(yc[5].isnan().all().item<bool>()) << tag;
      // The finite rows' -inf pattern matches LibTorch's own CUDA softmax.
      auto t = at::softmax(xd, -1).to(at::kCPU, at::kDouble);
      for (int r : {0, 1, 2, 3, 6})
        EXPECT_TRUE(at::equal(yc[r].isnan(), t[r].isnan())) << tag << " row " << r;
    }
  }
}

// Failed assertions so far in the running test.
int failed_parts() {
  const auto* r = ::testing::UnitTest::GetInstance()->current_test_info()->result();
  int n = 0;
  for (int i = 0; i < r->total_part_count(); ++i) n += r->GetTestPartResult(i).failed();
  return n;
}

// The forward against float64 over the shapes of every remaining kernel: the warp path at
// 1024/512 columns (20,011 rows: partial last blocks), rows of <= 32 16-byte packs (several
// rows per warp; odd row counts leave a warp partly empty), short and odd widths
// (8..248, 1023, 32,769), the register path at 2048 (two rows per block, 1,001 rows), 4096,
// 12,288, 32,768 (bf16 64 values per thread), registers and shared memory at 32,776, 40,000, a
// few, many and 601 vocabulary rows (fp32: a cluster of two), 65,536, 90,120, 115,712, 131,072
// and 262,144 (clusters), and 524,296 (clusters of 4 and 8 blocks). Rows with -inf,
// +inf and NaN where there are >= 6 rows. Output buffers start as NaN, so a row left unwritten
// fails. Each case is traced by dtype and shape; a launch error fails that case and the sweep
// goes on; the last failure lists every failing case on one line.
TEST(SoftmaxFusedGpu, ForwardShapesMatchFloat64) {
  if (!have_gpu()) GTEST_SKIP() << "needs a CUDA GPU and a build with CUDA kernels";
  const std::vector<GpuSize> sizes = {
      {45, 1024},  {20011, 1024}, {19, 512},   {20011, 512}, {3, 256},   {333, 8},
      {333, 16},   {1001, 24},    {1001, 32},  {257, 40},    {1001, 64}, {4099, 128},
      {77, 248},   {1, 1024},     {11, 4096},  {5003, 4096}, {9, 50304}, {601, 50304},
      {2, 115712}, {3, 65536},    {7, 1023},   {3, 12288},   {1, 32},    {2, 64},
      {1001, 2048}, {77, 32768},  {1, 524296}, {67, 32769}, {7, 32776}, {6, 40000},
      {6, 90120},   {6, 131072},  {6, 262144}};
  std::vector<std::string> failed;
  for (auto dtype : {at::kFloat, at::kBFloat16}) {
    for (const auto& s : sizes) {
      const std::string tag = std::string(c10::toString(dtype)) + " " + std::to_string(s.rows) +
                              "x" + std::to_string(s.cols);
      auto x = random_rows(s.rows, s.cols, 700 + s.cols, at::kFloat, at::kCPU);
      if (s.rows >= 6) {
        x[0].fill_(-kInf);
        x[1].slice(0, 0, (s.cols + 1) / 2).fill_(-kInf);
        x[2][s.cols / 3] = kInf;
        x[3][s.cols - 1] = std::numeric_limits<double>::quiet_NaN();
        x[4] = x[4] * 30 + 1e4;
      }
      SCOPED_TRACE(tag);
      const int failures_before = failed_parts();
      try {  // a launch error fails this case (named) and the sweep goes on
        auto xd = x.to(at::kCUDA, dtype);
        auto ref = softmax_reference(xd);
        auto y = at::full_like(xd, std::numeric_limits<float>::quiet_NaN());
        softmax_fused_out(xd, y);
        expect_within(y, ref, forward_bound(ref, kernel_rtol(dtype), 1e-30), tag);
      } catch (const std::exception& e) {
        ADD_FAILURE() << tag << ": " << e.what();
      }
      if (failed_parts() > failures_before) failed.push_back(tag);
    }
  }
  // One line naming every failing dtype and shape (the details are above).
  if (!failed.empty()) {
    std::string all;
    for (const auto& f : failed) all += (all.empty() ? "" : "; ") + f;
    ADD_FAILURE() << failed.size() << " failing cases: " << all;
  }
}

// Writes every output element: a poisoned output buffer is fully overwritten.
TEST(SoftmaxFusedGpu, OutVariantWritesEverything) {
  if (!have_gpu()) GTEST_SKIP() << "needs a CUDA GPU and a build with CUDA kernels";
  for (auto dtype : {at::kFloat, at::kBFloat16})
    for (int64_t cols : {1, 33, 1024, 3000, 50304}) {
      auto x = random_rows(13, cols, 500 + cols, dtype, at::kCUDA);
      auto y = at::full_like(x, std::numeric_limits<float>::quiet_NaN());
      softmax_fused_out(x, y);
      EXPECT_FALSE(y.isnan().any().item<bool>()) << cols;
      auto dx = at::full_like(x, std::numeric_limits<float>::quiet_NaN());
      softmax_backward_fused_out(y, x, dx);
      EXPECT_FALSE(dx.isnan().any().item<bool>()) << cols;
    }
}

}  // namespace
}  // namespace gptbench
