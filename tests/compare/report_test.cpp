// Whole comparisons on the fixtures: A/A, planted slowdown, broken and
// skipped benchmarks, counters, aggregates-only runs, summaries, exit codes.
#include <gtest/gtest.h>

#include <cmath>
#include <tuple>

#include "runjson/load.h"
#include "compare/render.h"
#include "compare/report.h"
#include "test_util.h"

namespace gptbench::compare {
using runjson::TimeKind;
using runjson::load_run_file;
using runjson::parse_run;

namespace {

using test_util::data_path;
using test_util::fixture_settings;

Report compare_files(const std::string& base, const std::string& contender, const Settings& settings = Settings()) {
  const auto a = load_run_file(data_path(base));
  const auto b = load_run_file(data_path(contender));
  Report report = build_report(pair_by_name(a, b, NameFilter()), settings);
  report.context = diff_context(a.context, b.context);
  return report;
}

size_t count(const Report& report, Verdict verdict) {
  const auto it = report.summary.verdicts.find(verdict);
  return it == report.summary.verdicts.end() ? 0 : it->second;
}

const PairResult& result_named(const Report& report, const std::string& name) {
  for (const PairResult& result : report.results) {
    if (result.name == name) return result;
  }
  throw std::runtime_error("no result " + name);
}

constexpr const char* kPlanted = "softmax/fused/fp32/rows:64/cols:1024";

TEST(Report, AAComparisonReportsNoRegression) {
  const Report report = compare_files("gb171_aa_base.json", "gb171_aa_new.json");
  EXPECT_EQ(report.results.size(), 8u);
  EXPECT_EQ(count(report, Verdict::kRegression), 0u);
  EXPECT_EQ(count(report, Verdict::kBroken), 0u);
  EXPECT_EQ(count(report, Verdict::kNotCompared), 1u);  // the benchmark that errors in both runs
  EXPECT_EQ(exit_code(report), 0);
  EXPECT_NEAR(report.summary.geomean, 1.0, 0.05);
  EXPECT_TRUE(report.context.empty());
}

TEST(Report, PlantedSlowdownIsTheOnlyRegression) {
  const Report report = compare_files("gb171_aa_base.json", "gb171_slow_new.json", fixture_settings());
  EXPECT_EQ(count(report, Verdict::kRegression), 1u);
  const PairResult& planted = result_named(report, kPlanted);
  EXPECT_EQ(planted.verdict, Verdict::kRegression);
  EXPECT_NEAR(planted.time.change, 0.30, 0.06);  // 1.30x the work
  EXPECT_LT(planted.time.u_test.p_value, 0.001);
  // A large clean regression survives the correction over the 7 tested pairs.
  EXPECT_EQ(report.summary.tested_pairs, 7u);
  EXPECT_NE(planted.time.reason.find("significant after Holm correction over 7 pairs"), std::string::npos)
      << planted.time.reason;
  EXPECT_EQ(exit_code(report), 1);
  EXPECT_EQ(gate_message(report).rfind("FAIL: 1 regression(s)", 0), 0u) << gate_message(report);
  // Its bandwidth counter regressed too (higher is better), and is reported.
  bool bandwidth_regressed = false;
  for (const CounterResult& counter : planted.counters) {
    if (counter.name == "bytes/s") bandwidth_regressed = counter.comparison.verdict == Verdict::kRegression;
  }
  EXPECT_TRUE(bandwidth_regressed);
}

TEST(Report, PlantedSlowdownIsTheOnlyRegressionAtFivePercentDespiteAnOutlier) {
  // The fixture's base side of the planted benchmark has a classical CV of 5.7% from a few
  // outlying repetitions, but its robust CV (1.4826 MAD / median) is under the 5% threshold:
  // the +29% (p = 0.0002) is a regression, the only one, and survives Holm over 7 pairs.
  const Report report = compare_files("gb171_aa_base.json", "gb171_slow_new.json");
  const PairResult& planted = result_named(report, kPlanted);
  EXPECT_LT(planted.time.u_test.p_value, 0.001);
  EXPECT_GT(planted.time.base.cv, 0.05);
  EXPECT_LT(planted.time.base.robust_cv, 0.05);
  EXPECT_EQ(planted.verdict, Verdict::kRegression) << planted.time.reason;
  EXPECT_EQ(count(report, Verdict::kRegression), 1u);
  EXPECT_EQ(exit_code(report), 1);
}

Report many_pairs_report(Correction correction) {
  const test_util::ManyPairs runs = test_util::many_pairs();
  Settings settings;
  settings.correction = correction;
  return test_util::compare_samples(runs.base, runs.contender, settings);
}

TEST(Report, HolmDemotesOnlyPerPairSignificantChanges) {
  const Report holm = many_pairs_report(Correction::kHolm);
  const Report none = many_pairs_report(Correction::kNone);
  ASSERT_EQ(holm.results.size(), 40u);
  EXPECT_EQ(holm.summary.tested_pairs, 40u);
  EXPECT_DOUBLE_EQ(holm.summary.p_cutoff, 0.05 / 39);  // rank 2 fails
  EXPECT_DOUBLE_EQ(none.summary.p_cutoff, 0.05);
  // Per pair: two regressions and one improvement; after Holm only the clean one.
  EXPECT_EQ(count(none, Verdict::kRegression), 2u);
  EXPECT_EQ(count(none, Verdict::kImprovement), 1u);
  EXPECT_EQ(count(holm, Verdict::kRegression), 1u);
  EXPECT_EQ(count(holm, Verdict::kImprovement), 0u);
  EXPECT_EQ(result_named(holm, "many/clean_regression").verdict, Verdict::kRegression);
  for (const char* name : {"many/moderate_regression", "many/moderate_improvement"}) {
    const PairResult& demoted = result_named(holm, name);
    EXPECT_EQ(demoted.verdict, Verdict::kUnreliable) << name;
    EXPECT_EQ(demoted.time.reason,
              "|change| 6.0% > 5.0% but p = 0.0062 not significant after Holm correction over 40 pairs "
              "(needed < 0.00128)");
  }
  // Nothing else moves: every other verdict, reason and p-value is the per-pair one.
  for (size_t i = 0; i < holm.results.size(); ++i) {
    const PairResult& a = holm.results[i];
    const PairResult& b = none.results[i];
    EXPECT_DOUBLE_EQ(a.time.u_test.p_value, b.time.u_test.p_value);
    if (a.name.rfind("many/moderate_", 0) == 0 || a.name == "many/clean_regression") continue;
    EXPECT_EQ(a.verdict, b.verdict) << a.name;
    EXPECT_EQ(a.time.reason, b.time.reason) << a.name;
  }
  EXPECT_EQ(exit_code(holm), 1);
  EXPECT_EQ(gate_message(holm), "FAIL: 1 regression(s), 0 broken, 0 improvement(s), 2 unreliable");
}

TEST(Report, ErroredInNewIsBrokenAndFailsTheGate) {
  const auto base = parse_run(R"({"benchmarks": [
      {"name": "a", "repetition_index": 0, "real_time": 1, "cpu_time": 1, "time_unit": "ns"},
      {"name": "a", "repetition_index": 1, "real_time": 1, "cpu_time": 1, "time_unit": "ns"},
      {"name": "b", "error_occurred": true, "error_message": "boom"}]})",
                              "base");
  const auto contender = parse_run(R"({"benchmarks": [
      {"name": "a", "error_occurred": true, "error_message": "wrong result: 0.3"},
      {"name": "b", "repetition_index": 0, "real_time": 1, "cpu_time": 1, "time_unit": "ns"}]})",
                                   "new");
  const Report report = build_report(pair_by_name(base, contender, NameFilter()), Settings());
  EXPECT_EQ(report.results[0].verdict, Verdict::kBroken);
  EXPECT_EQ(report.results[0].status_message, "errored in new: wrong result: 0.3");
  EXPECT_EQ(report.results[1].verdict, Verdict::kNotCompared);  // errored in base: no baseline
  EXPECT_EQ(exit_code(report), 1);
  EXPECT_EQ(report.summary.geomean_pairs, 0u);
}

