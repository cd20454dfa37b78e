// Process-level noise: rows with process_index (gptbench-premerge writes one per sample), the
// process spread of a side, the noise rule that makes a spread wider than the threshold
// "unreliable", the interval it widens, the reports that show it, and files without
// process_index, which behave as before.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>

#include <nlohmann/json.hpp>

#include "runjson/load.h"
#include "compare/render.h"
#include "compare/report.h"
#include "test_util.h"

namespace gptbench::compare {
using runjson::Benchmark;
using runjson::LoadError;
using runjson::Parser;
using runjson::Run;
using runjson::TimeKind;
using runjson::first_difference;
using runjson::load_run_file;
using runjson::parse_run;

namespace {

constexpr double kThreshold = 0.02;  // gptbench-premerge's default
constexpr const char* kName = "optim/torch_adamw/fp32";

// One side: the samples of each process (process_index = position in the outer vector).
using Processes = std::vector<std::vector<double>>;

// `n` samples around `center` with a tiny deterministic spread (+-0.05%).
std::vector<double> tight(double center, size_t n = 7) {
  std::vector<double> out;
  for (size_t i = 0; i < n; ++i) out.push_back(center * (1 + 0.0005 * (static_cast<double>(i % 5) - 2.0) / 2.0));
  return out;
}

// Google Benchmark JSON of one benchmark; with_index false leaves process_index out (an older
// tool's file).
std::string side_json(const Processes& processes, bool with_index = true) {
  std::string rows;
  size_t repetition = 0;
  for (size_t p = 0; p < processes.size(); ++p) {
    for (double t : processes[p]) {
      char row[320];
      std::snprintf(row, sizeof row,
                    R"(%s{"name": "%s", "run_type": "iteration", "repetition_index": %zu, %s"real_time": %.17g, )"
                    R"("cpu_time": %.17g, "time_unit": "ns", "FLOP/s": %.17g})",
                    rows.empty() ? "" : ", ", kName, repetition++,
                    with_index ? ("\"process_index\": " + std::to_string(p) + ", ").c_str() : "", t, t, 1e12 / t);
      rows += row;
    }
  }
  return R"({"context": {}, "benchmarks": [)" + rows + "]}";
}

Processes scaled(const Processes& side, double factor) {
  Processes out = side;
  for (std::vector<double>& samples : out)
    for (double& t : samples) t *= factor;
  return out;
}

Report compare_sides(const Processes& base, const Processes& contender, bool with_index = true,
                     double threshold = kThreshold) {
  static Run a, b;  // the report points into them
  a = parse_run(side_json(base, with_index), "base.json");
  b = parse_run(side_json(contender, with_index), "new.json");
  Settings settings;
  settings.thresholds.set_default(threshold);
  Report report = build_report(pair_by_name(a, b, NameFilter()), settings);
  report.mode = "benchmarks";
  report.base_source = "base.json";
  report.contender_source = "new.json";
  return report;
}

// Three processes whose medians are 95, 100 and 105 (they differ by 10%), each very quiet.
Processes ten_percent_apart() { return {tight(95), tight(100), tight(105)}; }
// Three processes within 0.2% of each other.
Processes within_two_tenths() { return {tight(99.9), tight(100), tight(100.1)}; }

TEST(Load, ProcessIndexIsKeptPerSampleAndIsNotACounter) {
  const compare::Run run = parse_run(side_json({{10, 11}, {12}, {13, 14}}), "inline");
  ASSERT_EQ(run.benchmarks.size(), 1u);
  const Benchmark& bench = run.benchmarks[0];
  EXPECT_EQ(bench.processes(), (std::vector<int64_t>{0, 0, 1, 2, 2}));
  EXPECT_EQ(bench.repetitions[2].process, 1);
  EXPECT_EQ(bench.counter("process_index"), nullptr);
  ASSERT_NE(bench.counter("FLOP/s"), nullptr);
  EXPECT_EQ(bench.counter("FLOP/s")->processes, (std::vector<int64_t>{0, 0, 1, 2, 2}));
  // Without the field every sample's process is unknown (-1).
  const compare::Run old = parse_run(side_json({{10, 11}, {12}}, false), "inline");
  EXPECT_EQ(old.benchmarks[0].processes(), (std::vector<int64_t>{-1, -1, -1}));
  // Repetitions are ordered by repetition_index, and their process goes with them.
  const compare::Run shuffled = parse_run(R"({"benchmarks": [
      {"name": "a", "repetition_index": 1, "process_index": 4, "real_time": 2, "cpu_time": 2, "time_unit": "ns"},
      {"name": "a", "repetition_index": 0, "process_index": 3, "real_time": 1, "cpu_time": 1, "time_unit": "ns"}]})",
                                 "inline");
  EXPECT_EQ(shuffled.benchmarks[0].processes(), (std::vector<int64_t>{3, 4}));
  EXPECT_NE(first_difference(run, old), "");
}

