// The fp8 training-step rows (bench/train_step.cpp) for a run's flags, without running anything:
// with --gptbench_fp8=true and bf16 only, at B and 2·B for each selected size (with current and
// delayed scaling), each beside the same configuration in bf16; listed on the CPU, where the case skips itself with the reason.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "fixtures/case_runner.h"
#include "tests/bench/registered.h"

namespace gptbench {
namespace {

using test::count_prefix;
using test::expect_cpu_skips;
using test::has;
using test::registered;

const std::string kRest = "/opt:adamw/attn:sdpa/";

TEST(TrainStepFp8Registration, BesideTheBestBf16Rows) {
  const std::vector<std::string> gpu =
      registered({"--gptbench_dtypes=bf16", "--gptbench_fp8=true", "--gptbench_models=small,medium,large"}, true);
  for (const char* size : {"small", "medium", "large"}) {
    const std::string fp8 = std::string("model/train_step/") + size + "/fp8/";
    const std::string bf16 = std::string("model/train_step/") + size + "/bf16/";
    // 2 batches × (2 heads, and head:fp8 with delayed scaling) in a graph, one eager; the peers'
    // configuration at B, graph and eager.
    EXPECT_EQ(count_prefix(gpu, fp8), 9u) << size;
    for (const char* mode : {"graph", "eager"})
      EXPECT_TRUE(has(gpu, fp8 + "B:8/T:1024/opt:torch_fused/attn:sdpa/head:torch/blocks:torch/accum:1/mode:" + mode))
          << size << mode;
    for (const char* b : {"B:8/T:1024", "B:16/T:1024"}) {
      for (const char* head : {"head:fused", "head:fp8"})
        EXPECT_TRUE(has(gpu, fp8 + b + kRest + head + "/blocks:fused/accum:1/mode:graph")) << size << b << head;
      EXPECT_TRUE(has(gpu, fp8 + b + kRest + "head:fp8/blocks:fused/accum:1/mode:graph/scaling:delayed")) << size << b;
      EXPECT_TRUE(has(gpu, bf16 + b + kRest + "head:fused/blocks:fused/accum:1/mode:graph")) << size << b;
    }
    EXPECT_TRUE(has(gpu, fp8 + "B:8/T:1024" + kRest + "head:fused/blocks:fused/accum:1/mode:eager"));
    EXPECT_TRUE(has(gpu, bf16 + "B:8/T:1024" + kRest + "head:fused/blocks:fused/accum:1/mode:eager"));
  }
}

// The default suite keeps its length; the rows follow bf16's selection.
TEST(TrainStepFp8Registration, OptInAndFollowBf16) {
  EXPECT_EQ(count_prefix(registered({}, true), "model/train_step/small/fp8/"), 0u);
  EXPECT_EQ(count_prefix(registered({"--gptbench_dtypes=fp32", "--gptbench_fp8=true"}, true),
                         "model/train_step/small/fp8/"),
            0u);
}

TEST(TrainStepFp8Registration, ListedAndSkippedWithTheReasonOnTheCpu) {
  const size_t before = registered_cases().size();
  const std::vector<std::string> cpu = registered({"--gptbench_fp8=true"}, false);
  EXPECT_EQ(count_prefix(cpu, "model/train_step/tiny/fp8/"), 9u);
  EXPECT_EQ(count_prefix(cpu, "model/train_step/tiny/bf16/"), 0u);  // the CPU runs fp32 only
  if (global_options().on_cuda()) GTEST_SKIP() << "the cases are built for the run's device: a GPU here";
  expect_cpu_skips(before, "model/train_step/tiny/fp8/");
}

}  // namespace
}  // namespace gptbench