TEST(Report, SkippedBenchmarksAreReportedNotGated) {
  const Report report = compare_files("gb19_skipped_units.json", "gb19_skipped_units.json");
  const PairResult& flash = result_named(report, "attention/sdpa_flash/bf16/causal/L:4096/d:64");
  EXPECT_EQ(flash.verdict, Verdict::kNotCompared);
  EXPECT_NE(flash.status_message.find("skipped in base: no GPU"), std::string::npos);
  EXPECT_EQ(exit_code(report), 0);
}

TEST(Report, AggregatesOnlyRunsUseTheMedianRow) {
  const Report report = compare_files("gb19_aggregates_only.json", "gb19_aggregates_only.json");
  const PairResult& model = result_named(report, "model/fwd_bwd/small/bf16/B:8/T:1024");
  EXPECT_DOUBLE_EQ(model.time.base.median, 98.0e6);
  EXPECT_TRUE(model.time.base.aggregates_only);
  EXPECT_EQ(model.verdict, Verdict::kUnreliable);
  EXPECT_EQ(result_named(report, "softmax/naive/fp32/N").verdict, Verdict::kNotCompared);  // BigO/RMS only
}

TEST(Report, NonFiniteCountersAreInformational) {
  const Report report = compare_files("nonfinite_counter.json", "nonfinite_counter.json");
  ASSERT_EQ(report.results[0].counters.size(), 2u);
  for (const CounterResult& counter : report.results[0].counters) {
    EXPECT_EQ(counter.comparison.verdict, Verdict::kInformational) << counter.name;
  }
}

