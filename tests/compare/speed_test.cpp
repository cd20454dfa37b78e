// Speed: two generated files of 10,000 benchmarks x 10 repetitions (plus the
// four aggregate rows Google Benchmark adds) are loaded and compared, and the
// comparison rendered as JSON. Prints both times; asserts correctness only (the
// target is under one second).
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <random>

#include "runjson/load.h"
#include "compare/render.h"
#include "compare/report.h"
#include "test_util.h"

namespace gptbench::compare {
using runjson::load_run_files;

namespace {

constexpr int kBenchmarks = 10000;
constexpr int kRepetitions = 10;
constexpr int kSlowed = 7;  // every 1000th benchmark from this one is 20% slower in NEW

std::string generate(bool slowed, unsigned seed) {
  std::mt19937 gen(seed);
  std::normal_distribution<double> noise(0.0, 0.005);
  std::string out = R"({"context": {"gpu_name": "NVIDIA H200"}, "benchmarks": [)";
  out.reserve(static_cast<size_t>(kBenchmarks) * (kRepetitions + 4) * 330);
  char row[512];
  bool first = true;
  for (int b = 0; b < kBenchmarks; ++b) {
    char name[96];
    std::snprintf(name, sizeof name, "family%d/impl/bf16/M:%d/N:1024", b % 7, b);
    const double base = 1000.0 + b;
    const double factor = slowed && b % 1000 == kSlowed ? 1.2 : 1.0;
    for (int r = 0; r < kRepetitions; ++r) {
      const double t = base * factor * (1 + noise(gen));
      std::snprintf(row, sizeof row,
                    R"(%s{"name": "%s", "family_index": %d, "per_family_instance_index": 0, "run_name": "%s", )"
                    R"("run_type": "iteration", "repetitions": %d, "repetition_index": %d, "threads": 1, )"
                    R"("iterations": 1000, "real_time": %.16e, "cpu_time": %.16e, "time_unit": "ns", )"
                    R"("FLOP/s": %.16e})",
                    first ? "" : ",", name, b, name, kRepetitions, r, t, t, 2e9 / t);
      out += row;
      first = false;
    }
    for (const char* agg : {"mean", "median", "stddev", "cv"}) {
      std::snprintf(row, sizeof row,
                    R"(,{"name": "%s_%s", "run_name": "%s", "run_type": "aggregate", "repetitions": %d, )"
                    R"("aggregate_name": "%s", "real_time": %.16e, "cpu_time": %.16e, "time_unit": "ns"})",
                    name, agg, name, kRepetitions, agg, base, base);
      out += row;
    }
  }
  return out + "]}";
}

TEST(Speed, TenThousandBenchmarksTimesTenRepetitions) {
  test_util::TempDir dir;
  test_util::write_file(dir.file("base.json"), generate(false, 1));
  test_util::write_file(dir.file("new.json"), generate(true, 2));
  if (const char* keep = std::getenv("GPTBENCH_SPEED_KEEP")) {  // for profiling the CLI on the same files
    std::filesystem::copy_file(dir.file("base.json"), std::string(keep) + "/base.json");
    std::filesystem::copy_file(dir.file("new.json"), std::string(keep) + "/new.json");
  }

  const auto start = std::chrono::steady_clock::now();
  const auto [base, contender] = load_run_files(dir.file("base.json"), dir.file("new.json"));
  const Report report = build_report(pair_by_name(base, contender, NameFilter()), Settings());
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("[ TIMING ] load + compare of 2 x %d benchmarks x %d repetitions: %.3f s\n", kBenchmarks, kRepetitions,
              seconds);
  RecordProperty("seconds", std::to_string(seconds));

  // --format=json writes every pair with both sides' samples.
  const auto render_start = std::chrono::steady_clock::now();
  const std::string json = render_json(report);
  const double render_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - render_start).count();
  std::printf("[ TIMING ] JSON output of that comparison (%.0f MB): %.3f s\n", json.size() / 1e6, render_seconds);
  RecordProperty("json_seconds", std::to_string(render_seconds));
  EXPECT_EQ(json.rfind("{\n  \"added\": ", 0), 0u);

  ASSERT_EQ(report.results.size(), static_cast<size_t>(kBenchmarks));
  // Each pair on its own finds exactly the planted slowdowns.
  Settings per_pair;
  per_pair.correction = Correction::kNone;
  const Report uncorrected = build_report(pair_by_name(base, contender, NameFilter()), per_pair);
  size_t regressions = 0;
  for (const PairResult& result : uncorrected.results) {
    if (result.verdict != Verdict::kRegression) continue;
    ++regressions;
    const int index = std::stoi(result.name.substr(result.name.find("/M:") + 3));
    EXPECT_EQ(index % 1000, kSlowed) << result.name;
  }
  EXPECT_EQ(regressions, static_cast<size_t>(kBenchmarks / 1000));
  // Holm over 10,000 pairs needs p < 0.05/10000, out of reach of 10 vs 10
  // repetitions (at best p = 0.00018): the planted ones are unreliable, and say so.
  EXPECT_EQ(report.summary.verdicts.count(Verdict::kRegression), 0u);
  for (size_t i = 0; i < report.results.size(); ++i) {
    if (uncorrected.results[i].verdict != Verdict::kRegression) continue;
    const PairResult& result = report.results[i];
    EXPECT_EQ(result.verdict, Verdict::kUnreliable) << result.name;
    EXPECT_NE(result.time.reason.find("10 and 10 repetitions cannot get below"), std::string::npos)
        << result.time.reason;
  }
  EXPECT_EQ(report.summary.families.size(), 7u);
}

}  // namespace
}  // namespace gptbench::compare
