// What the families register (bench/*.cpp) for a run's flags, without running anything: no row
// that those flags can never run. A run on a GPU is registered here from its flags alone, so
// these run on the CPU too.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "fixtures/case_runner.h"
#include "tests/bench/registered.h"

namespace gptbench {
namespace {

using test::count_prefix;
using test::has;
using test::registered;

// The memory family finds what fits under --gptbench_memory_limit: on a GPU, without the flag,
// it has nothing to run and registers nothing; on the CPU it runs without one.
TEST(Registration, MemoryFamilyOnAGpuOnlyUnderAMemoryLimit) {
  EXPECT_EQ(count_prefix(registered({}, true), "model/memory/"), 0u);
  EXPECT_GT(count_prefix(registered({"--gptbench_memory_limit=16GiB"}, true), "model/memory/"), 0u);
  EXPECT_GT(count_prefix(registered({}, false), "model/memory/"), 0u);
}

// No attention row in a dtype its backend never takes: LibTorch's flash and cuDNN kernels on a
// GPU and ours take bf16/fp16 only. LibTorch's CPU flash kernel takes fp32; on the CPU the rows
// of backends that need a GPU are registered in the dtypes they take there, to be skipped for
// want of one.
TEST(Registration, AttentionBackendsOnlyInTheDtypesTheyTake) {
  const std::vector<std::string> gpu = registered({"--gptbench_dtypes=fp32,bf16"}, true);
  for (const char* impl : {"sdpa_flash", "sdpa_cudnn", "flash", "flash_sm90"}) {
    const std::string a = std::string("attention/") + impl;
    EXPECT_EQ(count_prefix(gpu, a + "/fp32/"), 0u) << impl;
    EXPECT_GT(count_prefix(gpu, a + "/bf16/"), 0u) << impl;
  }
  for (const char* impl : {"naive", "sdpa_math", "sdpa_efficient"})
    EXPECT_GT(count_prefix(gpu, std::string("attention/") + impl + "/fp32/"), 0u) << impl;

  const std::vector<std::string> cpu = registered({"--gptbench_dtypes=fp32,bf16"}, false);
  EXPECT_GT(count_prefix(cpu, "attention/sdpa_flash/fp32/"), 0u);
  EXPECT_EQ(count_prefix(cpu, "attention/flash/fp32/"), 0u);
  EXPECT_EQ(count_prefix(cpu, "attention/sdpa_cudnn/fp32/"), 0u);
  EXPECT_GT(count_prefix(cpu, "attention/flash/bf16/"), 0u);
  EXPECT_GT(count_prefix(cpu, "attention/sdpa_efficient/fp32/"), 0u);
}

}  // namespace
}  // namespace gptbench