TEST(Report, GeomeanOverallAndPerFamily) {
  const Report report = compare_files("gb171_aa_base.json", "gb171_slow_new.json");
  double log_sum = 0;
  size_t n = 0;
  std::map<std::string, std::pair<double, size_t>> families;
  for (const PairResult& result : report.results) {
    if (result.verdict == Verdict::kNotCompared) continue;
    log_sum += std::log(result.time.ratio);
    ++n;
    families[result.family].first += std::log(result.time.ratio);
    ++families[result.family].second;
  }
  EXPECT_EQ(report.summary.geomean_pairs, n);
  EXPECT_NEAR(report.summary.geomean, std::exp(log_sum / n), 1e-12);
  ASSERT_EQ(report.summary.families.size(), 3u);  // attention, gemm, softmax (optim never ran)
  for (const FamilySummary& family : report.summary.families) {
    const auto& [sum, pairs] = families.at(family.family);
    EXPECT_EQ(family.pairs, pairs);
    EXPECT_NEAR(family.geomean, std::exp(sum / pairs), 1e-12);
  }
}

TEST(Report, ConfigThresholdCanSilenceAFamily) {
  Settings settings = fixture_settings();
  settings.thresholds.set_prefix("softmax/", 0.50);
  const Report report = compare_files("gb171_aa_base.json", "gb171_slow_new.json", settings);
  EXPECT_EQ(count(report, Verdict::kRegression), 0u);
  EXPECT_DOUBLE_EQ(result_named(report, kPlanted).time.threshold, 0.50);
}

TEST(Report, GateOptions) {
  Settings settings;
  settings.gate_counters = true;
  const auto base = parse_run(R"({"benchmarks": [
      {"name": "a", "repetition_index": 0, "real_time": 10, "cpu_time": 10, "time_unit": "ns", "peak_mem_bytes": 100},
      {"name": "a", "repetition_index": 1, "real_time": 10, "cpu_time": 10, "time_unit": "ns", "peak_mem_bytes": 100},
      {"name": "a", "repetition_index": 2, "real_time": 10, "cpu_time": 10, "time_unit": "ns", "peak_mem_bytes": 100},
      {"name": "a", "repetition_index": 3, "real_time": 10, "cpu_time": 10, "time_unit": "ns", "peak_mem_bytes": 100},
      {"name": "gone", "real_time": 10, "cpu_time": 10, "time_unit": "ns"}]})",
                              "base");
  const auto contender = parse_run(R"({"benchmarks": [
      {"name": "a", "repetition_index": 0, "real_time": 10, "cpu_time": 10, "time_unit": "ns", "peak_mem_bytes": 200},
      {"name": "a", "repetition_index": 1, "real_time": 10, "cpu_time": 10, "time_unit": "ns", "peak_mem_bytes": 201},
      {"name": "a", "repetition_index": 2, "real_time": 10, "cpu_time": 10, "time_unit": "ns", "peak_mem_bytes": 202},
      {"name": "a", "repetition_index": 3, "real_time": 10, "cpu_time": 10, "time_unit": "ns", "peak_mem_bytes": 203}]})",
                                   "new");
  Report report = build_report(pair_by_name(base, contender, NameFilter()), settings);
  EXPECT_EQ(report.results[0].verdict, Verdict::kSame);
  EXPECT_EQ(report.summary.counter_regressions, 1u);  // memory doubled
  EXPECT_EQ(exit_code(report), 1);
  settings.gate_counters = false;
  report = build_report(pair_by_name(base, contender, NameFilter()), settings);
  EXPECT_EQ(exit_code(report), 0);
  settings.fail_on_removed = true;
  report = build_report(pair_by_name(base, contender, NameFilter()), settings);
  EXPECT_EQ(report.removed, std::vector<std::string>{"gone"});
  EXPECT_EQ(exit_code(report), 1);
}

