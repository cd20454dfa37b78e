// Context check: environment keys differ prominently, host keys loosely.
#include <gtest/gtest.h>

#include "compare/context.h"
#include "runjson/load.h"
#include "test_util.h"

namespace gptbench::compare {
using runjson::load_run_file;

namespace {

using Context = std::map<std::string, std::string>;

TEST(ContextDiff, SameEnvironmentHasNoDifferences) {
  const Context a = {{"gpu_name", "NVIDIA H200"}, {"driver", "580"}, {"date", "monday"}, {"executable", "./a"}};
  Context b = a;
  b["date"] = "tuesday";  // always differs: not compared
  b["executable"] = "./b";
  EXPECT_TRUE(diff_context(a, b).empty());
}

TEST(ContextDiff, GpuAndDriverFromFixtures) {
  const auto h200 = load_run_file(test_util::data_path("context_h200.json"));
  const auto h100 = load_run_file(test_util::data_path("context_h100.json"));
  const std::vector<ContextDifference> diffs = diff_context(h200.context, h100.context);
  ASSERT_EQ(diffs.size(), 2u);
  EXPECT_EQ(diffs[0].key, "gpu_name");
  EXPECT_EQ(diffs[0].base, "NVIDIA H200");
  EXPECT_EQ(diffs[0].contender, "NVIDIA H100 80GB HBM3");
  EXPECT_TRUE(diffs[0].environment);
  EXPECT_EQ(diffs[1].key, "driver");
  EXPECT_TRUE(has_environment_difference(diffs));
}

// The keys the suite itself writes (fixtures/device_info.cpp): a new driver, or a baseline
// timed before the launch-latency hold existed, is an environment difference.
TEST(ContextDiff, SuiteDriverAndTimingMethodAreEnvironment) {
  const Context base = {{"gpu_name", "NVIDIA H200"}, {"gpu_driver", "580.159.04"}};
  Context now = {{"gpu_name", "NVIDIA H200"}, {"gpu_driver", "580.159.04"}, {"timer_hold_ns", "50000"}};
  std::vector<ContextDifference> diffs = diff_context(base, now);
  ASSERT_EQ(diffs.size(), 1u);
  EXPECT_EQ(diffs[0].key, "timer_hold_ns");
  EXPECT_EQ(diffs[0].base, "(absent)");
  EXPECT_TRUE(has_environment_difference(diffs));
  now.erase("timer_hold_ns");
  now["gpu_driver"] = "590.10";
  diffs = diff_context(base, now);
  ASSERT_EQ(diffs.size(), 1u);
  EXPECT_EQ(diffs[0].key, "gpu_driver");
  EXPECT_TRUE(diffs[0].environment);
}

// The suite's default timed seconds per benchmark changed on 2026-11-24 (0.5 -> 0.1): a
// baseline without the key, or with another value, is noted, not an environment difference.
TEST(ContextDiff, MinTimeIsInformational) {
  const Context base = {{"gpu_name", "NVIDIA H200"}};
  const Context now = {{"gpu_name", "NVIDIA H200"}, {"gptbench_min_time", "0.1"}};
  const std::vector<ContextDifference> diffs = diff_context(base, now);
  ASSERT_EQ(diffs.size(), 1u);
  EXPECT_EQ(diffs[0].key, "gptbench_min_time");
  EXPECT_FALSE(diffs[0].environment);
  EXPECT_FALSE(has_environment_difference(diffs));
}

TEST(ContextDiff, MissingKeyOnOneSideIsADifference) {
  const std::vector<ContextDifference> diffs = diff_context({{"libtorch", "2.11.0"}}, {});
  ASSERT_EQ(diffs.size(), 1u);
  EXPECT_EQ(diffs[0].contender, "(absent)");
}

TEST(ContextDiff, HostKeysAreInformationalAndClockIsLoose) {
  const Context a = {{"host_name", "a"}, {"num_cpus", "16"}, {"mhz_per_cpu", "3100"}};
  const Context b = {{"host_name", "b"}, {"num_cpus", "16"}, {"mhz_per_cpu", "3000"}};  // within 10%
  const std::vector<ContextDifference> diffs = diff_context(a, b);
  ASSERT_EQ(diffs.size(), 1u);
  EXPECT_EQ(diffs[0].key, "host_name");
  EXPECT_FALSE(has_environment_difference(diffs));
  const Context c = {{"host_name", "a"}, {"num_cpus", "16"}, {"mhz_per_cpu", "2000"}};
  ASSERT_EQ(diff_context(a, c).size(), 1u);
  EXPECT_EQ(diff_context(a, c)[0].key, "mhz_per_cpu");
}

}  // namespace
}  // namespace gptbench::compare
