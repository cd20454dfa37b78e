// Counter direction from the name: the suite's vocabulary and Google
// Benchmark's built-in names.
#include <gtest/gtest.h>

#include "counters.h"

namespace gptbench::compare {
namespace {

TEST(CounterDirection, RatesAreHigherIsBetter) {
  for (const char* name : {"FLOP/s", "bytes/s", "tokens/s", "%peak", "bytes_per_second", "items_per_second",
                           "TFLOPS", "throughput"}) {
    EXPECT_EQ(counter_direction(name), Direction::kHigherIsBetter) << name;
  }
}

TEST(CounterDirection, MemoryAndTimesAreLowerIsBetter) {
  for (const char* name : {"peak_mem_bytes", "state_bytes", "bytes/param", "max_bytes_used", "allocs_per_iter",
                           "gpu_mem", "step_time", "latency_ms"}) {
    EXPECT_EQ(counter_direction(name), Direction::kLowerIsBetter) << name;
  }
}

TEST(CounterDirection, OthersAreInformational) {
  for (const char* name : {"batch", "params", "net_heap_growth", "loss"}) {
    EXPECT_EQ(counter_direction(name), Direction::kInformational) << name;
  }
}

}  // namespace
}  // namespace gptbench::compare