TEST(Load, ProcessIndexMustBeANonNegativeInteger) {
  const std::pair<const char*, const char*> kCases[] = {
      {"-1", "x.json: benchmarks[0] ('a'): 'process_index' is negative (-1), expected a non-negative integer"},
      {"1.5", "x.json: benchmarks[0] ('a'): 'process_index' is a number, expected an integer"},
      {"1.0", "x.json: benchmarks[0] ('a'): 'process_index' is a number, expected an integer"},
      {"\"0\"", "x.json: benchmarks[0] ('a'): 'process_index' is a string, expected an integer"},
      {"null", "x.json: benchmarks[0] ('a'): 'process_index' is null, expected an integer"},
      {"[0]", "x.json: benchmarks[0] ('a'): 'process_index' is an array, expected a scalar"},
      {"9223372036854775808", "x.json: benchmarks[0] ('a'): 'process_index' is out of range"},
  };
  for (const auto& [value, expected] : kCases) {
    const std::string text = std::string(R"({"benchmarks": [{"name": "a", "process_index": )") + value +
                             R"(, "real_time": 1, "cpu_time": 1, "time_unit": "ns"}]})";
    for (Parser parser : {Parser::kAuto, Parser::kNlohmann}) {
      SCOPED_TRACE(text);
      try {
        (void)parse_run(text, "x.json", parser);
        ADD_FAILURE() << "loaded without error";
      } catch (const LoadError& error) {
        EXPECT_STREQ(error.what(), expected);
      }
    }
  }
}

TEST(ProcessSpread, IsTheRangeOfTheProcessMediansOverTheMedian) {
  const SideStats side = describe({95, 95.1, 100, 100.1, 105, 105.1}, {0, 0, 1, 1, 2, 2});
  EXPECT_EQ(side.processes, 3u);
  ASSERT_EQ(side.process_medians.size(), 3u);
  EXPECT_DOUBLE_EQ(side.process_medians[0], 95.05);
  EXPECT_NEAR(side.process_spread, 10.0 / side.median, 1e-12);
  // One process, or none named: no spread.
  EXPECT_EQ(describe({1, 2, 3}, {0, 0, 0}).processes, 1u);
  EXPECT_EQ(describe({1, 2, 3}, {0, 0, 0}).process_spread, 0);
  EXPECT_EQ(describe({1, 2, 3}, {-1, -1, -1}).processes, 0u);
  EXPECT_EQ(describe({1, 2, 3}).processes, 0u);
  // Rows without process_index beside rows with one are one more process.
  EXPECT_EQ(describe({1, 2, 3}, {-1, 0, 0}).processes, 2u);
}

