// Merging per-round runs into one run with repetitions.
#include <gtest/gtest.h>

#include "runjson/load.h"
#include "runjson/merge.h"

namespace gptbench::runjson {
namespace {

std::string round_json(double a_time, const char* extra = "") {
  return std::string(R"({"context": {"gpu_name": "H200", "caches": [{"size": 1}]}, "benchmarks": [
    {"name": "a", "run_name": "a", "run_type": "iteration", "repetitions": 1, "repetition_index": 0,
     "real_time": )") + std::to_string(a_time) + R"(, "cpu_time": 1, "time_unit": "us", "FLOP/s": 5},
    {"name": "a_mean", "run_name": "a", "run_type": "aggregate", "aggregate_name": "mean",
     "real_time": 1, "cpu_time": 1, "time_unit": "us"},
    {"name": "b", "real_time": 2, "cpu_time": 2, "time_unit": "ms", "bytes/s": NaN})" + extra + "]}";
}

TEST(Merge, RoundsBecomeRepetitions) {
  const nlohmann::json merged =
      merge_runs({{"r0.json", round_json(1.0)}, {"r1.json", round_json(2.0)}, {"r2.json", round_json(3.0)}});
  EXPECT_EQ(merged["context"]["gpu_name"], "H200");
  EXPECT_EQ(merged["context"]["caches"].size(), 1u);  // context kept verbatim
  const auto run = parse_run(merged.dump(), "merged");
  ASSERT_EQ(run.benchmarks.size(), 2u);
  const Benchmark& a = run.benchmarks[0];
  EXPECT_EQ(a.name, "a");
  EXPECT_EQ(a.samples(TimeKind::kReal), (std::vector<double>{1e3, 2e3, 3e3}));  // round order, us -> ns
  EXPECT_EQ(a.declared_repetitions, 3);
  EXPECT_TRUE(a.aggregates.empty());  // per-round aggregates dropped
  EXPECT_EQ(a.counter("FLOP/s")->values.size(), 3u);
  EXPECT_EQ(run.benchmarks[1].repetitions.size(), 3u);
  EXPECT_EQ(merged["benchmarks"][0]["repetition_index"], 0);
  EXPECT_EQ(merged["benchmarks"][2]["repetition_index"], 2);
}

TEST(Merge, BadInputNamesTheFile) {
  try {
    (void)merge_runs({{"r0.json", round_json(1.0)}, {"r1.json", R"({"benchmarks": 3})"}});
    ADD_FAILURE() << "merged bad input";
  } catch (const LoadError& error) {
    EXPECT_STREQ(error.what(), "r1.json: 'benchmarks' is an integer, expected an array");
  }
  EXPECT_THROW((void)merge_runs({}), LoadError);
}

TEST(Merge, ErroredRoundsStayVisible) {
  const std::string errored = R"({"benchmarks": [{"name": "a", "error_occurred": true, "error_message": "oom"}]})";
  const auto run = parse_run(merge_runs({{"r0.json", round_json(1.0)}, {"r1.json", errored}}).dump(), "merged");
  EXPECT_EQ(run.find("a")->status, RunStatus::kErrored);
  EXPECT_EQ(run.find("a")->message, "oom");
}

}  // namespace
}  // namespace gptbench::runjson
