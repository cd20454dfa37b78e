// The rows of quantization fused into its producer (bench/quantize_fused.cpp) for a run's flags,
// without running anything: per producer (LayerNorm, GELU) three implementations × row and 1×128
// scales per selected model, with --gptbench_fp8=true only; on the CPU ours refuse to be built,
// saying why.
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

TEST(QuantizeFusedRegistration, ThreeImplsTwoScalesPerModelAndProducer) {
  const std::vector<std::string> gpu = registered({"--gptbench_fp8=true", "--gptbench_models=small,large"}, true);
  for (const char* producer : {"layernorm", "gelu"})
    for (const char* kind : {"_fused", "_then_fused", "_torch"}) {
      const std::string impl = std::string(producer) + kind;
      EXPECT_EQ(count_prefix(gpu, "quantize/" + impl + "/e4m3/"), 4u) << impl;
      const std::string shape = std::string(producer) == "gelu" ? "large.mlp_act" : "large.ln_out";
      const std::string cols = std::string(producer) == "gelu" ? "5120" : "1280";
      for (const char* scale : {"row", "block1x128"})
        EXPECT_TRUE(has(gpu, "quantize/" + impl + "/e4m3/" + shape + "/scale:" + scale + "/rows:8192/cols:" + cols))
            << impl << scale;
    }
  const std::vector<std::string> plain = registered({}, true);
  EXPECT_EQ(count_prefix(plain, "quantize/layernorm_") + count_prefix(plain, "quantize/gelu_"), 0u);  // opt-in
}

TEST(QuantizeFusedRegistration, OursSkipOnTheCpuWithTheReason) {
  const size_t before = registered_cases().size();
  const std::vector<std::string> cpu = registered({"--gptbench_fp8=true"}, false);
  EXPECT_EQ(count_prefix(cpu, "quantize/layernorm_"), 6u);
  EXPECT_EQ(count_prefix(cpu, "quantize/gelu_"), 6u);
  if (global_options().on_cuda()) GTEST_SKIP() << "the cases are built for the run's device: a GPU here";
  for (const char* impl : {"layernorm_fused", "layernorm_then_fused", "gelu_fused", "gelu_then_fused"})
    expect_cpu_skips(before, std::string("quantize/") + impl + "/");
}

}  // namespace
}  // namespace gptbench