TEST(ProcessSpread, ProcessesTenPercentApartAreUnreliableNotARegression) {
  // Each side: 3 processes whose medians differ by 10%, within-process noise 0.05%; new is 5%
  // slower: the U test alone would call it significant.
  const Report report = compare_sides(ten_percent_apart(), scaled(ten_percent_apart(), 1.05));
  ASSERT_EQ(report.results.size(), 1u);
  const PairResult& result = report.results[0];
  EXPECT_NEAR(result.time.change, 0.05, 1e-9);
  EXPECT_LT(result.time.u_test.p_value, 0.05);
  EXPECT_EQ(result.time.base.processes, 3u);
  EXPECT_NEAR(result.time.base.process_spread, 0.10, 1e-9);
  EXPECT_NEAR(result.time.contender.process_spread, 0.10, 1e-9);
  EXPECT_EQ(result.verdict, Verdict::kUnreliable);
  // ln(95), ln(100), ln(105): standard deviation 0.05004 a side, so the change's error is
  // 0.04086 on 4 degrees of freedom (t = 2.7764): +/-12.0%.
  EXPECT_NEAR(result.time.process_interval, std::expm1(2.7764451 * 0.04086316), 1e-6);
  EXPECT_NE(result.time.reason.find("the processes' medians leave the change known to +/-12.0% (the base side's 3 "
                                    "processes by 10.0%, the new side's 3 processes by 10.0%, median to median), "
                                    "wider than the threshold 2.0%"),
            std::string::npos)
      << result.time.reason;
  EXPECT_NE(result.time.reason.find("run more processes"), std::string::npos) << result.time.reason;
  // The interval is at least as wide as the processes leave it.
  EXPECT_NEAR(result.time.process_spread, 0.10, 1e-9);
  EXPECT_GE(result.time.uncertainty, result.time.process_interval);
  EXPECT_EQ(exit_code(report), 0);
}

TEST(ProcessSpread, ProcessesWithinTwoTenthsOfAPercentLeaveARegressionARegression) {
  const Report report = compare_sides(within_two_tenths(), scaled(within_two_tenths(), 1.05));
  const PairResult& result = report.results[0];
  EXPECT_NEAR(result.time.base.process_spread, 0.002, 1e-9);
  EXPECT_EQ(result.verdict, Verdict::kRegression) << result.time.reason;
  EXPECT_NEAR(result.time.change, 0.05, 1e-9);
  EXPECT_LT(result.time.uncertainty, kThreshold);
  EXPECT_EQ(exit_code(report), 1);
  // The same processes with no change: same.
  EXPECT_EQ(compare_sides(within_two_tenths(), within_two_tenths()).results[0].verdict, Verdict::kSame);
}

TEST(ProcessSpread, ASpreadTheSamplesHideIsStillNoise) {
  // Two processes at 100 and one at 106 with only 3 samples: the pooled CV (1.5%) and the MAD
  // (0: most samples sit at 100) stay within a 5% threshold; only the process spread shows it.
  const Processes base = {tight(100, 20), tight(100, 20), tight(106, 3)};
  const Report report = compare_sides(base, scaled(base, 1.07), true, 0.05);
  const PairResult& result = report.results[0];
  EXPECT_LT(result.time.cv, 0.05);
  EXPECT_LT(1.96 * std::hypot(result.time.base.median_error, result.time.contender.median_error), 0.05);
  EXPECT_EQ(result.verdict, Verdict::kUnreliable) << result.time.reason;
  // Equal scatter on both sides: error sd * sqrt(2/3) on 4 degrees of freedom.
  EXPECT_NEAR(result.time.process_interval,
              std::expm1(2.7764451 * result.time.base.process_log_sd * std::sqrt(2.0 / 3)), 1e-6);
  EXPECT_EQ(result.time.reason.rfind("too noisy: the processes' medians leave the change known to +/-7.9% (the base "
                                     "side's 3 processes by 6.0%, the new side's 3 processes by 6.0%, median to "
                                     "median), wider than the threshold 5.0% (change +7.0%",
                                     0),
            0u)
      << result.time.reason;
  // Without process_index (an older tool's file) the same samples are a regression, as before.
  const Report old = compare_sides(base, scaled(base, 1.07), false, 0.05);
  EXPECT_EQ(old.results[0].verdict, Verdict::kRegression) << old.results[0].time.reason;
  EXPECT_EQ(old.results[0].time.base.processes, 0u);
}

