// The FP8 linear rows (bench/linear_fp8.cpp) for a run's flags, without running anything: their
// names at every layer, pass and implementation, that they come with --gptbench_fp8=true and
// bf16 only, and that the CPU lists them and skips each with the reason.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "fixtures/case_runner.h"
#include "fixtures/options.h"
#include "tests/bench/registered.h"

namespace gptbench {
namespace {

using test::count_prefix;
using test::expect_cpu_skips;
using test::has;
using test::registered;

TEST(Fp8LinearRegistration, RowsAtEveryLayerPassAndImpl) {
  const std::vector<std::string> gpu = registered({"--gptbench_dtypes=bf16", "--gptbench_fp8=true"}, true);
  // GPT-2 small at 8 × 1024 tokens: 4 layers × fwd, fwd_bwd per implementation; ours with
  // current and delayed scaling.
  EXPECT_EQ(count_prefix(gpu, "linear/fp8/e4m3/"), 16u);
  EXPECT_EQ(count_prefix(gpu, "linear/scaled_mm/e4m3/"), 8u);
  EXPECT_EQ(count_prefix(gpu, "linear/torch/bf16/"), 8u);
  EXPECT_TRUE(has(gpu, "linear/fp8/e4m3/fwd_bwd/small.mlp_up/scale:tensor/M:8192/N:3072/K:768"));
  EXPECT_TRUE(has(gpu, "linear/fp8/e4m3/fwd/small.mlp_down/scale:tensor/M:8192/N:768/K:3072"));
  EXPECT_TRUE(has(gpu, "linear/fp8/e4m3/fwd_bwd/small.mlp_up/scale:tensor/scaling:delayed/M:8192/N:3072/K:768"));
  EXPECT_EQ(count_prefix(gpu, "linear/scaled_mm/e4m3/fwd_bwd/small.mlp_up/scale:tensor/scaling:"), 0u);
  EXPECT_TRUE(has(gpu, "linear/scaled_mm/e4m3/fwd_bwd/small.attn_proj/scale:tensor/M:8192/N:768/K:768"));
  EXPECT_TRUE(has(gpu, "linear/torch/bf16/fwd/small.qkv/M:8192/N:2304/K:768"));
  EXPECT_EQ(count_prefix(gpu, "linear/fp8/e4m3/fwd/small.lm_head"), 0u);  // the block's layers only
}

// The default suite keeps its length; the rows follow bf16's selection.
TEST(Fp8LinearRegistration, OptInAndFollowBf16) {
  EXPECT_EQ(count_prefix(registered({}, true), "linear/"), 0u);
  EXPECT_EQ(count_prefix(registered({"--gptbench_dtypes=fp32", "--gptbench_fp8=true"}, true), "linear/"), 0u);
}

TEST(Fp8LinearRegistration, ListedAndSkippedWithTheReasonOnTheCpu) {
  const size_t before = registered_cases().size();
  const std::vector<std::string> cpu = registered({"--gptbench_fp8=true"}, false);
  EXPECT_EQ(count_prefix(cpu, "linear/"), 32u);
  expect_cpu_skips(before, "linear/", [](const CaseSpec& spec) {
    EXPECT_TRUE(spec.needs_cuda_kernels) << spec.name;  // skipped before anything is built
    if (!global_options().on_cuda()) {
      EXPECT_NE(unavailable_reason(spec), "") << spec.name;
    }
  });  // and the case itself refuses the CPU, saying why
}

}  // namespace
}  // namespace gptbench
