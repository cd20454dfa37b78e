// The LayerNorm-producer quantization rows (bench/quantize_layernorm.cpp) for a run's flags,
// without running anything: three implementations × row and 1×128 scales per selected model,
// with --gptbench_fp8=true only; on the CPU ours refuse to be built, saying why.
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

TEST(QuantizeLayerNormRegistration, ThreeImplsTwoScalesPerModel) {
  const std::vector<std::string> gpu = registered({"--gptbench_fp8=true", "--gptbench_models=small,large"}, true);
  for (const char* impl : {"layernorm_fused", "layernorm_then_fused", "layernorm_torch"}) {
    EXPECT_EQ(count_prefix(gpu, std::string("quantize/") + impl + "/e4m3/"), 4u) << impl;
    for (const char* scale : {"row", "block1x128"})
      EXPECT_TRUE(has(gpu, std::string("quantize/") + impl + "/e4m3/large.ln_out/scale:" + scale +
                               "/rows:8192/cols:1280"))
          << impl << scale;
  }
  EXPECT_EQ(count_prefix(registered({}, true), "quantize/layernorm_"), 0u);  // opt-in
}

TEST(QuantizeLayerNormRegistration, OursSkipOnTheCpuWithTheReason) {
  const size_t before = registered_cases().size();
  const std::vector<std::string> cpu = registered({"--gptbench_fp8=true"}, false);
  EXPECT_EQ(count_prefix(cpu, "quantize/layernorm_"), 6u);
  if (global_options().on_cuda()) GTEST_SKIP() << "the cases are built for the run's device: a GPU here";
  expect_cpu_skips(before, "quantize/layernorm_fused/");
  expect_cpu_skips(before, "quantize/layernorm_then_fused/");
}

}  // namespace
}  // namespace gptbench