TEST(ProcessSpread, ASpreadWithinTheThresholdWidensTheInterval) {
  // Processes 1.5% apart on each side: the change is known to +/-1.7% only (the pooled samples
  // alone: +/-0.8%), within a 2% threshold, so "same" can still be said.
  const Processes base = {tight(99.25), tight(100), tight(100.75)};
  const Report report = compare_sides(base, base);
  const PairResult& result = report.results[0];
  EXPECT_LT(1.96 * std::hypot(result.time.base.median_error, result.time.contender.median_error), 0.01);
  EXPECT_NEAR(result.time.uncertainty, std::expm1(2.7764451 * 0.00612385), 1e-6);
  EXPECT_EQ(result.verdict, Verdict::kSame) << result.time.reason;
  // 2.5% apart on one side: +/-2.6% (3.27 Welch-Satterthwaite degrees of freedom).
  const Report wide = compare_sides(base, {tight(98.75), tight(100), tight(101.25)});
  EXPECT_NEAR(wide.results[0].time.uncertainty,
              std::expm1(student_t_quantile(0.975, 3.2747139) * 0.00841666), 1e-6);
  EXPECT_EQ(wide.results[0].verdict, Verdict::kUnreliable);
  EXPECT_EQ(wide.results[0].time.reason.rfind("too noisy: the processes' medians leave the change known to +/-2.6%", 0),
            0u)
      << wide.results[0].time.reason;
}

TEST(ProcessSpread, MoreProcessesNarrowTheInterval) {
  // The same scatter (medians 99, 100, 101 repeated) from 3 and from 6 processes a side: the
  // range stays 2%, the interval narrows from +/-2.3% (unreliable at 2%) to +/-1.3%, so a 5%
  // slowdown is a regression once six processes a side have run.
  const Processes three = {tight(99), tight(100), tight(101)};
  const Processes six = {tight(99), tight(100), tight(101), tight(99), tight(100), tight(101)};
  const Report few = compare_sides(three, scaled(three, 1.05));
  const Report many = compare_sides(six, scaled(six, 1.05));
  EXPECT_NEAR(few.results[0].time.process_spread, many.results[0].time.process_spread, 1e-12);
  EXPECT_GT(few.results[0].time.process_interval, kThreshold);
  EXPECT_LT(many.results[0].time.process_interval, 0.014);
  EXPECT_EQ(few.results[0].verdict, Verdict::kUnreliable) << few.results[0].time.reason;
  EXPECT_EQ(many.results[0].verdict, Verdict::kRegression) << many.results[0].time.reason;
}

TEST(ProcessSpread, EpochsThatRanTogetherArePaired) {
  // Both sides' processes of an epoch share its GPU state: epochs at 97%, 100% and 103% of the
  // base time on both sides, new within 0.1% of base in each. Unpaired, the change is known to
  // +/-7% only: unreliable; paired, the epochs' shared part cancels.
  const Processes base = {tight(97), tight(100), tight(103)};
  const Processes same = {tight(97.1), tight(99.95), tight(103.05)};
  const Report unpaired = compare_sides(base, same);
  EXPECT_EQ(unpaired.results[0].verdict, Verdict::kUnreliable);
  EXPECT_FALSE(unpaired.results[0].time.processes_paired);
  const SideStats b = describe({97, 97.01, 100, 100.01, 103, 103.01}, {0, 0, 1, 1, 2, 2});
  const SideStats n = describe({97.1, 97.11, 99.95, 99.96, 103.05, 103.06}, {0, 0, 1, 1, 2, 2});
  EXPECT_EQ(b.process_ids, (std::vector<int64_t>{0, 1, 2}));
  // d = ln(97.105/97.005), ln(99.955/100.005), ln(103.055/103.005): sd 0.000764, 2 dof.
  std::vector<double> d = {std::log(97.105 / 97.005), std::log(99.955 / 100.005), std::log(103.055 / 103.005)};
  EXPECT_NEAR(process_interval(b, n, true), std::expm1(4.3026527 * sample_stddev(d) / std::sqrt(3.0)), 1e-9);
  EXPECT_LT(process_interval(b, n, true), 0.005);
  EXPECT_GT(process_interval(b, n, false), 0.05);
  const MetricComparison paired = compare_metric(b, n, Direction::kLowerIsBetter, 0.05, kThreshold, true);
  EXPECT_TRUE(paired.processes_paired);
  // The pooled samples spread 6% (the epochs), but within each process they are quiet: same.
  EXPECT_EQ(paired.verdict, Verdict::kSame) << paired.reason;
  // Only epochs both sides ran are paired; fewer than 2 such: as unpaired.
  const SideStats other = describe({97.1, 99.9}, {5, 6});
  EXPECT_NEAR(process_interval(b, other, true), process_interval(b, other, false), 1e-12);
}

