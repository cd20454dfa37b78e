// Loader: every field variant of Google Benchmark 1.7-1.9 JSON, and every
// malformed input becoming a one-line LoadError that names the file.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "runjson/load.h"

namespace gptbench::runjson {
namespace {

// A Google Benchmark JSON file of the compare tool's fixtures (tests/compare/data/).
std::string data_path(const std::string& name) { return std::string(GPTBENCH_RUNJSON_TEST_DATA) + "/data/" + name; }

TEST(Load, RealGoogleBenchmark171RunWithRepetitionsAndAggregates) {
  const auto run = load_run_file(data_path("gb171_raw_reps.json"));
  ASSERT_EQ(run.benchmarks.size(), 8u);
  const Benchmark* softmax = run.find("softmax/naive/fp32/rows:64/cols:256");
  ASSERT_NE(softmax, nullptr);
  EXPECT_EQ(softmax->repetitions.size(), 10u);
  EXPECT_EQ(softmax->declared_repetitions, 10);
  for (size_t i = 0; i < softmax->repetitions.size(); ++i) EXPECT_EQ(softmax->repetitions[i].index, static_cast<int64_t>(i));
  // Aggregate rows are attached to their benchmark, not counted as benchmarks.
  for (const char* name : {"mean", "median", "stddev", "cv"}) EXPECT_NE(softmax->aggregate(name), nullptr) << name;
  EXPECT_TRUE(softmax->aggregate("cv")->is_percentage);
  EXPECT_EQ(run.find("softmax/naive/fp32/rows:64/cols:256_mean"), nullptr);
  // Counters are the extra numeric fields, one value per repetition.
  for (const char* name : {"bytes/s", "bytes_per_second", "peak_mem_bytes"}) {
    const CounterSeries* series = softmax->counter(name);
    ASSERT_NE(series, nullptr) << name;
    EXPECT_EQ(series->values.size(), 10u);
  }
  EXPECT_EQ(softmax->counter("threads"), nullptr);
  EXPECT_EQ(softmax->counter("iterations"), nullptr);
  // The median aggregate agrees with the median of the repetitions.
  std::vector<double> samples = softmax->samples(TimeKind::kReal);
  std::sort(samples.begin(), samples.end());
  EXPECT_NEAR(softmax->aggregate("median")->real_ns, (samples[4] + samples[5]) / 2, 1e-6 * samples[4]);
  // Context keys, custom ones included.
  EXPECT_EQ(run.context.at("gpu_name"), "none (CPU fixture)");
  EXPECT_EQ(run.context.at("num_cpus"), "2");
}

TEST(Load, ManualTimeNameAndMicrosecondUnit) {
  const auto run = load_run_file(data_path("gb171_raw_reps.json"));
  const Benchmark* attention = run.find("attention/scores/fp32/L:64/d:32/manual_time");
  ASSERT_NE(attention, nullptr);
  ASSERT_EQ(attention->repetitions.size(), 10u);
  // time_unit is "us" in the file; the loader stores nanoseconds.
  EXPECT_GT(attention->repetitions[0].real_ns, 1000.0);
  EXPECT_NE(attention->counter("tokens/s"), nullptr);
}

// Errored (Google Benchmark 1.7) and skipped (1.8 and later) benchmarks keep their message and
// have no repetitions.
TEST(Load, ErroredAndSkippedRunsKeepTheirMessage) {
  struct Case {
    const char* file;
    const char* name;
    RunStatus status;
    const char* message;
  };
  for (const Case& c : {Case{"gb171_raw_reps.json", "optim/adamw_check/fp32/model:tiny", RunStatus::kErrored,
                             "wrong result: max abs error 3.2e-02 > 1e-03"},
                        Case{"gb19_skipped_units.json", "attention/sdpa_flash/bf16/causal/L:4096/d:64",
                             RunStatus::kSkipped, "no GPU: flash attention needs CUDA"}}) {
    const auto run = load_run_file(data_path(c.file));
    const Benchmark* bench = run.find(c.name);
    ASSERT_NE(bench, nullptr) << c.name;
    EXPECT_EQ(bench->status, c.status) << c.name;
    EXPECT_EQ(bench->message, c.message);
    EXPECT_TRUE(bench->repetitions.empty()) << c.name;
  }
}

TEST(Load, MixedTimeUnitsAreNormalisedToNanoseconds) {
  const auto run = load_run_file(data_path("gb19_skipped_units.json"));
  const Benchmark* softmax = run.find("softmax/fused/bf16/rows:786432/cols:1024");
  ASSERT_NE(softmax, nullptr);
  const std::vector<double> real = softmax->samples(TimeKind::kReal);
  ASSERT_EQ(real.size(), 3u);
  EXPECT_DOUBLE_EQ(real[0], 812.5e3);  // 812.5 us
  EXPECT_DOUBLE_EQ(real[1], 810.1e3);  // 0.8101 ms
  EXPECT_DOUBLE_EQ(real[2], 815.0e3);  // 8.15e-4 s
  const Benchmark* gemm = run.find("gemm/cublaslt/bf16/M:8192/N:2304/K:768/manual_time");
  ASSERT_NE(gemm, nullptr);
  EXPECT_DOUBLE_EQ(gemm->samples(TimeKind::kCpu)[0], 1.30e6);
}

TEST(Load, StatusOfEachBenchmarkOfANewerLibrarysRun) {
  const auto run = load_run_file(data_path("gb19_skipped_units.json"));
  EXPECT_EQ(run.find("attention/sdpa_flash/bf16/causal/L:4096/d:64")->status, RunStatus::kSkipped);
  EXPECT_EQ(run.find("optim/adam8bit/model:small")->status, RunStatus::kErrored);
  EXPECT_EQ(run.find("optim/adamw/model:small")->status, RunStatus::kOk);
}

TEST(Load, AggregatesOnlyAndComplexityRows) {
  const auto run = load_run_file(data_path("gb19_aggregates_only.json"));
  ASSERT_EQ(run.benchmarks.size(), 3u);
  const Benchmark* model = run.find("model/fwd_bwd/small/bf16/B:8/T:1024");
  ASSERT_NE(model, nullptr);
  EXPECT_TRUE(model->repetitions.empty());
  EXPECT_DOUBLE_EQ(model->aggregate("median")->real_ns, 98.0e6);
  EXPECT_DOUBLE_EQ(model->aggregate("cv")->real_ns, 0.01);  // a fraction, not scaled by the unit
  EXPECT_EQ(model->declared_repetitions, 9);
  const Benchmark* complexity = run.find("softmax/naive/fp32/N");
  ASSERT_NE(complexity, nullptr);
  EXPECT_FALSE(complexity->aggregate("BigO")->has_time);
  EXPECT_FALSE(complexity->aggregate("RMS")->has_time);
}

TEST(Load, NonFiniteCounterLiteralsAreAccepted) {
  const auto run = load_run_file(data_path("nonfinite_counter.json"));
  const Benchmark* bench = run.find("softmax/fused/bf16/rows:1/cols:1");
  ASSERT_NE(bench, nullptr);
  EXPECT_TRUE(std::isnan(bench->counter("%peak")->values[0]));
  EXPECT_EQ(bench->counter("bytes/s")->values[0], INFINITY);
  EXPECT_EQ(bench->counter("bytes/s")->values[1], -INFINITY);
  EXPECT_EQ(bench->label, "NaN and Infinity written by Google Benchmark for 0/0 counters");
}

TEST(Load, RepetitionsOfOneBenchmarkAreNotDuplicates) {
  const auto run = parse_run(R"({"benchmarks": [
      {"name": "a", "repetition_index": 1, "real_time": 2, "cpu_time": 2, "time_unit": "ns"},
      {"name": "a", "repetition_index": 0, "real_time": 1, "cpu_time": 1, "time_unit": "ns"},
      {"name": "a_mean", "run_name": "a", "run_type": "aggregate", "aggregate_name": "mean",
       "real_time": 1.5, "cpu_time": 1.5, "time_unit": "ns"}]})",
                            "inline");
  ASSERT_EQ(run.benchmarks.size(), 1u);
  EXPECT_EQ(run.benchmarks[0].samples(TimeKind::kReal), (std::vector<double>{1, 2}));  // ordered by index
}

