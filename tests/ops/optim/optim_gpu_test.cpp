// The fused CUDA kernels against the reference paths, on fresh random data with the awkward
// sizes (1, 4,095, 4,097, rows not a multiple of 4, a misaligned tensor, > 1,024 columns) and
// both gradient dtypes. Skipped without a GPU or without CUDA kernels in the build.
#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <torch/cuda.h>

#include "ops/optim/adafactor.h"
#include "ops/optim/adam8bit.h"
#include "ops/optim/adamw.h"
#include "ops/optim/lion.h"
#include "tests/ops/optim/optim_test_util.h"

namespace gptbench {
namespace {

using namespace testing_optim;

#ifdef GPTBENCH_WITH_CUDA
#define SKIP_WITHOUT_GPU() \
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA GPU"
#else
#define SKIP_WITHOUT_GPU() GTEST_SKIP() << "built without CUDA kernels"
#endif

const c10::Device kGpu(c10::kCUDA, 0);

std::vector<at::Tensor> grads_as(const std::vector<at::Tensor>& g, at::ScalarType t) {
  std::vector<at::Tensor> out;
  for (const auto& x : g) out.push_back(x.to(t));
  return out;
}

// Runs `steps` steps of a fused and a reference optimizer built by make() on identical copies,
// with identical gradients of dtype gtype; returns both parameter lists.
template <typename Make>
std::pair<std::vector<at::Tensor>, std::vector<at::Tensor>> run_both(Make make, int steps,
                                                                     at::ScalarType gtype,
                                                                     double grad_scale = 1.0) {
  auto fused_p = to_device(awkward_params(at::kCPU, 31), kGpu);
  auto ref_p = clone_all(fused_p);
  auto fused = make(fused_p, OptimBackend::kFused);
  auto ref = make(ref_p, OptimBackend::kReference);
  EXPECT_TRUE(fused->uses_fused());
  for (int s = 0; s < steps; ++s) {
    auto g = random_grads(fused_p, 1000 + s);
    for (auto& x : g) x.mul_(grad_scale);
    g = grads_as(g, gtype);
    fused->step(g);
    ref->step(g);
  }
  return {fused_p, ref_p};
}

template <typename Opt, typename Options>
auto maker(Options o) {
  return [o](std::vector<at::Tensor> p, OptimBackend b) { return std::make_unique<Opt>(p, o, b); };
}

// AdamW and Lion: the kernel reorders nothing but contracts a·b + c into FMAs and multiplies by
// 1/sqrt(1−β2^t) instead of dividing: an ulp or two per step on m, v and the update, far below
// 1e-6 of the parameters after 10 steps.
TEST(OptimGpu, AdamWFusedMatchesReference) {
  SKIP_WITHOUT_GPU();
  AdamWOptions o;
  o.weight_decay = 0.1;
  for (auto gt : {at::kFloat, at::kBFloat16}) {
    auto [f, r] = run_both(maker<AdamW>(o), 10, gt);
    for (size_t i = 0; i < f.size(); ++i) EXPECT_LT(rel_err(f[i], r[i]), 1e-6) << i << " " << gt;
  }
}

TEST(OptimGpu, LionFusedMatchesReference) {
  SKIP_WITHOUT_GPU();
  LionOptions o;
  o.lr = 1e-3;
  o.weight_decay = 0.1;
  for (auto gt : {at::kFloat, at::kBFloat16}) {
    auto [f, r] = run_both(maker<Lion>(o), 10, gt);
    for (size_t i = 0; i < f.size(); ++i) EXPECT_LT(rel_err(f[i], r[i]), 1e-6) << i << " " << gt;
  }
}

// Adafactor: the row/column sums and the Σp², Σu² reductions are summed in another order
// (atomics, fp32 partials into fp64), the variance is formed as (R_i·(1/mean R))·C_j instead
// of (R_i·C_j)/mean R (2 ulp), and rsqrtf is within 2 ulp: ~1e-6 relative on the factors and
// the step scale, so 1e-5 on parameters and state after 10 steps.
TEST(OptimGpu, AdafactorFusedMatchesReference) {
  SKIP_WITHOUT_GPU();
  for (double scale : {1.0, 30.0, 1e-9}) {  // plain, clipped, eps1² floor
    for (auto gt : {at::kFloat, at::kBFloat16}) {
      AdafactorOptions o;
      o.weight_decay = 0.05;
      auto fused_p = to_device(awkward_params(at::kCPU, 31), kGpu);
      auto ref_p = clone_all(fused_p);
      Adafactor fused(fused_p, o, OptimBackend::kFused), ref(ref_p, o, OptimBackend::kReference);
      for (int s = 0; s < 10; ++s) {
        auto g = random_grads(fused_p, 2000 + s);
        for (auto& x : g) x.mul_(scale);
        g = grads_as(g, gt);
        fused.step(g);
        ref.step(g);
      }
      for (size_t i = 0; i < fused_p.size(); ++i) {
        EXPECT_LT(rel_err(fused_p[i], ref_p[i]), 1e-5) << i << " scale " << scale;
        if (fused_p[i].dim() == 2) {
          EXPECT_LT(rel_err(fused.row_var(i), ref.row_var(i)), 1e-5) << i;
          EXPECT_LT(rel_err(fused.col_var(i), ref.col_var(i)), 1e-5) << i;
        } else {
          EXPECT_LT(rel_err(fused.variance(i), ref.variance(i)), 1e-5) << i;
        }
      }
    }
  }
}

// 8-bit Adam: kernel and reference form the moments with the same rounded operations and
// quantise with the same table and comparisons, so the codes agree except where an ulp of
// difference in x/absmax crosses a midpoint (or the FMA-contracted parameter update differs);
// we allow 0.1% of codes to differ and 1e-6 on the parameters.
void expect_adam8bit_agree(const Adam8bit& a, const std::vector<at::Tensor>& pa, const Adam8bit& b,
                           const std::vector<at::Tensor>& pb) {
  for (size_t i = 0; i < pa.size(); ++i) {
    EXPECT_LT(rel_err(pa[i], pb[i]), 1e-6) << i;
    const auto& sa = a.state()[i];
    const auto& sb = b.state()[i];
    ASSERT_EQ(sa.quantized, sb.quantized);
    if (sa.quantized) {
      const double dm = sa.m.cpu().ne(sb.m.cpu()).to(at::kDouble).mean().item<double>();
      const double dv = sa.v.cpu().ne(sb.v.cpu()).to(at::kDouble).mean().item<double>();
      EXPECT_LE(dm, 1e-3) << i;
      EXPECT_LE(dv, 1e-3) << i;
      EXPECT_LT(rel_err(sa.m_absmax, sb.m_absmax), 1e-6) << i;
      EXPECT_LT(rel_err(sa.v_absmax, sb.v_absmax), 1e-6) << i;
    } else {
      EXPECT_LT(rel_err(sa.m, sb.m), 1e-6) << i;
      EXPECT_LT(rel_err(sa.v, sb.v), 1e-6) << i;
    }
  }
}

void adam8bit_awkward_sizes_match_reference() {
  for (auto gt : {at::kFloat, at::kBFloat16}) {
    auto fused_p = to_device(awkward_params(at::kCPU, 31), kGpu);
    auto ref_p = clone_all(fused_p);
    auto cpu_p = to_device(fused_p, at::kCPU);
    Adam8bitOptions o;
    o.weight_decay = 0.01;
    Adam8bit fused(fused_p, o, OptimBackend::kFused), ref(ref_p, o, OptimBackend::kReference),
        cpu(cpu_p, o, OptimBackend::kReference);
    for (int s = 0; s < 10; ++s) {
      auto g = grads_as(random_grads(fused_p, 3000 + s), gt);
      fused.step(g);
      ref.step(g);
      cpu.step(to_device(g, at::kCPU));
    }
    expect_adam8bit_agree(fused, fused_p, ref, ref_p);  // fused vs reference on the GPU
    expect_adam8bit_agree(fused, fused_p, cpu, cpu_p);  // fused vs the CPU reference
  }
}

TEST(OptimGpu, Adam8bitFusedMatchesReference) {
  SKIP_WITHOUT_GPU();
  adam8bit_awkward_sizes_match_reference();
}

// Adafactor over shapes that cut into many tiles (the factors pass updates R and C from the
// tiles of the first column piece / row band and sums mean R over tiles by atomics): tall
// narrow, wte-like, two column pieces with a ragged row band, 3 columns (scalar path), vectors
// over several chunks and of 1 element. Tolerances as above.
void adafactor_many_tiles_match_reference() {
  for (auto gt : {at::kFloat, at::kBFloat16}) {
    at::manual_seed(12);
    const auto o = at::TensorOptions().dtype(at::kFloat).device(kGpu);
    std::vector<at::Tensor> fused_p = {at::randn({5000, 64}, o) * 0.02, at::randn({1000, 768}, o),
                                       at::randn({777, 1030}, o) * 0.1, at::randn({1025, 3}, o),
                                       at::randn({40000}, o), at::randn({1}, o)};
    auto ref_p = clone_all(fused_p);
    AdafactorOptions opt;
    opt.weight_decay = 0.05;
    Adafactor fused(fused_p, opt, OptimBackend::kFused), ref(ref_p, opt, OptimBackend::kReference);
    for (int s = 0; s < 10; ++s) {
      auto g = grads_as(random_grads(fused_p, 5000 + s), gt);
      fused.step(g);
      ref.step(g);
    }
    for (size_t i = 0; i < fused_p.size(); ++i) {
      EXPECT_LT(rel_err(fused_p[i], ref_p[i]), 1e-5) << i;
      if (fused_p[i].dim() == 2) {
        EXPECT_LT(rel_err(fused.row_var(i), ref.row_var(i)), 1e-5) << i;
        EXPECT_LT(rel_err(fused.col_var(i), ref.col_var(i)), 1e-5) << i;
      } else {
        EXPECT_LT(rel_err(fused.variance(i), ref.variance(i)), 1e-5) << i;
      }
    }
  }
}

TEST(OptimGpu, AdafactorFusedManyTilesMatchesReference) {
  SKIP_WITHOUT_GPU();
  adafactor_many_tiles_match_reference();
}

// Sizes on every boundary of the 8-bit kernel: the 4,096 threshold (4,095 keeps fp32 states,
// 4,096 is quantised), last blocks of 255 and 1 elements, one whole chunk (16,384) and a chunk
// plus one, several chunks with a ragged tail, a 2-D tensor of odd sides, a misaligned tensor
// (scalar path), 1 element.
std::vector<at::Tensor> adam8bit_boundary_params() {
  at::manual_seed(7);
  const auto o = at::TensorOptions().dtype(at::kFloat).device(kGpu);
  return {at::randn({4096}, o),  at::randn({4096 + 255}, o), at::randn({4096 + 257}, o),
          at::randn({16384}, o), at::randn({16385}, o),      at::randn({3 * 16384 + 300}, o),
          at::randn({129, 257}, o), misaligned(16385, o),    at::randn({4095}, o),
          at::randn({1}, o)};
}

// On the first step the stored moments are zero, so kernel and reference form bit-identical
// fp32 moments (the same rounded products and sums, no FMA), absmax and x/absmax (IEEE
// division on both): every code must then be the same. This checks the kernel's bucket-table
// quantiser against the CPU reference's binary search code for code, with no tolerance.
void adam8bit_first_step_codes_equal_cpu_reference() {
  for (auto gt : {at::kFloat, at::kBFloat16}) {
    auto fused_p = adam8bit_boundary_params();
    auto cpu_p = to_device(fused_p, at::kCPU);
    Adam8bit fused(fused_p, {}, OptimBackend::kFused), cpu(cpu_p, {}, OptimBackend::kReference);
    auto g = grads_as(random_grads(fused_p, 6000), gt);
    fused.step(g);
    cpu.step(to_device(g, at::kCPU));
    for (size_t i = 0; i < fused_p.size(); ++i) {
      EXPECT_LT(rel_err(fused_p[i].cpu(), cpu_p[i]), 1e-6) << i;
      const auto& a = fused.state()[i];
      const auto& b = cpu.state()[i];
      ASSERT_EQ(a.quantized, b.quantized) << i;
      if (!a.quantized) continue;
      EXPECT_TRUE(at::equal(a.m.cpu(), b.m)) << i << " m codes differ";
      EXPECT_TRUE(at::equal(a.v.cpu(), b.v)) << i << " v codes differ";
      EXPECT_TRUE(at::equal(a.m_absmax.cpu(), b.m_absmax)) << i;
      EXPECT_TRUE(at::equal(a.v_absmax.cpu(), b.v_absmax)) << i;
    }
  }
}

TEST(OptimGpu, Adam8bitFirstStepCodesEqualCpuReferenceExactly) {
  SKIP_WITHOUT_GPU();
  adam8bit_first_step_codes_equal_cpu_reference();
}

// The boundary sizes over 10 steps against the GPU reference (tolerances of
// expect_adam8bit_agree).
void adam8bit_boundary_sizes_match_reference() {
  for (auto gt : {at::kFloat, at::kBFloat16}) {
    auto fused_p = adam8bit_boundary_params();
    auto ref_p = clone_all(fused_p);
    Adam8bitOptions o;
    o.weight_decay = 0.01;
    Adam8bit fused(fused_p, o, OptimBackend::kFused), ref(ref_p, o, OptimBackend::kReference);
    for (int s = 0; s < 10; ++s) {
      auto g = grads_as(random_grads(fused_p, 7000 + s), gt);
      fused.step(g);
      ref.step(g);
    }
    expect_adam8bit_agree(fused, fused_p, ref, ref_p);
  }
}

TEST(OptimGpu, Adam8bitFusedBoundarySizesMatchReference) {
  SKIP_WITHOUT_GPU();
  adam8bit_boundary_sizes_match_reference();
}

// GPT-2 small's real parameter shapes (~150 tensors, one launch): fused AdamW equals the
// reference over 3 steps, so the chunk table covers every tensor.
TEST(OptimGpu, AdamWFusedCoversEveryTensorOfGpt2Small) {
  SKIP_WITHOUT_GPU();
  at::manual_seed(4);
  const std::vector<std::vector<int64_t>> shapes = {
      {50257, 768}, {1024, 768}, {768}, {768}, {2304, 768}, {2304}, {768, 768}, {768},
      {768}, {768}, {3072, 768}, {3072}, {768, 3072}, {768}};
  std::vector<at::Tensor> f;
  for (const auto& s : shapes) f.push_back(at::randn(s, at::TensorOptions().device(kGpu)) * 0.02);
  auto r = clone_all(f);
  AdamW a(f, {}, OptimBackend::kFused), b(r, {}, OptimBackend::kReference);
  for (int s = 0; s < 3; ++s) {
    auto g = random_grads(f, 4000 + s);
    a.step(g);
    b.step(g);
  }
  for (size_t i = 0; i < f.size(); ++i) EXPECT_LT(rel_err(f[i], r[i]), 1e-6) << i;
}

}  // namespace
}  // namespace gptbench