TEST(ProcessSpread, APooledChangeThatTheProcessesDoNotShowIsNoRegression) {
  // An A/A epoch pattern seen on an H100 (layernorm/torch/bf16/fwd, 71 us): process medians
  // base 70,936 / 71,840 / 70,923 ns, new 72,425 / 72,399 / 71,923 ns, each process quiet
  // (+-0.05%). The pooled medians differ by 2.1% and the U test, taking the samples as
  // independent, calls it significant; epoch by epoch the change is +2.1%, +0.8%, +1.4%, mean
  // 1.43%, within the 2% threshold: same, not a regression.
  const std::vector<double> b = {70936, 71840, 70923}, n = {72425, 72399, 71923};
  std::vector<double> base_samples, new_samples;
  std::vector<int64_t> base_ids, new_ids;
  for (int64_t e = 0; e < 3; ++e) {
    for (double t : tight(b[e], 7)) base_samples.push_back(t), base_ids.push_back(e);
    for (double t : tight(n[e], 7)) new_samples.push_back(t), new_ids.push_back(e);
  }
  const SideStats base = describe(base_samples, base_ids), contender = describe(new_samples, new_ids);
  double mean_log = 0;
  for (int e = 0; e < 3; ++e) mean_log += std::log(n[e] / b[e]) / 3;
  EXPECT_NEAR(process_change(base, contender, true), std::expm1(mean_log), 1e-9);
  EXPECT_NEAR(process_change(base, contender, true), 0.0143, 0.0005);
  const MetricComparison m = compare_metric(base, contender, Direction::kLowerIsBetter, 0.05, kThreshold, true);
  EXPECT_GT(m.change, kThreshold);                 // pooled: over the threshold
  EXPECT_LT(m.process_interval, kThreshold);       // the processes are not too far apart
  EXPECT_LT(m.u_test.p_value, 0.05);               // and the pooled U test is significant
  EXPECT_EQ(m.verdict, Verdict::kSame) << m.reason;
  EXPECT_NE(m.reason.find("process by process"), std::string::npos) << m.reason;
  // The same processes 3% apart in every epoch: a regression, both estimates agreeing.
  std::vector<double> slower;
  for (double t : base_samples) slower.push_back(t * 1.03);
  const MetricComparison planted =
      compare_metric(base, describe(slower, base_ids), Direction::kLowerIsBetter, 0.05, kThreshold, true);
  EXPECT_NEAR(planted.process_change, 0.03, 1e-9);
  EXPECT_EQ(planted.verdict, Verdict::kRegression) << planted.reason;
  // Unpaired: the difference of the sides' mean log-medians; one process on a side: unknown.
  double unpaired_log = 0;
  for (int e = 0; e < 3; ++e) unpaired_log += (std::log(n[e]) - std::log(b[e])) / 3;
  EXPECT_NEAR(process_change(base, contender, false), std::expm1(unpaired_log), 1e-9);
  EXPECT_TRUE(std::isnan(process_change(base, describe({72000, 72001}, {0, 0}))));
}

