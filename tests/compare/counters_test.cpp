// Counter direction: declared for the suite's counters (counter_table.h), from the name for
// Google Benchmark's built-in names and other tools'.
#include <gtest/gtest.h>

#include <iterator>

#include "compare/counters.h"

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

// Counters whose names the old guess read the wrong way, or not at all: their declared
// direction wins.
TEST(CounterDirection, DeclaredDirectionWinsOverTheName) {
  for (const char* name : {"busbw_GBps", "algbw_GBps", "max_batch", "scaling_efficiency", "mfu_pct",
                           "tokens_per_s_per_gpu", "pct_p2p_peak", "speedup_vs_scaled_mm", "speedup_vs_my_peer"})
    EXPECT_EQ(counter_direction(name), Direction::kHigherIsBetter) << name;
  for (const char* name : {"step_ms", "exposed_comm_pct", "compile_s", "time_us", "step1_ms", "step12_ms"})
    EXPECT_EQ(counter_direction(name), Direction::kLowerIsBetter) << name;
  // Settings and predictions describe the case: "bytes" in the name does not make them costs.
  for (const char* name : {"memory_limit_bytes", "predicted_peak_bytes", "ref_state_bytes", "pred_error_pct",
                           "ref_sm_clock_mhz", "ref_backward_ms", "ref_step_max_rank_ms", "enqueue_us",
                           "peer_enqueue_us"})
    EXPECT_EQ(counter_direction(name), Direction::kInformational) << name;
}

TEST(CounterTable, EveryCounterIsDeclaredOnceWithAUnit) {
  for (size_t i = 0; i < std::size(kCounterKinds); ++i) {
    EXPECT_FALSE(kCounterKinds[i].unit.empty()) << kCounterKinds[i].name;
    EXPECT_EQ(declared_counter(kCounterKinds[i].name), &kCounterKinds[i]) << "declared twice: " << kCounterKinds[i].name;
  }
  EXPECT_EQ(declared_counter("no_such_counter"), nullptr);
  EXPECT_EQ(declared_counter("step_x_ms"), nullptr);  // only digits stand for N
  EXPECT_EQ(declared_counter("speedup_vs_"), nullptr);   // a peer needs a name
}

}  // namespace
}  // namespace gptbench::compare