TEST(Load, NestedValuesInRowsAndContextAreIgnored) {
  const auto run = parse_run(R"({"context": {"caches": [{"size": 1}], "gpu_name": "H200"},
      "benchmarks": [{"name": "a", "real_time": 1, "cpu_time": 1, "time_unit": "ns",
                      "future_field": {"x": [1, 2]}, "note": "text", "flag": true}]})",
                            "inline");
  EXPECT_EQ(run.context.size(), 1u);
  EXPECT_TRUE(run.benchmarks[0].counters.empty());
}

struct MalformedCase {
  const char* file;
  const char* expected;  // substring of the message
};

TEST(Load, MalformedInputsGiveOneLineErrorsNamingTheFile) {
  const MalformedCase kCases[] = {
      {"empty.json", "file is empty"},
      {"whitespace.json", "file is empty"},
      {"truncated.json", "invalid JSON at line 1"},
      {"missing_comma.json", "invalid JSON at line 1, column 61"},
      {"binary_garbage.json", "invalid JSON"},
      {"number_overflow.json", "number overflow"},
      {"no_benchmarks.json", "no 'benchmarks' array"},
      {"benchmarks_object.json", "'benchmarks' is an object, expected an array"},
      {"benchmarks_string.json", "'benchmarks' is a string, expected an array"},
      {"top_level_array.json", "top-level value is an array"},
      {"context_array.json", "'context' is an array"},
      {"row_not_object.json", "benchmarks[0] is an integer, expected an object"},
      {"missing_name.json", "benchmarks[0]: missing 'name'"},
      {"name_not_string.json", "'name' is an integer, expected a string"},
      {"real_time_string.json", "'real_time' is a string, expected a number"},
      {"real_time_object.json", "'real_time' is an object"},
      {"repetition_index_float.json", "'repetition_index' is a number, expected an integer"},
      {"index_overflow.json", "'repetition_index' is a number, expected an integer"},
      {"error_occurred_string.json", "'error_occurred' is a string, expected a boolean"},
      {"negative_time.json", "benchmarks[1] ('gemm/y'): 'real_time' is negative"},
      {"nan_time.json", "'real_time' is not finite"},
      {"infinite_time.json", "'cpu_time' is not finite"},
      {"bad_time_unit.json", "unknown time_unit 'minutes'"},
      {"missing_time_unit.json", "missing 'time_unit'"},
      {"missing_real_time.json", "missing 'real_time'"},
      {"unknown_run_type.json", "unknown run_type 'warmup'"},
      {"duplicate_iteration.json", "duplicate benchmark 'gemm/x' (two iteration rows with repetition_index 0)"},
      {"duplicate_no_index.json", "duplicate benchmark 'gemm/x' (two iteration rows without repetition_index)"},
      {"duplicate_aggregate.json", "duplicate aggregate row 'gemm/x_mean'"},
      {"aggregate_without_name.json", "aggregate row without 'aggregate_name'"},
  };
  for (const MalformedCase& c : kCases) {
    const std::string path = data_path(std::string("malformed/") + c.file);
    SCOPED_TRACE(path);
    try {
      (void)load_run_file(path);
      ADD_FAILURE() << "loaded without error";
    } catch (const LoadError& error) {
      const std::string message = error.what();
      EXPECT_EQ(message.rfind(path + ": ", 0), 0u) << message;
      EXPECT_NE(message.find(c.expected), std::string::npos) << message;
      EXPECT_EQ(message.find('\n'), std::string::npos) << message;
    }
  }
}

TEST(Load, MissingFile) {
  try {
    (void)load_run_file("/nonexistent/run.json");
    ADD_FAILURE() << "loaded without error";
  } catch (const LoadError& error) {
    EXPECT_STREQ(error.what(), "/nonexistent/run.json: cannot open file (No such file or directory)");
  }
}

TEST(Load, ControlCharactersInNamesStayOnOneLine) {
  try {
    (void)parse_run(R"({"benchmarks": [{"name": "a\nb", "real_time": -1, "cpu_time": 1, "time_unit": "ns"}]})", "x.json");
    ADD_FAILURE() << "loaded without error";
  } catch (const LoadError& error) {
    EXPECT_STREQ(error.what(), "x.json: benchmarks[0] ('a\\x0ab'): 'real_time' is negative (-1)");
  }
}

}  // namespace
}  // namespace gptbench::runjson