TEST(ProcessSpread, PairedEpochsJudgeNoisySamplesByTheirInterval) {
  // A GEMM at the power limit (the LM head on an H200): its samples spread +-3% within every
  // process (robust CV 2.2%, over the 2% threshold), while the epochs' medians agree. Unpaired,
  // the noise rule sets it aside; paired, its interval (0.7% from 40 samples a process, the
  // epochs' differences cancelling) is within the threshold, so an A/A is "same" and a 4%
  // slowdown a regression.
  const auto noisy = [](double center, int64_t id, std::vector<double>& out, std::vector<int64_t>& ids) {
    for (int i = 0; i < 40; ++i) out.push_back(center * (1 + 0.03 * (2.0 * i / 39 - 1))), ids.push_back(id);
  };
  std::vector<double> b, n, slow;
  std::vector<int64_t> b_ids, n_ids, slow_ids;
  const double epochs[3] = {100, 100.3, 99.8};
  for (int64_t e = 0; e < 3; ++e) {
    noisy(epochs[e], e, b, b_ids);
    noisy(epochs[e] * 1.001, e, n, n_ids);
    noisy(epochs[e] * 1.04, e, slow, slow_ids);
  }
  const SideStats base = describe(b, b_ids), same = describe(n, n_ids), slower = describe(slow, slow_ids);
  EXPECT_GT(sample_noise_cv(base), kThreshold);
  const MetricComparison unpaired = compare_metric(base, same, Direction::kLowerIsBetter, 0.05, kThreshold, false);
  EXPECT_EQ(unpaired.verdict, Verdict::kUnreliable);
  EXPECT_NE(unpaired.reason.find("robust CV within processes"), std::string::npos) << unpaired.reason;
  const MetricComparison aa = compare_metric(base, same, Direction::kLowerIsBetter, 0.05, kThreshold, true);
  EXPECT_LT(aa.uncertainty, kThreshold);
  EXPECT_FALSE(too_noisy(aa));
  EXPECT_EQ(aa.verdict, Verdict::kSame) << aa.reason;
  const MetricComparison planted = compare_metric(base, slower, Direction::kLowerIsBetter, 0.05, kThreshold, true);
  EXPECT_EQ(planted.verdict, Verdict::kRegression) << planted.reason;
  // Samples too few or too spread for their medians: the interval itself is wide, still noise.
  std::vector<double> wild;
  std::vector<int64_t> wild_ids;
  for (int64_t e = 0; e < 3; ++e)
    for (int i = 0; i < 5; ++i) wild.push_back(epochs[e] * (1 + 0.3 * (i - 2) / 2.0)), wild_ids.push_back(e);
  const MetricComparison loud =
      compare_metric(describe(wild, wild_ids), describe(wild, wild_ids), Direction::kLowerIsBetter, 0.05, kThreshold, true);
  EXPECT_TRUE(too_noisy(loud));
  EXPECT_EQ(loud.verdict, Verdict::kUnreliable) << loud.reason;
}

TEST(ProcessSpread, ASideOfOneProcessIsTakenToVaryLikeTheOther) {
  // Base from 3 processes (log sd 0.01), new from one: error 0.01 * sqrt(1/3 + 1) on 2 degrees
  // of freedom (t = 4.303).
  const SideStats base = describe({99, 100, 101}, {0, 1, 2});
  const SideStats one = describe({100, 100.1}, {0, 0});
  EXPECT_NEAR(process_interval(base, one),
              std::expm1(4.3026527 * base.process_log_sd * std::sqrt(1.0 / 3 + 1)), 1e-6);
  EXPECT_NEAR(process_interval(one, base), process_interval(base, one), 1e-12);
  // Neither side names 2 processes: nothing is known of them.
  EXPECT_EQ(process_interval(one, one), 0);
  EXPECT_EQ(process_interval(describe({1, 2}), describe({1, 2})), 0);
  // Identical medians: no width.
  const SideStats flat = describe({100, 100, 100}, {0, 1, 2});
  EXPECT_EQ(process_interval(flat, flat), 0);
}