TEST(Report, StrictContextMakesEnvironmentDifferenceAnError) {
  Report report = compare_files("context_h200.json", "context_h100.json");
  EXPECT_EQ(exit_code(report), 0);
  report.strict_context = true;
  EXPECT_EQ(exit_code(report), 2);
}

TEST(Report, CpuTimeCanBeCompared) {
  Settings settings;
  settings.time = TimeKind::kCpu;
  const Report report = compare_files("gb19_skipped_units.json", "gb19_skipped_units.json", settings);
  EXPECT_DOUBLE_EQ(result_named(report, "gemm/cublaslt/bf16/M:8192/N:2304/K:768/manual_time").time.base.median, 1.30e6);
}

// Nine repetitions of each benchmark with a time and an sm_clock_mhz counter per side.
std::string clocked_run(const std::vector<std::tuple<std::string, double, double>>& benchmarks) {
  std::string out = R"({"benchmarks": [)";
  bool first = true;
  for (const auto& [name, time, mhz] : benchmarks) {
    for (int i = 0; i < 9; ++i) {
      const double t = time * (1 + 0.002 * (i - 4));  // a quiet spread of +-0.8%
      out += std::string(first ? "" : ",") + R"({"name": ")" + name + R"(", "repetition_index": )" +
             std::to_string(i) + R"(, "real_time": )" + std::to_string(t) + R"(, "cpu_time": )" +
             std::to_string(t) + R"(, "time_unit": "ns", "sm_clock_mhz": )" + std::to_string(mhz + i) + "}";
      first = false;
    }
  }
  return out + "]}";
}

TEST(Report, ChangedTimesNameAClockThatMoved) {
  // "slower": +20% with the clock 1,900 → 1,700 MHz; "steady": +20% at the same clock;
  // "same": unchanged time, the clock moved (no note: nothing to explain).
  const auto base = parse_run(
      clocked_run({{"slower", 100, 1900}, {"steady", 100, 1800}, {"same", 100, 1900}}), "base");
  const auto contender = parse_run(
      clocked_run({{"slower", 120, 1700}, {"steady", 120, 1810}, {"same", 100, 1700}}), "new");
  const Report report = build_report(pair_by_name(base, contender, NameFilter()), Settings());
  const PairResult& slower = result_named(report, "slower");
  ASSERT_EQ(slower.verdict, Verdict::kRegression);
  EXPECT_EQ(slower.clock_note, "SM clock 1904 → 1704 MHz (-10.5%)");
  EXPECT_EQ(result_named(report, "steady").verdict, Verdict::kRegression);
  EXPECT_EQ(result_named(report, "steady").clock_note, "");  // +0.6%: under 2%
  EXPECT_EQ(result_named(report, "same").verdict, Verdict::kSame);
  EXPECT_EQ(result_named(report, "same").clock_note, "");
  // Every output names it beside the verdict.
  const std::string note = "SM clock 1904 → 1704 MHz (-10.5%)";
  const std::string text = render_text(report, TextOptions{false});
  EXPECT_NE(text.find("slower: regression ("), std::string::npos) << text;
  EXPECT_NE(text.find("; " + note + ")\n"), std::string::npos) << text;
  EXPECT_NE(render_markdown(report).find("**regression** (" + note + ") |"), std::string::npos);
  EXPECT_NE(render_json(report).find("\"clock_note\": \"" + note + "\""), std::string::npos);
  EXPECT_NE(render_html(report).find(note), std::string::npos);
}

}  // namespace
}  // namespace gptbench::compare