TEST(ProcessSpread, FilesWithoutProcessIndexGiveTheSameVerdicts) {
  // Every comparison of the recorded fixtures is decided as it was from the samples alone.
  for (const char* contender_file : {"gb171_aa_new.json", "gb171_slow_new.json"}) {
    const compare::Run base = load_run_file(test_util::data_path("gb171_aa_base.json"));
    const compare::Run contender = load_run_file(test_util::data_path(contender_file));
    const Report report = build_report(pair_by_name(base, contender, NameFilter()), test_util::fixture_settings());
    for (const PairResult& result : report.results) {
      if (!result.time.tested) continue;
      const Benchmark* a = base.find(result.name);
      const Benchmark* b = contender.find(result.name);
      const MetricComparison plain = compare_metric(describe(a->samples(TimeKind::kReal)),
                                                    describe(b->samples(TimeKind::kReal)),
                                                    Direction::kLowerIsBetter, 0.05, test_util::kFixtureThreshold);
      EXPECT_EQ(result.time.base.processes, 0u) << result.name;
      EXPECT_EQ(result.time.process_spread, 0) << result.name;
      EXPECT_EQ(result.time.uncertainty, plain.uncertainty) << result.name;
      if (plain.verdict != Verdict::kRegression && plain.verdict != Verdict::kImprovement) {  // Holm aside
        EXPECT_EQ(result.time.verdict, plain.verdict) << result.name;
        EXPECT_EQ(result.time.reason, plain.reason) << result.name;
      }
    }
    EXPECT_FALSE(shows_processes(report));
    EXPECT_EQ(render_text(report, TextOptions{}).find("Processes"), std::string::npos);
    EXPECT_EQ(render_markdown(report).find("Processes"), std::string::npos);
  }
  // One process per side (gptbench-premerge --processes 1): as without the field.
  const Processes one = {tight(100, 9)};
  const Report single = compare_sides(one, scaled(one, 1.05));
  EXPECT_EQ(single.results[0].time.base.processes, 1u);
  EXPECT_EQ(single.results[0].time.process_spread, 0);
  EXPECT_EQ(single.results[0].verdict, compare_sides(one, scaled(one, 1.05), false).results[0].verdict);
  EXPECT_FALSE(shows_processes(single));
}

TEST(ProcessSpread, EveryFormatShowsTheProcesses) {
  const Report report = compare_sides(ten_percent_apart(), scaled(ten_percent_apart(), 1.05));
  ASSERT_TRUE(shows_processes(report));
  EXPECT_EQ(process_cell(report.results[0].time), "10.0% (3/3)");
  const std::string text = render_text(report, TextOptions{});
  EXPECT_NE(text.find("Processes  Verdict"), std::string::npos) << text;
  EXPECT_NE(text.find("10.0% (3/3)  UNRELIABLE"), std::string::npos) << text;
  const std::string markdown = render_markdown(report);
  EXPECT_NE(markdown.find("| CV | Processes | Verdict |"), std::string::npos) << markdown;
  EXPECT_NE(markdown.find("| 10.0% (3/3) | unreliable |"), std::string::npos) << markdown;
  const std::string html = render_html(report);
  EXPECT_NE(html.find("<th>CV</th><th>Processes</th>"), std::string::npos);
  EXPECT_NE(html.find("<td>10.0% (3/3)</td>"), std::string::npos);
  const nlohmann::json json = nlohmann::json::parse(render_json(report));
  const nlohmann::json& time = json["benchmarks"][0]["time"];
  EXPECT_EQ(time["base"]["processes"], 3);
  EXPECT_NEAR(time["base"]["process_spread"].get<double>(), 0.10, 1e-9);
  EXPECT_EQ(time["new"]["process_medians"].size(), 3u);
  EXPECT_NEAR(time["process_spread"].get<double>(), 0.10, 1e-9);
  EXPECT_NEAR(time["uncertainty"].get<double>(), time["process_interval"].get<double>(), 1e-12);
  EXPECT_NEAR(time["process_interval"].get<double>(), 0.1201, 1e-4);
  EXPECT_NEAR(time["base"]["process_log_sd"].get<double>(), 0.05004, 1e-4);
  // Counters carry their rows' processes too.
  const nlohmann::json& flops = json["benchmarks"][0]["counters"][0];
  EXPECT_EQ(flops["name"], "FLOP/s");
  EXPECT_EQ(flops["base"]["processes"], 3);
  EXPECT_EQ(flops["verdict"], "unreliable");
}

}  // namespace
}  // namespace gptbench::compare
